package state_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/learnerassignor/learner/kgolearner/state/boltstore"
	"github.com/learnerassignor/learner/kgolearner/state/countapp"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runErr waits for a member's Run to return and returns its error.
func (a *app) runErr(name string) error {
	a.t.Helper()
	m := a.members[name]
	select {
	case err := <-m.done:
		m.stop()
		delete(a.members, name)
		return err
	case <-time.After(30 * time.Second):
		a.t.Fatalf("member %s still runs after 30s", name)
		return nil
	}
}

// A changelog record the runtime did not write stops the member that
// restores it with an error naming the record, rather than skipping it and
// losing an update.
func TestBadChangelogRecord(t *testing.T) {
	a := newApp(t, nil)
	a.start("m1", nil)
	a.produce(0, 60)
	a.waitProcessed(60)
	a.crash("m1")
	cl, err := kgo.NewClient(append(a.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	require.NoError(t, err)
	defer cl.Close()
	topic := state.ChangelogTopic(a.group, 0)
	res := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: 2, Key: []byte("w2"), Value: []byte("x")})
	require.NoError(t, res.FirstErr())
	bad := res[0].Record.Offset

	a.start("m2", nil)
	err = a.runErr("m2")
	require.ErrorIs(t, err, state.ErrBadChangelog)
	require.ErrorContains(t, err, "task 0_2")
	require.ErrorContains(t, err, topic+" partition 2 offset "+itoa(bad)+": no learner.position header")
}

// A missing changelog topic is created, compacted, with the input's
// partitions; one with another partition count is an error.
func TestChangelogTopic(t *testing.T) {
	t.Run("Missing", func(t *testing.T) {
		a := newApp(t, nil)
		a.start("m1", nil)
		a.produce(0, 60)
		a.waitProcessed(60)
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, state.ChangelogTopic(a.group, 0)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(context.Background(), a.admin())
		require.NoError(t, err)
		policy := ""
		for _, c := range resp.Resources[0].Configs {
			if c.Name == "cleanup.policy" && c.Value != nil {
				policy = *c.Value
			}
		}
		require.Equal(t, "compact", policy, "cleanup.policy of the created changelog topic")
		a.checkCounts()
	})
	t.Run("WrongPartitions", func(t *testing.T) {
		a := newApp(t, nil)
		create := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = state.ChangelogTopic(a.group, 0), 3, 1
		create.Topics = append(create.Topics, ct)
		_, err := create.RequestWith(context.Background(), a.admin())
		require.NoError(t, err)
		a.start("m1", nil)
		err = a.runErr("m1")
		require.ErrorIs(t, err, state.ErrChangelogTopic)
		require.ErrorContains(t, err, `changelog topic "count-0-changelog" has 3 partitions, its subtopology 6`)
	})
	// A changelog that retention deletes loses the state of every key not
	// written for retention.ms: Run refuses it rather than restore stores
	// from what is left.
	t.Run("DeletePolicy", func(t *testing.T) {
		a := newApp(t, nil)
		a.createChangelog("delete")
		a.start("m1", nil)
		err := a.runErr("m1")
		require.ErrorIs(t, err, state.ErrChangelogTopic)
		require.ErrorContains(t, err, `changelog topic "count-0-changelog" has cleanup.policy "delete"`)
	})
	// Compaction with retention is a choice the runtime copes with (a
	// store whose changelog lost records restores from its start).
	t.Run("CompactDeletePolicy", func(t *testing.T) {
		a := newApp(t, nil)
		a.createChangelog("compact,delete")
		a.start("m1", nil)
		a.produce(0, 60)
		a.waitProcessed(60)
		a.checkCounts()
	})
	// A member whose ACLs do not allow DescribeConfigs on the changelog
	// runs as before, and says that it could not check the policy.
	t.Run("DescribeConfigsDenied", func(t *testing.T) {
		var warned atomic.Pointer[error]
		a := newApp(t, func(cfg *state.Config) {
			cfg.Observer.Error = func(err error) {
				if errors.Is(err, kerr.TopicAuthorizationFailed) {
					warned.CompareAndSwap(nil, &err)
				}
			}
		})
		a.createChangelog("compact")
		a.cluster.ControlKey(int16(kmsg.DescribeConfigs), func(kr kmsg.Request) (kmsg.Response, error, bool) {
			a.cluster.KeepControl()
			req := kr.(*kmsg.DescribeConfigsRequest)
			resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
			for _, rr := range req.Resources {
				sr := kmsg.NewDescribeConfigsResponseResource()
				sr.ResourceType, sr.ResourceName, sr.ErrorCode = rr.ResourceType, rr.ResourceName, kerr.TopicAuthorizationFailed.Code
				resp.Resources = append(resp.Resources, sr)
			}
			return resp, nil, true
		})
		a.start("m1", nil)
		a.produce(0, 60)
		a.waitProcessed(60)
		a.checkCounts()
		err := warned.Load()
		require.NotNil(t, err, "no Error event for the denied DescribeConfigs")
		require.ErrorContains(t, *err, `changelog topic "count-0-changelog"`)
	})
}

