package kgolearner_test

import (
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The fault tests play one hand-over (S3 joins a group of S1 and S2, learns
// tasks and reports them ready) with a fault injected into the rebalance
// that moves the tasks, through kfake's fault API. Members autocommit only
// once a minute, so the commits a fault hits are the balancer's own:
// releases at the end of a session and commits of revoked tasks. Each test
// checks that the fault struck, that the group converges and that no record
// is lost; records processed twice must each have been processed first by
// an instance that was lost, and are counted.

// faultedHandOver starts the story, calls inject once S3 learns and before
// it reports ready, and returns the group after the hand-over converged
// (and, if inject returns a condition, that held) and every record was
// processed, with the records processed twice.
func faultedHandOver(t *testing.T, inject func(g *group, s1, s2, s3 *member) (what string, cond func() bool)) (g *group, duplicates int) {
	t.Helper()
	return faultedHandOverIn(t, newGroup(t, storyTopology), inject)
}

// faultedHandOverIn is faultedHandOver in a group the test set up.
func faultedHandOverIn(t *testing.T, g *group, inject func(g *group, s1, s2, s3 *member) (what string, cond func() bool)) (_ *group, duplicates int) {
	t.Helper()
	g.autoCommit = time.Minute
	s1, s2, s3 := g.addLearner()
	what, cond := inject(g, s1, s2, s3)
	s3.readyAll()
	if cond != nil {
		g.waitFor(what, cond)
	}
	g.waitStable(s1, s2, s3)
	duplicates = g.finish()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rounds.report(t)
	return g, duplicates
}

// commitFault answers the next OffsetCommit with err, which fails the
// release it answers unless kgo retries it. A failed release defers its
// task's move: that promotion takes at least two rounds from Ready (see
// checkDeferred), every other one exactly one.
func commitFault(t *testing.T, err *kerr.Error, fails bool) {
	var h *kfake.FaultHandle
	g, dups := faultedHandOver(t, func(g *group, _, _, _ *member) (string, func() bool) {
		h = g.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Err: err, Count: 1})
		return "", nil
	})
	assert.Equal(t, 1, h.Hits(), "OffsetCommits answered %v", err)
	assert.Zero(t, dups, "records processed twice: a failed release keeps the task on its owner")
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.NotEmpty(t, g.rounds.promotions, "promotions")
	want := 0
	if fails {
		want = 1
	}
	assert.Equal(t, want, g.failedReleases, "releases that failed (the task stopped and started again before the next round)")
	for _, p := range g.rounds.promotions {
		if !p.deferred {
			assert.Equal(t, 1, p.rounds, "leader rounds from %s reporting %s ready to running it", p.learner, p.task)
		}
	}
	g.rounds.checkDeferred(t) // a deferred promotion takes its deferral round plus the move's
}

// TestFaultCommitRebalanceInProgress: the owner's release commit is answered
// REBALANCE_IN_PROGRESS. The owner keeps the task (it runs it again and
// reports it owned), the leader defers the move, and the owner starts the
// next rebalance, in which the release succeeds: the promotion takes two
// rounds, nothing is processed twice.
func TestFaultCommitRebalanceInProgress(t *testing.T) {
	commitFault(t, kerr.RebalanceInProgress, true)
}

// TestFaultCommitIllegalGeneration: the release commit is answered
// ILLEGAL_GENERATION; kgo also rejoins at once (it takes that error to mean
// its membership is stale). As with REBALANCE_IN_PROGRESS, the owner keeps
// the task one more round.
func TestFaultCommitIllegalGeneration(t *testing.T) {
	commitFault(t, kerr.IllegalGeneration, true)
}

// TestFaultCommitCoordinatorNotAvailable: the release commit is answered
// COORDINATOR_NOT_AVAILABLE; kgo finds the coordinator again and retries
// the commit, which succeeds: the task moves in the first round.
func TestFaultCommitCoordinatorNotAvailable(t *testing.T) {
	commitFault(t, kerr.CoordinatorNotAvailable, false)
}

