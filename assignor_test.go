package learner_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

func tasksT(n int, stateless ...int) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("T%d", i+1), Stateful: true}
	}
	for _, i := range stateless {
		tasks[i-1].Stateful = false
	}
	return tasks
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tasks []Task
		opts  Options
		want  error
		msg   string
	}{
		{"negative standbys", tasksT(2), Options{Standbys: -1}, ErrInvalidOptions, "standbys -1"},
		{"standbys too many", tasksT(2), Options{Standbys: 1 << 30}, ErrInvalidOptions, "standbys 1073741824 is out of range (at most 2147483647 replicas over 2 stateful tasks)"},
		{"standbys MaxInt", tasksT(2), Options{Standbys: math.MaxInt}, ErrInvalidOptions, "is out of range (at most 2147483647 replicas over 2 stateful tasks)"},
		{"negative learner budget", tasksT(2), Options{MaxLearners: -2}, ErrInvalidOptions, "max learners -2"},
		{"negative lag", tasksT(2), Options{AcceptableLag: -3}, ErrInvalidOptions, "acceptable lag -3"},
		{"empty task ID", []Task{{ID: ""}}, Options{}, ErrInvalidTopology, `task 0: malformed ID ""`},
		{"malformed task ID", []Task{{ID: "T1"}, {ID: "T 2"}}, Options{}, ErrInvalidTopology, `task 1: malformed ID "T 2"`},
		{"duplicate task", []Task{{ID: "T1"}, {ID: "T2"}, {ID: "T1"}}, Options{}, ErrInvalidTopology, `task 2: ID "T1" duplicates task 0`},
		{"duplicate numeric task", []Task{{ID: "0_1"}, {ID: "0_1"}}, Options{}, ErrInvalidTopology, `task 1: ID "0_1" duplicates task 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.tasks, tc.opts)
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "learner: "), "error %q lacks the package prefix", err)
		})
	}
}

func TestAssignRejectsMalformedMembers(t *testing.T) {
	a, err := New(tasksT(3), Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		members []MemberMetadata
		msg     string
	}{
		{"empty member ID", []MemberMetadata{{ID: "S1"}, {ID: ""}}, `member "" (position 1): malformed member ID`},
		{"malformed member ID", []MemberMetadata{{ID: "S 1"}}, `member "S 1" (position 0): malformed member ID`},
		{"duplicate member ID", []MemberMetadata{{ID: "S1"}, {ID: "S2"}, {ID: "S1"}}, `member "S1" (position 2): duplicate member ID (also at position 0)`},
		{"ready but not learning", []MemberMetadata{{ID: "S1", Learning: []string{"T1"}, Ready: []string{"T2"}}}, `ready task "T2" is not in learning`},
		{"ready twice", []MemberMetadata{{ID: "S1", Learning: []string{"T1"}, Ready: []string{"T1", "T1"}}}, `ready task "T1" listed twice`},
		{"ready unknown task", []MemberMetadata{{ID: "S1", Ready: []string{"T9"}}}, `ready task "T9" is not in learning`},
		{"task in two lists", []MemberMetadata{{ID: "S1", Assigned: []string{"T1"}, Standby: []string{"T1"}}}, `task "T1" listed in both assigned and standby`},
		{"task twice in one list", []MemberMetadata{{ID: "S1", Revoked: []string{"T2", "T2"}}}, `task "T2" listed twice in revoked`},
		{"unknown task twice", []MemberMetadata{{ID: "S1", Assigned: []string{"T9"}, Learning: []string{"T9"}}}, `task "T9" listed in both assigned and learning`},
		{"malformed task ID", []MemberMetadata{{ID: "S1", Learning: []string{"T/1"}}}, `malformed task ID "T/1" in learning`},
		{"negative capacity", []MemberMetadata{{ID: "S1", Capacity: -1}}, "capacity -1 is out of range (0 to 2147483647)"},
		{"unknown task twice in one list", []MemberMetadata{{ID: "S1", Standby: []string{"T9", "T9"}}}, `task "T9" listed twice in standby`},
		{"malformed task ID in lag", []MemberMetadata{{ID: "S1", Lag: []TaskLag{{"T 1", 5}}}}, `malformed task ID "T 1" in lag`},
		{"long malformed ID cut", []MemberMetadata{{ID: strings.Repeat("S", 300)}}, `member "` + strings.Repeat("S", 40) + `"... (position 0): malformed member ID`},
		{"malformed rack", []MemberMetadata{{ID: "S1", Rack: "rack a"}}, `malformed rack "rack a"`},
		{"negative lag", []MemberMetadata{{ID: "S1", Lag: []TaskLag{{"T1", -5}}}}, `lag -5 of task "T1" is negative`},
		{"lag twice", []MemberMetadata{{ID: "S1", Lag: []TaskLag{{"T1", 5}, {"T1", 6}}}}, `lag of task "T1" reported twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := a.Assign(tc.members)
			require.ErrorIs(t, err, ErrInvalidMember, "Assign(%+v) = %v", tc.members, out)
			assert.Contains(t, err.Error(), tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "learner: "), "error %q lacks the package prefix", err)
		})
	}
}