// createChangelog creates the app's changelog topic, as an earlier run or
// an operator left it, with the given cleanup.policy.
func (a *app) createChangelog(policy string) {
	a.t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = state.ChangelogTopic(a.group, 0), partitions, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "cleanup.policy", kmsg.StringPtr(policy)
	ct.Configs = append(ct.Configs, cfg)
	create.Topics = append(create.Topics, ct)
	resp, err := create.RequestWith(context.Background(), a.admin())
	require.NoError(a.t, err)
	require.NoError(a.t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), "create the changelog topic")
}

// A store that cannot open (here: its file held by another process) stops
// the member with an error naming the file.
func TestStoreFailsToOpen(t *testing.T) {
	a := newApp(t, nil)
	disk := boltstore.Stores{Dir: t.TempDir()}
	held, err := disk.Open("0_4")
	require.NoError(t, err)
	defer held.Close()
	a.start("m1", disk)
	err = a.runErr("m1")
	require.ErrorIs(t, err, state.ErrStore)
	require.ErrorContains(t, err, "0_4.db: locked by another process")
}

// A broker that goes away for a few seconds costs time, not data: the
// members ride it out (rejoining if their sessions expired) and the counts
// stay exact.
func TestBrokerOutage(t *testing.T) {
	var o outage
	a := o.app(t)
	a.cluster.Control(o.control(a.cluster, nil))
	o.begin()
	a.rideOut(&o)
}

// An outage that begins while a member waits in a JoinGroup (here m1 or
// m2 rejoining for the rebalance m3's start begins) costs no more: the
// member's JoinGroup fails with its connection and it joins again once the
// broker is back.
func TestBrokerOutageDuringRebalance(t *testing.T) {
	var o outage
	a := o.app(t)
	var armed, fired, joined atomic.Bool
	begun := make(chan struct{})
	a.cluster.Control(o.control(a.cluster, func(kr kmsg.Request) {
		if joined.Load() {
			// kfake handles requests one at a time: the JoinGroup
			// before this one is in the group, waiting for the
			// other members.
			joined.Store(false)
			o.begin()
			close(begun)
			return
		}
		j, ok := kr.(*kmsg.JoinGroupRequest)
		switch {
		case !ok:
		case strings.HasPrefix(j.MemberID, "m3-"):
			// Armed by m3's first join, not by its start: m1 or m2
			// may rejoin before it (a learner ready), and an
			// outage then would fail m3's start (its changelog
			// topics' metadata), not a rejoin.
			if !fired.Swap(true) {
				armed.Store(true)
			}
		case strings.HasPrefix(j.MemberID, "m1-") || strings.HasPrefix(j.MemberID, "m2-"):
			joined.Store(armed.CompareAndSwap(true, false))
		}
	}))
	a.start("m3", nil)
	select {
	case <-begun:
	case <-time.After(20 * time.Second):
		t.Fatal("neither m1 nor m2 rejoined for m3")
	}
	a.rideOut(&o)
}

// outage makes the broker unreachable: begin drops the connections it has
// and refuses new ones, as an unreachable broker does, until rideOut ends
// it.
//
// Refusing requests alone would leave what the broker already holds
// waiting on an idle connection: a JoinGroup parked in a rebalance when
// the outage begins, which the other members, refused, cannot complete. A
// real coordinator keeps a member waiting in a join alive and answers it
// once the others have joined or expired; kfake lets the member's session
// timer run out from its last heartbeat (handleJoin does not reset it) and
// removes it without answering its JoinGroup (removeMember, groups.go).
// kgo waits for that answer up to the rebalance timeout plus
// kgo.RequestTimeoutOverhead, about 70 s, and so does closing the member's
// client at the test's end: TestBrokerOutage took 70 s instead of 5 in
// about one run of ten, when a learner's rejoin came just before the
// outage.
type outage struct {
	conns connCutter
	down  atomic.Bool
}

// control returns the cluster's control function, which refuses every
// request during the outage. observe, if not nil, sees every request
// first; it may call begin.
func (o *outage) control(c *kfake.Cluster, observe func(kmsg.Request)) func(kmsg.Request) (kmsg.Response, error, bool) {
	return func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if observe != nil {
			observe(kr)
		}
		if o.down.Load() {
			return nil, errors.New("broker unreachable"), true
		}
		return nil, nil, false
	}
}

// app starts two members on a cluster whose connections o can cut, and
// has them process 600 records.
func (o *outage) app(t *testing.T) *app {
	a := newApp(t, nil, kfake.ListenFn(o.conns.listen))
	a.start("m1", nil)
	a.start("m2", nil)
	a.produce(0, 600)
	a.waitProcessed(600)
	return a
}