// syncControl runs fn on the SyncGroup requests for which match returns
// true, until fn reports it acted.
func syncControl(g *group, match func(*kmsg.SyncGroupRequest) bool, fn func() (kmsg.Response, error, bool)) *atomic.Int32 {
	var hits atomic.Int32
	g.cluster.ControlKey(int16(kmsg.SyncGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		if !match(req.(*kmsg.SyncGroupRequest)) {
			return nil, nil, false
		}
		g.cluster.DropControl()
		hits.Add(1)
		return fn()
	})
	return &hits
}

// leaderSync matches the leader's SyncGroup, the one carrying the plan.
func leaderSync(req *kmsg.SyncGroupRequest) bool { return len(req.GroupAssignment) > 0 }

// TestFaultSyncGroupDelayed: the leader's SyncGroup reaches the broker three
// heartbeat intervals late, so every member waits in the sync that long
// without heartbeating. The sessions outlast it: the hand-over completes in
// its round and nothing is processed twice.
func TestFaultSyncGroupDelayed(t *testing.T) {
	var hits *atomic.Int32
	g, dups := faultedHandOver(t, func(g *group, _, _, _ *member) (string, func() bool) {
		hits = syncControl(g, leaderSync, func() (kmsg.Response, error, bool) {
			g.cluster.SleepControl(func() { time.Sleep(3 * heartbeatInterval) })
			return nil, nil, false
		})
		return "the delayed SyncGroup", func() bool { return hits.Load() > 0 }
	})
	assert.Equal(t, int32(1), hits.Load(), "SyncGroups delayed")
	assert.Zero(t, dups, "records processed twice")
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.rounds.promotions {
		if !p.deferred {
			assert.Equal(t, 1, p.rounds, "leader rounds from %s reporting %s ready to running it", p.learner, p.task)
		}
	}
}

// TestFaultLeaderConnectionCut: the broker cuts the leader's connection when
// its SyncGroup arrives, between its JoinGroup and its SyncGroup. kgo
// reconnects and sends the SyncGroup again; the hand-over completes and
// nothing is processed twice.
func TestFaultLeaderConnectionCut(t *testing.T) {
	var hits *atomic.Int32
	_, dups := faultedHandOver(t, func(g *group, _, _, _ *member) (string, func() bool) {
		hits = syncControl(g, leaderSync, func() (kmsg.Response, error, bool) {
			return nil, errors.New("connection cut"), true
		})
		return "the leader's SyncGroup to be cut", func() bool { return hits.Load() > 0 }
	})
	assert.Equal(t, int32(1), hits.Load(), "leader SyncGroups cut")
	assert.Zero(t, dups, "records processed twice")
}

// TestFaultSessionExpiresMidRebalance: S2 runs with a one-second session
// (the others three seconds), and its JoinGroup reaches the broker 1.5 s
// after the hand-over's rebalance began, so its session expires while the
// others wait in theirs: the coordinator drops it and the others take its
// tasks from its last commit. Until its late JoinGroup is refused, S2 keeps
// processing those tasks (a cooperative member runs its tasks during a
// rebalance): those records run twice, each first on an instance that ends
// lost (S2 rejoins under a new member ID, so it commits nothing for what it
// ran under the old one). The group converges with S2 back in it.
func TestFaultSessionExpiresMidRebalance(t *testing.T) {
	g := newGroup(t, storyTopology)
	g.session["S2"] = time.Second
	var hits *atomic.Int32
	g, dups := faultedHandOverIn(t, g, func(g *group, _, s2, _ *member) (string, func() bool) {
		id, _ := s2.cl.GroupMetadata()
		hits = joinControl(g, id, func() (kmsg.Response, error, bool) {
			g.cluster.SleepControl(func() { time.Sleep(1500 * time.Millisecond) })
			return nil, nil, false
		})
		return "S2 to learn it lost its tasks", func() bool { return s2.loseCalls > 0 }
	})
	assert.Equal(t, int32(1), hits.Load(), "JoinGroups delayed past the session timeout")
	g.mu.Lock()
	defer g.mu.Unlock()
	lost := slices.Sorted(maps.Keys(g.members["S2"].lostInstances))
	t.Logf("S2 lost %v with its session; %d records ran twice, each first on one of them", lost, dups)
}

