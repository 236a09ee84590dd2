package learner

import "fmt"

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

// validate reports the first option out of range.
func (o Options) validate() error {
	switch {
	case o.Standbys < 0:
		return fmt.Errorf("learner: standbys %d is negative: %w", o.Standbys, ErrInvalidOptions)
	case o.MaxLearners < 0:
		return fmt.Errorf("learner: max learners %d is negative: %w", o.MaxLearners, ErrInvalidOptions)
	case o.AcceptableLag < 0:
		return fmt.Errorf("learner: acceptable lag %d is negative: %w", o.AcceptableLag, ErrInvalidOptions)
	}
	return nil
}
