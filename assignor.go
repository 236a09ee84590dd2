package learner

import "sync"

// Assignor assigns the tasks of one topology. Build it with New: the zero
// Assignor has no tasks, and its Assign and AssignIndexed return an error
// wrapping ErrInvalidTopology. Its tasks and Options never change once it is
// built; it is safe for concurrent use and must not be copied once used.
//
// Between calls it keeps the working memory of Assign for the next call,
// until two garbage collections pass without a call: about 20 bytes a task
// after a stable group, up to about 100 after one that balanced and placed
// standbys (measured at 1,000 members and 100,000 tasks).
type Assignor struct {
	topology
	opts Options
	// scratch pools the working memory of Assign calls (scratch.go).
	scratch sync.Pool
}

// New returns an Assignor for the given tasks (in the order every assignment
// lists them) and options. Task IDs must be valid and unique.
func New(tasks []Task, opts Options) (*Assignor, error) {
	topo, err := newTopology(tasks)
	if err != nil {
		return nil, err
	}
	if err := opts.validate(topo.numTasks() - topo.stateless); err != nil {
		return nil, err
	}
	return &Assignor{topology: topo, opts: opts}, nil
}

// Tasks returns a copy of the topology's tasks, in order.
func (a *Assignor) Tasks() []Task {
	if a.idAt == nil { // the zero Assignor (numTasks would be -1)
		return []Task{}
	}
	tasks := make([]Task, a.numTasks())
	for t := range tasks {
		tasks[t] = Task{ID: a.id(int32(t)), Stateful: a.isStateful(int32(t))}
	}
	return tasks
}

// TaskIndex returns the position of the task with the given ID in the
// topology's order (the order of Tasks), or -1 if the topology has no such
// task. It is a table or hash lookup that allocates nothing, so an encoder
// can name tasks by position instead of by ID.
func (a *Assignor) TaskIndex(id string) int { return int(a.index.lookup(id)) }

// Options returns the options the Assignor was built with.
func (a *Assignor) Options() Options { return a.opts }

// Assign computes every member's next assignment from what the members
// reported at join. It returns one Assignment per member, in natural order of
// member ID (S2 before S10), whatever the order of members.
//
// Assign never mutates members and depends on nothing else: the same set of
// reports always gives the same assignments. With no members it returns an
// empty slice. Conflicting or stale reports (two members claiming one task,
// tasks the topology no longer has, learners of ownerless tasks) are resolved,
// never lost or duplicated; malformed reports are an error wrapping
// ErrInvalidMember that names the member and the task.
//
// A list a member keeps as it reported it (Assigned or Standby, every
// member's at a fixed point) comes back as that member's own slice, not a
// copy: copying them was most of what Assign allocated. Every returned
// slice is capped, so appending to one copies it; editing one in place
// edits the member's report too, so copy before sorting or filtering a
// list in place if the reports are still in use. Other task ID strings
// may be the members' own as well (strings are immutable: sharing them is
// safe, and keeps them reachable while the output is).
func (a *Assignor) Assign(members []MemberMetadata) ([]Assignment, error) {
	g, s, err := a.assign(reports{byID: members})
	if err != nil {
		return nil, err
	}
	defer putScratch(&a.scratch, s, true) // the output shares no memory with s
	return g.output(), nil
}