// joinControl runs fn on the first JoinGroup of the member with ID id.
func joinControl(g *group, id string, fn func() (kmsg.Response, error, bool)) *atomic.Int32 {
	var hits atomic.Int32
	g.cluster.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		if req.(*kmsg.JoinGroupRequest).MemberID != id {
			return nil, nil, false
		}
		g.cluster.DropControl()
		hits.Add(1)
		return fn()
	})
	return &hits
}

// TestFaultSyncRefusedAfterRelease: an owner F releases task T at the join
// of the round that moves T to its ready learner S3, and F's SyncGroup of
// that round is refused with REBALANCE_IN_PROGRESS (what a real broker
// answers when a rebalance began after the leader's sync), so F never sees
// that round. S3 runs T, commits it and leaves. In the next round F gets T
// back: kgo still lists T's partitions in F's last assignment, so they are
// not "added" and kgo fetches no offset for them. F must start from what
// S3 committed, not from its own paused cursor, or every record S3
// processed runs again.
func TestFaultSyncRefusedAfterRelease(t *testing.T) {
	g := newGroup(t, storyTopology)
	g.autoCommit = time.Minute
	_, _, s3 := g.addLearner()
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle

	g.mu.Lock()
	var f *member
	var task string
	for tk := range s3.learning {
		if owner := g.active[tk]; owner != g.leader {
			f, task = g.members[owner], tk
		}
	}
	g.mu.Unlock()
	require.NotNil(t, f, "a task S3 learns from a follower (balance takes one from each of S1 and S2)")
	fid, _ := f.cl.GroupMetadata()
	t.Logf("follower %s owns %s, which S3 learns", f.name, task)

	var refused, held atomic.Int32
	release := make(chan struct{})
	g.cluster.ControlKey(int16(kmsg.SyncGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		r := req.(*kmsg.SyncGroupRequest)
		if r.MemberID != fid || refused.Load() > 0 {
			return nil, nil, false
		}
		refused.Add(1)
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		return resp, nil, true
	})
	g.cluster.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		r := req.(*kmsg.JoinGroupRequest)
		if r.MemberID != fid || refused.Load() == 0 || held.Load() > 0 {
			return nil, nil, false
		}
		held.Add(1)
		g.cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})

	s3.ready(task)
	s3.cl.ForceRebalance()
	g.waitFor("S3 to run "+task, func() bool { _, ok := s3.active[task]; return ok })
	time.Sleep(500 * time.Millisecond) // S3 processes T's records
	s3.close()                         // commits T and leaves the group
	close(release)
	g.waitFor(task+" to run again", func() bool { _, ok := g.active[task]; return ok && g.active[task] != "S3" })
	g.mu.Lock()
	back := g.active[task]
	g.mu.Unlock()
	require.Equal(t, int32(1), refused.Load(), "SyncGroups refused")
	require.Equal(t, int32(1), held.Load(), "JoinGroups held")
	require.Equal(t, f.name, back, "the member %s runs again", task)
	g.finish() // fails on a record processed twice or skipped
}

