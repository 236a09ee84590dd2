package coordinator

import (
	"fmt"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/errtext"
)

// Member is the member side of the protocol: a learner.Worker, which keeps
// the member's roles and turns each target into learner.Changes, plus the
// member epoch. It builds each Heartbeat and applies each Response. Build it
// with NewMember: the zero Member has an empty ID, which the coordinator
// refuses.
//
// Member is pure like Coordinator: no clocks, I/O or goroutines; time comes
// in as an argument. It is not safe for concurrent use. Timing is the
// application's: heartbeat every Response.HeartbeatInterval, at once after
// applying changes that stop an active task, and call Stop (then start over
// with a new Member and ID) when no response has come for the member's own
// fence timeout, shorter than the coordinator's session timeout.
type Member struct {
	w        *learner.Worker // nil in the zero Member until first used
	epoch    int64
	seq      int64 // of the last heartbeat built
	deadline time.Time
	capacity int
	rack     string
	replaces string // until the first response: the incarnation it restarts
}

// NewMember returns a member with the given ID that runs nothing; its first
// heartbeat (epoch 0) joins the group. An ID the coordinator would refuse
// (see Heartbeat.MemberID) is an error wrapping ErrInvalidHeartbeat.
func NewMember(id string) (*Member, error) {
	if problem := idProblem(id); problem != "" {
		return nil, memberErr(id, problem)
	}
	return &Member{w: learner.NewWorker(id, learner.RejoinStable)}, nil
}

// RestartOf returns a member with the given ID that restarts the stopped
// member old (same process, new incarnation): its join names old in
// Heartbeat.Replaces, so the coordinator drops old at once. Report the state
// old left on disk with SetLag before the first heartbeat. A malformed ID,
// or an old that is malformed or id itself, is an error wrapping
// ErrInvalidHeartbeat.
func RestartOf(id, old string) (*Member, error) {
	m, err := NewMember(id)
	if err != nil {
		return nil, err
	}
	if problem := replacesProblem(id, old, 0); problem != "" {
		return nil, memberErr(id, problem)
	}
	m.replaces = old
	return m, nil
}

// worker returns the member's Worker, made on first use in the zero Member.
func (m *Member) worker() *learner.Worker {
	if m.w == nil {
		m.w = learner.NewWorker("", learner.RejoinStable)
	}
	return m.w
}

// ID returns the member's ID.
func (m *Member) ID() string { return m.worker().ID() }

// Epoch returns the epoch of the last response applied; 0 before the first.
func (m *Member) Epoch() int64 { return m.epoch }

// SetCapacity sets the capacity and rack the member reports (see
// learner.MemberMetadata). A capacity out of [0, learner.MaxCapacity] or a
// malformed rack (the coordinator would refuse every heartbeat with it) is
// an error wrapping ErrInvalidHeartbeat, and changes nothing.
func (m *Member) SetCapacity(capacity int, rack string) error {
	if problem := capacityProblem(capacity, rack); problem != "" {
		return memberErr(m.ID(), problem)
	}
	m.capacity, m.rack = capacity, rack
	return nil
}

// Heartbeat returns what the member reports now: what it runs, learns and
// keeps as standby, its learners' readiness and the lags it knows. Each call
// numbers the heartbeat one higher than the last (Heartbeat.Seq), so that
// the coordinator can tell a late copy from newer news.
func (m *Member) Heartbeat() Heartbeat {
	// The worker's join report is its current status: the coordinator never
	// tags tasks learned, so nothing moves to Revoked.
	md := m.worker().Join()
	m.seq++ // MaxEpoch is 2^53 calls away: 285,000 years at one a millisecond
	return Heartbeat{
		MemberID: md.ID, Epoch: m.epoch, Seq: m.seq,
		Active: md.Assigned, Learning: md.Learning, Ready: md.Ready, Standby: md.Standby, Lag: md.Lag,
		Leaving: md.Leaving, Deadline: m.deadline, Capacity: m.capacity, Rack: m.rack,
		Replaces: m.replaces,
	}
}

// Active returns the tasks the member runs active.
func (m *Member) Active() []string { return m.worker().Active() }

