package kgolearner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// plainMember is a member of a group of TestPartialTaskPaused and
// TestTopicsMismatchKeepsTasks: it runs the tasks its hooks start and notes
// every record it polls of a task it does not run.
type plainMember struct {
	b  *kgolearner.Balancer
	cl *kgo.Client

	mu      sync.Mutex
	running map[string]bool
	strays  []string // records polled of a task not running

	stop func() // closes the client, once; the test's cleanup calls it too
}

func startPlainMember(t *testing.T, c *kfake.Cluster, name string, topology []kgolearner.Subtopology, rebalanced func(kgolearner.Round)) *plainMember {
	t.Helper()
	m := &plainMember{running: map[string]bool{}}
	set := func(running bool) func(string) {
		return func(task string) { m.mu.Lock(); m.running[task] = running; m.mu.Unlock() }
	}
	b, err := kgolearner.New(kgolearner.Config{Subtopologies: topology, Hooks: kgolearner.Hooks{
		StartActive: set(true),
		StopActive:  func(task string) error { set(false)(task); return nil },
		LoseActive:  set(false),
		Rebalanced:  rebalanced,
	}})
	require.NoError(t, err)
	cl, err := kgo.NewClient(append(b.Opts(),
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.ClientID(name),
		kgo.ConsumerGroup("learner-mixed"),
		kgo.HeartbeatInterval(heartbeatInterval),
		kgo.SessionTimeout(sessionTimeout),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.WithLogger(testLogger{t, name}),
	)...)
	require.NoError(t, err)
	b.Bind(cl)
	m.b, m.cl = b, cl
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fetches := cl.PollFetches(ctx)
			if fetches.IsClientClosed() {
				return
			}
			fetches.EachRecord(func(r *kgo.Record) {
				task, _ := b.TaskOf(r.Topic, r.Partition)
				m.mu.Lock()
				if !m.running[task] {
					m.strays = append(m.strays, fmt.Sprintf("%s/%d@%d (task %q)", r.Topic, r.Partition, r.Offset, task))
				}
				m.mu.Unlock()
			})
			cl.AllowRebalance()
		}
	}()
	m.stop = sync.OnceFunc(func() { cancel(); <-done; cl.Close() })
	t.Cleanup(m.stop)
	return m
}

// tasks returns the tasks m runs, sorted.
func (m *plainMember) tasks() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for task, r := range m.running {
		if r {
			out = append(out, task)
		}
	}
	slices.Sort(out)
	return out
}

func (m *plainMember) runs() int { return len(m.tasks()) }

// TestPartialTaskPaused: in a rolling upgrade that co-partitions two topics
// (the old topology has a subtopology per topic, the new one subtopology of
// both), the old version's leader assigns a new member partitions of its
// tasks, which are parts of the new member's: orders-p without payments-p,
// say. The new member cannot run such a task; kgo must not fetch for it,
// or its poll returns records of a task it does not run, which the
// application can only drop and kgo's autocommit then commits past. The
// member keeps the partitions (kgo's view, which the leader reads) paused
// until the task is whole.
func TestPartialTaskPaused(t *testing.T) {
	old := []kgolearner.Subtopology{{Topics: []string{"orders"}, Partitions: 3}, {Topics: []string{"payments"}, Partitions: 3}}
	cur := []kgolearner.Subtopology{{Topics: []string{"orders", "payments"}, Partitions: 3}}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond), kfake.SeedTopics(3, "orders", "payments"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	p := startProducer(t, c, cur)
	t.Cleanup(func() { p.stop() })

	leader := startPlainMember(t, c, "old", old, nil) // the first member leads
	require.Eventually(t, func() bool { return leader.runs() == 6 }, waitTimeout, 10*time.Millisecond, "the old member runs every task")
	upgraded := startPlainMember(t, c, "new", cur, nil)
	require.Eventually(t, func() bool { return leader.runs() < 6 }, waitTimeout, 10*time.Millisecond, "the old leader hands tasks to the new member")
	time.Sleep(time.Second) // the new member polls what kgo fetches for it
	upgraded.mu.Lock()
	assert.Empty(t, upgraded.strays, "records the new member polled of tasks it does not run")
	upgraded.mu.Unlock()
	// The old leader spreads its subtopologies: orders-0, payments-0 and
	// orders-1 move, so the new member runs task 0_0 and holds half of 0_1.
	assert.Equal(t, 1, upgraded.runs(), "tasks the new member runs")
	assert.Equal(t, map[string][]int32{"orders": {1}}, upgraded.cl.PauseFetchPartitions(nil), "the new member's paused partitions")
}

