package learner

import (
	"fmt"
	"slices"
	"time"

	"github.com/learnerassignor/learner/internal/errtext"
)

// RejoinPolicy says when a worker with learner tasks rejoins the group to
// have its ready learners promoted (the design document's Eager Rebalance
// section). The zero value is RejoinStable.
type RejoinPolicy int

const (
	// RejoinStable rejoins once every learner task is ready: one rebalance
	// moves all of them, at the price of the fast ones waiting (and
	// replaying beside their active) for the slowest.
	RejoinStable RejoinPolicy = iota
	// RejoinEager rejoins as soon as any learner task is ready: each task
	// moves as early as it can, at the price of more rebalances.
	RejoinEager
)

// String returns "stable" or "eager".
func (p RejoinPolicy) String() string {
	switch p {
	case RejoinStable:
		return "stable"
	case RejoinEager:
		return "eager"
	}
	return fmt.Sprintf("RejoinPolicy(%d)", int(p))
}

// Worker is the member side of the protocol: the state one group member keeps
// between rebalances. It turns each assignment into the Changes the
// application must make, tracks restore progress, says when to rejoin or shut
// down, and reports the MemberMetadata for the next join. The leader keeps no
// history, so this is everything the group knows about the member.
//
// Worker is pure like Assign: no clocks, I/O or goroutines; time comes in as
// an argument, inputs are never mutated and results are fresh slices. It is
// not safe for concurrent use. A crashed member loses its Worker; it rejoins
// as a new Worker with a new ID and may report the state it finds on disk
// with SetLag. Use NewWorker: the zero Worker has an empty ID, which Assign
// rejects.
type Worker struct {
	id     string
	policy RejoinPolicy

	active   []string // tasks it processes, in the last assignment's order
	learned  []string // active tasks the last assignment tagged learned
	revoked  []string // learned tasks given up at the pending join
	learning []string
	// ready holds the learning tasks whose replay finished: true for news
	// (ready since the last join), false once a join reported it.
	ready   map[string]bool
	standby []string
	lag     map[string]int64 // reported lag of local state, by task

	joined     bool // has joined at least once
	pending    bool // joined, waiting for the assignment
	leaving    bool
	announced  bool // joined since Leave, so the leader knows
	deadline   time.Time
	handedOver bool // leaving, and the last assignment left no active task
}

// NewWorker returns the state of a member with the given ID that runs
// nothing yet. Its first ShouldRejoin is true: it must join the group.
func NewWorker(id string, policy RejoinPolicy) *Worker {
	return &Worker{id: id, policy: policy}
}

// ID returns the member ID the worker joins with.
func (w *Worker) ID() string { return w.id }

// Active returns the tasks the worker processes now, in the last
// assignment's order, without the ones given up at a pending join. Unlike
// Join it changes nothing.
func (w *Worker) Active() []string { return slices.Clone(w.active) }

// Changes is what the application must do to run an assignment. Stopping a
// role never discards local state: a task listed in StopLearning (or
// StopStandby) and in StartActive is a promotion that continues from the
// replayed state. Apply Stop lists before Start lists.
type Changes struct {
	// StartActive and StopActive list the tasks to start and stop
	// processing. StartActive includes tasks revoked at join and given back
	// because their learner was not ready yet.
	StartActive, StopActive []string
	// StartLearning and StopLearning list the learner tasks to start and
	// stop replaying (a promoted learner is stopped and started active).
	StartLearning, StopLearning []string
	// StartStandby and StopStandby list the standby replicas to start and stop.
	StartStandby, StopStandby []string
	// Shutdown is true when the worker is leaving and no active task is left:
	// it has handed everything over and may leave the group.
	Shutdown bool
}

// Join returns what the worker reports when it joins a rebalance. Active
// tasks the last assignment tagged learned move to Revoked: the application
// must stop processing every task in the returned Revoked before it sends
// the join, so the leader can hand them to their learners at once. Calling
// Join again before Apply (a restarted rebalance) reports the same state.
func (w *Worker) Join() MemberMetadata {
	if len(w.learned) > 0 {
		w.active = slices.DeleteFunc(w.active, func(t string) bool { return slices.Contains(w.learned, t) })
		w.revoked = append(w.revoked, w.learned...)
		w.learned = nil
	}
	w.joined, w.pending = true, true
	for t := range w.ready {
		w.ready[t] = false // reported below
	}
	if w.leaving {
		w.announced = true
	}
	m := MemberMetadata{
		ID:       w.id,
		Assigned: slices.Clone(w.active),
		Revoked:  slices.Clone(w.revoked),
		Learning: slices.Clone(w.learning),
		Standby:  slices.Clone(w.standby),
		Leaving:  w.leaving,
	}
	for _, t := range w.learning {
		if _, ok := w.ready[t]; ok {
			m.Ready = append(m.Ready, t)
		}
	}
	for _, t := range slices.Concat(w.learning, w.standby, w.otherLagged()) {
		if l, ok := w.lag[t]; ok {
			m.Lag = append(m.Lag, TaskLag{Task: t, Lag: l})
		}
	}
	return m
}

