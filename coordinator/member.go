package coordinator

import (
	"fmt"
	"slices"
	"time"

	"github.com/learnerassignor/learner"
)

// Member is the member side of the protocol: the state one member keeps
// between heartbeats. It builds each Heartbeat, applies each Response and
// says what the application must start and stop (as learner.Changes).
//
// Member is pure like Coordinator: no clocks, I/O or goroutines. It is not
// safe for concurrent use. Timing is the application's: heartbeat every
// Response.HeartbeatInterval, at once after applying changes that stop an
// active task, and call Stop (then rejoin with a new Member and ID) when no
// response has come for the member's own timeout, shorter than the
// coordinator's session timeout.
type Member struct {
	id       string
	epoch    int64
	active   []string
	learning []string
	ready    map[string]bool
	standby  []string
	lag      map[string]int64
	leaving  bool
	deadline time.Time
	capacity int
	rack     string
}

// NewMember returns a member with the given ID that runs nothing; its first
// heartbeat (epoch 0) joins the group.
func NewMember(id string) *Member {
	return &Member{id: id, ready: map[string]bool{}, lag: map[string]int64{}}
}

// ID returns the member's ID.
func (m *Member) ID() string { return m.id }

// Epoch returns the epoch of the last response applied; 0 before the first.
func (m *Member) Epoch() int64 { return m.epoch }

// Active, Learning and Standby return the tasks the member runs in each role.
func (m *Member) Active() []string   { return slices.Clone(m.active) }
func (m *Member) Learning() []string { return slices.Clone(m.learning) }
func (m *Member) Standby() []string  { return slices.Clone(m.standby) }

// SetCapacity sets the capacity and rack the member reports (see
// learner.MemberMetadata).
func (m *Member) SetCapacity(capacity int, rack string) { m.capacity, m.rack = capacity, rack }

// Heartbeat returns what the member reports now.
func (m *Member) Heartbeat() Heartbeat {
	hb := Heartbeat{
		MemberID: m.id, Epoch: m.epoch,
		Active: slices.Clone(m.active), Learning: slices.Clone(m.learning), Standby: slices.Clone(m.standby),
		Leaving: m.leaving, Deadline: m.deadline, Capacity: m.capacity, Rack: m.rack,
	}
	for _, t := range m.learning {
		if m.ready[t] {
			hb.Ready = append(hb.Ready, t)
		}
	}
	for _, t := range sortedKeys(m.lag) {
		hb.Lag = append(hb.Lag, learner.TaskLag{Task: t, Lag: m.lag[t]})
	}
	return hb
}

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks) // map order must not reach the heartbeat
	return ks
}

// Apply takes the response to the member's latest heartbeat and returns the
// changes the application must make (Stop lists before Start lists; a task
// in StopLearning and StartActive is a promotion that continues from the
// replayed state). A response older than the member's epoch changes nothing.
// A response for another member or holding a task in two roles is an error
// wrapping ErrInvalidResponse and changes nothing.
func (m *Member) Apply(r Response) (learner.Changes, error) {
	if r.MemberID != m.id {
		return learner.Changes{}, fmt.Errorf("coordinator: response for member %q applied to member %q: %w", r.MemberID, m.id, ErrInvalidResponse)
	}
	seen := map[string]bool{}
	for _, l := range [][]string{r.Active, r.Learning, r.Standby} {
		for _, t := range l {
			if seen[t] {
				return learner.Changes{}, fmt.Errorf("coordinator: response for member %q: task %q in two roles: %w", m.id, t, ErrInvalidResponse)
			}
			seen[t] = true
		}
	}
	if r.Epoch < m.epoch {
		return learner.Changes{}, nil
	}
	c := learner.Changes{
		StartActive:   missing(r.Active, m.active),
		StopActive:    missing(m.active, r.Active),
		StartLearning: missing(r.Learning, m.learning),
		StopLearning:  missing(m.learning, r.Learning),
		StartStandby:  missing(r.Standby, m.standby),
		StopStandby:   missing(m.standby, r.Standby),
		Shutdown:      r.Shutdown,
	}
	m.epoch = r.Epoch
	m.active, m.learning, m.standby = slices.Clone(r.Active), slices.Clone(r.Learning), slices.Clone(r.Standby)
	for t := range m.ready {
		if !slices.Contains(m.learning, t) {
			delete(m.ready, t)
		}
	}
	for _, t := range m.active {
		delete(m.lag, t) // an active task's state is current by definition
	}
	return c, nil
}

// missing returns the tasks of a that are not in b, in a's order.
func missing(a, b []string) []string {
	var out []string
	for _, t := range a {
		if !slices.Contains(b, t) {
			out = append(out, t)
		}
	}
	return out
}

// Restored marks the learner task as ready and reports whether it is one of
// the member's learners.
func (m *Member) Restored(task string) bool {
	if !slices.Contains(m.learning, task) {
		return false
	}
	m.ready[task] = true
	return true
}

// SetLag records the remaining changelog lag of the member's local state of
// task; a negative lag forgets it.
func (m *Member) SetLag(task string, lag int64) {
	if lag < 0 {
		delete(m.lag, task)
		return
	}
	m.lag[task] = lag
}

// Leave announces that the member leaves, by deadline if it is not zero.
func (m *Member) Leave(deadline time.Time) { m.leaving, m.deadline = true, deadline }

// Stop stops everything: at a leave deadline, after Shutdown, or to fence
// itself when its session may have expired. It returns what to stop; the
// member then sends LeaveHeartbeat (if it can) and is done: a member that
// wants back in starts over with a new ID.
func (m *Member) Stop() learner.Changes {
	c := learner.Changes{StopActive: m.active, StopLearning: m.learning, StopStandby: m.standby, Shutdown: true}
	m.active, m.learning, m.standby = nil, nil, nil
	clear(m.ready)
	return c
}

// LeaveHeartbeat returns the member's last message: it has stopped
// everything and leaves.
func (m *Member) LeaveHeartbeat() Heartbeat {
	return Heartbeat{MemberID: m.id, Epoch: m.epoch, Leave: true}
}
