package learnertest

import (
	"slices"

	"github.com/learnerassignor/learner"
)

// CheckRound returns every rule one round of a group breaks whoever computed
// its assignments (this library, a model of another assignor) and however
// they were delivered: the rules that keep a group sound, a subset of
// Check's. in is what the members reported, out what they were sent, in any
// member order; withheld lists the tasks held back for a follow-up
// rebalance because their old owner must revoke them first. The rules:
//
//	shape       one assignment for each member that joined and no other;
//	            lists as Check requires them, except for order
//	held-twice  one role per task on a member (learner.RoleConflicts)
//	one-owner   every task active on exactly one member, a withheld task
//	            on none (no owner at all when nobody joined)
func CheckRound(tasks []learner.Task, in []learner.MemberMetadata, out []learner.Assignment, withheld []string) []Violation {
	c := &checker{in: newInputView(tasks, learner.Options{}, in)}
	joined := map[string]int{}
	for _, m := range in {
		joined[m.ID]++
	}
	owners := make([][]string, len(tasks))
	for _, a := range out {
		switch n := joined[a.MemberID]; {
		case n == 0:
			c.add("shape", a.MemberID, "", "assignment for a member that did not join")
		case n < 0:
			c.add("shape", a.MemberID, "", "second assignment for the member")
		default:
			joined[a.MemberID] = -1 // assigned
		}
		c.lists(a)
		for _, id := range a.Assigned {
			if t, ok := c.in.taskIdx[id]; ok {
				owners[t] = append(owners[t], a.MemberID)
			}
		}
	}
	for _, m := range c.in.members {
		if joined[m.ID] > 0 {
			c.add("shape", m.ID, "", "joined but got no assignment")
		}
	}
	for t, task := range tasks {
		want := 1
		if len(in) == 0 || slices.Contains(withheld, task.ID) {
			want = 0
		}
		if len(owners[t]) != want {
			c.add("one-owner", "", task.ID, "active on %v, want %d owner(s)", owners[t], want)
		}
	}
	return c.vs
}
