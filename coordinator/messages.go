package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/errtext"
)

// Errors returned by the package wrap one of these, so callers can test them
// with errors.Is; Member.SetLag's wrap learner.ErrInvalidMember instead.
var (
	// ErrInvalidConfig reports a Config or topology New or SetTopology cannot use.
	ErrInvalidConfig = errors.New("invalid config")
	// ErrInvalidHeartbeat reports a malformed heartbeat: a bad ID, a task
	// listed twice, a number out of range. The coordinator's state is
	// unchanged. NewMember, RestartOf and Member.SetCapacity report with it
	// a value that would make every heartbeat of the member malformed.
	ErrInvalidHeartbeat = errors.New("invalid heartbeat")
	// ErrFenced reports a heartbeat from a member the coordinator does not
	// know (it timed out or left) or with an epoch the coordinator never
	// issued. The member must stop every task and rejoin under a new ID
	// with epoch 0. The coordinator's state is unchanged.
	ErrFenced = errors.New("member fenced")
	// ErrGroupFull reports a heartbeat that would add a member to a group
	// of Config.MaxMembers. Its errors also wrap ErrFenced: the member stops
	// everything it runs (a joining member runs nothing) and may join again
	// later, under a new ID. The coordinator's state is unchanged.
	ErrGroupFull = errors.New("group full")
	// ErrInvalidResponse reports a Response that Member.Apply cannot use.
	ErrInvalidResponse = errors.New("invalid response")
)

// Heartbeat is what a member sends the coordinator every heartbeat interval:
// its own status, as it runs now. Task lists are unordered; a task may be in
// at most one of Active, Learning and Standby, and Ready must be a subset of
// Learning. Tasks the topology does not have are allowed (a member may still
// run a task that was removed); they are never granted.
type Heartbeat struct {
	// MemberID identifies the member: 1-255 letters, digits, '_', '-', '.'.
	// A member that lost its state (a crash, a self-fence) rejoins under a
	// new ID: an ID is one incarnation.
	MemberID string
	// Epoch is the epoch of the last Response the member applied; 0 to join.
	// A joining member runs nothing: Active, Learning and Standby are empty.
	Epoch int64
	// Seq numbers the member's heartbeats, in [0, MaxEpoch]: each one it
	// sends has a higher Seq than the one before (Member.Heartbeat counts
	// them). Within an epoch a member's readiness, lags, capacity and rack
	// change, so the coordinator ignores a heartbeat of the epoch it has
	// recorded with a lower Seq: a late one, whose news is older. A member
	// that sends Seq 0 throughout is ordered by Epoch alone, and a learner
	// it once reported ready stays ready while it learns it: a late copy
	// could not be told from a withdrawal.
	Seq int64
	// Replaces, in a join, names the member this one restarts (Kafka's
	// static membership): the joining process knows that incarnation has
	// stopped, so the coordinator drops it at once instead of waiting for
	// its session to expire, and its tasks can go to the new member, warm
	// from the state it kept on disk (report it with Lag).
	Replaces string

	// Active lists the tasks the member runs as their active owner
	// (processing or restoring).
	Active []string
	// Learning lists its learner tasks, Ready those whose replay caught up.
	Learning, Ready []string
	// Standby lists its standby replicas.
	Standby []string
	// Lag reports the remaining changelog lag of local state the member has
	// of a task (learners, standbys, state left on disk).
	Lag []learner.TaskLag

	// Leaving says the member is to leave: it gets nothing new and hands its
	// tasks over through learners. Once set it stays set.
	Leaving bool
	// Deadline is when a leaving member stops whatever it still runs
	// (time-bounded scale-down); zero waits for the hand-over. The member
	// enforces it and then sends Leave, so the coordinator does not act on
	// it (clocks differ); it is there for logs and tooling.
	Deadline time.Time
	// Leave is the member's last message: it has stopped every task and
	// leaves the group now. Its tasks are ownerless from then on.
	Leave bool

	// Capacity is the member's processing capacity (0 means 1), Rack its
	// failure domain; see learner.MemberMetadata.
	Capacity int
	Rack     string
}

// Response is the coordinator's answer to one heartbeat: the member's full
// target as of Epoch. It is the whole state, not a delta, so a lost response
// costs nothing: the next one says the same or newer. A member applies a
// response only if Epoch is at least its own (Member.Apply does).
type Response struct {
	// MemberID is the member the response is for: the heartbeat's.
	MemberID string
	// Epoch numbers this target for the member; it grows by one whenever the
	// target changes and stays the same otherwise.
	Epoch int64
	// Active, Learning and Standby are the tasks the member runs from now
	// on, in each role, in the topology's order, then (until the member
	// acknowledges the target that drops them) tasks a topology change
	// removed. A task the member runs active and
	// Active lacks must be stopped (then heartbeat at once: the next owner
	// waits for that acknowledgement).
	Active, Learning, Standby []string
	// Shutdown tells a leaving member that it has handed everything over:
	// it stops its remaining learners and standbys and sends Leave.
	Shutdown bool
	// HeartbeatInterval is when the member should heartbeat next: shorter
	// while it waits for a task another member is releasing. Member.Apply
	// refuses one that is not positive or is over 24h, which no
	// coordinator sends.
	HeartbeatInterval time.Duration
}

// Limits on numbers that come from outside, so arithmetic on them cannot
// overflow.
const (
	// MaxEpoch bounds epochs and heartbeat sequence numbers: exact in JSON
	// (float64) and far from overflow.
	MaxEpoch = 1 << 53
	maxList  = 1 << 24
	// maxSessionTimeout bounds Config.SessionTimeout, and so every
	// heartbeat interval a response may carry.
	maxSessionTimeout = 24 * time.Hour
)

