package kgolearner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var testTopology = []Subtopology{
	{Topics: []string{"orders", "payments"}, Partitions: 3, Stateful: true},
	{Topics: []string{"clicks"}, Partitions: 2},
}

func newTestBalancer(t testing.TB, subs []Subtopology) *Balancer {
	t.Helper()
	b, err := New(Config{Subtopologies: subs})
	require.NoError(t, err)
	return b
}

func TestTopologyMapsTasksToPartitions(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	var ids []string
	for _, task := range b.Tasks() {
		ids = append(ids, fmt.Sprintf("%s:%v", task.ID, task.Stateful))
	}
	assert.Equal(t, "0_0:true 0_1:true 0_2:true 1_0:false 1_1:false", strings.Join(ids, " "), "Tasks()")
	for _, c := range []struct {
		topic     string
		partition int32
		task      string
	}{{"orders", 2, "0_2"}, {"payments", 0, "0_0"}, {"clicks", 1, "1_1"}, {"clicks", 2, ""}, {"other", 0, ""}, {"orders", -1, ""}} {
		got, ok := b.TaskOf(c.topic, c.partition)
		assert.Equal(t, c.task, got, "TaskOf(%q, %d)", c.topic, c.partition)
		assert.Equal(t, c.task != "", ok, "TaskOf(%q, %d) ok", c.topic, c.partition)
	}
	assert.Equal(t, map[string][]int32{"orders": {1}, "payments": {1}}, b.Partitions("0_1"), "Partitions(0_1)")
	assert.Nil(t, b.Partitions("9_9"), "Partitions(9_9)")
	// A task is owned only when all its co-partitioned partitions are.
	owned := map[string][]int32{"orders": {0, 1, 1}, "payments": {1}, "clicks": {0}}
	assert.Equal(t, []string{"0_1", "1_0"}, b.topo.tasksOf(owned), "tasksOf(%v)", owned)
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Subtopologies: []Subtopology{{Topics: nil, Partitions: 1}}},
		{Subtopologies: []Subtopology{{Topics: []string{"a"}, Partitions: 0}}},
		{Subtopologies: []Subtopology{{Topics: []string{"a"}, Partitions: 1}, {Topics: []string{"b", "a"}, Partitions: 1}}},
		{Subtopologies: testTopology, Options: learner.Options{Standbys: -1}},
		{Subtopologies: testTopology, CommitTimeout: -1},
	} {
		_, err := New(cfg)
		if assert.ErrorIs(t, err, ErrInvalidConfig, "New(%+v)", cfg) {
			assert.True(t, strings.HasPrefix(err.Error(), "kgolearner: "), "New(%+v) error = %v, want a kgolearner: error", cfg, err)
		}
	}
}

// logRecorder is a kgo.Logger that keeps what is logged at warn level and
// above.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (r *logRecorder) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprint(level, " ", msg, keyvals))
}

// TestBindWarnsOfCommitTimeout: a commit timeout at or over the client's
// rebalance timeout lets one slow release commit get the member dropped,
// which New cannot see (the client is built after it), so Bind warns.
func TestBindWarnsOfCommitTimeout(t *testing.T) {
	for _, tc := range []struct {
		commit, rebalance time.Duration
		warn              bool
	}{
		{commit: 0, rebalance: 60 * time.Second}, // the defaults: 10 s under 60 s
		{commit: 5 * time.Second, rebalance: 10 * time.Second},
		{commit: 0, rebalance: 10 * time.Second, warn: true}, // the default commit timeout
		{commit: 30 * time.Second, rebalance: 20 * time.Second, warn: true},
	} {
		b, err := New(Config{Subtopologies: testTopology, CommitTimeout: tc.commit})
		require.NoError(t, err)
		var logs logRecorder
		cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"), kgo.RebalanceTimeout(tc.rebalance), kgo.WithLogger(&logs))
		require.NoError(t, err)
		b.Bind(cl)
		cl.Close()
		logs.mu.Lock()
		warned := slices.ContainsFunc(logs.lines, func(l string) bool { return strings.Contains(l, "commit timeout") })
		logs.mu.Unlock()
		assert.Equal(t, tc.warn, warned, "Bind with commit timeout %v, rebalance timeout %v: warned = %v, want %v (logged %q)", tc.commit, tc.rebalance, warned, tc.warn, logs.lines)
	}
}

// TestNewBoundsPartitions: partition counts come from configuration, so a
// mistyped one must be refused before a task is built (building 2^32 tasks
// would exhaust memory first).
func TestNewBoundsPartitions(t *testing.T) {
	cfg := Config{Subtopologies: []Subtopology{
		{Topics: []string{"a"}, Partitions: math.MaxInt32},
		{Topics: []string{"b"}, Partitions: math.MaxInt32},
	}}
	_, err := New(cfg)
	require.ErrorIs(t, err, learner.ErrInvalidTopology, "New(two subtopologies of MaxInt32 partitions)")
	require.ErrorIs(t, err, ErrInvalidConfig, "New(two subtopologies of MaxInt32 partitions)")
	assert.Contains(t, err.Error(), "more than 1073741824")

	// Within the task limit, but two topics make twice as many partitions.
	cfg = Config{Subtopologies: []Subtopology{{Topics: []string{"a", "b"}, Partitions: learner.MaxTasks}}}
	_, err = New(cfg)
	require.ErrorIs(t, err, learner.ErrInvalidTopology, "New(2 topics of MaxTasks partitions)")
	assert.Contains(t, err.Error(), "input partitions to 2147483648")
}