func TestAssignEmptyGroup(t *testing.T) {
	a, err := New(tasksT(3), Options{Standbys: 1})
	require.NoError(t, err)
	out, err := a.Assign(nil)
	require.NoError(t, err)
	assert.NotNil(t, out)
	assert.Empty(t, out)
}

func TestAssignEmptyTopology(t *testing.T) {
	a, err := New(nil, Options{Standbys: 2})
	require.NoError(t, err)
	out, err := a.Assign([]MemberMetadata{{ID: "S1", Assigned: []string{"gone"}}, {ID: "S2"}})
	require.NoError(t, err)
	assert.Equal(t, "S1(assigned: [], revoked: [gone], learning: [])\nS2(assigned: [], revoked: [], learning: [])\n", FormatAssignments(out))
}

// TestZeroAssignor: an Assignor not built by New has no topology, so its
// Assign must refuse rather than panic or drop the members' tasks.
func TestZeroAssignor(t *testing.T) {
	var a Assignor
	members := []MemberMetadata{{ID: "S1", Assigned: []string{"0_0"}}}
	out, err := a.Assign(members)
	assert.ErrorIs(t, err, ErrInvalidTopology, "zero Assignor: Assign(...) = %v, want an error wrapping ErrInvalidTopology", out)
	assert.ErrorContains(t, err, "learner: ")
	outIx, err := a.AssignIndexed([]IndexedMember{{ID: "S1", Assigned: []int32{0}}})
	assert.ErrorIs(t, err, ErrInvalidTopology, "zero Assignor: AssignIndexed(...) = %v, want an error wrapping ErrInvalidTopology", outIx)
	assert.Empty(t, a.Tasks(), "zero Assignor: Tasks()")
	assert.Equal(t, -1, a.TaskIndex("0_0"), "zero Assignor: TaskIndex(0_0)")
	_, err = a.MemberByID(IndexedMember{ID: "S1", Assigned: []int32{0}})
	assert.EqualError(t, err, `learner: member "S1": task index 0 in assigned is outside the topology's 0 tasks: invalid member metadata`, "zero Assignor: MemberByID")
}

// TestLearnerReadyIsAssignsRule: Options.LearnerReady, which bindings use
// to act on readiness outside Assign, must say "ready" exactly when Assign
// promotes the learner.
func TestLearnerReadyIsAssignsRule(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  Options
		ready []string
		lag   []TaskLag
	}{
		{name: "no report"},
		{name: "ready flag", ready: []string{"T1"}},
		{name: "lag without acceptable lag", lag: []TaskLag{{Task: "T1", Lag: 0}}},
		{name: "lag within", opts: Options{AcceptableLag: 10}, lag: []TaskLag{{Task: "T1", Lag: 10}}},
		{name: "lag beyond", opts: Options{AcceptableLag: 10}, lag: []TaskLag{{Task: "T1", Lag: 11}}},
		{name: "no lag reported", opts: Options{AcceptableLag: 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := New(tasksT(2), c.opts)
			require.NoError(t, err)
			// S1 released T1 at join for S2, its learner; T2 keeps the group balanced.
			learner := MemberMetadata{ID: "S2", Assigned: []string{"T2"}, Learning: []string{"T1"}, Ready: c.ready, Lag: c.lag}
			out, err := a.Assign([]MemberMetadata{{ID: "S1", Revoked: []string{"T1"}}, learner})
			require.NoError(t, err)
			promoted := slices.Contains(out[1].Assigned, "T1")
			assert.Equal(t, promoted, c.opts.LearnerReady(learner, "T1"),
				"LearnerReady(%s) disagrees with Assign, which gave S2 %v", FormatMember(learner), out[1].Assigned)
		})
	}
}

func TestAssignOrdersMembersNaturally(t *testing.T) {
	a, err := New(tasksT(1), Options{})
	require.NoError(t, err)
	out, err := a.Assign([]MemberMetadata{{ID: "S10"}, {ID: "S9"}, {ID: "S09"}, {ID: "S1", Assigned: []string{"T1"}}, {ID: "s2"}})
	require.NoError(t, err)
	var ids []string
	for _, o := range out {
		ids = append(ids, o.MemberID)
	}
	assert.Equal(t, []string{"S1", "S09", "S9", "S10", "s2"}, ids)
}

func TestAssignDoesNotMutateInput(t *testing.T) {
	a, err := New(tasksT(8, 8), Options{Standbys: 2, MaxLearners: 1, AcceptableLag: 10})
	require.NoError(t, err)
	in := []MemberMetadata{
		{ID: "S3", Assigned: []string{"T5", "T1", "T2"}, Standby: []string{"T4", "T3"}, Rack: "a"},
		{ID: "S1", Assigned: []string{"T4", "T9"}, Revoked: []string{"T3"}, Lag: []TaskLag{{"T6", 3}}, Capacity: 2},
		{ID: "S2", Learning: []string{"T3", "T6"}, Ready: []string{"T3"}, Lag: []TaskLag{{"T6", 50}}, Leaving: true},
		{ID: "S4"},
	}
	before := learnertest.CloneMembers(in)
	_, err = a.Assign(in)
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(before, in), "Assign mutated its input:\nbefore %+v\nafter  %+v", before, in)
}