// Apply takes the response to the member's latest heartbeat and returns the
// changes the application must make, as learner.Worker.Apply does (Stop
// lists before Start lists; a task in StopLearning and StartActive is a
// promotion that continues from the replayed state; Shutdown when a leaving
// member has nothing left to run). A response older than the member's epoch
// changes nothing. A response for another member, with an epoch beyond
// MaxEpoch, tasks at epoch 0, a malformed task ID or a task in two roles
// (which the member's next heartbeat could not report), or with a heartbeat
// interval out of range (see Response) is an error wrapping
// ErrInvalidResponse and changes nothing.
func (m *Member) Apply(r Response) (learner.Changes, error) {
	if r.Epoch < m.epoch && r.MemberID == m.ID() {
		return learner.Changes{}, nil
	}
	// The Worker refuses malformed task IDs and tasks in two roles; what
	// only a heartbeat limits is checked here, once the response is known
	// to be this member's.
	if r.MemberID == m.ID() {
		problem := ""
		switch {
		case r.Epoch > MaxEpoch:
			problem = fmt.Sprintf("epoch beyond %d", int64(MaxEpoch))
		case r.Epoch == 0 && len(r.Active)+len(r.Learning)+len(r.Standby) > 0:
			// A heartbeat of epoch 0 is a join, which validate refuses
			// with tasks: every later one would be refused.
			problem = "tasks at epoch 0 (a joining member runs nothing)"
		case max(len(r.Active), len(r.Learning), len(r.Standby)) > maxList:
			problem = fmt.Sprintf("a task list longer than %d", maxList)
		case r.HeartbeatInterval <= 0 || r.HeartbeatInterval > maxSessionTimeout:
			// The application schedules the next heartbeat by it: zero
			// or less would heartbeat in a busy loop.
			problem = fmt.Sprintf("heartbeat interval %v out of range (0, %v]", r.HeartbeatInterval, maxSessionTimeout)
		}
		if problem != "" {
			return learner.Changes{}, fmt.Errorf("coordinator: response to member %s at epoch %d: %s: %w", errtext.Quote(r.MemberID), r.Epoch, problem, ErrInvalidResponse)
		}
	}
	c, err := m.worker().Apply(learner.Assignment{MemberID: r.MemberID, Assigned: r.Active, Learning: r.Learning, Standby: r.Standby})
	if err != nil {
		return learner.Changes{}, fmt.Errorf("coordinator: response to member %s at epoch %d: %w: %w", errtext.Quote(r.MemberID), r.Epoch, ErrInvalidResponse, err)
	}
	m.epoch = r.Epoch
	m.replaces = "" // the coordinator knows: only a join carries it
	c.Shutdown = c.Shutdown || r.Shutdown
	return c, nil
}

// Restored marks the learner task as ready and reports whether it is one of
// the member's learners.
func (m *Member) Restored(task string) bool { return m.worker().Restored(task) }

// Unready withdraws Restored when the learner's state fell behind again (the
// application lost or reset it), so that the coordinator does not promote it
// until Restored is called again (see learner.Worker.Unready). It reports
// whether task is one of the member's learners.
func (m *Member) Unready(task string) bool { return m.worker().Unready(task) }

// SetLag records the remaining changelog lag of the member's local state of
// task; a negative lag forgets it. A malformed task ID is an error wrapping
// learner.ErrInvalidMember (see learner.Worker.SetLag).
func (m *Member) SetLag(task string, lag int64) error {
	if err := m.worker().SetLag(task, lag); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	return nil
}

// Leave announces that the member leaves, by deadline if it is not zero.
func (m *Member) Leave(deadline time.Time) {
	m.worker().Leave(deadline)
	m.deadline = deadline
}

// ShouldShutdown reports whether a leaving member should stop now: it has
// handed everything over, or its deadline has passed.
func (m *Member) ShouldShutdown(now time.Time) bool { return m.worker().ShouldShutdown(now) }

// Stop stops everything: at a leave deadline, after Shutdown, or to fence
// itself when its session may have expired. It returns what to stop; the
// member then sends LeaveHeartbeat (if it can) and is done: a member that
// wants back in starts over with a new ID.
func (m *Member) Stop() learner.Changes {
	md := m.worker().Join()
	m.w = learner.NewWorker(md.ID, learner.RejoinStable)
	return learner.Changes{StopActive: md.Assigned, StopLearning: md.Learning, StopStandby: md.Standby, Shutdown: true}
}

// LeaveHeartbeat returns the member's last message: it has stopped
// everything and leaves.
func (m *Member) LeaveHeartbeat() Heartbeat {
	return Heartbeat{MemberID: m.ID(), Epoch: m.epoch, Leave: true}
}