func TestLearnerID(t *testing.T) {
	for in, want := range map[string]string{
		"kgo-5d1f0c2e-aa":  "kgo-5d1f0c2e-aa",
		"my app.1-x":       "my.20app.2e1-x",
		"my.20app.2e1-x":   "my.2e20app.2e2e1-x",
		"":                 "-cbf29ce484222325",
		"rack/eu-west-1a!": "rack.2feu-west-1a.21",
	} {
		assert.Equal(t, want, LearnerID(in), "LearnerID(%q)", in)
	}
	long := LearnerID(strings.Repeat("é", 200))
	assert.LessOrEqual(t, len(long), 255, "LearnerID(400 bytes)")
	assert.NotEqual(t, LearnerID(strings.Repeat("é", 201)), long, "LearnerID of two long IDs")
}

// joinMember builds what the coordinator hands the leader for one member.
func (b *Balancer) joinMember(id string, userData []byte, owned map[string][]int32) kmsg.JoinGroupResponseMember {
	return b.joinMemberAt(id, 1, userData, owned)
}

// joinMemberAt is joinMember for a member that last synced in generation.
func (b *Balancer) joinMemberAt(id string, generation int32, userData []byte, owned map[string][]int32) kmsg.JoinGroupResponseMember {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Generation = generation
	meta.Topics = slices.Sorted(slices.Values(b.topo.topics))
	meta.UserData = userData
	for _, topic := range meta.Topics {
		if ps, ok := owned[topic]; ok {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic, op.Partitions = topic, ps
			meta.OwnedPartitions = append(meta.OwnedPartitions, op)
		}
	}
	m := kmsg.NewJoinGroupResponseMember()
	m.MemberID, m.ProtocolMetadata = id, meta.AppendTo(nil)
	return m
}

// encodeMember encodes m as JoinGroupMetadata does, under the placeholder
// member ID.
func (b *Balancer) encodeMember(t testing.TB, m learner.MemberMetadata) []byte {
	t.Helper()
	m.ID = workerID
	data, err := b.codec.AppendMember(nil, m)
	require.NoError(t, err)
	return data
}

// balance runs the leader's side on the given members and returns each
// member's partitions and decoded assignment (its Assigned from the
// partitions, as members read it), by member ID.
func (b *Balancer) balance(t testing.TB, members []kmsg.JoinGroupResponseMember, counts map[string]int32) (map[string]map[string][]int32, map[string]learner.Assignment, Round) {
	t.Helper()
	var round Round
	b.hooks.Rebalanced = func(r Round) { round = r }
	gb, _, err := b.MemberBalancer(members)
	require.NoError(t, err)
	into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
	require.NoError(t, err, "BalanceOrError")
	tasks := b.Tasks()
	assert.Empty(t, learnertest.Check(tasks, b.assignor.Options(), round.Members, round.Planned), "learnertest.Check of Assign's plan")
	assert.Empty(t, learnertest.CheckRound(tasks, round.Members, round.Assignments, round.Withheld), "learnertest.CheckRound of what was sent")
	assert.Empty(t, newOverlaps(t, members, into.IntoSyncAssignment()), "partitions sent to a member while another member owns them")
	parts := map[string]map[string][]int32{}
	tags := map[string]learner.Assignment{}
	for _, sa := range into.IntoSyncAssignment() {
		var ka kmsg.ConsumerMemberAssignment
		require.NoError(t, ka.ReadFrom(sa.MemberAssignment))
		parts[sa.MemberID] = map[string][]int32{}
		for _, at := range ka.Topics {
			parts[sa.MemberID][at.Topic] = at.Partitions
		}
		as, err := b.codec.DecodeAssignment(ka.UserData)
		require.NoError(t, err)
		as.Assigned = b.topo.tasksOf(parts[sa.MemberID])
		tags[sa.MemberID] = as
	}
	return parts, tags, round
}

// newOverlaps returns the partitions the plan gives a member that did not
// own them while another member reports owning them: Kafka cannot make that
// member stop first, so both would consume them in the same generation.
// (Kafka's own cooperative assignors refuse such a plan, see Java's
// ConsumerCoordinator.validateCooperativeAssignment.)
func newOverlaps(t testing.TB, members []kmsg.JoinGroupResponseMember, plan []kmsg.SyncGroupRequestGroupAssignment) []string {
	t.Helper()
	owners := map[string]map[string]bool{} // "topic-partition" -> its owners
	for _, m := range members {
		var meta kmsg.ConsumerMemberMetadata
		require.NoError(t, meta.ReadFrom(m.ProtocolMetadata))
		for _, op := range meta.OwnedPartitions {
			for _, p := range op.Partitions {
				tp := fmt.Sprintf("%s-%d", op.Topic, p)
				if owners[tp] == nil {
					owners[tp] = map[string]bool{}
				}
				owners[tp][m.MemberID] = true
			}
		}
	}
	var overlaps []string
	for _, sa := range plan {
		var ka kmsg.ConsumerMemberAssignment
		require.NoError(t, ka.ReadFrom(sa.MemberAssignment))
		for _, at := range ka.Topics {
			for _, p := range at.Partitions {
				tp := fmt.Sprintf("%s-%d", at.Topic, p)
				if !owners[tp][sa.MemberID] && len(owners[tp]) > 0 {
					overlaps = append(overlaps, fmt.Sprintf("%s to %s, owned by %v", tp, sa.MemberID, slices.Sorted(maps.Keys(owners[tp]))))
				}
			}
		}
	}
	return overlaps
}

