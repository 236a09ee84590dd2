package kgolearner_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The end-to-end tests play the design document's stories on a real group:
// kgo clients, each with its own Balancer, against an in-process Kafka
// (kfake). A fake application per member records the hooks; a tracker
// checks invariants at every callback, in real time:
//
//   - no partition is owned by two clients (kgo's assigned and revoked
//     callbacks; the learner protocol must withhold a moving partition);
//   - a stateful task moves from a live member only to a member that
//     learned it and reported it ready (crashed members' tasks move at once);
//   - the hooks are consistent: no task active on two members, no task
//     started twice.
//
// kfake has no initial rebalance delay and any member may lead, so the
// tests wait for states, never for generations or a particular leader.

// storyTopology plays the document's stories: like its T1 to T5, every
// task is stateful. Two co-partitioned topics make six tasks.
var storyTopology = []kgolearner.Subtopology{
	{Topics: []string{"orders", "payments"}, Partitions: 6, Stateful: true},
}

// mixedTopology adds a stateless topic of two tasks, which move without
// learners.
var mixedTopology = []kgolearner.Subtopology{
	{Topics: []string{"orders", "payments"}, Partitions: 6, Stateful: true},
	{Topics: []string{"clicks"}, Partitions: 2},
}

const (
	waitTimeout       = 15 * time.Second
	heartbeatInterval = 100 * time.Millisecond
	// Long enough that a loaded machine (-race, 2 cores) does not expire
	// healthy sessions; the leader-crash test waits this long once.
	sessionTimeout = 2 * time.Second
)

type group struct {
	t        *testing.T
	cluster  *kfake.Cluster
	topology []kgolearner.Subtopology

	mu       sync.Mutex
	members  map[string]*member // every member ever added, dead or alive
	owner    map[string]string  // "topic/partition" -> member holding it in kgo
	active   map[string]string  // task -> member running it (hooks)
	lastOwn  map[string]string  // task -> member that ran it last
	stateful map[string]bool
	failures []string
	leader   string // member whose balancer computed the last round
	rounds   int
}

type member struct {
	name string
	g    *group
	b    *kgolearner.Balancer
	cl   *kgo.Client

	// Guarded by g.mu.
	autoReady bool
	deadline  bool // left with a deadline: may shut down with active tasks
	dead      bool // crashed, left, or lost its session
	active    map[string]bool
	learning  map[string]bool // value: reported ready
	standby   map[string]bool
	stopped   map[string]bool // learner tasks just stopped: value: was ready
	shutdown  bool
}