// begin starts the outage. It refuses first, then cuts: a request that
// passed the control before came on a connection that the cut closes.
func (o *outage) begin() {
	o.down.Store(true)
	o.conns.cut()
}

// rideOut sends more input during the outage, ends it after 3 s and checks
// that every member rode it out and that the counts are exact.
func (a *app) rideOut(o *outage) {
	a.t.Helper()
	for i := 600; i < 1200; i++ {
		a.prod.Send(i) // buffered until the broker is back
	}
	time.Sleep(3 * time.Second)
	o.down.Store(false)
	require.NoError(a.t, a.prod.Flush())
	a.waitProcessed(1200)
	for name, m := range a.members {
		select {
		case err := <-m.done:
			delete(a.members, name) // stopped: the test's end must not wait for it
			a.t.Fatalf("member %s stopped: %v", name, err)
		default:
		}
	}
	a.checkCounts()
}

// connCutter is a kfake listener that keeps the connections it accepts, so
// that cut can close them all, as a broker going away does.
type connCutter struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *connCutter) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return cutterListener{ln, c}, nil
}

// cut closes every connection accepted so far.
func (c *connCutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

type cutterListener struct {
	net.Listener
	c *connCutter
}

func (l cutterListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		l.c.mu.Lock()
		l.c.conns = append(l.c.conns, conn)
		l.c.mu.Unlock()
	}
	return conn, err
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// keysApp is a one-subtopology application, 2 partitions, whose members
// run until they processed a number of records and then crash, their
// stores keeping what they hold: each record's value is a key it sets, but
// "read", which sends the keys "0" to "9" of the state to keys.
type keysApp struct {
	t    *testing.T
	c    *cluster
	keys chan []string

	mu     sync.Mutex
	events []string // the Error events' texts
}

func newKeysApp(t *testing.T) *keysApp {
	return &keysApp{t: t, c: newCluster(t, "in"), keys: make(chan []string, 1)}
}

// member runs a member on stores until it has processed n records.
func (a *keysApp) member(stores state.Stores, n int) {
	a.t.Helper()
	processed := make(chan struct{}, n)
	_, stop := a.c.run(a.config(stores, processed))
	for range n {
		select {
		case <-processed:
		case <-time.After(20 * time.Second):
			a.t.Fatal("a record was never processed")
		}
	}
	stop() // a crash: the stores keep what they hold
}

// config is the Config of a member on stores that sends to processed
// (which must have room) at each record processed.
func (a *keysApp) config(stores state.Stores, processed chan<- struct{}) state.Config {
	return state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Stores:        stores,
		Process: func(ctx *state.Context, rec *kgo.Record) error {
			if string(rec.Value) != "read" {
				return ctx.Put(rec.Value, []byte("x"))
			}
			var found []string
			for i := range 10 {
				if _, ok, err := ctx.Get([]byte(strconv.Itoa(i))); err != nil || ok {
					found = append(found, strconv.Itoa(i))
				}
			}
			a.keys <- found
			return nil
		},
		Observer: state.Observer{
			Processed: func(string, *kgo.Record) { processed <- struct{}{} },
			Error: func(err error) {
				a.t.Log(err)
				a.mu.Lock()
				a.events = append(a.events, err.Error())
				a.mu.Unlock()
			},
		},
	}
}

// produce writes values to partition 0 of "in".
func (a *keysApp) produce(values ...string) {
	a.t.Helper()
	for _, v := range values {
		a.c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte(v)})
	}
}

// read returns the keys of task 0_0's state as a member on stores finds
// them.
func (a *keysApp) read(stores state.Stores) []string {
	a.t.Helper()
	a.produce("read")
	a.member(stores, 1)
	return <-a.keys
}

// reported returns the Error events so far that contain all of parts.
func (a *keysApp) reported(parts ...string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.events {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(e, p) }) {
			out = append(out, e)
		}
	}
	return out
}

// A store whose checkpoint the changelog no longer holds (its records
// deleted below a later offset) restores from the changelog's start, as a
// fresh store would, rather than extend its state across the gap.
func TestChangelogRecordsDeleted(t *testing.T) {
	a := newKeysApp(t)
	kept := &state.MemoryStores{}
	a.produce("0", "1", "2", "3", "4")
	a.member(kept, 5) // changelog offsets 0-4; kept's checkpoint 5
	a.produce("5", "6", "7", "8", "9")
	a.member(&state.MemoryStores{}, 5) // restores 0-4, writes 5-9

	a.c.deleteRecords(state.ChangelogTopic("g", 0), 0, 7)

	require.Equal(t, []string{"7", "8", "9"}, a.read(kept), "keys of the state restored from a changelog that starts at offset 7")
	require.NotEmpty(t, a.reported("task 0_0: store at changelog offset 5, outside the changelog's offsets: restoring from the start"),
		"an Error event saying the store at offset 5 restores from the start")
}