var testCounts = map[string]int32{"orders": 3, "payments": 3, "clicks": 2}

// everything is every partition of testTopology.
var everything = map[string][]int32{"orders": {0, 1, 2}, "payments": {0, 1, 2}, "clicks": {0, 1}}

// TestLeaderHandsReleasedTaskToReadyLearner: S1 released 0_0 at this join
// (it reports 0_0 revoked and leaves its partitions out of its owned ones)
// and S2's learner of 0_0 is ready: S2 gets 0_0's partitions in this very
// rebalance.
func TestLeaderHandsReleasedTaskToReadyLearner(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	parts, tags, round := b.balance(t, []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{Revoked: []string{"0_0"}}),
			map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {0, 1}}),
		b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}, Ready: []string{"0_0"}}), nil),
	}, testCounts)
	assert.Equal(t, []int32{0}, parts["S2"]["orders"], "S2's orders")
	assert.Equal(t, []int32{0}, parts["S2"]["payments"], "S2's payments")
	assert.Contains(t, tags["S2"].Assigned, "0_0", "S2's active tasks")
	assert.NotContains(t, tags["S2"].Learning, "0_0", "S2's learning after the promotion")
	assert.NotContains(t, tags["S1"].Assigned, "0_0", "S1's active tasks")
	assert.NotContains(t, round.Deferred, "0_0", "Round.Deferred")
}

// TestLeaderGivesReleasedTaskBack: S1 released 0_0 but S2's learner is not
// ready: S1 gets 0_0 back, still tagged learned, and S2 keeps learning.
func TestLeaderGivesReleasedTaskBack(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	_, tags, round := b.balance(t, []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{Revoked: []string{"0_0"}}),
			map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {0, 1}}),
		b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}}), nil),
	}, testCounts)
	assert.Contains(t, tags["S1"].Assigned, "0_0", "S1's active tasks")
	assert.Contains(t, tags["S1"].Learned, "0_0", "S1's learned tags")
	assert.Contains(t, tags["S2"].Learning, "0_0", "S2's learning")
	// Balancing moves stateless 1_0 to S2, which S1 still owns: deferred.
	assert.Equal(t, []string{"1_0"}, round.Deferred, "Round.Deferred")
}

// TestLeaderIgnoresStaleReadiness: S1 released 0_0 at this join, and S2,
// whose learner of 0_0 is ready, last joined a generation before S1's: a
// static member that missed this join, listed by the broker with its last
// report (or one back after missing a join: the leader cannot tell). S2
// gets 0_0 to learn, S1 gets it back tagged learned, and S2's report as
// the Round gives it says nothing ready; a lag beyond AcceptableLag stays.
// Before: S2 got 0_0, whether its report listed it ready or gave a lag
// within AcceptableLag, and while S2 was away 0_0 ran nowhere
// (TestStaticLearnerMissesJoin).
func TestLeaderIgnoresStaleReadiness(t *testing.T) {
	for name, s2 := range map[string]learner.MemberMetadata{
		"ready": {Learning: []string{"0_0"}, Ready: []string{"0_0"}},
		"lag":   {Learning: []string{"0_0", "0_1"}, Lag: []learner.TaskLag{{Task: "0_0", Lag: 3}, {Task: "0_1", Lag: 50}}},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := New(Config{Subtopologies: testTopology, Options: learner.Options{AcceptableLag: 10}})
			require.NoError(t, err)
			_, tags, round := b.balance(t, []kmsg.JoinGroupResponseMember{
				b.joinMemberAt("S1", 5, b.encodeMember(t, learner.MemberMetadata{Revoked: []string{"0_0"}}),
					map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {0, 1}}),
				b.joinMemberAt("S2", 4, b.encodeMember(t, s2), nil),
			}, testCounts)
			assert.Contains(t, tags["S1"].Assigned, "0_0", "S1's active tasks")
			assert.Contains(t, tags["S1"].Learned, "0_0", "S1's learned tags")
			assert.Contains(t, tags["S2"].Learning, "0_0", "S2's learning")
			assert.Empty(t, round.Members[1].Ready, "S2's Ready in the Round")
			assert.NotContains(t, round.Members[1].Lag, learner.TaskLag{Task: "0_0", Lag: 3}, "S2's lags in the Round")
			if name == "lag" {
				assert.Contains(t, round.Members[1].Lag, learner.TaskLag{Task: "0_1", Lag: 50}, "S2's lags in the Round")
			}
		})
	}
}

