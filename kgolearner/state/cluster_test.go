package state_test

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cluster is an in-process Kafka whose topics have 2 partitions, for tests
// of one member with a topology of their own.
type cluster struct {
	t    *testing.T
	c    *kfake.Cluster
	opts []kgo.Opt
}

// newCluster seeds topics; those named as changelogs are compacted, as Run
// creates them (it refuses an existing one that is not).
func newCluster(t *testing.T, topics ...string) *cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond), kfake.SeedTopics(2, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cl := &cluster{t: t, c: c, opts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, topic := range topics {
		if strings.HasSuffix(topic, "-changelog") {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			rc.Name, rc.Value = "cleanup.policy", kmsg.StringPtr("compact")
			rr.Configs = append(rr.Configs, rc)
			alter.Resources = append(alter.Resources, rr)
		}
	}
	if len(alter.Resources) > 0 {
		admin, err := kgo.NewClient(cl.opts...)
		require.NoError(t, err)
		defer admin.Close()
		resp, err := alter.RequestWith(context.Background(), admin)
		require.NoError(t, err)
		for _, rr := range resp.Resources {
			require.NoError(t, kerr.ErrorForCode(rr.ErrorCode), "compact %s", rr.ResourceName)
		}
	}
	return cl
}

// admin returns a client of the cluster for requests of the test's own,
// closed when the test ends.
func (c *cluster) admin() *kgo.Client {
	cl, err := kgo.NewClient(c.opts...)
	require.NoError(c.t, err)
	c.t.Cleanup(cl.Close)
	return cl
}

// endOffsets returns the end offsets of the partitions.
func (c *cluster) endOffsets(parts map[string][]int32) map[string]map[int32]int64 {
	ends, err := state.EndOffsets(context.Background(), c.admin(), parts)
	require.NoError(c.t, err)
	return ends
}

// produce writes recs, each to the partition it names.
func (c *cluster) produce(recs ...*kgo.Record) {
	c.t.Helper()
	cl, err := kgo.NewClient(append(c.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(c.t, err)
	defer cl.Close()
	require.NoError(c.t, cl.ProduceSync(context.Background(), recs...).FirstErr())
}

// transactionalProducer returns a client that produces to the partitions
// its records name in transactions, as a changelog's seeder may; the test's
// end closes it.
func (c *cluster) transactionalProducer() *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append(c.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("seed"))...)
	require.NoError(c.t, err)
	c.t.Cleanup(cl.Close)
	return cl
}

// deleteRecords deletes the records of a topic partition below offset (-1:
// every record, to the high watermark) and returns the partition's new
// start offset.
func (c *cluster) deleteRecords(topic string, partition int32, offset int64) int64 {
	c.t.Helper()
	del := kmsg.NewPtrDeleteRecordsRequest()
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic = topic
	dp := kmsg.NewDeleteRecordsRequestTopicPartition()
	dp.Partition, dp.Offset = partition, offset
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	resp, err := del.RequestWith(context.Background(), c.admin())
	require.NoError(c.t, err)
	require.NoError(c.t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode), "DeleteRecords of %s partition %d below %d", topic, partition, offset)
	return resp.Topics[0].Partitions[0].LowWatermark
}

// memberTimings are the test members' group timings. Sessions are short,
// so that a crash is noticed in 2 s. The rebalance timeout (above
// kgolearner's 10 s commit timeout, as Bind asks) and the request overhead
// bound the wait for a JoinGroup kfake never answers to 17 s, instead of
// kgo's 70: kfake expires a member waiting in a join once its session
// passes (see outage), which a loaded machine's race runs met.
var memberTimings = []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(2 * time.Second),
	kgo.RebalanceTimeout(12 * time.Second), kgo.RequestTimeoutOverhead(5 * time.Second), kgo.FetchMaxWait(100 * time.Millisecond)}

// run starts a member of group "g" with cfg's topology and Process. It
// returns a channel that gets Run's error, and stop, which cancels Run as
// a crash would and waits for it; the test's end stops it too.
func (c *cluster) run(cfg state.Config) (done <-chan error, stop func()) {
	c.t.Helper()
	_, done, stop = c.start(cfg)
	return done, stop
}

