package learnertest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// TestGenerateRejectsBadSpec: a Spec Generate cannot draw from, or a nil
// random source, is an error wrapping ErrInvalidArgument that names the
// field, never a panic; the edges of the ranges are accepted.
func TestGenerateRejectsBadSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		r    *rand.Rand
		spec learnertest.Spec
		want string // "" for no error
	}{
		{r, learnertest.Spec{MaxMembers: -1, MaxTasks: 10}, "Spec.MaxMembers is -1, want 0 to"},
		{r, learnertest.Spec{MaxMembers: 10, MaxTasks: -1}, "Spec.MaxTasks is -1, want 0 to"},
		{r, learnertest.Spec{MaxMembers: learner.MaxMembers + 1}, "Spec.MaxMembers is"},
		{r, learnertest.Spec{MaxTasks: learner.MaxTasks + 1}, "Spec.MaxTasks is"},
		{nil, learnertest.Spec{MaxMembers: 5, MaxTasks: 5}, "nil *rand.Rand"},
		{r, learnertest.Spec{}, ""},
		{r, learnertest.Spec{MaxMembers: 3, MaxTasks: 0, Extreme: true}, ""},
	} {
		var g learner.Rebalance
		var err error
		require.NotPanics(t, func() { g, err = learnertest.Generate(tc.r, tc.spec) }, "Generate(%+v)", tc.spec)
		if tc.want == "" {
			require.NoError(t, err, "Generate(%+v)", tc.spec)
			assert.LessOrEqual(t, len(g.Members), tc.spec.MaxMembers, "Generate(%+v): members", tc.spec)
			assert.LessOrEqual(t, len(g.Tasks), tc.spec.MaxTasks, "Generate(%+v): tasks", tc.spec)
			continue
		}
		require.ErrorIs(t, err, learnertest.ErrInvalidArgument, "Generate(%+v)", tc.spec)
		assert.Contains(t, err.Error(), tc.want, "Generate(%+v)", tc.spec)
	}
}

// TestHistoryRunRejectsBadHistory: a History Run cannot run (K outside 1
// to MaxK, no Assign, not built by NewHistory) is an error wrapping
// ErrInvalidArgument before any rebalance, never a panic.
func TestHistoryRunRejectsBadHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*learnertest.History) *learnertest.History
		want string
	}{
		{"K = 0", func(h *learnertest.History) *learnertest.History { h.K = 0; return h }, "History.K is 0, want 1 to"},
		{"K < 0", func(h *learnertest.History) *learnertest.History { h.K = -3; return h }, "History.K is -3, want 1 to"},
		{"K > MaxK", func(h *learnertest.History) *learnertest.History { h.K = learnertest.MaxK + 1; return h }, "History.K is"},
		{"no Assign", func(h *learnertest.History) *learnertest.History { h.Assign = nil; return h }, "History.Assign is nil"},
		{"zero History", func(*learnertest.History) *learnertest.History { return &learnertest.History{K: 1} }, "not built by NewHistory"},
	} {
		h, err := learnertest.NewHistory(rand.New(rand.NewPCG(7, 4)), false)
		require.NoError(t, err, "NewHistory")
		h = tc.edit(h)
		require.NotPanics(t, func() { err = h.Run(5, nil) }, "%s: Run", tc.name)
		require.ErrorIs(t, err, learnertest.ErrInvalidArgument, "%s: Run", tc.name)
		assert.Contains(t, err.Error(), tc.want, "%s: Run", tc.name)
		assert.Zero(t, h.Rebalances(), "%s: Run rebalanced before refusing", tc.name)
	}

	_, err := learnertest.NewHistory(nil, false)
	require.ErrorIs(t, err, learnertest.ErrInvalidArgument, "NewHistory(nil)")

	h, err := learnertest.NewHistory(rand.New(rand.NewPCG(3, 4)), false)
	require.NoError(t, err, "NewHistory")
	h.K = learnertest.MaxK // the edge runs
	require.NoError(t, h.Run(5, nil), "Run with K = MaxK")
}

// TestCheckAssignNilArguments: a nil rng shuffles with a fixed seed, and a
// nil assign is an "error" violation, never a panic.
func TestCheckAssignNilArguments(t *testing.T) {
	tasks := []learner.Task{{ID: "T1", Stateful: true}}
	in := []learner.MemberMetadata{{ID: "S1"}}
	a, err := learner.New(tasks, learner.Options{})
	require.NoError(t, err, "New")
	var vs []learnertest.Violation
	require.NotPanics(t, func() { _, vs = learnertest.CheckAssign(tasks, learner.Options{}, a.Assign, in, nil) }, "CheckAssign(rng nil)")
	assert.Empty(t, vs, "CheckAssign(rng nil)")
	require.NotPanics(t, func() { _, vs = learnertest.CheckAssign(tasks, learner.Options{}, nil, in, nil) }, "CheckAssign(assign nil)")
	assert.True(t, learnertest.HasRule(vs, "error"), "CheckAssign(assign nil) = %v, want an error violation", vs)
}