// TestTopicsMismatchKeepsTasks: a partition added to an input topic makes
// the cluster differ from the topology. The leader keeps every member's
// tasks where they are and says why (Round.Err); failing the rebalance made
// kgo take the leader's tasks from it and hold the group in a join loop.
func TestTopicsMismatchKeepsTasks(t *testing.T) {
	leader, other, mismatch := mismatchPair(t, []kgolearner.Subtopology{{Topics: []string{"orders"}, Partitions: 3}})
	before := [2]int{leader.runs(), other.runs()}
	mismatch("orders", 4)
	time.Sleep(time.Second) // what a failed rebalance took from the leader, it would have lost by now
	assert.Equal(t, before, [2]int{leader.runs(), other.runs()}, "tasks each member runs, before and after the partition was added")
}

// TestTopicsMismatchMovesOtherSubtopologies: while one subtopology's
// topics differ from the cluster's, only its tasks stay where they are. A
// member leaving meanwhile hands its tasks of the other subtopology over,
// instead of leaving them unprocessed until an operator fixes the topics;
// its tasks of the subtopology that differs stay unassigned.
func TestTopicsMismatchMovesOtherSubtopologies(t *testing.T) {
	leader, other, mismatch := mismatchPair(t, []kgolearner.Subtopology{{Topics: []string{"orders"}, Partitions: 2}, {Topics: []string{"clicks"}, Partitions: 2}})
	mismatch("clicks", 3)
	var want []string
	for _, task := range leader.tasks() {
		if strings.HasPrefix(task, "1_") {
			want = append(want, task)
		}
	}
	want = append(want, "0_0", "0_1")
	slices.Sort(want)
	other.stop() // leaves the group
	require.Eventually(t, func() bool { return slices.Equal(leader.tasks(), want) }, waitTimeout, 10*time.Millisecond,
		"after m2 left, m1 runs %v, want every orders task and its own clicks tasks %v", leader.tasks(), want)
	time.Sleep(time.Second) // a clicks task wrongly moved would have started by now
	assert.Equal(t, want, leader.tasks(), "tasks m1 runs, a second after m2 left")
}

// mismatchPair starts a group of two plain members of topology (one topic
// per subtopology) that share its tasks, the first leading. mismatch raises
// a topic's partition count, as an operator would, and waits for the
// leader to report the topics' mismatch.
func mismatchPair(t *testing.T, topology []kgolearner.Subtopology) (leader, other *plainMember, mismatch func(topic string, count int32)) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	tasks := 0
	for _, s := range topology {
		require.NoError(t, c.CreateTopic(s.Topics[0], s.Partitions, nil), "create topic %s", s.Topics[0])
		tasks += int(s.Partitions)
	}
	var mismatches atomic.Int32
	rebalanced := func(r kgolearner.Round) {
		if errors.Is(r.Err, kgolearner.ErrTopicsMismatch) {
			mismatches.Add(1)
		}
	}
	leader = startPlainMember(t, c, "m1", topology, rebalanced)
	require.Eventually(t, func() bool { return leader.runs() == tasks }, waitTimeout, 10*time.Millisecond, "the first member runs every task")
	other = startPlainMember(t, c, "m2", topology, rebalanced)
	require.Eventually(t, func() bool { return other.runs() > 0 && leader.runs()+other.runs() == tasks }, waitTimeout, 10*time.Millisecond, "the second member takes tasks")
	return leader, other, func(topic string, count int32) {
		t.Helper()
		addPartitions(t, leader.cl, topic, count)
		leader.cl.ForceMetadataRefresh() // the leader rebalances when it sees the new partition
		require.Eventually(t, func() bool { return mismatches.Load() > 0 }, waitTimeout, 10*time.Millisecond, "a round reporting the topics' mismatch")
	}
}

// TestTopicsMismatchNoRejoinLoop: while the cluster's topics do not match
// the topology, the leader keeps every member's tasks, so a learner that
// reports ready is never promoted. Its member must not take that for a
// deferred move and rejoin after every rebalance (the leader stops the
// learner): the group would rebalance every heartbeat interval until an
// operator fixes the topics.
func TestTopicsMismatchNoRejoinLoop(t *testing.T) {
	g := newGroup(t, []kgolearner.Subtopology{{Topics: []string{"orders"}, Partitions: 2, Stateful: true}})
	s1 := g.add("S1", true)
	g.waitStable(s1)
	s2 := g.add("S2", false)
	g.waitFor("S2 to learn a task", func() bool { return len(s2.learning) > 0 })

	addPartitions(t, s1.cl, "orders", 3)
	s1.cl.ForceMetadataRefresh()
	mismatches := func() int {
		n := 0
		for _, r := range g.history {
			if errors.Is(r.Err, kgolearner.ErrTopicsMismatch) {
				n++
			}
		}
		return n
	}
	waitRound := func(what string, cond func() bool) {
		// Not g.waitFor: the checker judges keepClaims's plan by rules of
		// Assign's (a learner's task tagged learned on its owner).
		require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return cond() }, waitTimeout, 10*time.Millisecond, what)
	}
	waitRound("a round reporting the topics' mismatch", func() bool { return mismatches() > 0 })

	s2.readyAll()
	waitRound("a round with S2's learner ready", func() bool {
		r := g.history[len(g.history)-1]
		for _, m := range r.Members {
			if strings.HasPrefix(m.ID, "S2") && len(m.Ready) > 0 {
				return true
			}
		}
		return false
	})
	g.mu.Lock()
	before := mismatches()
	g.mu.Unlock()
	time.Sleep(20 * heartbeatInterval)
	g.mu.Lock()
	after := mismatches()
	g.mu.Unlock()
	assert.LessOrEqual(t, after-before, 1, "rounds in %v while nothing can move", 20*heartbeatInterval)
}