// start is run that also returns the member's Runtime.
func (c *cluster) start(cfg state.Config) (rt *state.Runtime, done <-chan error, stop func()) {
	c.t.Helper()
	cfg.Group = "g"
	cfg.ClientOpts = append(cfg.ClientOpts, c.opts...)
	cfg.ClientOpts = append(cfg.ClientOpts, memberTimings...)
	if cfg.Observer.Error == nil {
		cfg.Observer.Error = func(err error) { c.t.Log(err) }
	}
	rt, err := state.New(cfg)
	require.NoError(c.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errs, finished := make(chan error, 1), make(chan struct{})
	go func() {
		errs <- rt.Run(ctx)
		close(finished)
	}()
	stop = func() {
		cancel()
		<-finished
	}
	c.t.Cleanup(stop)
	return rt, errs, stop
}

// failProduce answers the Produce requests from now on for which fail(n)
// is true, n counting them from 1, with UNKNOWN_SERVER_ERROR for every
// partition, as a broker failing a batch for a passing reason: kgo does
// not retry it, and the runtime goes round again (refusedAgain).
func (c *cluster) failProduce(fail func(n int) bool) { c.refuseProduce(kerr.UnknownServerError, fail) }

// refuseProduce is failProduce with the error err.
func (c *cluster) refuseProduce(err *kerr.Error, fail func(n int) bool) {
	n := 0
	c.c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		if n++; !fail(n) {
			return nil, nil, false
		}
		return state.RefusedProduce(kr, err.Code), nil, true
	})
}

// refuseFetch answers from now on the Fetch requests of topic for which
// fail(n) is true, n counting them from 1, with err for each of its
// partitions, as a broker whose ACLs deny the member reading it does.
func (c *cluster) refuseFetch(topic string, err *kerr.Error, fail func(n int) bool) {
	c.t.Helper()
	id := topicID(c.t, c.admin(), topic) // Fetch v13 names topics by ID
	n := 0
	c.c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		i := slices.IndexFunc(req.Topics, func(rt kmsg.FetchRequestTopic) bool { return rt.Topic == topic || rt.TopicID == id })
		if i < 0 {
			return nil, nil, false
		}
		if n++; !fail(n) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = req.Topics[i].Topic, req.Topics[i].TopicID
		for _, rp := range req.Topics[i].Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, err.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
}

// hangRequests makes the broker answer no request of key (-1: of any key)
// for which match, if not nil, is true, until end is called: kfake keeps
// each without replying, and reads nothing more from its connection, as a
// broker hung with its connections open.
func (c *cluster) hangRequests(key int16, match func(kmsg.Request) bool) (end func()) {
	var hung atomic.Bool
	hung.Store(true)
	c.c.ControlKey(key, func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		if !hung.Load() || match != nil && !match(kr) {
			return nil, nil, false
		}
		return nil, nil, true // handled without a response
	})
	return func() { hung.Store(false) }
}

// waitFor waits for ch while Run runs, done its result: it fails the test
// when Run returns first, or after 20 s.
func waitFor(t *testing.T, done <-chan error, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case err := <-done:
		t.Fatalf("Run returned %v waiting for %s", err, what)
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s after 20s", what)
	}
}

func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Run still runs after 20s")
		return nil
	}
}

// changelogKeys returns the keys of a changelog partition's records, in
// offset order, position markers left out.
func (c *cluster) changelogKeys(topic string, partition int32) []string {
	c.t.Helper()
	cl, err := kgo.NewClient(append(c.opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))...)
	require.NoError(c.t, err)
	defer cl.Close()
	ends, err := state.EndOffsets(context.Background(), cl, map[string][]int32{topic: {partition}})
	require.NoError(c.t, err)
	var keys []string
	for next := int64(0); next < ends[topic][partition]; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		require.NoError(c.t, fs.Err(), "reading %s partition %d", topic, partition)
		fs.EachRecord(func(rec *kgo.Record) {
			if string(rec.Key) != "learner.position" {
				keys = append(keys, string(rec.Key))
			}
			next = rec.Offset + 1
		})
	}
	return keys
}

// topicID returns a topic's ID, as Metadata lists it.
func topicID(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	resp, err := meta.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1, "topics of a Metadata response for %s", topic)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), "Metadata of %s", topic)
	return resp.Topics[0].TopicID
}

// kafkaID writes a topic ID as Kafka's tools do: URL-safe base64 without
// padding.
func kafkaID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// deleteTopic deletes a topic.
func deleteTopic(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(topic)
	del.Topics = append(del.Topics, dt)
	resp, err := del.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), "DeleteTopics %s", topic)
}
