package learner

import (
	"errors"
	"fmt"
)

// Errors returned by New and Assign wrap one of these, so callers can test
// them with errors.Is.
var (
	// ErrInvalidTopology reports a task list New cannot use.
	ErrInvalidTopology = errors.New("invalid topology")
	// ErrInvalidOptions reports an option out of range.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrInvalidMember reports member metadata Assign cannot use.
	ErrInvalidMember = errors.New("invalid member metadata")
)

// Options configure an Assignor. The zero value is the design document's
// plain algorithm: no standbys, no learner budget, no lag-based readiness.
type Options struct {
	// Standbys is the number of standby replicas of each stateful task,
	// placed on staying members other than the task's owner and learner.
	Standbys int
	// MaxLearners caps the learners placed for rebalancing and hand-over
	// across the group at once; more are placed as earlier ones finish.
	// Zero means no cap.
	MaxLearners int
	// AcceptableLag, when positive, makes a learner whose reported lag is at
	// most AcceptableLag ready even without its ready flag. Zero disables
	// lag-based readiness; members can always report Ready themselves.
	AcceptableLag int64
}

// Assignor assigns the tasks of one topology. It is immutable once built and
// safe for concurrent use.
type Assignor struct {
	tasks []Task
	index taskIndex
	opts  Options
	sub   []int32 // per task: dense subtopology number, when every ID has the form
	nSubs int     // distinct subtopologies; 0 when some ID lacks the form
}

// New returns an Assignor for the given tasks (in the order every assignment
// lists them) and options. Task IDs must be valid and unique.
func New(tasks []Task, opts Options) (*Assignor, error) {
	switch {
	case opts.Standbys < 0:
		return nil, fmt.Errorf("learner: standbys %d is negative: %w", opts.Standbys, ErrInvalidOptions)
	case opts.MaxLearners < 0:
		return nil, fmt.Errorf("learner: max learners %d is negative: %w", opts.MaxLearners, ErrInvalidOptions)
	case opts.AcceptableLag < 0:
		return nil, fmt.Errorf("learner: acceptable lag %d is negative: %w", opts.AcceptableLag, ErrInvalidOptions)
	}
	if len(tasks) > maxTasks {
		return nil, fmt.Errorf("learner: %d tasks, more than %d: %w", len(tasks), maxTasks, ErrInvalidTopology)
	}
	a := &Assignor{tasks: append([]Task(nil), tasks...), opts: opts}
	a.index = newTaskIndex()
	for i, t := range a.tasks {
		if !validID(t.ID) {
			return nil, fmt.Errorf("learner: task %d: malformed ID %q (want 1-%d letters, digits, '_', '-', '.'): %w",
				i, t.ID, maxIDLen, ErrInvalidTopology)
		}
		if j := a.index.lookup(t.ID); j != none {
			return nil, fmt.Errorf("learner: task %d: ID %q duplicates task %d: %w", i, t.ID, j, ErrInvalidTopology)
		}
		a.index.add(t.ID, int32(i))
	}
	a.index.seal()
	a.sub, a.nSubs = subtopologies(a.tasks)
	return a, nil
}

// maxTasks keeps task indices in int32, the width of the hot per-task arrays.
const maxTasks = 1 << 30

// Tasks returns a copy of the topology's tasks, in order.
func (a *Assignor) Tasks() []Task { return append([]Task(nil), a.tasks...) }

// TaskIndex returns the position of the task with the given ID in the
// topology's order (the order of Tasks), or -1 if the topology has no such
// task. It is a table or hash lookup that allocates nothing, so an encoder
// can name tasks by position instead of by ID.
func (a *Assignor) TaskIndex(id string) int { return int(a.index.lookup(id)) }

// ValidID reports whether id is a well-formed member, task or rack ID:
// 1 to MaxIDLen bytes of letters, digits, '_', '-' and '.'.
func ValidID(id string) bool { return validID(id) }

// MaxIDLen is the length in bytes of the longest valid ID: 255.
const MaxIDLen = maxIDLen

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
func (a *Assignor) Assign(members []MemberMetadata) ([]Assignment, error) {
	g, err := a.ingest(members)
	if err != nil {
		return nil, err
	}
	g.resolveLearners()
	g.placeOrphans()
	g.handOverLeaving()
	g.balance()
	g.placeStandbys()
	return g.output(), nil
}
