package learner_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// Multi-round histories (learnertest.History): a simulated group applies
// every assignment the way its members would and drives Assign for hundreds
// of rebalances, every one checked with learnertest.CheckAssign; between
// bursts of membership changes it must reach its fixed point within
// learnertest.ConvergenceBound rebalances.
//
//	go test -run History                        # 200 histories (CI)
//	LEARNER_LONG=1 go test -run History         # 5,000 histories
//	LEARNER_SEED=123 go test -run History       # replay a printed seed

// TestHistoryChaosAndConvergence runs 300-rebalance histories (half of them
// with capacities, racks and lag-based readiness; across both halves, half
// with only some members reporting lags, MixedLags); invariants are checked
// at every rebalance and every quiet spell must converge within its bound.
func TestHistoryChaosAndConvergence(t *testing.T) {
	seed := baseSeed(t)
	n := runs(200, 5000)
	t.Logf("seed %d, %d histories", seed, n)
	stats := learnertest.NewQuietStats()
	rounds := 0
	for i := range n {
		s, err := learnertest.NewHistory(rand.New(rand.NewPCG(seed+uint64(i), 3)), i%2 == 1)
		require.NoError(t, err)
		s.MixedLags = i/2%2 == 1
		require.NoError(t, s.Run(300, stats), "history %d (LEARNER_SEED=%d, k=%d, mixed lags %t)", i, seed, s.K, s.MixedLags)
		rounds += s.Rebalances()
	}
	t.Logf("%d rebalances; most rebalances to the fixed point without a learner budget (clean start; after chaos):", rounds)
	for k := 1; k <= 4; k++ {
		t.Logf("  k=%d: %d (bound %d); %d (bound %d)", k, stats.Most(k, true), learnertest.ConvergenceBound(k, 0, 1, true),
			stats.Most(k, false), learnertest.ConvergenceBound(k, 0, 1, false))
	}
	t.Logf("with a learner budget: %d quiet spells, the closest to its bound ended %d rebalances before it", stats.Budgeted, stats.BudgetSlack)
}

// TestHistorySubtopologySpread checks issue 4's per-subtopology spread in
// the strongest form, which docs/rules.md does not promise: spread decides
// which donor gives and which task moves when balancing, without extra
// moves, so members joining a spread group keep it within each member's
// share of a subtopology (rounded up) plus one. Histories here start empty and only grow (crashes and leaves
// place orphans and hand-overs by load and local state, not spread), with
// equal capacities and no standbys (balancing gives a receiver's standby
// first). At every fixed point no member may exceed its share plus one.
func TestHistorySubtopologySpread(t *testing.T) {
	t.Skip("spread is a preference, not a guarantee (docs/rules.md): a donor gives its stateless tasks first whatever " +
		"their subtopology, so growing groups can still end above share+1; reproducers in the issue 4 note")
	seed := baseSeed(t)
	n := runs(100, 2000)
	t.Logf("seed %d, %d histories", seed, n)
	for i, ran := 0, 0; ran < n; i++ {
		s, err := learnertest.NewHistory(rand.New(rand.NewPCG(seed+uint64(i), 5)), true)
		require.NoError(t, err)
		if len(s.Tasks) == 0 || !isSubtopologyID(s.Tasks[0].ID) || s.Options.Standbys > 0 ||
			s.Options.MaxLearners > 0 || s.Options.AcceptableLag > 0 {
			continue // NewHistory draws such IDs for all tasks or none
		}
		ran++
		s.Spread, s.Grow, s.Capacities = true, true, false
		require.NoError(t, s.Run(100, nil), "history %d (LEARNER_SEED=%d, k=%d)", i, seed, s.K)
	}
}

func isSubtopologyID(id string) bool {
	_, _, ok := ParseSubtopologyID(id)
	return ok
}
