package learner_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// joined returns a worker that has joined once and applied a.
func joined(t testing.TB, policy RejoinPolicy, a Assignment) *Worker {
	t.Helper()
	w := NewWorker(a.MemberID, policy)
	require.True(t, w.ShouldRejoin(t0), "new worker ShouldRejoin")
	w.Join()
	_, err := w.Apply(a)
	require.NoError(t, err)
	return w
}

func TestWorkerApplyChanges(t *testing.T) {
	w := joined(t, RejoinStable, Assignment{MemberID: "S1", Assigned: []string{"T1", "T2", "T3"}, Learning: []string{"T4"}, Standby: []string{"T5"}})
	w.Join()
	c, err := w.Apply(Assignment{MemberID: "S1", Assigned: []string{"T1", "T4"}, Learning: []string{"T5", "T6"}, Standby: []string{"T7"}})
	require.NoError(t, err)
	assert.Equal(t, Changes{
		StartActive:   []string{"T4"},
		StopActive:    []string{"T2", "T3"},
		StartLearning: []string{"T5", "T6"},
		StopLearning:  []string{"T4"},
		StartStandby:  []string{"T7"},
		StopStandby:   []string{"T5"},
	}, c)
	assert.Equal(t, MemberMetadata{ID: "S1", Assigned: []string{"T1", "T4"}, Learning: []string{"T5", "T6"}, Standby: []string{"T7"}}, w.Join())
}

func TestWorkerApplyRejectsBadAssignment(t *testing.T) {
	w := joined(t, RejoinStable, Assignment{MemberID: "S1", Assigned: []string{"T1"}})
	for _, a := range []Assignment{
		{MemberID: "S2", Assigned: []string{"T1"}},
		{MemberID: "S1", Assigned: []string{"T1"}, Learning: []string{"T1"}},
		{MemberID: "S1", Learning: []string{"T2"}, Standby: []string{"T2"}},
	} {
		c, err := w.Apply(a)
		assert.True(t, errors.Is(err, ErrInvalidMember), fmt.Sprintf("Apply(%+v) error = %v; errors.Is(err, ErrInvalidMember)", a, err))
		assert.Equal(t, Changes{}, c, "Changes of a rejected assignment")
	}
	assert.Equal(t, []string{"T1"}, w.Join().Assigned, "a rejected assignment changed the worker")
}