// TestDropReadinessUnsortedLearning: a member of another topology sends
// the tasks its topology lacks by name, and the leader's decoder lists
// those in the order sent, so a stale report's Learning may be out of
// order. Its lags within AcceptableLag of learner tasks go all the same
// (a binary search of the unsorted list missed task 2, which stayed
// ready); a lag of a task it does not learn stays.
func TestDropReadinessUnsortedLearning(t *testing.T) {
	b, err := New(Config{Subtopologies: testTopology, Options: learner.Options{AcceptableLag: 10}})
	require.NoError(t, err)
	mm := learner.IndexedMember{Learning: []int32{5, 2}, Ready: []int32{5}, Lag: []learner.IndexedLag{{Task: 2, Lag: 3}, {Task: 5, Lag: 3}, {Task: 7, Lag: 3}}}
	got := b.dropReadiness(mm)
	assert.Empty(t, got.Ready, "Ready")
	assert.Equal(t, []learner.IndexedLag{{Task: 7, Lag: 3}}, got.Lag, "lags")
	assert.Len(t, mm.Lag, 3, "the report's own lags, which dropReadiness must not edit")
}

// TestLeaderDefersOwnedTasks: S1 still owns 0_0 (its release failed) while
// S2's learner is ready, and balancing moves stateless 1_0 to S2. Kafka
// cannot make S1 stop first, so S1 keeps both for one generation, tagged
// learned, and S2 learns both; in the next rebalance (which S1 starts, see
// TestMemberSideHooks) S1 releases them and S2 gets them.
func TestLeaderDefersOwnedTasks(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	ready := b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}, Ready: []string{"0_0"}})
	parts, tags, round := b.balance(t, []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{}), everything),
		b.joinMember("S2", ready, nil),
	}, testCounts)
	assert.Equal(t, []string{"0_0", "1_0"}, round.Deferred, "Round.Deferred")
	assert.Empty(t, parts["S2"], "S2's partitions while S1 owns them")
	assert.Equal(t, []string{"0_0", "1_0"}, tags["S2"].Learning, "S2's learning")
	assert.Equal(t, []string{"0_0", "0_1", "0_2", "1_0", "1_1"}, tags["S1"].Assigned, "S1's active tasks")
	assert.Equal(t, []string{"0_0", "1_0"}, tags["S1"].Learned, "S1's learned tags")
	assert.Contains(t, round.Planned[1].Assigned, "0_0", "Assign's plan for S2")

	// Next rebalance: S1 released both.
	parts, tags, round = b.balance(t, []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{Revoked: []string{"0_0", "1_0"}}),
			map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {1}}),
		b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0", "1_0"}, Ready: []string{"0_0"}}), nil),
	}, testCounts)
	assert.Empty(t, round.Deferred, "Round.Deferred in the next rebalance")
	assert.Equal(t, []string{"0_0", "1_0"}, tags["S2"].Assigned, "S2's active tasks in the next rebalance")
	assert.Equal(t, map[string][]int32{"orders": {0}, "payments": {0}, "clicks": {0}}, parts["S2"], "S2's partitions")
}

// TestLeaderFallsBackOnOwnedPartitions: a member whose user data does not
// decode (garbage, or another topology) still owns what Kafka says it owns,
// and one from another topology keeps its leaving flag.
func TestLeaderFallsBackOnOwnedPartitions(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	other := newTestBalancer(t, []Subtopology{{Topics: []string{"orders", "payments"}, Partitions: 3, Stateful: true}})
	_, tags, round := b.balance(t, []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", []byte("garbage"), map[string][]int32{"orders": {0, 1, 2}, "payments": {0, 1, 2}}),
		b.joinMember("S2", other.encodeMember(t, learner.MemberMetadata{Assigned: []string{"0_0"}, Leaving: true}),
			map[string][]int32{"clicks": {0, 1}}),
	}, testCounts)
	assert.Equal(t, 2, round.Undecoded, "Round.Undecoded")
	assert.Equal(t, []learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"0_0", "0_1", "0_2"}},
		{ID: "S2", Assigned: []string{"1_0", "1_1"}, Leaving: true},
	}, round.Members, "Round.Members")
	assert.Equal(t, []string{"0_0", "0_1", "0_2"}, tags["S1"].Assigned, "S1's active tasks")
}

// TestLeaderWithholdsFromUndecodedOwner: S1's user data does not decode (a
// member of another topology in a rolling upgrade), so it never reads a
// learned tag and never releases a task. When S2's learner of 0_0 is ready,
// S1 must not keep 0_0 for a release that never comes, which would defer the
// move at every rebalance while S2's member, reported ready and not
// promoted, rejoins at once after each: nobody runs it for one generation,
// S1's kgo revokes its partitions, and the follow-up rebalance promotes S2.
func TestLeaderWithholdsFromUndecodedOwner(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	other := newTestBalancer(t, []Subtopology{{Topics: []string{"orders", "payments"}, Partitions: 3, Stateful: true}})
	for _, tc := range []struct {
		name     string
		userData []byte
	}{{"garbage", []byte("garbage")}, {"another topology", other.encodeMember(t, learner.MemberMetadata{})}} {
		name, userData := tc.name, tc.userData
		ready := b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}, Ready: []string{"0_0"}})
		parts, tags, round := b.balance(t, []kmsg.JoinGroupResponseMember{
			b.joinMember("S1", userData, everything),
			b.joinMember("S2", ready, nil),
		}, testCounts)
		require.Equal(t, 1, round.Undecoded, "%s: Round.Undecoded", name)
		assert.Contains(t, round.Withheld, "0_0", "%s: Round.Withheld", name)
		assert.NotContains(t, tags["S1"].Assigned, "0_0", "%s: S1's active tasks: kept for a release S1 never makes", name)
		assert.NotContains(t, parts["S1"]["orders"], int32(0), "%s: S1's partitions", name)
		assert.Contains(t, tags["S2"].Learning, "0_0", "%s: S2's learning", name)
		assert.Empty(t, parts["S2"], "%s: S2's partitions while S1 owns them", name)

		// The follow-up: S1 revoked 0_0's partitions.
		parts, tags, round = b.balance(t, []kmsg.JoinGroupResponseMember{
			b.joinMember("S1", userData, map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {0, 1}}),
			b.joinMember("S2", ready, nil),
		}, testCounts)
		assert.Contains(t, tags["S2"].Assigned, "0_0", "%s: S2's active tasks in the follow-up", name)
		assert.Equal(t, []int32{0}, parts["S2"]["orders"], "%s: S2's orders partitions in the follow-up", name)
	}
}