// A changelog write the broker takes only after another writer's records
// in its partition (held by the network while the task's next owner wrote:
// a zombie's) leaves the store where it was, and the member's next restore
// applies the changelog in order, the other writer's records and its own.
// Here kfake holds a member's write of key "1" while another writer
// appends keys "1" and "2" (input offsets 1 and 2), lands it 0.3 s after
// the member is cancelled (within its leave's grace: the batch completes),
// and the other writer then appends key "3". Before: the member's store
// applied its write with a checkpoint past the other writer's records, so
// the member, run again on it, restored key "3" only and lost "2".
func TestLateWriteKeepsAnothersRecords(t *testing.T) {
	a := newKeysApp(t)
	changelog := state.ChangelogTopic("g", 0)
	other := func(key string, next int64) {
		a.c.produce(state.ChangelogRecord(changelog, 0, []byte(key), []byte("x"), map[string]int64{"in": next}))
	}
	kept := &state.MemoryStores{}
	processed := make(chan struct{}, 10)
	done, stop := a.c.run(a.config(kept, processed))
	a.produce("0")
	waitFor(t, done, processed, "record 0 processed")
	held, land := a.c.holdNextWrite(changelog)
	a.produce("1")
	waitFor(t, done, held, "the write of key 1")
	other("1", 2)
	other("2", 3)
	time.AfterFunc(300*time.Millisecond, land)
	stop()
	require.NoError(t, <-done, "Run's error once its ctx was cancelled")
	a.produce("2", "3")
	other("3", 4)
	require.Equal(t, []string{"0", "1", "2", "3"}, a.read(kept), "keys of the state restored on the cancelled member's store")
}

// A store kept from a changelog topic since deleted and recreated restores
// from the new topic's start, even when the new topic holds records past
// the store's checkpoint: a fetch from there succeeds, and the store would
// mix the old topic's state with the new one's.
func TestChangelogTopicRecreated(t *testing.T) {
	a := newKeysApp(t)
	changelog := state.ChangelogTopic("g", 0)
	kept := &state.MemoryStores{}
	a.produce("0", "1", "2", "3", "4")
	a.member(kept, 5) // changelog offsets 0-4; kept's checkpoint 5
	old := topicID(t, a.c.admin(), changelog)
	s, err := kept.Open("0_0")
	require.NoError(t, err)
	cp, err := s.Checkpoint()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, state.Checkpoint{Changelog: 5, Input: map[string]int64{"in": 5}, ChangelogID: old}, cp,
		"checkpoint of the store of the member that created the changelog topic, its ID %s", kafkaID(old))

	deleteTopic(t, a.c.admin(), changelog)
	// The input's first records are gone too (retention), so that the new
	// topic's state is not the old one's: a member with an empty store of
	// its own, which processes the input from its start, recreates the
	// changelog topic and writes six records to it. The kept store's
	// checkpoint is inside the new topic.
	a.c.deleteRecords("in", 0, 5)
	a.produce("5", "6", "7", "8", "9", "9")
	a.member(&state.MemoryStores{}, 6)
	recreated := topicID(t, a.c.admin(), changelog)
	require.NotEqual(t, old, recreated, "topic ID of the recreated changelog topic")
	require.Equal(t, map[string]map[int32]int64{changelog: {0: 6}}, a.c.endOffsets(map[string][]int32{changelog: {0}}), "end offset of the recreated changelog")

	require.Equal(t, []string{"5", "6", "7", "8", "9"}, a.read(kept), "keys of the state a store kept from the deleted changelog topic restores")
	require.NotEmpty(t, a.reported("task 0_0: store at changelog offset 5", kafkaID(old), kafkaID(recreated), "restoring from the start"),
		"an Error event saying the store of task 0_0 is of the deleted changelog topic and restores from the start")
}

// A ListOffsets response that leaves a partition out is an error, not an
// end offset of zero (which would say a store is not behind).
func TestEndOffsetsMissingPartition(t *testing.T) {
	c := newCluster(t, "in")
	c.c.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		return kr.(*kmsg.ListOffsetsRequest).ResponseKind(), nil, true // no topic, no partition
	})
	cl, err := kgo.NewClient(c.opts...)
	require.NoError(t, err)
	defer cl.Close()
	_, err = state.EndOffsets(context.Background(), cl, map[string][]int32{"in": {1}})
	require.EqualError(t, err, "state: ListOffsets response without in partition 1")
}

// A ListOffsets response with a negative offset is an error too: as an end
// offset it made every store look ahead of its changelog, reset at every
// listing, and a lag of zero at the first join.
func TestEndOffsetsNegative(t *testing.T) {
	c := newCluster(t, "in")
	rp := kmsg.NewListOffsetsResponseTopicPartition()
	rp.Partition, rp.Offset = 1, -1
	answerListOffsets(c, rp)
	cl, err := kgo.NewClient(c.opts...)
	require.NoError(t, err)
	defer cl.Close()
	_, err = state.EndOffsets(context.Background(), cl, map[string][]int32{"in": {1}})
	require.EqualError(t, err, "state: end offset of in partition 1 is -1, not an offset")
}