func TestWorkerRevokesLearnedAtJoin(t *testing.T) {
	// The document's Scale Up walkthrough, S1's side: T1 is learned by S4.
	w := joined(t, RejoinStable, Assignment{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T1"}})
	assert.False(t, w.ShouldRejoin(t0), "owner of a learned task wants to rejoin on its own")
	assert.Equal(t, []string{"T1", "T2"}, w.Active(), "Active() before the join")
	m := w.Join()
	assert.Equal(t, []string{"T2"}, w.Active(), "Active() once T1 is given up at join")
	assert.Equal(t, MemberMetadata{ID: "S1", Assigned: []string{"T2"}, Revoked: []string{"T1"}}, m)
	assert.Equal(t, m, w.Join(), "a restarted join reports differently")

	// The learner was not ready: the leader gives T1 back, still learned.
	c, err := w.Apply(Assignment{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T1"}})
	require.NoError(t, err)
	assert.Equal(t, Changes{StartActive: []string{"T1"}}, c, "T1 given back after revoke-at-join")

	// The learner is ready: T1 goes away for good.
	w.Join()
	c, err = w.Apply(Assignment{MemberID: "S1", Assigned: []string{"T2"}, Revoked: []string{"T1"}})
	require.NoError(t, err)
	assert.Equal(t, Changes{}, c, "T1 was already stopped at join")
	assert.Equal(t, MemberMetadata{ID: "S1", Assigned: []string{"T2"}}, w.Join())
}

func TestWorkerActiveChangesNothing(t *testing.T) {
	w := NewWorker("S1", RejoinStable)
	assert.Empty(t, w.Active(), "NewWorker(...).Active()")
	assert.True(t, w.ShouldRejoin(t0), "ShouldRejoin after Active() = false, want true: Active joined")
}

func TestWorkerRejoinPolicies(t *testing.T) {
	a := Assignment{MemberID: "S4", Learning: []string{"T1", "T3"}}
	for _, tc := range []struct {
		policy          RejoinPolicy
		afterFirstReady bool
	}{{RejoinStable, false}, {RejoinEager, true}} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			w := joined(t, tc.policy, a)
			assert.False(t, w.ShouldRejoin(t0), "no learner ready yet")
			assert.False(t, w.Restored("T9"), "Restored(T9) of a task it does not learn = true")
			assert.False(t, w.ShouldRejoin(t0), "Restored of an unknown task triggered a rejoin")
			assert.True(t, w.Restored("T3"), "Restored(T3) of a learner task")
			assert.Equal(t, tc.afterFirstReady, w.ShouldRejoin(t0), "ShouldRejoin after one of two learners is ready")
			w.Restored("T1")
			assert.True(t, w.ShouldRejoin(t0), "ShouldRejoin after all learners are ready")

			m := w.Join()
			assert.Equal(t, []string{"T1", "T3"}, m.Ready)
			assert.False(t, w.ShouldRejoin(t0), "ShouldRejoin while its join is pending")
			// A ready learner the leader did not promote must not cause a rebalance loop.
			_, err := w.Apply(Assignment{MemberID: "S4", Assigned: []string{"T1"}, Learning: []string{"T3"}})
			require.NoError(t, err)
			assert.False(t, w.ShouldRejoin(t0), "ShouldRejoin with no learner ready since the last join")
			assert.Equal(t, []string{"T3"}, w.Join().Ready, "ready flag lost for a learner kept")
		})
	}
}

// TestWorkerUnready: a learner whose state fell behind again withdraws its
// readiness: the next join does not report it, and it alone is no reason
// to rejoin.
func TestWorkerUnready(t *testing.T) {
	for _, policy := range []RejoinPolicy{RejoinStable, RejoinEager} {
		t.Run(policy.String(), func(t *testing.T) {
			w := joined(t, policy, Assignment{MemberID: "S4", Learning: []string{"T1", "T3"}})
			assert.False(t, w.Unready("T9"), "Unready(T9) of a task it does not learn = true")
			w.Restored("T1")
			w.Restored("T3")
			require.True(t, w.ShouldRejoin(t0), "ShouldRejoin with both learners ready")
			assert.True(t, w.Unready("T1"), "Unready(T1) of a learner task")
			assert.Equal(t, policy == RejoinEager, w.ShouldRejoin(t0), "ShouldRejoin with T3 still news")
			assert.Equal(t, []string{"T3"}, w.Join().Ready, "Join().Ready after Unready(T1)")
			_, err := w.Apply(Assignment{MemberID: "S4", Learning: []string{"T1", "T3"}})
			require.NoError(t, err)

			// T3 was reported: withdrawing it is no news, and neither is
			// the only fresh news withdrawn.
			w.Unready("T3")
			assert.False(t, w.ShouldRejoin(t0), "ShouldRejoin after a reported learner's Unready")
			w.Restored("T1")
			w.Unready("T1")
			assert.False(t, w.ShouldRejoin(t0), "ShouldRejoin after the news was withdrawn")
			assert.Empty(t, w.Join().Ready, "Join().Ready with every learner withdrawn")
		})
	}
}

func TestWorkerLeaveHandsOver(t *testing.T) {
	// The document's Scale Down walkthrough, S2's side.
	w := joined(t, RejoinStable, Assignment{MemberID: "S2", Assigned: []string{"T3", "T4"}})
	w.Leave(time.Time{})
	assert.True(t, w.ShouldRejoin(t0), "leaving worker does not rejoin to announce it")
	assert.True(t, w.Join().Leaving, "Join().Leaving after Leave")
	c, err := w.Apply(Assignment{MemberID: "S2", Assigned: []string{"T3", "T4"}, Learned: []string{"T3", "T4"}})
	require.NoError(t, err)
	assert.False(t, c.Shutdown, "Shutdown while owning tasks")
	assert.False(t, w.ShouldRejoin(t0), "announced leaving worker rejoins again by itself")
	assert.False(t, w.ShouldShutdown(t0.Add(24*time.Hour)), "shut down without deadline while owning tasks")

	// In the notation: Join's lists may be nil or empty, which the API
	// documents as the same.
	assert.Equal(t, FormatMember(MemberMetadata{ID: "S2", Revoked: []string{"T3", "T4"}, Leaving: true}), FormatMember(w.Join()),
		"Join of a leaving worker whose tasks are learned")
	c, err = w.Apply(Assignment{MemberID: "S2", Assigned: []string{"T3"}, Revoked: []string{"T4"}, Learned: []string{"T3"}})
	require.NoError(t, err)
	assert.Equal(t, Changes{StartActive: []string{"T3"}}, c)

	w.Join()
	c, err = w.Apply(Assignment{MemberID: "S2", Revoked: []string{"T3"}})
	require.NoError(t, err)
	assert.Equal(t, Changes{Shutdown: true}, c, "Changes of the last hand-over")
	assert.True(t, w.ShouldShutdown(t0), "ShouldShutdown after the hand-over")
	assert.False(t, w.ShouldRejoin(t0), "ShouldRejoin after the hand-over")
}

func TestWorkerLeaveDeadline(t *testing.T) {
	w := joined(t, RejoinStable, Assignment{MemberID: "S2", Assigned: []string{"T3", "T4"}})
	deadline := t0.Add(time.Minute)
	w.Leave(deadline)
	w.Join()
	_, err := w.Apply(Assignment{MemberID: "S2", Assigned: []string{"T3", "T4"}, Learned: []string{"T3", "T4"}})
	require.NoError(t, err)
	assert.False(t, w.ShouldShutdown(deadline.Add(-time.Nanosecond)), "shut down before its deadline")
	assert.True(t, w.ShouldShutdown(deadline), "no shut down at its deadline")
	assert.False(t, w.ShouldRejoin(deadline), "rejoins past its deadline instead of shutting down")

	w.Leave(time.Time{})
	assert.False(t, w.ShouldShutdown(deadline), "Leave(zero) did not clear the deadline")
	assert.False(t, w.ShouldRejoin(deadline), "a second Leave asks to announce again")
}

func TestWorkerCrashRejoinsWithNewID(t *testing.T) {
	old := joined(t, RejoinStable, Assignment{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learning: []string{"T3"}})
	_ = old // crashed: its state is gone with it

	// The restarted process finds T1's and T3's state on disk.
	w := NewWorker("S1-restarted", RejoinStable)
	w.SetLag("T3", 700)
	w.SetLag("T1", 40)
	w.SetLag("T9", 5)
	w.SetLag("T9", -1)
	assert.True(t, w.ShouldRejoin(t0), "ShouldRejoin of a restarted worker")
	assert.Equal(t, MemberMetadata{ID: "S1-restarted", Lag: []TaskLag{{"T1", 40}, {"T3", 700}}}, w.Join())

	// The leader gives it T1 back, and T3 to learn from its warm state.
	c, err := w.Apply(Assignment{MemberID: "S1-restarted", Assigned: []string{"T1"}, Learning: []string{"T3"}})
	require.NoError(t, err)
	assert.Equal(t, Changes{StartActive: []string{"T1"}, StartLearning: []string{"T3"}}, c)
	w.SetLag("T3", 0)
	w.Restored("T3")
	assert.True(t, w.ShouldRejoin(t0), "ShouldRejoin with its only learner ready")
	assert.Equal(t, MemberMetadata{ID: "S1-restarted", Assigned: []string{"T1"}, Learning: []string{"T3"},
		Ready: []string{"T3"}, Lag: []TaskLag{{"T3", 0}}}, w.Join(), "active T1 still reports a lag, or T3's is lost")
}

func TestWorkerDoesNotAliasInputs(t *testing.T) {
	a := Assignment{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T1"}, Learning: []string{"T3"}}
	w := joined(t, RejoinStable, a)
	m := w.Join()
	m.Assigned[0] = "X"
	m.Learning[0] = "X"
	assert.Equal(t, Assignment{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T1"}, Learning: []string{"T3"}}, a, "Apply or Join mutated the assignment")
	assert.Equal(t, MemberMetadata{ID: "S1", Assigned: []string{"T2"}, Revoked: []string{"T1"}, Learning: []string{"T3"}}, w.Join(), "changing Join's result changed the worker")
}

// TestWorkersDriveAssign runs the document's Scale Down walkthrough with a
// real Assignor and one Worker per member, as a group would: S2 leaves, S3
// and then S1 finish learning and rejoin, and S2 shuts down once it has
// handed everything over. Every round keeps every rule of learnertest.Check.
func TestWorkersDriveAssign(t *testing.T) {
	tasks := []Task{{"T1", true}, {"T2", true}, {"T3", true}, {"T4", true}, {"T5", true}}
	a, err := New(tasks, Options{})
	require.NoError(t, err)
	ws := []*Worker{NewWorker("S1", RejoinStable), NewWorker("S2", RejoinStable), NewWorker("S3", RejoinStable)}
	round := func(what string) map[string]Changes {
		t.Helper()
		var ms []MemberMetadata
		for _, w := range ws {
			ms = append(ms, w.Join())
		}
		as, err := a.Assign(ms)
		require.NoError(t, err)
		vs := learnertest.Check(tasks, Options{}, ms, as)
		require.Empty(t, vs, "%s breaks rules:\n%s", what, learnertest.FormatViolations(vs))
		cs := map[string]Changes{}
		for i, w := range ws {
			cs[w.ID()], err = w.Apply(as[i])
			require.NoError(t, err)
		}
		return cs
	}
	// The stable state S1[T1, T2], S2[T3, T4], S3[T5].
	for i, w := range ws {
		w.Join()
		_, err := w.Apply(Assignment{MemberID: w.ID(), Assigned: [][]string{{"T1", "T2"}, {"T3", "T4"}, {"T5"}}[i]})
		require.NoError(t, err)
	}
	ws[1].Leave(time.Time{})
	assert.True(t, ws[1].ShouldRejoin(t0), "S2 ShouldRejoin after Leave")
	cs := round("first rebalance")
	// S2's tasks get one learner each on S1 and S3 (which learns which is
	// the assignor's choice).
	learner := map[string]*Worker{}
	for _, w := range []*Worker{ws[0], ws[2]} {
		if l := cs[w.ID()].StartLearning; len(l) == 1 {
			learner[l[0]] = w
		}
	}
	require.True(t, learner["T3"] != nil && learner["T4"] != nil, "first rebalance: changes %+v, want one learner of T3 and one of T4 on S1 and S3", cs)

	first, second := learner["T4"], learner["T3"]
	assert.True(t, first.Restored("T4"), "Restored(T4) of its learner")
	assert.True(t, first.ShouldRejoin(t0), "ShouldRejoin with T4 ready")
	assert.False(t, second.ShouldRejoin(t0), "ShouldRejoin with T3 not ready")
	cs = round("second rebalance")
	assert.Equal(t, Changes{StartActive: []string{"T4"}, StopLearning: []string{"T4"}}, cs[first.ID()], "changes of T4's learner: T4 promoted")
	assert.False(t, cs["S2"].Shutdown, "S2 shuts down while it owns T3")

	second.Restored("T3")
	assert.True(t, second.ShouldRejoin(t0), "ShouldRejoin with T3 ready")
	cs = round("third rebalance")
	assert.Equal(t, Changes{StartActive: []string{"T3"}, StopLearning: []string{"T3"}}, cs[second.ID()], "changes of T3's learner: T3 promoted")
	assert.True(t, cs["S2"].Shutdown, "S2's Changes.Shutdown after its hand-over")
	assert.True(t, ws[1].ShouldShutdown(t0), "S2 ShouldShutdown after its hand-over")
	for _, w := range []*Worker{ws[0], ws[2]} {
		m := w.Join()
		assert.Empty(t, slices.Concat(m.Learning, m.Revoked), "%s at the end: %s, want only active tasks", w.ID(), FormatMember(m))
	}
}

// The member side of the document's Scale Up walkthrough, for S4: it joins
// empty, learns T1, rejoins once T1 is ready and takes it over.
func ExampleWorker() {
	w := NewWorker("S4", RejoinStable)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

	fmt.Println(w.ShouldRejoin(now), FormatMember(w.Join()))
	c, _ := w.Apply(Assignment{MemberID: "S4", Learning: []string{"T1"}})
	fmt.Printf("start learning %v\n", c.StartLearning)

	w.Restored("T1") // the application finished replaying T1's changelog
	fmt.Println(w.ShouldRejoin(now), FormatMember(w.Join()))
	c, _ = w.Apply(Assignment{MemberID: "S4", Assigned: []string{"T1"}})
	fmt.Printf("stop learning %v, start active %v\n", c.StopLearning, c.StartActive)
	// Output:
	// true S4(assigned: [], revoked: [], learning: [])
	// start learning [T1]
	// true S4(assigned: [], revoked: [], learning: [T1], ready: [T1])
	// stop learning [T1], start active [T1]
}

// TestWorkerCrashRejoinWithAssign: S1 crashes while owning T1 and T2 and
// restarts as S1-b, finding T1's state on disk. The leader sees T1 and T2
// ownerless; T1 goes back to the warm S1-b, and no task is lost.
func TestWorkerCrashRejoinWithAssign(t *testing.T) {
	a, err := New([]Task{{"T1", true}, {"T2", true}, {"T3", true}, {"T4", true}}, Options{})
	require.NoError(t, err)
	s2 := joined(t, RejoinStable, Assignment{MemberID: "S2", Assigned: []string{"T3", "T4"}})
	s1b := NewWorker("S1-b", RejoinStable)
	s1b.SetLag("T1", 40)
	assert.True(t, s1b.ShouldRejoin(t0), "restarted worker ShouldRejoin")
	as, err := a.Assign([]MemberMetadata{s2.Join(), s1b.Join()})
	require.NoError(t, err)
	owners := map[string]string{}
	for _, x := range as {
		for _, id := range x.Assigned {
			owners[id] = x.MemberID
		}
	}
	assert.Len(t, owners, 4, "tasks with an owner after the crash:\n%s", FormatAssignments(as))
	assert.Equal(t, "S1-b", owners["T1"], "owner of T1, whose state S1-b found on disk:\n%s", FormatAssignments(as))
	i := slices.IndexFunc(as, func(x Assignment) bool { return x.MemberID == "S1-b" })
	c, err := s1b.Apply(as[i])
	require.NoError(t, err)
	assert.Contains(t, c.StartActive, "T1", "S1-b's changes %+v start T1", c)
	assert.Equal(t, MemberMetadata{ID: "S1-b", Assigned: as[i].Assigned}, s1b.Join(), "S1-b reports no lag for a task it runs")
}

// TestWorkerApplyRefusesWhatJoinCannotReport: an assignment the next Join
// would turn into a report Assign refuses (a task twice in Learned becomes
// a task twice in Revoked; a malformed task ID comes back in a list) is an
// error wrapping ErrInvalidMember, not accepted to fail the whole group's
// next rebalance at the leader.
func TestWorkerApplyRefusesWhatJoinCannotReport(t *testing.T) {
	a, err := New([]Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}}, Options{})
	require.NoError(t, err)
	for _, as := range []Assignment{
		{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T1", "T1"}},
		{MemberID: "S1", Assigned: []string{"T1", "T 2"}},
		{MemberID: "S1", Assigned: []string{"T1", ""}, Learned: []string{""}},
		{MemberID: "S1", Learning: []string{"T1", "T2/x"}},
		{MemberID: "S1", Standby: []string{"T2", "é"}},
	} {
		w := joined(t, RejoinStable, Assignment{MemberID: "S1", Assigned: []string{"T1"}})
		c, err := w.Apply(as)
		assert.ErrorIs(t, err, ErrInvalidMember, "Apply(%+v): want a malformed assignment refused", as)
		assert.Equal(t, Changes{}, c, "Changes of a rejected assignment %+v", as)
		m := w.Join()
		_, err = a.Assign([]MemberMetadata{m})
		assert.NoError(t, err, "Assign refuses the join report %s that follows Apply(%+v)", FormatMember(m), as)
	}
}

// TestWorkerApplyNamesRepeat: a task listed twice in one list of an
// assignment is named as such, not as "in both assigned and assigned".
func TestWorkerApplyNamesRepeat(t *testing.T) {
	w := joined(t, RejoinStable, Assignment{MemberID: "S1"})
	_, err := w.Apply(Assignment{MemberID: "S1", Assigned: []string{"T1", "T1"}})
	require.ErrorIs(t, err, ErrInvalidMember)
	assert.EqualError(t, err, `learner: assignment for member "S1": task "T1" listed twice in assigned: invalid member metadata`)
	_, err = w.Apply(Assignment{MemberID: "S1", Assigned: []string{"T1"}, Standby: []string{"T1"}})
	assert.EqualError(t, err, `learner: assignment for member "S1": task "T1" in both assigned and standby: invalid member metadata`)
}

// TestWorkerSetLagRefusesMalformedID: a lag reported under a malformed task
// ID would make the leader refuse the next join's report, and with it the
// group's rebalance, so SetLag refuses it instead.
func TestWorkerSetLagRefusesMalformedID(t *testing.T) {
	a, err := New([]Task{{ID: "T1", Stateful: true}}, Options{})
	require.NoError(t, err)
	w := NewWorker("S1", RejoinStable)
	for _, id := range []string{"", "my task", "T1/x", strings.Repeat("T", 256)} {
		err := w.SetLag(id, 5)
		assert.ErrorIs(t, err, ErrInvalidMember, "SetLag(%.20q, 5)", id)
	}
	require.NoError(t, w.SetLag("T9", 5), "SetLag of a task the topology lacks")
	m := w.Join()
	assert.Equal(t, []TaskLag{{"T9", 5}}, m.Lag, "Join's lags after the malformed ones were refused")
	_, err = a.Assign([]MemberMetadata{m})
	assert.NoError(t, err, "Assign refuses the join report %s", FormatMember(m))
}

// TestWorkerUnreadyForgetsRestoredLag checks that Unready withdraws
// readiness by lag too: Restored records a lag of 0 for a learner whose lag
// was reported, and a join after Unready must not carry that 0, or a leader
// with Options.AcceptableLag would promote the learner whose state was just
// lost.
func TestWorkerUnreadyForgetsRestoredLag(t *testing.T) {
	opts := Options{AcceptableLag: 100}
	w := joined(t, RejoinStable, Assignment{MemberID: "S2", Learning: []string{"T1"}})
	require.NoError(t, w.SetLag("T1", 5000))
	require.True(t, w.Restored("T1"))
	require.True(t, opts.LearnerReady(w.Join(), "T1"), "LearnerReady after Restored")
	_, err := w.Apply(Assignment{MemberID: "S2", Learning: []string{"T1"}})
	require.NoError(t, err)

	require.True(t, w.Unready("T1"))
	m := w.Join()
	assert.False(t, opts.LearnerReady(m, "T1"), "LearnerReady after Unready: join reports %+v", m)
	a, err := New([]Task{{ID: "T1", Stateful: true}}, opts)
	require.NoError(t, err)
	out, err := a.Assign([]MemberMetadata{{ID: "S1", Revoked: []string{"T1"}}, m})
	require.NoError(t, err)
	assert.Equal(t, []string{"T1"}, out[0].Assigned, "T1 moved to the learner whose state was lost:\n%s", FormatAssignments(out))
}

// BenchmarkWorkerLongLists: a worker holding tens of thousands of tasks
// joins and applies an assignment. Apply and Join once compared every task
// of one list with every task of another: 9.2 s an operation, against
// 30 ms since (go test -run '^$' -bench WorkerLongLists, one run each), and
// learner simulate -members 12 -tasks 4000 (hundreds of tasks a member, at
// every heartbeat of the coordinator strategy) took 152 s, against 54 since.
func BenchmarkWorkerLongLists(b *testing.B) {
	const n = 40000
	var a Assignment
	a.MemberID = "S1"
	for i := range n {
		a.Assigned = append(a.Assigned, fmt.Sprintf("0_%d", i))
		a.Standby = append(a.Standby, fmt.Sprintf("1_%d", i))
	}
	next := a
	next.Assigned = append(slices.Clone(a.Assigned[1:]), "2_0")
	for b.Loop() {
		b.StopTimer()
		w := joined(b, RejoinStable, a)
		for _, task := range a.Standby {
			require.NoError(b, w.SetLag(task, 10))
		}
		b.StartTimer()
		w.Join()
		_, err := w.Apply(next)
		require.NoError(b, err)
	}
}

// TestWorkersRebalanceUntilBalancedAfterCrash: a group of Workers
// rebalances only when a member joins, leaves, crashes or reports a
// learner ready (ShouldRejoin), so an assignment without learners is the
// last one until something else happens, and must be balanced. S2
// (capacity 8) runs all four tasks and S1 keeps their standbys; S2
// crashes as S3 joins. S1 takes the orphans at once (its standbys are
// their warmest copies), and two of them must start moving to S3 in the
// same assignment: otherwise S1 runs four tasks and S3 none, and no
// member ever rejoins to change that.
func TestWorkersRebalanceUntilBalancedAfterCrash(t *testing.T) {
	tasks := []Task{{"T1", true}, {"T2", true}, {"T3", true}, {"T4", true}}
	opts := Options{Standbys: 1}
	a, err := New(tasks, opts)
	require.NoError(t, err)
	capacity := map[string]int{"S1": 1, "S2": 8, "S3": 1}
	round := func(ws []*Worker) []Assignment { return rebalanceWorkers(t, a, tasks, opts, capacity, ws) }
	s1, s2 := NewWorker("S1", RejoinStable), NewWorker("S2", RejoinStable)
	as := round([]*Worker{s1, s2})
	require.Equal(t, "S1(assigned: [], revoked: [], learning: [], standby: [T1, T2, T3, T4])\n"+
		"S2(assigned: [T1, T2, T3, T4], revoked: [], learning: [])\n", FormatAssignments(as), "the group before the crash")

	ws := []*Worker{s1, NewWorker("S3", RejoinStable)} // S2 crashes, S3 joins
	as = settleWorkers(t, ws, round)
	for _, x := range as {
		assert.Len(t, x.Assigned, 2, "%s runs %v when no member rejoins any more:\n%s", x.MemberID, x.Assigned, FormatAssignments(as))
	}
}

// rebalanceWorkers runs one rebalance of ws: their joins (with their
// capacity, when given), Assign, the shared checker, and every Worker
// applying its assignment and replaying its learners before the next.
func rebalanceWorkers(t *testing.T, a *Assignor, tasks []Task, opts Options, capacity map[string]int, ws []*Worker) []Assignment {
	t.Helper()
	var ms []MemberMetadata
	for _, w := range ws {
		m := w.Join()
		if c, ok := capacity[w.ID()]; ok {
			m.Capacity = c
		}
		ms = append(ms, m)
	}
	as, err := a.Assign(ms)
	require.NoError(t, err)
	vs := learnertest.Check(tasks, opts, ms, as)
	require.Empty(t, vs, "breaks rules:\n%s", learnertest.FormatViolations(vs))
	for i, w := range ws {
		_, err := w.Apply(as[i])
		require.NoError(t, err)
		for _, id := range as[i].Learning {
			w.Restored(id) // every learner replays before the next rebalance
		}
	}
	return as
}

// settleWorkers rebalances ws (round) once, then as long as one of them
// should rejoin, as a real group would, at most 5 times, and returns the
// last assignment: the group's at rest.
func settleWorkers(t *testing.T, ws []*Worker, round func([]*Worker) []Assignment) []Assignment {
	t.Helper()
	as := round(ws)
	for n := 0; slices.ContainsFunc(ws, func(w *Worker) bool { return w.ShouldRejoin(t0) }); n++ {
		require.Less(t, n, 5, "the group keeps rebalancing:\n%s", FormatAssignments(as))
		as = round(ws)
	}
	return as
}

// TestWorkersPromoteLearnerThatLostAContest: S1, leaving, hands T1-T3
// over to learners on S3 while S2 is out of the group; S2 comes back, under
// its ID, with the state of an older assignment in which it learned T1-T3
// too, just as S1 shuts down. Both report T1-T3 ready: S2 wins them (first
// in ID order), S3's learners are dropped, and balancing moves one back to
// S3. S3 reported that task ready at this join, so as a learner its Worker
// would have no news to rejoin for: never promoted, the task learned on S2
// for good, the group at rest at S2 3, S3 1. Every learner the group is
// left with must lead to a rejoin.
func TestWorkersPromoteLearnerThatLostAContest(t *testing.T) {
	tasks := []Task{{"T1", true}, {"T2", true}, {"T3", true}, {"T4", true}}
	a, err := New(tasks, Options{})
	require.NoError(t, err)
	s2 := joined(t, RejoinStable, Assignment{MemberID: "S2", Learning: []string{"T1", "T2", "T3"}})
	s3 := joined(t, RejoinStable, Assignment{MemberID: "S3", Assigned: []string{"T4"}, Learning: []string{"T1", "T2", "T3"}})
	for _, w := range []*Worker{s2, s3} {
		for _, id := range []string{"T1", "T2", "T3"} {
			require.True(t, w.Restored(id))
		}
	}
	ws := []*Worker{s2, s3} // S1, which ran T1-T3, crashed
	as := settleWorkers(t, ws, func(ws []*Worker) []Assignment { return rebalanceWorkers(t, a, tasks, Options{}, nil, ws) })
	for _, x := range as {
		assert.Empty(t, x.Learning, "%s learns %v when no member rejoins any more:\n%s", x.MemberID, x.Learning, FormatAssignments(as))
		assert.Len(t, x.Assigned, 2, "%s runs %v when no member rejoins any more:\n%s", x.MemberID, x.Assigned, FormatAssignments(as))
	}
}
