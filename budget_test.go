package learner_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// With a learner budget B and every learner ready one rebalance after it is
// placed, the group is learner-free after at most ceil(moves/B)+1
// rebalances (moves = learners placed in all), and the next rebalance
// returns its input: each rebalance promotes the previous batch and places
// the next one, and only the last promotion places nothing.
func TestLearnerBudgetConvergenceBound(t *testing.T) {
	for _, tc := range []struct {
		name            string
		members, joined int
		leaving         int
		tasks, budget   int
	}{
		{"scale up 4+4, 40 tasks, budget 3", 4, 4, 0, 40, 3},
		{"scale up 2+6, 64 tasks, budget 5", 2, 6, 0, 64, 5},
		{"scale down 6-2, 36 tasks, budget 4", 6, 0, 2, 36, 4},
		{"scale up and down, budget 1", 5, 2, 2, 25, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := make([]Task, tc.tasks)
			for i := range tasks {
				tasks[i] = Task{ID: fmt.Sprintf("%d_%d", i%3, i/3), Stateful: true}
			}
			a, err := New(tasks, Options{MaxLearners: tc.budget})
			require.NoError(t, err)
			// A balanced group: round-robin ownership.
			in := make([]MemberMetadata, tc.members+tc.joined)
			for i := range in {
				in[i].ID = fmt.Sprintf("S%d", i+1)
				in[i].Leaving = i < tc.leaving
			}
			for i, task := range tasks {
				m := &in[i%tc.members]
				m.Assigned = append(m.Assigned, task.ID)
			}

			moves, rounds := 0, 0
			for {
				out, err := a.Assign(in)
				require.NoError(t, err)
				rounds++
				learners := 0
				for _, o := range out {
					learners += len(o.Learning)
				}
				require.LessOrEqual(t, learners, tc.budget, "round %d: learners over the budget:\n%s", rounds, FormatAssignments(out))
				moves += learners // every reported learner was ready and promoted: these are new
				if learners == 0 {
					bound := (moves+tc.budget-1)/tc.budget + 1
					assert.LessOrEqual(t, rounds, bound, "learner-free after %d rebalances, want at most ceil(%d moves / %d)+1 = %d", rounds, moves, tc.budget, bound)
					next := nextReports(in, out)
					again, err := a.Assign(next)
					require.NoError(t, err)
					assert.True(t, learnertest.FixedPoint(next, again), "rebalance after the learner-free one changed the group:\n%s", FormatAssignments(again))
					for i, o := range again {
						if in[i].Leaving {
							assert.Empty(t, o.Assigned, "leaving member %s still runs tasks", o.MemberID)
						}
					}
					t.Logf("%d moves, %d rebalances (bound %d)", moves, rounds, bound)
					return
				}
				require.LessOrEqual(t, rounds, 100, "no convergence after 100 rebalances")
				in = nextReports(in, out)
			}
		})
	}
}