// answerListOffsets makes the cluster answer every ListOffsets request with
// rp, a partition of topic "in".
func answerListOffsets(c *cluster, rp kmsg.ListOffsetsResponseTopicPartition) {
	c.c.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		resp := kr.(*kmsg.ListOffsetsRequest).ResponseKind().(*kmsg.ListOffsetsResponse)
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = "in"
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
}

// closingStores are MemoryStores that count the stores open, and fail to
// open the task failing.
type closingStores struct {
	state.MemoryStores
	failing string
	open    atomic.Int32
}

type countedStore struct {
	state.Store
	s      *closingStores
	closed bool
}

func (s *closingStores) Open(task string) (state.Store, error) {
	if task == s.failing {
		return nil, errBoom
	}
	st, err := s.MemoryStores.Open(task)
	if err != nil {
		return nil, err
	}
	s.open.Add(1)
	return &countedStore{Store: st, s: s}, nil
}

func (c *countedStore) Close() error {
	if !c.closed {
		c.closed = true
		c.s.open.Add(-1)
	}
	return c.Store.Close()
}

// Run closes the stores it opened at start when the start fails after
// them (a later store fails to open, the changelog's end offsets cannot
// be listed): left open, a store on disk stays locked for the process.
func TestRunClosesStoresWhenStartFails(t *testing.T) {
	topology := []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}}
	local := func(t *testing.T, failing string) *closingStores {
		s := &closingStores{failing: failing}
		for _, task := range []string{"0_0", "0_1"} {
			st, err := s.MemoryStores.Open(task) // left from an earlier run
			require.NoError(t, err)
			require.NoError(t, st.Close())
		}
		return s
	}
	t.Run("AStoreFailsToOpen", func(t *testing.T) {
		c := newCluster(t, "in")
		stores := local(t, "0_1") // 0_0 opens first
		done, _ := c.run(state.Config{Subtopologies: topology, Stores: stores, Process: func(*state.Context, *kgo.Record) error { return nil }})
		require.ErrorIs(t, waitErr(t, done), errBoom)
		require.Zero(t, stores.open.Load(), "stores left open after Run returned")
	})
	t.Run("EndOffsetsFail", func(t *testing.T) {
		c := newCluster(t, "in", state.ChangelogTopic("g", 0)) // as the earlier run left it
		c.c.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
			c.c.KeepControl()
			req := kr.(*kmsg.ListOffsetsRequest)
			resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
			for _, rt := range req.Topics {
				st := kmsg.NewListOffsetsResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewListOffsetsResponseTopicPartition()
					sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		})
		stores := local(t, "")
		done, _ := c.run(state.Config{Subtopologies: topology, Stores: stores, Process: func(*state.Context, *kgo.Record) error { return nil }})
		require.ErrorIs(t, waitErr(t, done), kerr.TopicAuthorizationFailed)
		require.Zero(t, stores.open.Load(), "stores left open after Run returned")
	})
}

// Run starts when the end offsets of the stores it finds on disk cannot be
// listed at once: a broker answers UNKNOWN_TOPIC_OR_PARTITION for a while
// after Run created the changelog topic, and Run retries what Kafka marks
// retriable rather than fail (it failed at the first answer).
func TestRunStartsThroughRetriableEndOffsetErrors(t *testing.T) {
	c := newCluster(t, "in") // no changelog topic: Run creates it
	changelog := state.ChangelogTopic("g", 0)
	var faults atomic.Int32
	c.c.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		req := kr.(*kmsg.ListOffsetsRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic != changelog || faults.Load() >= 2 {
			return nil, nil, false
		}
		faults.Add(1)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = changelog
		for _, rp := range req.Topics[0].Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
	stores := &closingStores{}
	for _, task := range []string{"0_0", "0_1"} {
		st, err := stores.MemoryStores.Open(task) // left from an earlier run
		require.NoError(t, err)
		require.NoError(t, st.Close())
	}
	done, stop := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Stores: stores, Process: func(*state.Context, *kgo.Record) error { return nil }})
	require.Eventually(t, func() bool { return faults.Load() == 2 || len(done) > 0 }, 10*time.Second, 10*time.Millisecond, "ListOffsets of the changelog answered with faults")
	select {
	case err := <-done:
		t.Fatalf("Run returned %v after a retriable ListOffsets error at start", err)
	case <-time.After(2 * time.Second):
	}
	stop()
	require.NoError(t, waitErr(t, done), "Run stopped")
}

