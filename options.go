package learner

import (
	"fmt"
	"slices"
)

// Options configure an Assignor. The zero value is the design document's
// plain algorithm: no standbys, no learner budget, no lag-based readiness.
type Options struct {
	// Standbys is the number of standby replicas of each stateful task,
	// placed on staying members other than the task's owner and learner.
	// Standbys times the number of stateful tasks is at most
	// MaxStandbyReplicas.
	Standbys int
	// MaxLearners caps the learners placed for rebalancing and hand-over
	// across the group at once; more are placed as earlier ones finish.
	// Zero means no cap.
	MaxLearners int
	// AcceptableLag, when positive, makes a learner whose reported lag is at
	// most AcceptableLag ready even without its ready flag; a learner that
	// reports no lag is never ready by lag. Zero disables lag-based
	// readiness; members can always report Ready themselves.
	AcceptableLag int64
}

// LearnerReady reports whether m reports its learner of task ready by the
// rule Assign promotes by: task is listed in m.Ready or, with a positive
// AcceptableLag, m reports a lag for it of at most AcceptableLag. Bindings
// that act on readiness outside Assign (such as deciding which learned
// tasks an owner keeps) use it to agree with Assign.
func (o Options) LearnerReady(m MemberMetadata, task string) bool {
	i := slices.IndexFunc(m.Lag, func(l TaskLag) bool { return l.Task == task && l.Lag <= o.AcceptableLag })
	return o.learnerReady(slices.Contains(m.Ready, task), i >= 0)
}

// IndexedLearnerReady is LearnerReady for a report by task index: whether
// m reports its learner of task t (an index in the topology) ready.
func (o Options) IndexedLearnerReady(m IndexedMember, t int32) bool {
	i := slices.IndexFunc(m.Lag, func(l IndexedLag) bool { return l.Task == t && l.Lag <= o.AcceptableLag })
	return o.learnerReady(slices.Contains(m.Ready, t), i >= 0)
}

// learnerReady is the rule Assign promotes by: a learner is ready when its
// member lists it in Ready or, with a positive AcceptableLag, reports a lag
// for it of at most AcceptableLag (lagWithin).
func (o Options) learnerReady(listedReady, lagWithin bool) bool {
	return listedReady || o.AcceptableLag > 0 && lagWithin
}

// MaxStandbyReplicas bounds Options.Standbys times the number of stateful
// tasks, 2^31-1, so that replica counts fit the int32 slots standby
// placement keeps them in and their products with capacities (at most
// MaxCapacity) stay below 2^62. MaxLearners and AcceptableLag need no
// bound: they are only compared.
const MaxStandbyReplicas = 1<<31 - 1

// validate reports the first option out of range for a topology with the
// given number of stateful tasks.
func (o Options) validate(stateful int) error {
	if p := o.problem(stateful); p != "" {
		return fmt.Errorf("learner: %s: %w", p, ErrInvalidOptions)
	}
	return nil
}

// problem says what is out of range, or "".
func (o Options) problem(stateful int) string {
	switch {
	case o.Standbys < 0:
		return fmt.Sprintf("standbys %d is negative", o.Standbys)
	case o.Standbys > MaxStandbyReplicas/max(stateful, 1): // the product itself could overflow
		return fmt.Sprintf("standbys %d is out of range (at most %d replicas over %d stateful tasks)", o.Standbys, MaxStandbyReplicas, stateful)
	case o.MaxLearners < 0:
		return fmt.Sprintf("max learners %d is negative", o.MaxLearners)
	case o.AcceptableLag < 0:
		return fmt.Sprintf("acceptable lag %d is negative", o.AcceptableLag)
	}
	return ""
}
