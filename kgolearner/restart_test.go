package kgolearner_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticRestart plays what Apache Kafka's classic coordinator does with a
// static member that restarts within its session and joins a Stable group
// under the same instance ID (KIP-345,
// updateStaticMemberThenRebalanceOrCompleteJoin): it gives the new
// incarnation a new member ID in place of the old one, compares no
// metadata (only whether the group's protocol would change), skips the
// rebalance, and answers its SyncGroup with the assignment the leader
// computed for the old incarnation; a restarted leader is told to skip the
// assignment (KIP-814). kfake does all that too, but only when the new
// JoinGroup's metadata equals the old one's, and a new client's never does
// (it owns nothing, and its generation is -1). So the test hands kfake the
// new incarnation's JoinGroup with the old incarnation's last metadata,
// and, as Kafka stores the new metadata, gives the leader that member with
// its own until it joins again.
type staticRestart struct {
	g *group

	mu       sync.Mutex
	last     map[string][]byte // instance ID -> metadata of its last JoinGroup kfake read
	armed    string            // its next JoinGroup without a member ID is a restart
	instance string            // the restarted instance
	swapped  []byte            // the metadata kfake was given for the restart
	fresh    []byte            // the restart's own metadata
	fixed    int               // leader rounds given the restarted member's own metadata
}

// keepRestart installs staticRestart on g, before its members are added.
func keepRestart(g *group) *staticRestart {
	r := &staticRestart{g: g, last: map[string][]byte{}}
	g.cluster.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		jr := req.(*kmsg.JoinGroupRequest)
		if jr.InstanceID == nil {
			return nil, nil, false
		}
		id := *jr.InstanceID
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, p := range jr.Protocols {
			if p.Name != kgolearner.ProtocolName {
				continue
			}
			if r.armed == id && jr.MemberID == "" {
				r.armed, r.instance = "", id
				r.fresh, r.swapped = p.Metadata, r.last[id]
				jr.Protocols[i].Metadata = r.last[id]
			}
			r.last[id] = jr.Protocols[i].Metadata
		}
		return nil, nil, false
	})
	g.wrap = func(b *kgolearner.Balancer) kgo.GroupBalancer { return restartedStatic{b, r} }
	return r
}

// members returns the members of a JoinGroup response as Kafka lists them:
// the restarted member with the metadata of its own JoinGroup.
func (r *staticRestart) members(members []kmsg.JoinGroupResponseMember) []kmsg.JoinGroupResponseMember {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(members, func(m kmsg.JoinGroupResponseMember) bool {
		return r.swapped != nil && m.InstanceID != nil && *m.InstanceID == r.instance && bytes.Equal(m.ProtocolMetadata, r.swapped)
	})
	if i < 0 {
		return members
	}
	r.fixed++
	members = slices.Clone(members)
	members[i].ProtocolMetadata = r.fresh
	return members
}

// restartedStatic is a member's balancer whose leader reads the JoinGroup
// response staticRestart rewrites.
type restartedStatic struct {
	*kgolearner.Balancer
	r *staticRestart
}

// MemberBalancer gives the leader's balancer the members as Kafka lists
// them.
func (s restartedStatic) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	return s.Balancer.MemberBalancer(s.r.members(members))
}

// restart closes old, a static member of a Stable group (its client stops
// and commits its tasks and, owing no rejoin, sends no LeaveGroup), and
// starts name, its next incarnation under its instance ID (a fresh
// Balancer and client), which gets old's assignment back without a
// rebalance. It returns name once its first session has started.
func (r *staticRestart) restart(old *member, name string, autoReady bool) *member {
	g := r.g
	g.t.Helper()
	oldID, _ := old.cl.GroupMetadata()
	generation := g.cluster.GroupInfo("learner-e2e").Epoch
	old.close()
	instance := g.instance[old.name]
	r.mu.Lock()
	r.armed = instance
	r.mu.Unlock()
	g.instance[name] = instance
	m := g.add(name, autoReady)
	g.waitFor(name+"'s first session", func() bool { return m.sessionAs != "" })
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Equal(g.t, generation, m.firstGeneration, "generation of %s's first session: the group was not Stable, or %s's restart rebalanced", name, old.name)
	require.NotEqual(g.t, oldID, m.sessionAs, "%s's member ID: Kafka gives a restarted static member a new one", name)
	return m
}