// A changelog topic deleted under running tasks stops Run with an error
// wrapping kerr.UnknownTopicOrPartition about missingTopicTimeout (10 s)
// after the deletion, with a handful of Error events (one saying so after
// 5 s, and the failed writes, if any): the restore client
// gets an error for every fetch of the deleted topic, thousands a second,
// and these are not reported one by one. (Before: about 33 s, as the lag
// loop did not list running tasks' changelogs and the poll loop waited for
// kgo to give up on its write, and 113,000 Error events.)
func TestChangelogTopicDeleted(t *testing.T) {
	var events atomic.Int64
	a := newApp(t, func(cfg *state.Config) {
		cfg.Observer.Error = func(err error) {
			events.Add(1)
			t.Log(err)
		}
	})
	a.start("m1", nil)
	a.produce(0, 600)
	a.waitProcessed(600)
	deleteTopic(t, a.admin(), state.ChangelogTopic(a.group, 0))
	deleted := time.Now()
	a.produce(600, 60) // input whose changelog writes fail

	err := a.runErr("m1")
	took := time.Since(deleted)
	t.Logf("Run returned %v after the deletion, %d Error events", took, events.Load())
	require.ErrorIs(t, err, kerr.UnknownTopicOrPartition)
	require.ErrorContains(t, err, "changelog topic missing for 10s")
	require.Less(t, took, 20*time.Second, "time from the deletion to Run's return")
	require.Less(t, events.Load(), int64(20), "Error events")
}

// EndOffsets's errors name the package, as its other errors do, and wrap
// the broker's or kgo's.
func TestEndOffsetsErrorsNameThePackage(t *testing.T) {
	c := newCluster(t, "in")
	rp := kmsg.NewListOffsetsResponseTopicPartition()
	rp.Partition, rp.ErrorCode = 1, kerr.TopicAuthorizationFailed.Code
	answerListOffsets(c, rp)
	cl, err := kgo.NewClient(c.opts...)
	require.NoError(t, err)
	defer cl.Close()
	_, err = state.EndOffsets(context.Background(), cl, map[string][]int32{"in": {1}})
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.True(t, strings.HasPrefix(err.Error(), "state: "), "error %q does not name the package", err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = state.EndOffsets(ctx, cl, map[string][]int32{"in": {1}})
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, strings.HasPrefix(err.Error(), "state: "), "error %q does not name the package", err)
}

// badCheckpointStores opens memory stores whose Checkpoint returns cp, as
// a Store implementation with a bug may.
type badCheckpointStores struct {
	state.MemoryStores
	cp state.Checkpoint
}

type badCheckpointStore struct {
	state.Store
	cp state.Checkpoint
}

func (s *badCheckpointStores) Open(task string) (state.Store, error) {
	st, err := s.MemoryStores.Open(task)
	return badCheckpointStore{st, s.cp}, err
}

func (s badCheckpointStore) Checkpoint() (state.Checkpoint, error) { return s.cp, nil }

// A store whose checkpoint holds a negative offset stops Run with ErrStore
// naming the task and the offset. kgo reads a changelog offset of -1 as
// the changelog's end: the task restored nothing and never caught up.
func TestNegativeCheckpointStopsRun(t *testing.T) {
	for name, c := range map[string]struct {
		cp   state.Checkpoint
		want string
	}{
		"Changelog": {state.Checkpoint{Changelog: -1}, "task 0_1 checkpoint: changelog offset -1 is negative"},
		"Input":     {state.Checkpoint{Input: map[string]int64{countapp.Input: -2}}, "task 0_1 checkpoint: offset -2 of input topic " + countapp.Input + " is negative"},
	} {
		t.Run(name, func(t *testing.T) {
			a := newApp(t, nil)
			stores := &badCheckpointStores{cp: c.cp}
			_, err := stores.MemoryStores.Open("0_1") // local: opened at start
			require.NoError(t, err)
			a.start("m1", stores)
			err = a.runErr("m1")
			require.ErrorIs(t, err, state.ErrStore)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// A changelog the member may not read (its ACLs deny Fetch, which nothing
// at start asks for) stops Run with the broker's error, as at start,
// naming the changelog partition. kgo returns such an error at every
// fetch, at once: the restore loop reported it thousands of times a
// second, and the tasks restoring never ran.
func TestChangelogReadDeniedStopsRun(t *testing.T) {
	topic := state.ChangelogTopic("g", 0)
	c := newCluster(t, "in", topic)
	c.produce(state.ChangelogRecord(topic, 1, []byte("k"), []byte("v"), map[string]int64{"in": 1}))
	c.refuseFetch(topic, kerr.TopicAuthorizationFailed, func(int) bool { return true })
	var errs atomic.Int64
	done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process:  func(*state.Context, *kgo.Record) error { return nil },
		Observer: state.Observer{Error: func(error) { errs.Add(1) }}})
	err := waitErr(t, done)
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.ErrorContains(t, err, "state: restore "+topic+" partition ")
	require.Less(t, errs.Load(), int64(10), "Error events before Run returned")
}

// An input topic the member may not read stops Run likewise, once the
// poll's other records are processed and written: the poll loop reported
// the error at every poll, thousands of times a second, while the group
// counted the partitions as the member's.
func TestInputReadDeniedStopsRun(t *testing.T) {
	c := newCluster(t, "in", "other")
	c.produce(&kgo.Record{Topic: "other", Partition: 0, Value: []byte("v")})
	c.refuseFetch("in", kerr.TopicAuthorizationFailed, func(int) bool { return true })
	var errs, processed atomic.Int64
	done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2}, {Topics: []string{"other"}, Partitions: 2}},
		Process:  func(*state.Context, *kgo.Record) error { processed.Add(1); return nil },
		Observer: state.Observer{Error: func(error) { errs.Add(1) }}})
	err := waitErr(t, done)
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.ErrorContains(t, err, "state: fetch in partition ")
	require.Less(t, errs.Load(), int64(10), "Error events before Run returned")
	require.LessOrEqual(t, state.CommittedOffset(t, c.admin(), "g", "other", 0), processed.Load(), "offset committed for other partition 0, against the records processed")
}