// addPartitions raises topic's partition count to count, as an operator
// would.
func addPartitions(t *testing.T, cl *kgo.Client, topic string, count int32) {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].ErrorCode), "CreatePartitions")
}

// TestOldOwnerHandsOverToReadyLearner plays a rolling upgrade that drops a
// subtopology (the old topology is mixedTopology, the new storyTopology).
// S1, of the old version, leads; S2, upgraded, joins, and S1 leaves to be
// upgraded, so S2 leads now. (When its leader is gone, kfake names in turn
// each member that rejoined the leader in its JoinGroup response, and the
// last one's SyncGroup counts, groups.go completeRebalance: S1 leaves when
// S2 alone remains, so that one member leads, as Kafka makes sure.) S3,
// upgraded, joins and takes its share. S4, of the old version (its
// instance restarted before its upgrade), joins, and S3 restarts: it
// leaves, and S4 takes its tasks at once, as a leaving member's; S5, S3
// back under a new member ID, learns tasks, some of them S4's, and reports
// them ready. The leader cannot read S4's user data, and S4 cannot read the
// leader's learned tag, so it never releases a task at a join: the leader
// must take S4's task from it (S4's kgo revokes and commits it) and give it
// to S5 in kgo's follow-up, not keep it on S4 at every rebalance while S5,
// reported ready and not promoted, rejoins after each.
func TestOldOwnerHandsOverToReadyLearner(t *testing.T) {
	g := newGroup(t, storyTopology)
	g.topologies["S1"], g.topologies["S4"] = mixedTopology, mixedTopology
	require.NoError(t, g.cluster.CreateTopic("clicks", mixedTopology[1].Partitions, nil))
	lastRound := func(leader string, members int) func() bool {
		return func() bool {
			return g.leader == leader && len(g.history) > 0 && len(g.history[len(g.history)-1].Members) == members
		}
	}
	s1 := g.add("S1", true)
	g.waitFor("S1 to lead alone", lastRound("S1", 1))
	s2 := g.add("S2", true)
	g.waitFor("S1 to lead S1 and S2", lastRound("S1", 2))
	s1.close()
	g.waitFor("S2 to lead alone", lastRound("S2", 1))
	s3 := g.add("S3", true)
	g.waitStable(s2, s3)
	s4 := g.add("S4", true)
	g.waitFor("S2 to lead S2 to S4", lastRound("S2", 3))
	s3.close()
	g.waitFor("S4 to run S3's tasks", func() bool { return len(g.active) == len(g.stateful) && len(s4.active) > 0 })

	s5 := g.add("S5", false)
	var fromS4 []string
	g.waitFor("S5 to learn a task S4 runs", func() bool {
		fromS4 = nil
		for task := range s5.learning {
			if g.active[task] == "S4" {
				fromS4 = append(fromS4, task)
			}
		}
		return len(fromS4) > 0
	})
	g.mu.Lock()
	before := g.rounds.n
	g.mu.Unlock()
	s5.readyAll()
	g.waitFor(fmt.Sprintf("S5 to take over %v from S4", fromS4), func() bool {
		return !slices.ContainsFunc(fromS4, func(task string) bool { return g.active[task] != "S5" })
	})
	g.waitStable(s2, s4, s5)
	g.mu.Lock()
	rounds := g.rounds.n - before
	var withheld []string
	for _, r := range g.history[before:] {
		withheld = append(withheld, r.Withheld...)
	}
	leader := g.leader
	g.mu.Unlock()
	t.Logf("%d leader rounds from S5's Ready to a stable group; withheld %v", rounds, withheld)
	assert.Equal(t, "S2", leader, "the leader")
	assert.Subset(t, withheld, fromS4, "tasks withheld from S4")
	g.finishExactly()
}