// waitReport waits for a leader round in which m, restarted, reports the
// active tasks it runs or released: the one its rejoin after the restart
// starts.
func (g *group) waitReport(m *member) {
	g.t.Helper()
	g.waitFor(m.name+"'s report of its tasks", func() bool { return g.reportedLocked(m) })
}

// reportedLocked reports whether a leader round read m reporting active
// tasks, or tasks it released, under its current member ID. Not active
// tasks alone: a member whose every task was tagged learned releases them
// all at that rejoin, and only a later rebalance, which may never come, has
// it report those it got back.
func (g *group) reportedLocked(m *member) bool {
	return slices.ContainsFunc(g.history, func(r kgolearner.Round) bool {
		return slices.ContainsFunc(r.Members, func(mm learner.MemberMetadata) bool {
			return mm.ID == kgolearner.LearnerID(m.sessionAs) && len(mm.Assigned)+len(mm.Revoked) > 0
		})
	})
}

// lastSent returns the assignment the last leader round sent to the
// member of the given name (short member ID).
func (g *group) lastSent(name string) learner.Assignment {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	require.NotEmpty(g.t, g.history, "leader rounds")
	r := g.history[len(g.history)-1]
	i := slices.IndexFunc(r.Assignments, func(a learner.Assignment) bool { return shortID(a.MemberID) == name })
	require.GreaterOrEqual(g.t, i, 0, "%s in the last round: %v", name, r.Assignments)
	return r.Assignments[i]
}

// TestStaticRestartGetsLearnedTag: S2, a static member, restarts within its
// session while it still runs T, which its assignment tags learned (S3
// learns T, not ready yet). On Kafka the group does not rebalance: S2b, a
// fresh Balancer, gets S2's assignment back, T and its learned tag
// included, and runs S2's tasks from the offsets S2 committed at close. It
// rejoins once, so that the broker keeps a report of the tasks it runs
// (releasing T, which it gets back: S3 is not ready). Once S3 is ready, S2b
// releases T at the next rebalance's join and T moves to S3; no task runs
// on two members and no record is processed twice.
func TestStaticRestartGetsLearnedTag(t *testing.T) {
	g, r, s1, s2, s3 := staticLearnerGroup(t)
	sent := g.lastSent("S2")
	g.mu.Lock()
	ran := slices.Sorted(maps.Keys(s2.active))
	var task string
	for tk := range s3.learning {
		if g.active[tk] == "S2" {
			task = tk
		}
	}
	g.mu.Unlock()
	require.NotEmpty(t, task, "a task S3 learns from S2")
	require.Contains(t, sent.Learned, task, "S2's last assignment tags %s learned: %v", task, sent)

	s2b := r.restart(s2, "S2b", true)
	g.mu.Lock()
	assert.Equal(t, ran, s2b.firstActive, "S2b's tasks in its first session")
	g.mu.Unlock()
	g.waitReport(s2b)

	s3.readyAll()
	g.waitFor("S3 to run "+task, func() bool { return g.active[task] == "S3" })
	g.mu.Lock()
	assert.True(t, slices.ContainsFunc(g.releases, func(rl release) bool { return rl.member == "S2b" && rl.task == task }), "S2b released %s", task)
	g.mu.Unlock()
	g.waitStable(s1, s2b, s3)
	g.finishExactly()
}

// TestStaticRestartBeforeBind: kgo may join the group before kgo.NewClient
// returns, and Kafka answers a restarted static member's join at once
// (KIP-345), so its first session can start before the application binds
// the client (Balancer.Bind). The rejoin that session asks for (see
// TestStaticRestartGetsLearnedTag) must not be lost: S2b, never bound,
// reports its tasks all the same. (Before PartitionsAssigned bound the
// client, the rejoin found none and was dropped, and S2b never rejoined:
// TestStaticRestartWhileLeaving failed that way once in CI, where S2b's
// Bind came after its first session.)
func TestStaticRestartBeforeBind(t *testing.T) {
	g := newStaticGroup(t)
	r := keepRestart(g)
	s1, s2, s3 := g.addBalanced()
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle

	g.unbound["S2b"] = true
	s2b := r.restart(s2, "S2b", true)
	g.waitReport(s2b)
	g.waitStable(s1, s2b, s3)
	g.finishExactly()
}