func heartbeatErr(hb Heartbeat, format string, args ...any) error {
	return fmt.Errorf("coordinator: heartbeat of member %s: %s: %w", errtext.Quote(hb.MemberID), fmt.Sprintf(format, args...), ErrInvalidHeartbeat)
}

// memberErr reports a problem with what a Member is given of itself, as the
// coordinator would report it in each of its heartbeats.
func memberErr(id, problem string) error {
	return fmt.Errorf("coordinator: member %s: %s: %w", errtext.Quote(id), problem, ErrInvalidHeartbeat)
}

// checkRoles checks the task lists of a heartbeat: at most maxList tasks
// each, well-formed IDs, each task listed once and in one role. It returns each task's role ("active", "learning" or "standby") and
// what is wrong, "" if nothing.
func checkRoles(active, learning, standby []string) (map[string]string, string) {
	lists := []struct {
		name  string
		tasks []string
	}{{"active", active}, {"learning", learning}, {"standby", standby}}
	seen := make(map[string]string)
	for _, l := range lists {
		if len(l.tasks) > maxList {
			return nil, fmt.Sprintf("%d %s tasks, more than %d", len(l.tasks), l.name, maxList)
		}
		for _, t := range l.tasks {
			if !learner.ValidID(t) {
				return nil, fmt.Sprintf("%s task %s: malformed ID", l.name, errtext.Quote(t))
			}
			if prev, dup := seen[t]; dup && prev == l.name {
				return nil, fmt.Sprintf("task %s listed twice in %s", errtext.Quote(t), l.name)
			} else if dup {
				return nil, fmt.Sprintf("task %s in both %s and %s", errtext.Quote(t), prev, l.name)
			}
			seen[t] = l.name
		}
	}
	return seen, ""
}

// The checks of what a member says of itself in its heartbeats: its ID,
// capacity and rack, and the member it replaces. validate applies them to
// every heartbeat, and NewMember, RestartOf and SetCapacity to what they are
// given, so that a caller hears of a value the coordinator would refuse
// where it passes it, not at a heartbeat far from there. Each returns what
// is wrong, "" if nothing.

func idProblem(id string) string {
	if !learner.ValidID(id) {
		return fmt.Sprintf("malformed member ID (want 1-%d letters, digits, '_', '-', '.')", learner.MaxIDLen)
	}
	return ""
}

func capacityProblem(capacity int, rack string) string {
	switch {
	case capacity < 0 || capacity > learner.MaxCapacity:
		// learner.MemberMetadata's bound, as Capacity's doc says: Assign
		// does the only arithmetic on it.
		return fmt.Sprintf("capacity %d out of range [0, %d]", capacity, learner.MaxCapacity)
	case rack != "" && !learner.ValidID(rack):
		return fmt.Sprintf("malformed rack %s", errtext.Quote(rack))
	}
	return ""
}

// replacesProblem checks a member named as replaced by member id in a
// heartbeat of the given epoch.
func replacesProblem(id, replaces string, epoch int64) string {
	if epoch != 0 || !learner.ValidID(replaces) || replaces == id {
		return fmt.Sprintf("replaces %s: want the ID of another member, in a join (epoch 0)", errtext.Quote(replaces))
	}
	return ""
}

// validate checks a heartbeat's shape; it knows nothing of the group.
func validate(hb Heartbeat) error {
	if problem := idProblem(hb.MemberID); problem != "" {
		return heartbeatErr(hb, "%s", problem)
	}
	switch {
	case hb.Epoch < 0 || hb.Epoch > MaxEpoch:
		return heartbeatErr(hb, "epoch %d out of range [0, %d]", hb.Epoch, int64(MaxEpoch))
	case hb.Seq < 0 || hb.Seq > MaxEpoch:
		return heartbeatErr(hb, "seq %d out of range [0, %d]", hb.Seq, int64(MaxEpoch))
	}
	if problem := capacityProblem(hb.Capacity, hb.Rack); problem != "" {
		return heartbeatErr(hb, "%s", problem)
	}
	if hb.Replaces != "" {
		if problem := replacesProblem(hb.MemberID, hb.Replaces, hb.Epoch); problem != "" {
			return heartbeatErr(hb, "%s", problem)
		}
	}
	if hb.Epoch == 0 && !hb.Leave && len(hb.Active)+len(hb.Learning)+len(hb.Standby) > 0 {
		return heartbeatErr(hb, "epoch 0 (joining) with tasks: a joining member runs nothing")
	}
	seen, problem := checkRoles(hb.Active, hb.Learning, hb.Standby)
	if problem != "" {
		return heartbeatErr(hb, "%s", problem)
	}
	ready := make(map[string]bool, len(hb.Ready))
	for _, t := range hb.Ready {
		if seen[t] != "learning" {
			return heartbeatErr(hb, "ready task %s is not learning", errtext.Quote(t))
		}
		if ready[t] {
			return heartbeatErr(hb, "ready task %s listed twice", errtext.Quote(t))
		}
		ready[t] = true
	}
	if len(hb.Lag) > maxList {
		return heartbeatErr(hb, "lags of %d tasks, more than %d", len(hb.Lag), maxList)
	}
	lagged := make(map[string]bool, len(hb.Lag))
	for _, l := range hb.Lag {
		switch {
		case !learner.ValidID(l.Task):
			return heartbeatErr(hb, "lag of task %s: malformed ID", errtext.Quote(l.Task))
		case l.Lag < 0:
			return heartbeatErr(hb, "lag %d of task %s is negative", l.Lag, errtext.Quote(l.Task))
		case lagged[l.Task]:
			return heartbeatErr(hb, "lag of task %s listed twice", errtext.Quote(l.Task))
		}
		lagged[l.Task] = true
	}
	return nil
}
