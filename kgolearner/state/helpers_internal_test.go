package state

import (
	"context"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// oneTopicCluster starts an in-process Kafka with one partition of topic
// and returns it, the option that reaches it, and a producer that writes
// to the partition each record names. All close when the test ends.
func oneTopicCluster(t *testing.T, topic string) (*kfake.Cluster, kgo.Opt, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	seed := kgo.SeedBrokers(c.ListenAddrs()...)
	prod, err := kgo.NewClient(seed, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	return c, seed, prod
}

// polledRuntime returns a runtime of one stateless task, 0_0 of input
// topic "in" in group "g" (Cooperative if cooperative), whose group client
// has joined and polled the six records the test wrote to "in", and the
// cluster and producer of oneTopicCluster.
func polledRuntime(t *testing.T, cooperative bool) (*Runtime, *kfake.Cluster, *kgo.Client) {
	t.Helper()
	c, seed, prod := oneTopicCluster(t, "in")
	for range 6 {
		require.NoError(t, prod.ProduceSync(context.Background(), &kgo.Record{Topic: "in", Partition: 0}).FirstErr())
	}
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil }, Cooperative: cooperative,
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1}}})
	require.NoError(t, err)
	r.cl, err = kgo.NewClient(seed, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	t.Cleanup(r.cl.Close)
	for n := 0; n < 6; { // joined, assigned, polled
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		fs := r.cl.PollFetches(ctx)
		cancel()
		require.NoError(t, fs.Err())
		n += fs.NumRecords()
	}
	return r, c, prod
}

// CommittedOffset returns group's committed offset of the partition, -1
// for none, asking through cl. It is exported for the external tests too
// (this file is compiled into the package's tests).
func CommittedOffset(t *testing.T, cl *kgo.Client, group, topic string, partition int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.ErrorCode), "OffsetFetch of group %s", group)
	require.Len(t, resp.Topics, 1, "OffsetFetch topics")
	require.Len(t, resp.Topics[0].Partitions, 1, "OffsetFetch partitions")
	return resp.Topics[0].Partitions[0].Offset
}

// openedTask returns a runtime of one stateful task, 0_0 of input topic
// "in" in group "g", with its store open.
func openedTask(t *testing.T) (*Runtime, *task) {
	t.Helper()
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}}})
	require.NoError(t, err)
	tk := r.tasks["0_0"]
	require.NoError(t, r.open(tk))
	return r, tk
}

// RefusedProduce answers a produce request with code for every partition
// it writes, as a broker refusing the records does. It is exported for the
// external tests too (this file is compiled into the package's tests).
func RefusedProduce(kr kmsg.Request, code int16) kmsg.Response {
	req := kr.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
