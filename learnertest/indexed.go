package learnertest

import "github.com/learnerassignor/learner"

// IndexedMembers returns the reports in as learner.Assignor.AssignIndexed
// takes them for the topology tasks: every task the topology has by its
// index, in the order listed; the tasks it lacks that a member holds
// (assigned or revoked) in Stale, the others left out, as Assign drops
// them. Valid reports give AssignIndexed what they give Assign
// (AssignmentsByID).
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

// MembersByID returns indexed reports as reports by ID for the topology
// tasks, each index within it: Stale joins Revoked.
func MembersByID(tasks []learner.Task, in []learner.IndexedMember) []learner.MemberMetadata {
	out := make([]learner.MemberMetadata, len(in))
	for i, m := range in {
		out[i] = learner.MemberMetadata{ID: m.ID, Assigned: ids(tasks, m.Assigned), Revoked: append(ids(tasks, m.Revoked), m.Stale...),
			Learning: ids(tasks, m.Learning), Ready: ids(tasks, m.Ready), Standby: ids(tasks, m.Standby),
			Leaving: m.Leaving, Capacity: m.Capacity, Rack: m.Rack}
		for _, l := range m.Lag {
			out[i].Lag = append(out[i].Lag, learner.TaskLag{Task: tasks[l.Task].ID, Lag: l.Lag})
		}
	}
	return out
}

// AssignmentsByID returns assignments by index as Assign gives them for
// the topology tasks: every list as IDs (nil when empty), Revoked followed
// by Stale.
func AssignmentsByID(tasks []learner.Task, in []learner.IndexedAssignment) []learner.Assignment {
	out := make([]learner.Assignment, len(in))
	for i, as := range in {
		out[i] = learner.Assignment{MemberID: as.MemberID, Assigned: ids(tasks, as.Assigned), Revoked: append(ids(tasks, as.Revoked), as.Stale...),
			Learning: ids(tasks, as.Learning), Learned: ids(tasks, as.Learned), Standby: ids(tasks, as.Standby)}
	}
	return out
}

// ids returns the IDs of the tasks at the given indices, nil for none.
func ids(tasks []learner.Task, idx []int32) []string {
	var out []string
	for _, t := range idx {
		out = append(out, tasks[t].ID)
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