// otherLagged returns, sorted, the tasks with a reported lag that the worker
// neither learns nor keeps as standby: state left on disk.
func (w *Worker) otherLagged() []string {
	if len(w.lag) == 0 {
		return nil
	}
	ts := make([]string, 0, len(w.lag))
	for t := range w.lag {
		ts = append(ts, t)
	}
	ts = missing(ts, slices.Concat(w.learning, w.standby))
	slices.Sort(ts) // map order must not reach the output
	return ts
}

// Apply takes the assignment the leader sent for this worker and returns the
// changes the application must make. The assignment must be for the worker's
// ID, name tasks by valid IDs (ValidID), hold each task in at most one of
// Assigned, Learning and Standby, and list it at most once in Learned;
// otherwise Apply returns an error wrapping ErrInvalidMember and changes
// nothing.
func (w *Worker) Apply(a Assignment) (Changes, error) {
	if a.MemberID != w.id {
		return Changes{}, fmt.Errorf("learner: assignment for member %q applied to worker %q: %w", a.MemberID, w.id, ErrInvalidMember)
	}
	if err := w.checkAssignment(a); err != nil {
		return Changes{}, err
	}
	c := Changes{
		StartActive:   missing(a.Assigned, w.active),
		StopActive:    missing(w.active, a.Assigned),
		StartLearning: missing(a.Learning, w.learning),
		StopLearning:  missing(w.learning, a.Learning),
		StartStandby:  missing(a.Standby, w.standby),
		StopStandby:   missing(w.standby, a.Standby),
	}
	w.active = slices.Clone(a.Assigned)
	w.learned = nil
	for _, t := range a.Learned {
		if slices.Contains(a.Assigned, t) {
			w.learned = append(w.learned, t)
		}
	}
	w.revoked = nil
	w.learning = slices.Clone(a.Learning)
	w.standby = slices.Clone(a.Standby)
	for t := range w.ready {
		if !slices.Contains(w.learning, t) {
			delete(w.ready, t)
		}
	}
	for _, t := range w.active {
		delete(w.lag, t) // an active task's state is current by definition
	}
	w.pending = false
	w.handedOver = w.leaving && len(w.active) == 0
	c.Shutdown = w.handedOver
	return c, nil
}

// checkAssignment returns Apply's error for an assignment whose next Join
// would be a report Assign refuses, failing the whole group's rebalance at
// the leader: a malformed task ID comes back in a list, a task twice in
// Learned comes back twice in Revoked, and a task in two of Assigned,
// Learning and Standby in two roles.
func (w *Worker) checkAssignment(a Assignment) error {
	lists := [...][]string{a.Assigned, a.Learning, a.Standby, a.Learned}
	names := [...]string{"assigned", "learning", "standby", "learned"}
	for i, l := range lists {
		for _, t := range l {
			if !ValidID(t) {
				return fmt.Errorf("learner: assignment for member %q: malformed task ID %s in %s: %w",
					w.id, errtext.Quote(t), names[i], ErrInvalidMember)
			}
		}
	}
	if cs := RoleConflicts(a.Assigned, a.Learning, a.Standby); len(cs) > 0 {
		return w.conflict(cs[0], names[:3])
	}
	// Learned tags Assigned tasks, so it is checked for repeats on its own,
	// and only when it can hold one: RoleConflicts builds a map, and Apply
	// runs at every response of a coordinator's member.
	if len(a.Learned) > 1 {
		if cs := RoleConflicts(a.Learned); len(cs) > 0 {
			return w.conflict(cs[0], names[3:])
		}
	}
	return nil
}

// conflict returns checkAssignment's error for c, a conflict among the
// lists named names.
func (w *Worker) conflict(c RoleConflict, names []string) error {
	where := fmt.Sprintf("in both %s and %s", names[c.First], names[c.List])
	if c.First == c.List {
		where = "listed twice in " + names[c.List]
	}
	return fmt.Errorf("learner: assignment for member %q: task %q %s: %w", w.id, c.Task, where, ErrInvalidMember)
}

// missing returns the tasks of a that are not in b, in a's order.
//
// Short lists, one member's tens of tasks, are scanned: that beats building
// a map per call. Long ones go through a set: scanned, a member holding a
// few thousand tasks cost millions of comparisons at every Apply
// (BenchmarkWorkerLongLists), and learner simulate -members 12 -tasks 4000
// took 152 s instead of 54 (one run each).
func missing(a, b []string) []string {
	var out []string
	if len(a)*len(b) <= maxScan {
		for _, t := range a {
			if !slices.Contains(b, t) {
				out = append(out, t)
			}
		}
		return out
	}
	in := make(map[string]struct{}, len(b))
	for _, t := range b {
		in[t] = struct{}{}
	}
	for _, t := range a {
		if _, ok := in[t]; !ok {
			out = append(out, t)
		}
	}
	return out
}