func newGroup(t *testing.T, topology []kgolearner.Subtopology) *group {
	t.Helper()
	var opts []kfake.Opt
	opts = append(opts, kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	for _, s := range topology {
		opts = append(opts, kfake.SeedTopics(s.Partitions, s.Topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	g := &group{t: t, cluster: c, topology: topology, members: map[string]*member{}, owner: map[string]string{},
		active: map[string]string{}, lastOwn: map[string]string{}, stateful: map[string]bool{}}
	t.Cleanup(func() {
		g.mu.Lock()
		ms := g.liveLocked()
		g.mu.Unlock()
		for _, m := range ms {
			m.cl.Close()
		}
		c.Close()
	})
	return g
}

// fail records an invariant violation; the test fails at its next check.
func (g *group) fail(format string, args ...any) {
	g.failures = append(g.failures, fmt.Sprintf(format, args...))
}

func (g *group) check() {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range g.failures {
		g.t.Error(f)
	}
	if len(g.failures) > 0 {
		g.t.FailNow()
	}
}

// add starts a member. autoReady members report a learner ready as soon as
// it starts (their replay is instant), the others when the test says so.
func (g *group) add(name string, autoReady bool) *member {
	g.t.Helper()
	m := &member{name: name, g: g, autoReady: autoReady,
		active: map[string]bool{}, learning: map[string]bool{}, standby: map[string]bool{}, stopped: map[string]bool{}}
	b, err := kgolearner.New(kgolearner.Config{
		Subtopologies: g.topology,
		Hooks: kgolearner.Hooks{
			StartActive:   m.startActive,
			StopActive:    m.stopActive,
			StartLearning: m.startLearning,
			StopLearning:  m.stopLearning,
			StartStandby:  func(t string) { g.mu.Lock(); m.standby[t] = true; g.mu.Unlock() },
			StopStandby:   func(t string) { g.mu.Lock(); delete(m.standby, t); g.mu.Unlock() },
			Shutdown:      m.shutdownHook,
			Rebalanced:    m.rebalanced,
		},
	})
	if err != nil {
		g.t.Fatal(err)
	}
	m.b = b
	g.mu.Lock() // other members' hooks read it
	for _, task := range b.Tasks() {
		g.stateful[task.ID] = task.Stateful
	}
	g.mu.Unlock()
	opts := append(b.Opts(),
		kgo.SeedBrokers(g.cluster.ListenAddrs()...),
		kgo.ClientID(name),
		kgo.ConsumerGroup("learner-e2e"),
		kgo.HeartbeatInterval(heartbeatInterval),
		kgo.SessionTimeout(sessionTimeout),
		kgo.RebalanceTimeout(5*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.owned(ps, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { m.owned(ps, false) }),
		kgo.OnPartitionsLost(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
			g.mu.Lock()
			if !m.dead && !m.shutdown {
				g.t.Logf("%s lost its session", name)
			}
			m.dead = true // from the group's view, a crash
			g.mu.Unlock()
			m.owned(ps, false)
			b.PartitionsLost(ctx, cl, ps)
		}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		g.t.Fatal(err)
	}
	m.cl = cl
	b.Bind(cl)
	g.mu.Lock()
	g.members[name] = m
	g.mu.Unlock()
	return m
}

func (m *member) owned(ps map[string][]int32, assigned bool) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	for topic, parts := range ps {
		for _, p := range parts {
			key := fmt.Sprintf("%s/%d", topic, p)
			switch prev, held := g.owner[key]; {
			case assigned && held && prev != m.name:
				g.fail("partition %s assigned to %s while %s still owns it", key, m.name, prev)
			case assigned:
				g.owner[key] = m.name
			case prev == m.name:
				delete(g.owner, key)
			}
		}
	}
}

func (m *member) startActive(task string) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if other, ok := g.active[task]; ok {
		g.fail("%s starts %s, which %s still runs", m.name, task, other)
	}
	prev := g.lastOwn[task]
	ready, learned := m.stopped[task]
	if g.stateful[task] && prev != "" && prev != m.name && !g.members[prev].dead && !(learned && ready) {
		g.fail("stateful task %s moved from live member %s to %s, which did not learn it to readiness (learner: %v)",
			task, prev, m.name, learned)
	}
	delete(m.stopped, task)
	m.active[task] = true
	g.active[task] = m.name
	g.lastOwn[task] = m.name
}

func (m *member) stopActive(task string) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if !m.active[task] {
		g.fail("%s stops %s, which it does not run", m.name, task)
	}
	delete(m.active, task)
	if g.active[task] == m.name {
		delete(g.active, task)
	}
}

func (m *member) startLearning(task string) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	m.learning[task] = false
	if m.autoReady {
		go m.ready(task)
	}
}

func (m *member) stopLearning(task string) {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	m.stopped[task] = m.learning[task]
	delete(m.learning, task)
}

// ready reports a learner task ready, as the application does when its
// replay has caught up.
func (m *member) ready(task string) {
	g := m.g
	g.mu.Lock()
	_, learning := m.learning[task]
	if learning {
		m.learning[task] = true
	}
	g.mu.Unlock()
	if learning {
		m.b.Ready(task)
	}
}

func (m *member) readyAll() {
	m.g.mu.Lock()
	m.autoReady = true
	tasks := slices.Collect(maps.Keys(m.learning))
	m.g.mu.Unlock()
	for _, t := range tasks {
		m.ready(t)
	}
}

func (m *member) shutdownHook() {
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(m.active) > 0 && !m.deadline {
		g.fail("%s shuts down with active tasks %v", m.name, slices.Sorted(maps.Keys(m.active)))
	}
	m.shutdown = true
}

func (m *member) rebalanced(r kgolearner.Round) {
	g := m.g
	g.mu.Lock()
	g.leader, g.rounds = m.name, g.rounds+1
	n := g.rounds
	g.mu.Unlock()
	var sb strings.Builder
	for _, mm := range r.Members {
		mm.ID = shortID(mm.ID)
		sb.WriteString("\n  join  " + learner.FormatMember(mm))
	}
	for _, a := range r.Assignments {
		a.MemberID = shortID(a.MemberID)
		sb.WriteString("\n  sent  " + learner.FormatAssignment(a))
	}
	g.t.Logf("round %d, leader %s, withheld %v:%s", n, m.name, r.Withheld, sb.String())
}

// shortID turns a coordinator's member ID ("S1-<uuid>") into the client ID.
func shortID(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}

// crash kills a member: the broker drops its LeaveGroup and heartbeats and
// the client closes, so the coordinator notices only when its session
// expires. The process is gone, so it runs and owns nothing any more.
func (m *member) crash() {
	g := m.g
	memberID, _ := m.cl.GroupMetadata()
	drop := func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		switch req := req.(type) {
		case *kmsg.LeaveGroupRequest:
			if req.MemberID == memberID || slices.ContainsFunc(req.Members, func(m kmsg.LeaveGroupRequestMember) bool { return m.MemberID == memberID }) {
				return nil, errors.New("crashed"), true
			}
		case *kmsg.HeartbeatRequest:
			if req.MemberID == memberID {
				return nil, errors.New("crashed"), true
			}
		}
		return nil, nil, false
	}
	g.cluster.ControlKey(int16(kmsg.LeaveGroup), drop)
	g.cluster.ControlKey(int16(kmsg.Heartbeat), drop)
	m.close()
}

