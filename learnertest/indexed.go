package learnertest

import "github.com/learnerassignor/learner"

// IndexedMembers returns the reports in as learner.Assignor.AssignIndexed
// takes them for the topology tasks: every task the topology has by its
// index, in the order listed; the tasks it lacks that a member holds
// (assigned or revoked) in Stale, the others left out, as Assign drops
// them. Valid reports give AssignIndexed what they give Assign
// (Assignor.AssignmentByID).
func IndexedMembers(tasks []learner.Task, in []learner.MemberMetadata) []learner.IndexedMember {
	index := taskIndex(tasks)
	out := make([]learner.IndexedMember, len(in))
	for i, m := range in {
		x := learner.IndexedMember{ID: m.ID, Leaving: m.Leaving, Capacity: m.Capacity, Rack: m.Rack}
		indices := func(ids []string, held bool) []int32 {
			var idx []int32
			for _, id := range ids {
				if t, ok := index[id]; ok {
					idx = append(idx, t)
				} else if held {
					x.Stale = append(x.Stale, id)
				}
			}
			return idx
		}
		x.Assigned, x.Revoked = indices(m.Assigned, true), indices(m.Revoked, true)
		x.Learning, x.Ready, x.Standby = indices(m.Learning, false), indices(m.Ready, false), indices(m.Standby, false)
		for _, l := range m.Lag {
			if t, ok := index[l.Task]; ok {
				x.Lag = append(x.Lag, learner.IndexedLag{Task: t, Lag: l.Lag})
			}
		}
		out[i] = x
	}
	return out
}

// taskIndex maps the topology's task IDs to their indices.
func taskIndex(tasks []learner.Task) map[string]int32 {
	index := make(map[string]int32, len(tasks))
	for i, t := range tasks {
		index[t.ID] = int32(i)
	}
	return index
}