// TestLeaderToleratesContradictions: a member whose user data contradicts
// its owned partitions and a zombie still claiming partitions that moved on
// do not fail the rebalance, steal tasks or hold up their current owner.
// (User data cannot contradict itself: the wire codec refuses to encode or
// decode that.)
func TestLeaderToleratesContradictions(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	parts, _, round := b.balance(t, []kmsg.JoinGroupResponseMember{
		// Learns 0_0 while owning it.
		b.joinMemberAt("S1", 5, b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0", "0_1"}, Ready: []string{"0_1"}}),
			map[string][]int32{"orders": {0}, "payments": {0}}),
		// A zombie from generation 3 still claims 0_0 and 1_0.
		b.joinMemberAt("S2", 3, b.encodeMember(t, learner.MemberMetadata{}), map[string][]int32{"orders": {0}, "payments": {0}, "clicks": {0}}),
	}, testCounts)
	assert.Equal(t, []learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"0_0"}, Learning: []string{"0_1"}, Ready: []string{"0_1"}},
		{ID: "S2", Assigned: []string{"1_0"}},
	}, round.Members, "Round.Members")
	assert.NotContains(t, round.Deferred, "0_0", "Round.Deferred")
	assert.Contains(t, parts["S1"]["orders"], int32(0), "S1 keeps 0_0")
	assert.NotContains(t, parts["S2"]["orders"], int32(0), "the zombie S2 loses 0_0")
}

// TestLeaderKeepsClaimsOnTopicsMismatch: when the cluster's topics do not
// match the topology (a partition added to an input topic, a topic
// missing), the leader does not fail the rebalance, which would make kgo
// take its tasks and hold the others in a join loop. The tasks of the
// subtopology that differs stay with the members that claim them (S2 gets
// back the 0_2 it released; S1's ready learner of 0_1 stops rather than
// wait for a promotion that cannot come; with clicks differing, nobody gets
// 1_1, which nobody claims), the other subtopology's follow Assign's rules
// (1_1 goes to S2, or S1's ready learner takes 0_1 over), and Round.Err
// says why.
func TestLeaderKeepsClaimsOnTopicsMismatch(t *testing.T) {
	subtopology0Differs := map[string]learner.Assignment{
		"S1": {MemberID: "S1", Assigned: []string{"0_0", "1_0"}, Learning: []string{"0_2"}},
		"S2": {MemberID: "S2", Assigned: []string{"0_1", "0_2", "1_1"}, Standby: []string{"0_0"}},
	}
	for _, c := range []struct {
		counts map[string]int32
		topic  string // named by Round.Err
		want   map[string]learner.Assignment
	}{
		{map[string]int32{"orders": 4, "payments": 3, "clicks": 2}, "orders", subtopology0Differs},
		{map[string]int32{"orders": 3, "clicks": 2}, "payments", subtopology0Differs},
		// Subtopology 0 follows Assign: S1's ready learner of 0_1 takes
		// it once S2, told it is learned, releases it (the hand-over
		// defers it), S2 gives 0_2 to S1's learner the same way, and S2's
		// standby of 0_0 learns it to even the loads.
		{map[string]int32{"orders": 3, "payments": 3, "clicks": 3}, "clicks", map[string]learner.Assignment{
			"S1": {MemberID: "S1", Assigned: []string{"0_0", "1_0"}, Learning: []string{"0_1", "0_2"}, Learned: []string{"0_0"}},
			"S2": {MemberID: "S2", Assigned: []string{"0_1", "0_2"}, Learning: []string{"0_0"}, Learned: []string{"0_1", "0_2"}},
		}},
	} {
		b := newTestBalancer(t, testTopology)
		var round Round
		b.hooks.Rebalanced = func(r Round) { round = r }
		s1 := learner.MemberMetadata{Learning: []string{"0_1", "0_2"}, Ready: []string{"0_1"}}
		s2 := learner.MemberMetadata{Revoked: []string{"0_2"}, Standby: []string{"0_0"}}
		members := []kmsg.JoinGroupResponseMember{
			b.joinMember("S1", b.encodeMember(t, s1), map[string][]int32{"orders": {0}, "payments": {0}, "clicks": {0}}),
			b.joinMember("S2", b.encodeMember(t, s2), map[string][]int32{"orders": {1}, "payments": {1}}),
		}
		gb, _, err := b.MemberBalancer(members)
		require.NoError(t, err)
		plan, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(c.counts)
		require.NoError(t, err, "BalanceOrError(%v)", c.counts)
		require.ErrorIs(t, round.Err, ErrTopicsMismatch, "Round.Err with counts %v", c.counts)
		assert.Contains(t, round.Err.Error(), `"`+c.topic+`"`, "Round.Err with counts %v names the topic", c.counts)
		sent := map[string]learner.Assignment{}
		for _, sa := range plan.IntoSyncAssignment() {
			var ka kmsg.ConsumerMemberAssignment
			require.NoError(t, ka.ReadFrom(sa.MemberAssignment))
			parts := map[string][]int32{}
			for _, at := range ka.Topics {
				parts[at.Topic] = at.Partitions
			}
			as, err := b.codec.DecodeAssignment(ka.UserData)
			require.NoError(t, err)
			as.MemberID, as.Assigned = sa.MemberID, b.topo.tasksOf(parts)
			sent[sa.MemberID] = as
		}
		assert.Equal(t, c.want, sent, "assignments sent with counts %v", c.counts)
		assert.Empty(t, newOverlaps(t, members, plan.IntoSyncAssignment()), "partitions sent to a member while another member owns them")
	}
}