// Appending to one returned list must not overwrite the next one: they
// share a backing array.
func TestAssignmentListsDoNotAlias(t *testing.T) {
	a, err := New(tasksT(4), Options{Standbys: 1})
	require.NoError(t, err)
	out, err := a.Assign([]MemberMetadata{{ID: "S1", Assigned: []string{"T1", "T2"}}, {ID: "S2", Assigned: []string{"T3", "T4"}}})
	require.NoError(t, err)
	want := FormatAssignments(out)
	for i := range out {
		out[i].Assigned = append(out[i].Assigned, "X")
		out[i].Standby = append(out[i].Standby, "Y")
	}
	for i := range out {
		out[i].Assigned = out[i].Assigned[:len(out[i].Assigned)-1]
		out[i].Standby = out[i].Standby[:len(out[i].Standby)-1]
	}
	assert.Equal(t, want, FormatAssignments(out))
}

// Once balanced with standbys in place and nothing to learn, Assign returns
// its input: the defined balanced stage, no endless rebalancing.
func TestAssignBalancedStageIsFixedPoint(t *testing.T) {
	a, err := New(tasksT(20, 3, 7), Options{Standbys: 2})
	require.NoError(t, err)
	in := []MemberMetadata{{ID: "S1", Assigned: taskIDs(1, 20)}, {ID: "S2"}, {ID: "S3"}, {ID: "S4"}, {ID: "S5", Capacity: 2}}
	var out []Assignment
	for round := range 10 {
		out, err = a.Assign(in)
		require.NoError(t, err)
		if round > 0 && learnertest.FixedPoint(in, out) {
			return
		}
		in = nextReports(in, out)
	}
	require.Failf(t, "no fixed point", "no fixed point after 10 rounds; last assignment:\n%s", FormatAssignments(out))
}

func taskIDs(from, to int) []string {
	var ids []string
	for i := from; i <= to; i++ {
		ids = append(ids, fmt.Sprintf("T%d", i))
	}
	return ids
}

// nextReports is what members report at their next join when every learner
// finished: learned tasks revoked, learners ready.
func nextReports(in []MemberMetadata, out []Assignment) []MemberMetadata {
	next := make([]MemberMetadata, len(out))
	byID := map[string]MemberMetadata{}
	for _, m := range in {
		byID[m.ID] = m
	}
	for i, o := range out {
		m := byID[o.MemberID]
		learned := map[string]bool{}
		for _, id := range o.Learned {
			learned[id] = true
		}
		next[i] = MemberMetadata{ID: o.MemberID, Capacity: m.Capacity, Leaving: m.Leaving, Rack: m.Rack,
			Learning: o.Learning, Ready: o.Learning, Standby: o.Standby}
		for _, id := range o.Assigned {
			if learned[id] {
				next[i].Revoked = append(next[i].Revoked, id)
			} else {
				next[i].Assigned = append(next[i].Assigned, id)
			}
		}
	}
	return next
}

func TestAssignErrorsAreWrapped(t *testing.T) {
	a, err := New(tasksT(1), Options{})
	require.NoError(t, err)
	_, err = a.Assign([]MemberMetadata{{ID: ""}})
	assert.True(t, errors.Is(err, ErrInvalidMember))
	assert.False(t, errors.Is(err, ErrInvalidTopology))
}

// TestAssignConcurrentCallsAgree runs Assign from several goroutines at
// once on one Assignor, with groups of different sizes and events (so the
// working memory one call leaves for the next never fits it exactly), a
// malformed group among them, and checks every result against the same
// call made alone. Under -race it also checks that calls share no state
// but the pool of working memory.
func TestAssignConcurrentCallsAgree(t *testing.T) {
	tasks := benchTopology(3000)
	a, err := New(tasks, Options{})
	require.NoError(t, err)
	var inputs [][]MemberMetadata
	for _, members := range []int{7, 40, 150} {
		for _, ev := range []benchEvent{eventStable, eventScaleUp, eventScaleDown, eventCrash, eventPromote} {
			inputs = append(inputs, benchMembers(tasks, members, ev))
		}
	}
	bad := slices.Clone(inputs[0])
	bad[0].Capacity = -1
	inputs = append(inputs, bad)
	type result struct {
		out []Assignment
		err error
	}
	want := make([]result, len(inputs))
	for i, in := range inputs {
		want[i].out, want[i].err = a.Assign(in)
	}
	const workers, calls = 4, 40
	got := make([][]result, workers)
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for c := range calls {
				i := (w*7 + c*3) % len(inputs)
				out, err := a.Assign(inputs[i])
				got[w] = append(got[w], result{out, err})
			}
		}()
	}
	for range workers {
		<-done
	}
	for w := range workers {
		for c, r := range got[w] {
			i := (w*7 + c*3) % len(inputs)
			require.Equal(t, want[i], r, "Assign(input %d) from goroutine %d, call %d, differs from the call made alone", i, w, c)
		}
	}
}