// TestFaultReleaseOutlastsRebalanceTimeout: an owner F's release of a task
// T that S3 learned (StopActive and its commit) outlasts the rebalance
// timeout. The coordinator completes the join phase without F, dropping it,
// and the leader hands F's tasks out; S3 starts T from the last commit. F's
// release commit is then refused with UNKNOWN_MEMBER_ID, as a real broker
// refuses a member it no longer has. F must not start T again, as it does
// after a release that failed while it was still a member: T already runs
// on S3, and two instances would process its records side by side. What F
// processed since its last commit runs again (its release could not
// commit); F learns it lost its other tasks and rejoins as a new member.
func TestFaultReleaseOutlastsRebalanceTimeout(t *testing.T) {
	g := newGroup(t, storyTopology)
	g.autoCommit = time.Minute
	g.rebalanceTimeout = 1500 * time.Millisecond
	s1, s2, s3 := g.addLearner()
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle

	g.mu.Lock()
	var f *member
	var task string
	for _, tk := range s3.learningLocked() {
		if f == nil {
			f, task = g.members[g.active[tk]], tk
		}
	}
	require.NotNil(t, f, "an owner of a task S3 learns")
	f.stopDelay = 2 * g.rebalanceTimeout
	g.mu.Unlock()
	fid, _ := f.cl.GroupMetadata()
	t.Logf("%s owns %s, which S3 learns; its release takes %v", f.name, task, 2*g.rebalanceTimeout)

	s3.readyAll()
	g.waitFor(f.name+" to learn it lost its tasks", func() bool { return f.loseCalls > 0 })
	g.waitFor("S3 to run "+task, func() bool { _, ok := s3.active[task]; return ok })
	g.waitStable(s1, s2, s3)
	id, _ := f.cl.GroupMetadata()
	require.NotEqual(t, fid, id, "%s's member ID: the coordinator dropped it", f.name)
	g.mu.Lock()
	g.rounds.report(t)
	g.mu.Unlock()
	g.finish()
}

// TestFaultRejoinUnderNewIDRestartsKeptTasks: S2's application stalls (it
// polls nothing more) and its JoinGroup is held past its one-second
// session, so the coordinator drops it and S1 takes its tasks from its last
// commit. S1 processes them, commits at close and leaves. S2's late
// JoinGroup is then refused (UNKNOWN_MEMBER_ID) and S2 rejoins under a new
// member ID, the group's only member, claiming its old tasks alone: the
// leader lets it keep them, and kgo, which never saw them go, keeps their
// cursors where S2 stalled. S2 must count what it ran under the old ID as
// lost and start those tasks again from the group's committed offsets, or
// it processes again every record S1 processed and committed.
func TestFaultRejoinUnderNewIDRestartsKeptTasks(t *testing.T) {
	g := newGroup(t, storyTopology)
	g.autoCommit = time.Minute
	g.session["S2"] = time.Second
	s1, s2 := g.add("S1", true), g.add("S2", true)
	g.waitStable(s1, s2)
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle
	oldID, _ := s2.cl.GroupMetadata()

	release := make(chan struct{})
	hits := joinControl(g, oldID, func() (kmsg.Response, error, bool) {
		g.cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})
	s2.stop() // the application stalls: S2's cursors stay where they are
	s1.cl.ForceRebalance()
	g.waitFor("S1 to run every task", func() bool { return len(s1.active) == len(g.stateful) })
	time.Sleep(500 * time.Millisecond) // S1 processes S2's old tasks
	s1.close()
	close(release)
	g.waitFor("S2 to run every task", func() bool { return len(s2.active) == len(g.stateful) })
	s2.resume() // only now: a zombie processes its tasks until it rejoins
	require.Equal(t, int32(1), hits.Load(), "JoinGroups held past the session timeout")

	g.mu.Lock()
	newID, _ := s2.cl.GroupMetadata()
	require.NotEqual(t, oldID, newID, "S2's member ID: the coordinator dropped it")
	for _, task := range slices.Sorted(maps.Keys(s2.active)) {
		assert.Equal(t, newID, s2.startedAs[task], "the member ID S2 started %s under", task)
	}
	g.mu.Unlock()
	g.finish()
	g.mu.Lock()
	defer g.mu.Unlock()
	for key, offsets := range g.processed {
		for off, ps := range offsets {
			if i := slices.IndexFunc(ps, func(p processing) bool { return p.member == "S1" }); i >= 0 && i < len(ps)-1 {
				assert.Failf(t, "record processed again", "record %s@%d processed by S1, which committed it, then again: %v", key, off, ps)
			}
		}
	}
}
