package learner_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
)

// Filling missing standbys must not move a reported one when a placement
// that meets every quota keeps it: a moved standby replays the task's whole
// state on its new member while the old copy lingers as an extra (rule
// 13). Both groups below have such a placement, each member keeping its
// reported standby and holding exactly its quota; the assignor used to
// move S4's copy of T2 in the first (fill overloaded S4 with T3, and
// repairQuotas gave S6 the reported T2) and S5's copy of T1 in the second
// (repairQuotas handed S12 the reported T1 before the new T2).
func TestFillKeepsReportedStandbysWithinQuotas(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"trade new placements", `tasks: T1 T2 T3
standbys: 1
S4(assigned: [T1], standby: [T2], lag: [T2=0])
S5(assigned: [T2])
S6(assigned: [T3])
`},
		{"give new ones first", `tasks: T1 T2 T3
standbys: 2
S4(assigned: [T1])
S5(standby: [T1])
S7(standby: [T2])
S12(assigned: [T3])
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRebalance(c.src)
			require.NoError(t, err)
			a, err := New(r.Tasks, r.Options)
			require.NoError(t, err)
			out, err := a.Assign(r.Members)
			require.NoError(t, err)
			holders := map[string][]string{} // task -> members with a standby of it
			for _, o := range out {
				for _, task := range o.Standby {
					holders[task] = append(holders[task], o.MemberID)
				}
			}
			// A task with more standbys than asked keeps the old copy of
			// a standby that moved.
			for _, task := range r.Tasks {
				assert.Len(t, holders[task.ID], r.Options.Standbys,
					"%s has standbys on %v: one moved and left its copy behind\n%s",
					task.ID, holders[task.ID], FormatAssignments(out))
			}
			for _, m := range r.Members {
				for _, task := range m.Standby {
					owns := slices.ContainsFunc(out, func(o Assignment) bool {
						return o.MemberID == m.ID && slices.Contains(o.Assigned, task)
					})
					if !owns { // else its standby took the ownerless task over (rule 5)
						assert.Contains(t, holders[task], m.ID, "%s's reported standby of %s moved\n%s",
							m.ID, task, FormatAssignments(out))
					}
				}
			}
		})
	}
}