// TestStaticRestartOfLeader: the group's leader, a static member, restarts
// within its session. Kafka keeps the new incarnation leader and tells it
// to skip the assignment (KIP-814). kgo then reads the members with the
// leader's balancer (MemberBalancer) but balances only with its own
// balancers (range, round-robin, sticky, cooperative-sticky): with ours it
// computes no plan and sends none, and the new leader gets the old one's
// assignment back like any restarted member (restart checks that the
// generation did not change). Its rejoin (see
// TestStaticRestartGetsLearnedTag) starts a rebalance it leads as usual.
func TestStaticRestartOfLeader(t *testing.T) {
	g := newStaticGroup(t)
	r := keepRestart(g)
	s1, s2, s3 := g.addBalanced()
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle

	g.mu.Lock()
	leader := g.members[g.leader]
	ran := slices.Sorted(maps.Keys(leader.active))
	g.mu.Unlock()
	restarted := r.restart(leader, leader.name+"b", true)
	r.mu.Lock()
	assert.Positive(t, r.fixed, "JoinGroup responses read with %s's own report", restarted.name)
	r.mu.Unlock()
	g.waitReport(restarted)
	staying := []*member{restarted}
	for _, m := range []*member{s1, s2, s3} {
		if m != leader {
			staying = append(staying, m)
		}
	}
	slices.SortFunc(staying, func(a, b *member) int { return strings.Compare(a.name, b.name) })
	g.waitStable(staying...)
	g.mu.Lock()
	assert.Equal(t, restarted.name, g.leader, "leader of the last round")
	assert.Equal(t, ran, restarted.firstActive, "%s's tasks in its first session", restarted.name)
	g.mu.Unlock()
	g.finishExactly()
}

// staticLearnerGroup starts S1 and S2, static members that ready their
// learners at once, then S3, a static member that does not, with
// staticRestart installed, and waits until S3 learns its share.
func staticLearnerGroup(t *testing.T) (g *group, r *staticRestart, s1, s2, s3 *member) {
	g = newStaticGroup(t)
	r = keepRestart(g)
	s1, s2, s3 = g.addLearner()
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle
	return g, r, s1, s2, s3
}

// TestStaticRestartOfLearner: S3, a static member learning two tasks,
// restarts within its session, one of its learners caught up (not yet
// reported: S3 rejoins once all are). S3b, a fresh Balancer, gets S3's
// learner tags back and starts both replays afresh (StartLearning); it
// reports neither ready until its own replays catch up, so a rebalance in
// between moves nothing to it. Once they do, both tasks move to it.
func TestStaticRestartOfLearner(t *testing.T) {
	g, r, s1, s2, s3 := staticLearnerGroup(t)
	g.mu.Lock()
	learning := s3.learningLocked()
	g.mu.Unlock()
	s3.ready(learning[0])

	s3b := r.restart(s3, "S3b", false)
	g.waitFor("S3b to learn "+strings.Join(learning, ", "), func() bool { return len(s3b.learning) == len(learning) })
	g.mu.Lock()
	rounds := g.rounds.n
	g.mu.Unlock()
	s1.cl.ForceRebalance()
	g.waitFor("a leader round after S3b's restart", func() bool { return g.rounds.n > rounds })
	time.Sleep(5 * heartbeatInterval)
	g.mu.Lock()
	assert.Equal(t, learning, s3b.learningLocked(), "S3b's learner tasks")
	assert.Empty(t, s3b.active, "S3b's active tasks before its learners are ready")
	for _, r := range g.history[rounds:] {
		for _, m := range r.Members {
			if shortID(m.ID) == "S3b" {
				assert.Empty(t, m.Ready, "S3b's report of ready learners before its replays caught up")
			}
		}
	}
	g.mu.Unlock()

	s3b.readyAll()
	g.waitStable(s1, s2, s3b)
	g.finishExactly()
}

