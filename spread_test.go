package learner_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
)

// Members joining a group whose subtopologies are spread keep them spread:
// after the rebalance (learners counted on their learner) no member plans
// more than its share of a subtopology, rounded up, plus one. This is the
// case the spread rule is built for: balancing moves, tasks of one kind,
// equal capacities. (Tasks placed without balancing, after crashes or
// leaves, are not covered: spread is a preference there, see docs/rules.md.)
func TestPropertyJoinsKeepSubtopologiesSpread(t *testing.T) {
	seed := baseSeed(t) // LEARNER_SEED replays a failure
	r := rand.New(rand.NewPCG(seed, 7))
	for c := range runs(1000, 20000) {
		subs, parts := 2+r.IntN(5), 1+r.IntN(20)
		members, joins := 1+r.IntN(12), 1+r.IntN(6)
		stateful, interleaved := r.IntN(2) == 0, r.IntN(2) == 0
		var tasks []Task
		for i := range subs * parts {
			s, p := i/parts, i%parts
			if interleaved { // topology order 0_0 1_0 2_0 0_1 ...
				s, p = i%subs, i/subs
			}
			tasks = append(tasks, Task{ID: fmt.Sprintf("%d_%d", s, p), Stateful: stateful})
		}
		a, err := New(tasks, Options{})
		require.NoError(t, err)
		// A spread group: each subtopology dealt round the members in turn.
		in := make([]MemberMetadata, members+joins)
		for m := range in {
			in[m].ID = fmt.Sprintf("S%d", m+1)
		}
		next := 0
		for s := range subs {
			for p := range parts {
				id := fmt.Sprintf("%d_%d", s, p)
				in[next%members].Assigned = append(in[next%members].Assigned, id)
				next++
			}
		}
		out, err := a.Assign(in)
		require.NoError(t, err)
		planned := map[string]map[int]int{} // member -> subtopology -> planned tasks
		for _, o := range out {
			planned[o.MemberID] = map[int]int{}
			learned := map[string]bool{}
			for _, id := range o.Learned {
				learned[id] = true
			}
			for _, id := range append(o.Learning, o.Assigned...) {
				if !learned[id] {
					s, _, _ := ParseSubtopologyID(id)
					planned[o.MemberID][s]++
				}
			}
		}
		limit := (parts+members+joins-1)/(members+joins) + 1
		for m, counts := range planned {
			for s, n := range counts {
				if n > limit { // guarded: the message formats the whole output
					require.Failf(t, "subtopology over its share", "case %d (LEARNER_SEED=%d): %s plans %d tasks of subtopology %d, want at most %d:\n%s\n%s",
						c, seed, m, n, s, limit, Rebalance{Tasks: tasks, Members: in}, FormatAssignments(out))
				}
			}
		}
	}
}
