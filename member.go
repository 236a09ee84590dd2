package learner

// MemberMetadata is what a member reports when it joins a rebalance: its own
// view of the tasks it runs, so the leader needs no history of its own and a
// leader crash loses nothing.
//
// Every list holds task IDs of the topology; order within a list does not
// matter. A task may appear in at most one of Assigned, Revoked, Learning and
// Standby, and Ready must be a subset of Learning. Nil and empty lists are
// the same. Tasks the topology no longer has are allowed in every list: they
// come back in the member's Revoked (when it ran them) or are dropped.
type MemberMetadata struct {
	// ID identifies the member: non-empty, at most 255 bytes of letters,
	// digits, '_', '-' and '.', unique within the group.
	ID string

	// Assigned lists the active tasks the member runs.
	Assigned []string
	// Revoked lists the tasks the member gave up at this join because its
	// last assignment tagged them learned (someone else is learning them).
	// It keeps their state, so it is the task's owner until a learner takes over.
	Revoked []string
	// Learning lists the member's learner tasks: tasks it replays beside
	// their active owner so it can take them over without downtime.
	Learning []string
	// Ready lists the learner tasks whose replay has finished.
	Ready []string
	// Standby lists the member's standby replicas.
	Standby []string
	// Leaving is the join reason "leaving soon": the member gets nothing new
	// and hands its tasks over through learners before it shuts down.
	Leaving bool

	// Capacity is the member's processing capacity, for example its number of
	// stream threads; balancing evens out load per unit of capacity.
	// Zero means 1; at most MaxCapacity.
	Capacity int
	// Rack is the member's failure domain. Standbys go to racks other than
	// their active's where possible. Empty means no rack.
	Rack string
	// Lag reports the remaining changelog lag of the member's learner and
	// standby tasks. With Options.AcceptableLag a learner close enough counts
	// as ready, and the leader picks the least-lagging member to learn a task.
	Lag []TaskLag
}

// MaxCapacity is the largest MemberMetadata.Capacity Assign accepts,
// 2^31-1. Balancing multiplies a capacity by twice a member's load plus one
// (at most 2^31+1, as a topology has at most 2^30 tasks) and standby
// placement by the number of standbys (at most 2^31-1), so no product
// reaches 2^63; nor does the sum of all members' capacities.
const MaxCapacity = 1<<31 - 1

// MaxMembers is the most members Assign takes, 2^27-1: a member's rank
// plus one must fit the bits of a report's stamp that its kind leaves
// (reader.stamp in ingest.go).
const MaxMembers = 1<<(32-kindBits) - 1

// TaskLag is the remaining changelog lag of one task's local state on a
// member: the number of records it still has to replay. Any non-negative
// int64 is allowed: lags are only compared, never added or multiplied.
type TaskLag struct {
	Task string
	Lag  int64
}

// Assignment is the leader's answer to one member: what it runs from now on.
//
// Lists are in the topology's task order and never nil-versus-empty
// sensitive; a list may be the member's reported one (see Assign). A member
// compares Assigned with what it runs: tasks it runs that are not in
// Assigned are in Revoked and must be closed.
type Assignment struct {
	// MemberID is the ID of the member this assignment is for.
	MemberID string

	// Assigned lists the member's active tasks.
	Assigned []string
	// Revoked lists the tasks the member held (in its Assigned or Revoked at
	// join) and no longer keeps: it closes them for good.
	Revoked []string
	// Learning lists the tasks the member learns: it replays their state
	// and rejoins once they are ready.
	Learning []string
	// Learned lists the member's active tasks that another member is
	// learning (the isLearned tag): the member revokes them when it next joins.
	Learned []string
	// Standby lists the member's standby replicas.
	Standby []string
}

// RoleConflict is one breach of the one-role rule found by RoleConflicts: a
// task listed again after an earlier list, or an earlier place in the same
// list, already held it.
type RoleConflict struct {
	// Task is the task listed twice.
	Task string
	// First is the index of the list that holds Task first.
	First int
	// List and At locate the repeat: lists[List][At]. List equals First for
	// a task repeated within one list.
	List, At int
}

// RoleConflicts checks the one-role rule: a member holds each task in at
// most one role and lists it once. The roles are the lists of an Assignment
// (Assigned, Learning, Standby) or of a MemberMetadata (Assigned, Revoked,
// Learning, Standby), passed in that order. It returns every repeat, in list
// order, so a caller can reject the lists (the first conflict names the two
// roles) or repair them by dropping the repeats (each task keeps its first
// role). It returns nil when the lists are disjoint and free of repeats.
func RoleConflicts(lists ...[]string) []RoleConflict {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	first := make(map[string]int, n) // task -> list holding it first
	var cs []RoleConflict
	for i, l := range lists {
		for at, id := range l {
			if f, dup := first[id]; dup {
				cs = append(cs, RoleConflict{Task: id, First: f, List: i, At: at})
				continue
			}
			first[id] = i
		}
	}
	return cs
}

// CompareIDs orders member IDs the way Assign lists its Assignments: runs of
// digits compare as numbers, so "S2" sorts before "S10"; IDs equal as
// numbers ("S01", "S1") fall back to byte order, so the order is total. It
// returns a negative number, zero or a positive number, like
// strings.Compare, so it can be passed to slices.SortFunc.
func CompareIDs(a, b string) int { return compareIDs(a, b) }
