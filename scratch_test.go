package learner_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// TestAssignReuseMatchesFresh: one Assignor, whose calls share working
// memory (scratch.go), fed a sequence of groups with every feature
// (standbys, lags, capacities, racks), as reports chained from its own
// answers, random subsets of them and malformed ones, answers each as a new
// Assignor does.
func TestAssignReuseMatchesFresh(t *testing.T) {
	for i := range 150 {
		r := rand.New(rand.NewPCG(uint64(i), 9))
		g, err := learnertest.Generate(r, learnertest.Spec{MaxMembers: 150, MaxTasks: 3000, Features: true})
		require.NoError(t, err, "Generate")
		a, err := New(g.Tasks, g.Options)
		if err != nil {
			continue
		}
		in := g.Members
		for step := range 8 {
			var cur []MemberMetadata
			switch step % 4 {
			case 0, 1:
				cur = in
			case 2:
				for _, m := range in {
					if r.IntN(3) > 0 {
						cur = append(cur, m)
					}
				}
			case 3:
				bad := Rebalance{Tasks: g.Tasks, Options: g.Options, Members: slices.Clone(in)}
				corruptGroup(&bad, byte(r.IntN(10)), r)
				cur = bad.Members
			}
			fresh, err := New(g.Tasks, g.Options)
			require.NoError(t, err)
			want, wantErr := fresh.Assign(cur)
			got, gotErr := a.Assign(cur)
			require.Equal(t, wantErr, gotErr, "group %d step %d: the reused Assignor's error, want a new one's", i, step)
			require.Equal(t, want, got, "group %d step %d: Assign(...) on a reused Assignor, want a new one's\n%s",
				i, step, Rebalance{Tasks: g.Tasks, Options: g.Options, Members: cur})
			if gotErr == nil && step%4 != 3 {
				in = nextReports(cur, got)
			}
		}
	}
}