// syncBytes encodes what the leader sends one member: its active tasks as
// partitions, its tags in the user data (see assignmentUserData).
func (b *Balancer) syncBytes(t testing.TB, as learner.Assignment) []byte {
	t.Helper()
	ka := kmsg.NewConsumerMemberAssignment()
	ka.Topics = b.partitionsOf(as.Assigned)
	var err error
	var stale []string // revoked tasks the topology lacks
	for _, id := range as.Revoked {
		if b.assignor.TaskIndex(id) < 0 {
			stale = append(stale, id)
		}
	}
	ka.UserData, err = b.assignmentUserData(learner.IndexedAssignment{Learned: b.taskIndices(as.Learned), Learning: b.taskIndices(as.Learning),
		Revoked: b.taskIndices(as.Revoked), Standby: b.taskIndices(as.Standby), Stale: stale})
	require.NoError(t, err)
	return ka.AppendTo(nil)
}

// TestMemberSideHooks follows one member through an assignment, the end of
// its session (it releases its learned task), its join (which leaves the
// released task's partitions out), the leader handing the task back, a
// release whose StopActive fails, and a lost session. Hooks run only from
// kgo's callbacks, once per change, stops before starts; nothing runs
// inside JoinGroupMetadata or ParseSyncAssignment.
func TestMemberSideHooks(t *testing.T) {
	var events []string
	failStop := false
	record := func(what string) func(string) { return func(task string) { events = append(events, what+" "+task) } }
	b, err := New(Config{Subtopologies: testTopology, Hooks: Hooks{
		StartActive: record("start"),
		StopActive: func(task string) error {
			events = append(events, "stop "+task)
			if failStop {
				return errors.New("flush failed")
			}
			return nil
		},
		LoseActive:    record("lose"),
		StartLearning: record("learn"), StopLearning: record("unlearn"),
		StartStandby: record("standby"), StopStandby: record("unstandby"),
	}})
	require.NoError(t, err)
	expect := func(step string, want ...string) {
		t.Helper()
		assert.Equal(t, want, events, "%s: hooks", step)
		events = nil
	}
	ctx := context.Background()
	topics := []string{"clicks", "orders", "payments"}
	join := func(owned map[string][]int32) (kmsg.ConsumerMemberMetadata, learner.MemberMetadata) {
		t.Helper()
		var meta kmsg.ConsumerMemberMetadata
		require.NoError(t, meta.ReadFrom(b.JoinGroupMetadata(topics, owned, 7)))
		m, err := b.codec.DecodeMember(meta.UserData)
		require.NoError(t, err)
		return meta, m
	}
	sync := func(as learner.Assignment) map[string][]int32 {
		t.Helper()
		parts, err := b.ParseSyncAssignment(b.syncBytes(t, as))
		require.NoError(t, err)
		return parts
	}

	parts := sync(learner.Assignment{Assigned: []string{"0_0", "1_0"}, Learned: []string{"0_0"}, Learning: []string{"0_1", "1_1"}, Standby: []string{"0_2"}})
	assert.Equal(t, map[string][]int32{"orders": {0}, "payments": {0}, "clicks": {0}}, parts, "ParseSyncAssignment partitions")
	expect("sync (hooks wait for the session)")
	b.PartitionsAssigned(ctx, nil, parts)
	// 1_1 is a stateless learner: nothing to replay, no hook.
	expect("session start", "learn 0_1", "standby 0_2", "start 0_0", "start 1_0")

	b.PartitionsRevoked(ctx, nil, nil)
	expect("session end", "stop 0_0") // learned: released before the join
	meta, m := join(parts)
	expect("join")
	assert.Equal(t, learner.MemberMetadata{ID: workerID, Revoked: []string{"0_0"}, Learning: []string{"0_1", "1_1"}, Standby: []string{"0_2"}}, m, "join's user data")
	assert.Equal(t, int32(7), meta.Generation, "join's generation")
	owned := map[string][]int32{}
	for _, op := range meta.OwnedPartitions {
		owned[op.Topic] = op.Partitions
	}
	assert.Equal(t, map[string][]int32{"clicks": {0}}, owned, "owned partitions without the released 0_0")

	// The learner was not ready: the leader hands 0_0 back, still learned.
	parts = sync(learner.Assignment{Assigned: []string{"0_0", "1_0"}, Learned: []string{"0_0"}, Learning: []string{"0_1", "1_1"}, Standby: []string{"0_2"}})
	b.PartitionsAssigned(ctx, nil, map[string][]int32{})
	expect("task handed back", "start 0_0")

	// The next release fails: the member keeps 0_0 and reports it owned.
	failStop = true
	b.PartitionsRevoked(ctx, nil, nil)
	expect("failed release", "stop 0_0", "start 0_0")
	meta, m = join(parts)
	assert.Empty(t, m.Revoked, "join after a failed release: revoked")
	assert.Len(t, meta.OwnedPartitions, 3, "join after a failed release: owned topics")

	parts = sync(learner.Assignment{Assigned: []string{"0_0", "1_0"}, Learning: []string{"0_1"}, Standby: []string{"0_2"}})
	b.PartitionsAssigned(ctx, nil, nil)
	expect("kept") // 0_0 still runs: no start; 1_1 is stateless: no hook
	b.PartitionsLost(ctx, nil, parts)
	expect("lost session", "lose 0_0", "lose 1_0")
	_, m = join(nil)
	assert.Equal(t, learner.MemberMetadata{ID: workerID, Learning: []string{"0_1"}, Standby: []string{"0_2"}}, m, "join after a lost session keeps the learner and standby")
}