// maxScan is the most comparisons missing makes by scanning.
const maxScan = 1 << 12

// Restored marks the learner task as ready: its replay has caught up. It
// reports whether task is one of the worker's learner tasks; other tasks are
// ignored. An application using lag-based readiness (Options.AcceptableLag)
// calls Restored when the lag it reports with SetLag is small enough, so that
// ShouldRejoin sees it.
func (w *Worker) Restored(task string) bool {
	if !slices.Contains(w.learning, task) {
		return false
	}
	if _, ok := w.ready[task]; !ok {
		if w.ready == nil {
			w.ready = map[string]bool{}
		}
		w.ready[task] = true
	}
	if _, ok := w.lag[task]; ok {
		w.lag[task] = 0
	}
	return true
}

// Unready withdraws Restored: the learner task's local state fell behind
// again (the application lost or reset it), so the leader must not move the
// task to this worker until Restored is called again. It reports whether
// task is one of the worker's learner tasks; other tasks are ignored. It
// forgets the task's lag too: Restored set it to 0, and a leader with
// Options.AcceptableLag would take a reported 0 for ready; report the new
// lag with SetLag. A join already sent may have reported the task ready,
// and the assignment answering it may still make the worker its owner: the
// application then restores the task before it runs it.
func (w *Worker) Unready(task string) bool {
	if !slices.Contains(w.learning, task) {
		return false
	}
	delete(w.ready, task)
	delete(w.lag, task)
	return true
}

// readyNews reports whether a learner became ready since the last join and
// is still ready.
func (w *Worker) readyNews() bool {
	for _, news := range w.ready {
		if news {
			return true
		}
	}
	return false
}

// SetLag records the remaining changelog lag of the worker's local state of
// task (a learner, a standby, or state left on disk, for example after a
// restart with a new ID). It is reported at the next join so the leader can
// prefer warm members. A negative lag forgets the task's lag. Lags of tasks
// the worker runs active are dropped when it applies an assignment. A copy
// reported with no lag counts as caught up (docs/rules.md, rules 5 and 13):
// an application that reports lags should report a copy it has started but
// not yet measured with math.MaxInt64, not leave it without one. A
// malformed task ID (see ValidID) is an error wrapping ErrInvalidMember
// and records nothing: the leader would refuse the report, and with it the
// whole group's rebalance.
func (w *Worker) SetLag(task string, lag int64) error {
	if !ValidID(task) {
		return fmt.Errorf("learner: worker %q: lag of malformed task ID %s: %w", w.id, errtext.Quote(task), ErrInvalidMember)
	}
	if lag < 0 {
		delete(w.lag, task)
		return nil
	}
	if w.lag == nil {
		w.lag = map[string]int64{}
	}
	w.lag[task] = lag
	return nil
}

// Leave announces that the worker is to leave the group ("leaving soon"): it
// rejoins so that the leader hands its tasks to learners, and it shuts down
// once it has no active task left or, with a non-zero deadline, when the
// deadline passes (time-bounded scale-down; its tasks then go at once to
// their warmest copies, usually their learners: see rule 5 in
// docs/rules.md, where a smaller reported lag, such as a caught-up
// standby's, beats a learner still replaying). A zero
// deadline waits for the hand-over however long it takes. Calling Leave
// again replaces the deadline.
func (w *Worker) Leave(deadline time.Time) {
	if !w.leaving {
		w.leaving, w.announced = true, false
	}
	w.deadline = deadline
}

// ShouldRejoin reports whether the worker should join a rebalance now: it
// has never joined, it has to announce that it is leaving, or its learners
// are ready by its RejoinPolicy (at least one became ready since its last
// join, so a learner the leader did not promote causes no rebalance loop).
// It is false while a join is pending and once the worker should shut down.
func (w *Worker) ShouldRejoin(now time.Time) bool {
	switch {
	case w.pending || w.ShouldShutdown(now):
		return false
	case !w.joined || (w.leaving && !w.announced):
		return true
	case !w.readyNews():
		return false
	case w.policy == RejoinEager:
		return true
	}
	for _, t := range w.learning {
		if _, ok := w.ready[t]; !ok {
			return false
		}
	}
	return true
}

// ShouldShutdown reports whether a leaving worker should shut down now: its
// last assignment left it no active task, or its deadline has passed.
func (w *Worker) ShouldShutdown(now time.Time) bool {
	return w.leaving && (w.handedOver || (!w.deadline.IsZero() && !now.Before(w.deadline)))
}