// A group error that kgo reports through the poll and recovers from, as a
// session that expired (UNKNOWN_MEMBER_ID), does not stop Run: the member
// joins again and processes on.
func TestGroupErrorDoesNotStopRun(t *testing.T) {
	c := newCluster(t, "in")
	var expire atomic.Bool
	c.c.ControlKey(int16(kmsg.Heartbeat), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		if !expire.CompareAndSwap(true, false) {
			return nil, nil, false
		}
		resp := kr.(*kmsg.HeartbeatRequest).ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	processed, reported := make(chan struct{}, 2), make(chan struct{}, 1)
	done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2}},
		Process: func(*state.Context, *kgo.Record) error { processed <- struct{}{}; return nil },
		Observer: state.Observer{Error: func(err error) {
			if errors.Is(err, kerr.UnknownMemberID) {
				select {
				case reported <- struct{}{}:
				default:
				}
			}
		}}})
	c.produce(&kgo.Record{Topic: "in", Partition: 1})
	waitFor(t, done, processed, "record processed")
	expire.Store(true)
	waitFor(t, done, reported, "Error event of the expired session")
	c.produce(&kgo.Record{Topic: "in", Partition: 1})
	waitFor(t, done, processed, "record processed after the session expired")
}

// An input topic with more partitions than its subtopology declares
// leaves the subtopology's tasks unassigned (kgolearner's Round.Err), and
// the leader says why in an Error event, at every rebalance until the topic
// or the topology is fixed. Before, nothing was processed and nothing said
// why unless the client had a logger.
func TestTopicsMismatchIsAnErrorEvent(t *testing.T) {
	c := newCluster(t, "in") // two partitions
	reported := make(chan struct{}, 1)
	done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1}},
		Process: func(*state.Context, *kgo.Record) error { return nil },
		Observer: state.Observer{Error: func(err error) {
			if errors.Is(err, kgolearner.ErrTopicsMismatch) {
				select {
				case reported <- struct{}{}:
				default:
				}
			}
		}}})
	waitFor(t, done, reported, "Error event of the topics mismatch")
}

// oneRecordEach returns a cluster with one record in changelog topic's
// partition 1 and one in partition 1 of input topic "in", which the task
// restores and then processes.
func oneRecordEach(t *testing.T, topic string) *cluster {
	c := newCluster(t, "in", topic)
	c.produce(state.ChangelogRecord(topic, 1, []byte("k"), []byte("v"), map[string]int64{"in": 0}))
	c.produce(&kgo.Record{Topic: "in", Partition: 1, Value: []byte("v")})
	return c
}

// A fetch answered UNKNOWN_SERVER_ERROR every time does not stop Run, nor
// make it spin: kgo hands the error back at every poll, at once, and
// fetches again at once, so the loops wait before polling again, as
// Kafka's clients wait retry.backoff.ms. Without the wait, either loop
// fetched some 25,000 times a second and reported as many Error events.
func TestUnknownServerErrorAlwaysDoesNotSpin(t *testing.T) {
	topic := state.ChangelogTopic("g", 0)
	for _, refused := range []string{"in", topic} {
		t.Run(refused, func(t *testing.T) {
			c := oneRecordEach(t, topic)
			var fetches atomic.Int64
			c.refuseFetch(refused, kerr.UnknownServerError, func(int) bool { fetches.Add(1); return true })
			var events startEvents
			done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
				Process:  func(*state.Context, *kgo.Record) error { return nil },
				Observer: state.Observer{Error: events.add}})
			for fetches.Load() == 0 {
				select {
				case err := <-done:
					t.Fatalf("Run returned %v", err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			f0, e0 := fetches.Load(), len(events.all())
			select {
			case err := <-done:
				t.Fatalf("Run returned %v", err)
			case <-time.After(time.Second):
			}
			f, e := fetches.Load()-f0, len(events.all())-e0
			require.LessOrEqual(t, f, int64(50), "refused fetches in 1 s")
			require.LessOrEqual(t, e, 100, "Error events in 1 s")
			require.Positive(t, e, "Error events in 1 s: each refusal is reported")
		})
	}
}

// A fetch answered once with UNKNOWN_SERVER_ERROR, which Kafka marks not
// retriable but a broker answers for any unexpected failure of a read (the
// Java consumer logs it and fetches again), does not stop Run, whether the
// input or the changelog answered it: the fetch after it succeeds, and the
// task processes on.
func TestUnknownServerErrorOnceDoesNotStopRun(t *testing.T) {
	topic := state.ChangelogTopic("g", 0)
	for _, refused := range []string{"in", topic} {
		t.Run(refused, func(t *testing.T) {
			c := oneRecordEach(t, topic)
			c.refuseFetch(refused, kerr.UnknownServerError, func(n int) bool { return n == 1 })
			processed := make(chan struct{}, 1)
			done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
				Process: func(*state.Context, *kgo.Record) error {
					select {
					case processed <- struct{}{}:
					default:
					}
					return nil
				}})
			waitFor(t, done, processed, "record processed")
		})
	}
}