// TestMemberRefusesUnknownTags: a leader with the member's topology (same
// fingerprint) that tags tasks the topology lacks (the wire format carries
// them by name) is buggy or hostile: the member must not start learners or
// standbys of tasks it has no partitions for. It drops the tags, as for user
// data that does not decode, and runs what Kafka assigned. A revoked task
// the topology lacks is not such a tag: the leader sends back the stale tasks
// a member reported.
func TestMemberRefusesUnknownTags(t *testing.T) {
	for _, c := range []struct {
		name string
		as   learner.Assignment
		want []string
	}{
		{"unknown learner", learner.Assignment{Learning: []string{"0_1", "7_0"}}, []string{"start 0_0"}},
		{"unknown standby", learner.Assignment{Learning: []string{"0_1"}, Standby: []string{"9_9"}}, []string{"start 0_0"}},
		{"unknown learned", learner.Assignment{Assigned: []string{"8_8"}, Learned: []string{"8_8"}, Standby: []string{"0_2"}}, []string{"start 0_0"}},
		{"stale revoked", learner.Assignment{Revoked: []string{"7_0"}, Learning: []string{"0_1"}}, []string{"learn 0_1", "start 0_0"}},
	} {
		var events []string
		record := func(what string) func(string) { return func(task string) { events = append(events, what+" "+task) } }
		b, err := New(Config{Subtopologies: testTopology, Hooks: Hooks{
			StartActive: record("start"), StartLearning: record("learn"), StartStandby: record("standby"),
		}})
		require.NoError(t, err)
		c.as.MemberID = workerID
		ka := kmsg.NewConsumerMemberAssignment()
		ka.Topics = b.partitionsOf([]string{"0_0"})
		ka.UserData, err = b.codec.AppendAssignment(nil, c.as)
		require.NoError(t, err, "%s: AppendAssignment", c.name)
		parts, err := b.ParseSyncAssignment(ka.AppendTo(nil))
		require.NoError(t, err, "%s: ParseSyncAssignment", c.name)
		b.PartitionsAssigned(context.Background(), nil, parts)
		assert.Equal(t, c.want, events, "%s: hooks", c.name)
	}
}

// A member that called Leave and then loses its session (heartbeat answered
// UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION, or a JoinGroup that outlasts the
// session, both ordinary on a real broker) must still be leaving: its next
// join must say so, and its deadline must still shut it down.
func TestLeaveSurvivesLostSession(t *testing.T) {
	var shutdowns atomic.Int32
	b, err := New(Config{Subtopologies: testTopology, Hooks: Hooks{Shutdown: func() { shutdowns.Add(1) }}})
	require.NoError(t, err)
	ctx := context.Background()
	parts, err := b.ParseSyncAssignment(b.syncBytes(t, learner.Assignment{Assigned: []string{"0_0", "1_0"}}))
	require.NoError(t, err)
	b.PartitionsAssigned(ctx, nil, parts)

	b.Leave(time.Now().Add(200 * time.Millisecond))
	b.PartitionsLost(ctx, nil, parts) // the session is lost during the hand-over

	var meta kmsg.ConsumerMemberMetadata
	require.NoError(t, meta.ReadFrom(b.JoinGroupMetadata([]string{"clicks", "orders", "payments"}, nil, -1)))
	m, err := b.codec.DecodeMember(meta.UserData)
	require.NoError(t, err)
	assert.True(t, m.Leaving, "the rejoin after a lost session reports the member leaving")

	time.Sleep(400 * time.Millisecond)
	assert.Equal(t, int32(1), shutdowns.Load(), "Shutdown calls once the Leave deadline passed")
}