// TestStaticRestartWhileLeaving: S2, a static member leaving through
// learners (Leave), restarts within its session before its learners on S1
// and S3 are ready. S2b, a fresh Balancer that is not leaving, gets S2's
// tasks back, every one tagged learned, and rejoins once (see
// TestStaticRestartGetsLearnedTag); it does not shut down. When the
// learners are ready, S2b releases the tasks at the next join, and the
// group ends balanced over the three with no record processed twice.
func TestStaticRestartWhileLeaving(t *testing.T) {
	g := newStaticGroup(t)
	r := keepRestart(g)
	s1, s2, s3 := g.addBalanced()
	g.mu.Lock()
	s1.autoReady, s3.autoReady = false, false
	handOver := slices.Sorted(maps.Keys(s2.active))
	g.mu.Unlock()

	s2.b.Leave(time.Time{})
	g.waitLearners(handOver, s1, s3)
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle
	sent := g.lastSent("S2")
	require.ElementsMatch(t, handOver, sent.Learned, "S2's last assignment tags every task it hands over learned: %v", sent)

	s2b := r.restart(s2, "S2b", true)
	g.mu.Lock()
	assert.Equal(t, handOver, s2b.firstActive, "S2b's tasks in its first session")
	g.mu.Unlock()
	g.waitReport(s2b)
	g.mu.Lock()
	assert.False(t, s2b.shutdown, "S2b shut down: it is not leaving")
	g.mu.Unlock()

	s1.readyAll()
	s3.readyAll()
	g.waitStable(s1, s2b, s3)
	g.mu.Lock()
	assert.False(t, s2b.shutdown, "S2b shut down: it is not leaving")
	for _, task := range handOver {
		assert.True(t, slices.ContainsFunc(g.releases, func(rl release) bool { return rl.member == "S2b" && rl.task == task }), "S2b released %s", task)
	}
	g.mu.Unlock()
	g.finishExactly()
}

// restartedAbsent is a member's balancer whose leader reads the JoinGroup
// response as Kafka sends it after a static member's restart
// (staticRestart) and while that member is away (absentStatic).
type restartedAbsent struct {
	*kgolearner.Balancer
	r *staticRestart
	a *absentStatic
}

// MemberBalancer gives the leader's balancer the members as Kafka lists
// them.
func (s restartedAbsent) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	return s.Balancer.MemberBalancer(s.a.add(s.r.members(members)))
}

// TestStaticRestartThenMissesJoin: S2 restarts as S2b within its session,
// and S2b then misses a rebalance's join while its session lasts. Kafka
// keeps S2b in the group and lists it to the leader with the metadata of
// its last JoinGroup. Had that been its first, a fresh client's, which
// claims nothing, the leader would give S2b's tasks to their standbys on
// the others while S2b ran them (before a restarted member rejoined, both
// of S2b's tasks ran on two members, and 520 and 524 records ran twice in
// two runs). S2b rejoins once after the restart, so the leader reads a
// report that claims them, and keeps them on S2b while it is away.
func TestStaticRestartThenMissesJoin(t *testing.T) {
	g := newStaticGroup(t)
	g.options = learner.Options{Standbys: 1}     // each task's warmest copy but its owner's
	g.rebalanceTimeout = 1500 * time.Millisecond // the join phase ends without S2b well within its session
	a := keepAbsent(g, "S2")                     // first: it reads the restart's own metadata
	r := keepRestart(g)
	g.wrap = func(b *kgolearner.Balancer) kgo.GroupBalancer { return restartedAbsent{b, r, a} }
	s1, s2, s3 := g.addBalanced()
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle

	s2b := r.restart(s2, "S2b", true)
	g.waitReport(s2b)                 // before it is away: the report it is then listed with
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle
	g.mu.Lock()
	ran := slices.Sorted(maps.Keys(s2b.active))
	t.Logf("S2b runs %v", ran)
	g.mu.Unlock()
	require.NotEmpty(t, ran, "S2b's tasks")
	a.away(s2b)
	s1.cl.ForceRebalance() // the rebalance S2b misses
	g.waitFor("a leader round with S2b away", func() bool { _, n := a.counts(); return n > 0 })
	time.Sleep(10 * heartbeatInterval)
	g.mu.Lock()
	for _, tk := range ran {
		assert.Equal(t, "S2b", g.active[tk], "who runs %s while S2b is away", tk)
	}
	assert.Empty(t, s2b.lostInstances, "S2b's task instances another member started while S2b ran them")
	g.mu.Unlock()

	a.back()
	g.waitStable(s1, s2b, s3)
	g.finish()
}