// close closes a member's client, which leaves the group. Like an
// application that shuts down, it stops its tasks first; kgo revokes its
// partitions (the tracker sees that) before the leave goes out.
func (m *member) close() {
	g := m.g
	g.mu.Lock()
	m.dead = true
	for task := range m.active {
		if g.active[task] == m.name {
			delete(g.active, task)
		}
	}
	clear(m.active)
	g.mu.Unlock()
	m.cl.Close()
}

// waitFor waits until cond (called with g.mu held) holds, failing on an
// invariant violation or after waitTimeout.
func (g *group) waitFor(what string, cond func() bool) {
	g.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		g.check()
		g.mu.Lock()
		ok := cond()
		state := g.stateLocked()
		g.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("waited %v for %s; state:\n%s", waitTimeout, what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (g *group) stateLocked() string {
	var sb strings.Builder
	for _, m := range g.liveLocked() {
		fmt.Fprintf(&sb, "  %s active %v learning %v standby %v shutdown %v\n", m.name,
			slices.Sorted(maps.Keys(m.active)), m.learning, slices.Sorted(maps.Keys(m.standby)), m.shutdown)
	}
	return sb.String()
}

// stableLocked reports whether the live members are exactly staying, every
// task runs on exactly one of them, whose client owns exactly the task's
// partitions (and nobody owns any other), nobody learns, and their loads
// differ by at most one.
func (g *group) stableLocked(staying ...*member) bool {
	if len(g.active) != len(g.stateful) || !slices.Equal(g.liveLocked(), staying) {
		return false
	}
	partitions := 0
	lo, hi := len(g.stateful), 0
	for _, m := range staying {
		if len(m.learning) > 0 {
			return false
		}
		for task := range m.active {
			for topic, ps := range m.b.Partitions(task) {
				for _, p := range ps {
					if g.owner[fmt.Sprintf("%s/%d", topic, p)] != m.name {
						return false
					}
					partitions++
				}
			}
		}
		lo, hi = min(lo, len(m.active)), max(hi, len(m.active))
	}
	return partitions == len(g.owner) && hi-lo <= 1
}

// liveLocked returns the members that have not crashed or left, by name.
func (g *group) liveLocked() []*member {
	var live []*member
	for _, name := range slices.Sorted(maps.Keys(g.members)) {
		if m := g.members[name]; !m.dead {
			live = append(live, m)
		}
	}
	return live
}

func (g *group) waitStable(staying ...*member) {
	g.t.Helper()
	g.waitFor(fmt.Sprintf("a balanced group of %d members with no learners", len(staying)), func() bool { return g.stableLocked(staying...) })
}

// learningLocked returns m's learner tasks.
func (m *member) learningLocked() []string { return slices.Sorted(maps.Keys(m.learning)) }

// TestScaleUp plays "Scale Up Running Application": a stable group of three
// gains S4 and then S5. The newcomers learn tasks while the owners keep
// running them; a task moves to a newcomer only after it reports the
// learner ready, and the group ends balanced over five members.
func TestScaleUp(t *testing.T) {
	g := newGroup(t, storyTopology)
	s1, s2, s3 := g.add("S1", true), g.add("S2", true), g.add("S3", true)
	g.waitStable(s1, s2, s3)

	s4 := g.add("S4", false)
	g.waitFor("S4 to learn a task", func() bool { return len(s4.learning) > 0 })
	s5 := g.add("S5", false)
	g.waitFor("S5 to learn a task", func() bool { return len(s5.learning) > 0 })

	// Nothing moves to the newcomers while their learners are not ready,
	// however many rebalances happen (invariants are checked throughout).
	time.Sleep(10 * heartbeatInterval)
	g.mu.Lock()
	learned4 := s4.learningLocked()
	if len(s4.active) > 0 || len(s5.active) > 0 {
		t.Errorf("S4, S5 run %v, %v before reporting any learner ready, want nothing", s4.active, s5.active)
	}
	g.mu.Unlock()

	s4.readyAll()
	g.waitFor(fmt.Sprintf("S4 to take over %v", learned4), func() bool {
		for _, task := range learned4 {
			if !s4.active[task] {
				return false
			}
		}
		return true
	})
	g.mu.Lock()
	if len(s5.active) > 0 {
		t.Errorf("S5 runs %v before reporting any learner ready, want nothing", s5.active)
	}
	g.mu.Unlock()

	s5.readyAll()
	g.waitStable(s1, s2, s3, s4, s5)
	g.check()
}

// scaleDownGroup starts a balanced group of S1 to S3 whose learners S1 and
// S3 from now on report ready only when the test says so, and returns the
// tasks S2 runs.
func scaleDownGroup(t *testing.T) (g *group, s1, s2, s3 *member, handOver []string) {
	g = newGroup(t, storyTopology)
	s1, s2, s3 = g.add("S1", true), g.add("S2", true), g.add("S3", true)
	g.waitStable(s1, s2, s3)
	g.mu.Lock()
	defer g.mu.Unlock()
	s1.autoReady, s3.autoReady = false, false
	return g, s1, s2, s3, slices.Sorted(maps.Keys(s2.active))
}

// TestScaleDown plays "Scale Down Running Application": S2 announces that
// it is leaving. Its tasks get learners on S1 and S3 and move to them only
// once they are ready; S2 then has no task left, shuts down and leaves, and
// the group ends balanced over two members.
func TestScaleDown(t *testing.T) {
	g, s1, s2, s3, handOver := scaleDownGroup(t)

	s2.b.Leave(time.Time{})
	g.waitLearners(handOver, s1, s3)
	g.mu.Lock()
	for _, task := range handOver {
		if g.stateful[task] && !s2.active[task] {
			t.Errorf("S2 gave up %s before its learner was ready", task)
		}
	}
	if s2.shutdown {
		t.Errorf("S2 shut down before handing its tasks over")
	}
	g.mu.Unlock()

	s1.readyAll()
	s3.readyAll()
	g.waitFor("S2 to hand everything over and shut down", func() bool { return s2.shutdown })
	s2.close()
	g.waitStable(s1, s3)
	g.check()
}

// TestScaleDownDeadline plays time-bounded scale-down: S2 leaves with a
// deadline its learners never meet. It shuts down at the deadline with its
// tasks still running; once it has left, its tasks go to their learners at
// once, and the group ends balanced over two members.
func TestScaleDownDeadline(t *testing.T) {
	g, s1, s2, s3, handOver := scaleDownGroup(t)
	g.mu.Lock()
	s2.deadline = true
	g.mu.Unlock()

	s2.b.Leave(time.Now().Add(time.Second))
	g.waitLearners(handOver, s1, s3)
	g.waitFor("S2's deadline to shut it down", func() bool { return s2.shutdown })
	s2.close()
	g.waitFor(fmt.Sprintf("S2's tasks %v to run on their learners", handOver), func() bool {
		for _, task := range handOver {
			if who := g.active[task]; who != "S1" && who != "S3" {
				return false
			}
		}
		return true
	})
	g.mu.Lock()
	if len(s1.learning)+len(s3.learning) > 0 {
		t.Errorf("S1, S3 still learn %v, %v after S2 left, want their learners promoted", s1.learning, s3.learning)
	}
	g.mu.Unlock()
	g.waitStable(s1, s3)
	g.check()
}

// waitLearners waits until the given stateful tasks are learned on one of
// the members.
func (g *group) waitLearners(tasks []string, on ...*member) {
	g.t.Helper()
	g.waitFor(fmt.Sprintf("learners of the stateful tasks of %v", tasks), func() bool {
		for _, task := range tasks {
			learned := slices.ContainsFunc(on, func(m *member) bool { _, ok := m.learning[task]; return ok })
			if g.stateful[task] && !learned {
				return false
			}
		}
		return true
	})
}

// TestLeaderTransfer plays "Leader Transfer During Scaling": S4 joins and
// starts learning; before it is ready the leader crashes. The new leader
// learns everything from the members' own reports: the crashed leader's
// tasks are assigned at once (no learner needs to be ready for them), and
// once S4 is ready the group ends balanced over the three survivors.
func TestLeaderTransfer(t *testing.T) {
	g := newGroup(t, storyTopology)
	g.add("S1", true)
	g.add("S2", true)
	g.add("S3", true)
	g.waitFor("a balanced group of three", func() bool { return g.stableLocked(g.liveLocked()...) })

	s4 := g.add("S4", false)
	g.waitFor("S4 to learn a task", func() bool { return len(s4.learning) > 0 })
	g.mu.Lock()
	oldLeader := g.members[g.leader]
	g.mu.Unlock()
	if oldLeader == s4 {
		t.Fatalf("S4 leads the group; the story wants an old member as leader")
	}
	t.Logf("crashing leader %s", oldLeader.name)
	oldLeader.crash()

	// Every task runs again, on the survivors, while S4 is still not ready.
	g.waitFor("every task to run on a survivor", func() bool {
		if len(g.active) != len(g.stateful) {
			return false
		}
		for _, who := range g.active {
			if who == oldLeader.name {
				return false
			}
		}
		return true
	})
	g.mu.Lock()
	if g.leader == oldLeader.name {
		t.Errorf("no new leader computed a round after %s crashed", oldLeader.name)
	}
	g.mu.Unlock()

	s4.readyAll()
	g.waitFor("a balanced group of the three survivors", func() bool { return g.stableLocked(g.liveLocked()...) })
	g.check()
}

// TestStatelessMovesWithoutLearner: a newcomer gets a stateless task
// without any learner stage (it reports no learner ready), yet never while
// the task's old owner still holds its partition; a stateful share, if it
// gets one, waits for its learner.
func TestStatelessMovesWithoutLearner(t *testing.T) {
	g := newGroup(t, mixedTopology)
	s1, s2 := g.add("S1", true), g.add("S2", true)
	g.waitStable(s1, s2)
	s3 := g.add("S3", false)
	g.waitFor("S3 to run a stateless task", func() bool { return s3.active["1_0"] || s3.active["1_1"] })
	g.mu.Lock()
	for task := range s3.active {
		if g.stateful[task] {
			t.Errorf("S3 runs stateful %s without reporting a learner ready", task)
		}
	}
	g.mu.Unlock()
	s3.readyAll()
	g.waitStable(s1, s2, s3)
	g.check()
}