// TestLeaderSplitClaims: members that own some of a task's partitions each
// (after a topology change that put two topics in one subtopology, say:
// members of the old topology owned their partitions as separate tasks)
// claim the task together, and none owns it whole. Whoever Assign gives the
// task to, no member may be sent a partition another member still owns:
// Kafka cannot make that member stop first. Nobody runs the task for one
// generation; the claimers lose their partitions and kgo's follow-up
// rebalance assigns the task whole.
func TestLeaderSplitClaims(t *testing.T) {
	rest := map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {0, 1}}
	for _, c := range []struct {
		name     string
		s1Gen    int32 // S1's generation; the others synced in 2
		learner  string
		s1, s2   map[string][]int32
		withheld bool
		keeper   string // who runs 0_0 if it is not withheld
	}{
		// S1 owns orders-0 and S2 payments-0; Assign gives 0_0 to S1, to
		// S2 or to S3 (whose learner of 0_0 makes it the warmest).
		{name: "to a claimer", s1Gen: 2, learner: "S1", s1: map[string][]int32{"orders": {0}}, s2: map[string][]int32{"payments": {0}}, withheld: true},
		{name: "to the other claimer", s1Gen: 2, learner: "S2", s1: map[string][]int32{"orders": {0}}, s2: map[string][]int32{"payments": {0}}, withheld: true},
		{name: "to a third member", s1Gen: 2, learner: "S3", s1: map[string][]int32{"orders": {0}}, s2: map[string][]int32{"payments": {0}}, withheld: true},
		// A zombie S1 (generation 1) still claims orders-0.
		{name: "beside a zombie", s1Gen: 1, learner: "S2", s1: map[string][]int32{"orders": {0}}, s2: map[string][]int32{"payments": {0}}, withheld: true},
		// S2 owns 0_0 whole and S1 part of it: S2 keeps it for S3.
		{name: "whole beside part", s1Gen: 2, learner: "S3", s1: map[string][]int32{"orders": {0}}, s2: map[string][]int32{"orders": {0}, "payments": {0}}, keeper: "S2"},
		// S1, alone, owns part of 0_0 (a topology change added payments to
		// its subtopology, say): it keeps the task for S3, with payments-0,
		// which nobody owns.
		{name: "one part", s1Gen: 2, learner: "S3", s1: map[string][]int32{"orders": {0}}, keeper: "S1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTestBalancer(t, testTopology)
			report := func(id string) []byte {
				if id == c.learner {
					return b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}, Ready: []string{"0_0"}})
				}
				return b.encodeMember(t, learner.MemberMetadata{})
			}
			parts, _, round := b.balance(t, []kmsg.JoinGroupResponseMember{
				b.joinMemberAt("S1", c.s1Gen, report("S1"), c.s1),
				b.joinMemberAt("S2", 2, report("S2"), c.s2),
				b.joinMemberAt("S3", 2, report("S3"), rest),
			}, testCounts)
			assert.Contains(t, round.Deferred, "0_0", "Round.Deferred")
			if c.withheld {
				assert.Contains(t, round.Withheld, "0_0", "Round.Withheld")
				for id, ps := range parts {
					assert.NotContains(t, ps["payments"], int32(0), "%s's payments", id)
				}
				assert.True(t, round.FollowUp, "Round.FollowUp: the claimers lose partitions")
				return
			}
			assert.NotContains(t, round.Withheld, "0_0", "Round.Withheld")
			assert.Contains(t, parts[c.keeper]["payments"], int32(0), "%s's payments", c.keeper)
			assert.Contains(t, parts[c.keeper]["orders"], int32(0), "%s's orders", c.keeper)
		})
	}
}

// TestLeaderKeeperDoesNotLearn: a member that keeps a deferred task runs it,
// tagged learned, for one more generation; it must not also be sent the
// task to learn, an assignment its Worker refuses ("in both assigned and
// learning"): its ParseSyncAssignment fails, and kgo drops its session
// (OnPartitionsLost) and rejoins. S1, the only claimer of 0_0, owns part of
// it (orders-0, assigned alone by a leader of another topology, see
// TestLeaderSplitClaims); S2, leaving, released 0_0 at this join. Assign
// keeps 0_0 on S2 with S1 as its learner; S1 still owns orders-0, so S1
// keeps the task for a generation and S2 learns it. (Found by fuzzing the
// leader with random reports.)
func TestLeaderKeeperDoesNotLearn(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	members := []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{}), map[string][]int32{"orders": {0, 2}}),
		b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{Revoked: []string{"0_0"}, Leaving: true}), nil),
	}
	b.balance(t, members, testCounts) // the shared checker's rules on what was sent
	gb, _, err := b.MemberBalancer(members)
	require.NoError(t, err)
	into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(testCounts)
	require.NoError(t, err)
	for _, sa := range into.IntoSyncAssignment() { // as each member applies it
		member := newTestBalancer(t, testTopology)
		parts, err := member.ParseSyncAssignment(sa.MemberAssignment)
		require.NoError(t, err, "%s applies its assignment", sa.MemberID)
		if sa.MemberID == "S1" {
			assert.Equal(t, map[string][]int32{"orders": {0, 1, 2}, "payments": {0, 1, 2}, "clicks": {0, 1}}, parts, "S1 keeps 0_0 and gets the rest")
			assert.NotContains(t, member.synced.Learning, "0_0", "S1's learner tasks")
		} else {
			assert.Contains(t, member.synced.Learning, "0_0", "S2's learner tasks")
		}
	}
}