// A changelog topic deleted and recreated at once under running members
// stops their Runs, as a deleted one does: the state it held is not durable
// any more, and the new topic, empty, would hide that. The members notice
// the new topic ID within a second (Alone: the lag loop's check of running
// tasks' changelogs) or at once (WithStandbys: the standbys' stores are past
// the new topic's end, and the lag loop checks the ID before it resets
// them), and no store is cleared: each is the only copy left of its state,
// and a reset would restore it from the new topic. Meanwhile kgo writes
// some batches to the new topic (WithStandbys: 10 or 11 records to each
// of three partitions, in the runs looked at), and fails the others with
// UNKNOWN_TOPIC_ID.
// (Before: the Runs never returned, the stores were reset, "past the
// changelog's end 0", and the members reported UNKNOWN_TOPIC_ID write
// errors 53 (Alone) and 63 (WithStandbys) times a second.)
func TestChangelogTopicRecreatedWhileRunning(t *testing.T) {
	for _, c := range []struct {
		name     string
		members  []string
		standbys int
	}{
		{"Alone", []string{"m1"}, 0},
		{"WithStandbys", []string{"m1", "m2"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			a := newApp(t, func(cfg *state.Config) {
				cfg.Options.Standbys = c.standbys
				cfg.Observer.Error = func(err error) {
					mu.Lock()
					events = append(events, err.Error())
					mu.Unlock()
					t.Log(err)
				}
			})
			changelog := state.ChangelogTopic(a.group, 0)
			stores := map[string]*state.MemoryStores{}
			for _, m := range c.members {
				stores[m] = &state.MemoryStores{}
				a.start(m, stores[m])
			}
			a.produce(0, 600)
			a.waitProcessed(600)
			require.Eventually(t, func() bool {
				for _, m := range c.members {
					s := a.members[m].rt.Status()
					if len(s.Active) != partitions/len(c.members) || len(s.Restoring) > 0 || len(s.Standby) != partitions*c.standbys/len(c.members) {
						return false
					}
					for _, lag := range s.Lag {
						if lag > 0 {
							return false
						}
					}
				}
				return true
			}, 20*time.Second, 10*time.Millisecond, "members running their share of the tasks, and standbys caught up")
			old := topicID(t, a.admin(), changelog)
			deleteTopic(t, a.admin(), changelog)
			a.createChangelog("compact")
			recreated := time.Now()
			now := topicID(t, a.admin(), changelog)
			require.NotEqual(t, old, now, "topic ID of the recreated changelog topic")
			a.produce(600, 60) // input whose changelog writes fail or go to the new topic

			for _, m := range c.members {
				err := a.runErr(m)
				mu.Lock()
				t.Logf("%s: Run returned %v after the recreation, %d Error events so far: %v", m, time.Since(recreated), len(events), err)
				mu.Unlock()
				require.ErrorIs(t, err, state.ErrChangelogTopic, "member %s", m)
				require.ErrorContains(t, err, "topic ID "+kafkaID(old)+" of "+changelog+", whose ID is now "+kafkaID(now), "member %s", m)
			}
			require.Less(t, time.Since(recreated), 3*time.Second, "time from the recreation to the Runs' return")
			mu.Lock()
			defer mu.Unlock()
			require.Less(t, len(events), 10, "Error events")
			for _, e := range events {
				require.NotContains(t, e, "restoring from the start", "an Error event")
			}
			for _, m := range c.members {
				for p := range int32(partitions) {
					s, err := stores[m].Open("0_" + itoa(int64(p)))
					require.NoError(t, err)
					cp, err := s.Checkpoint()
					require.NoError(t, err)
					require.NoError(t, s.Close())
					require.Positive(t, cp.Changelog, "member %s: changelog offset of task 0_%d's store", m, p)
					require.Equal(t, old, cp.ChangelogID, "member %s: changelog ID of task 0_%d's store", m, p)
				}
			}
		})
	}
}
