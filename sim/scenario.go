package sim

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/learnerassignor/learner"
)

// ErrScenario is wrapped by every error Parse and Check return.
var ErrScenario = errors.New("bad scenario")

// LineError is an error of a scenario placed at the line of its text that
// causes it: every error of Parse about one line, and those of Check about
// an event whose Line is set.
type LineError struct {
	Line int    // from 1
	Msg  string // what is wrong, without the line or the package prefix
	// Err is what the error wraps: the *RangeError or *LateEventError that
	// Msg describes, or ErrScenario.
	Err error
}

// Error returns "sim: line N: " and the message. A caller that names the
// scenario's text (a file) places Msg at Line itself, as learner simulate
// does.
func (e *LineError) Error() string { return scenarioText(fmt.Sprintf("line %d: %s", e.Line, e.Msg)) }

// Unwrap returns Err, which wraps ErrScenario in turn.
func (e *LineError) Unwrap() error { return e.Err }

// onLine places err, a *RangeError or *LateEventError (or nil), at line of
// the scenario text; at line 0, a scenario built in Go, it leaves err bare.
func onLine(line int, err error) error {
	m, ok := err.(interface{ msg() string })
	if !ok || line == 0 {
		return err
	}
	return &LineError{Line: line, Msg: m.msg(), Err: err}
}

// scenarioText is the text of an error about a scenario: the package's
// prefix, msg, and ErrScenario's text as wrapping it with %w adds it.
func scenarioText(msg string) string { return "sim: " + msg + ": " + ErrScenario.Error() }

// Scenario is a group, its topology and a script of events. Parse reads it
// from the text format documented at Parse; DefaultText writes the default.
type Scenario struct {
	// Duration is the simulated time.
	Duration time.Duration
	// Pause is what one rebalance (join and sync round) costs: the time from
	// its start until members receive their assignments.
	Pause time.Duration
	// SessionTimeout is the time until the group notices a crashed member.
	SessionTimeout time.Duration
	// ProbingInterval is the warm-up strategy's time between probing
	// rebalances while warm-up replicas are in flight.
	ProbingInterval time.Duration
	// MaxWarmups caps the warm-up strategy's warm-up replicas at once.
	MaxWarmups int
	// LeaveDeadline bounds a learner strategy's announced leave; zero waits
	// for the hand-over however long it takes. A leave event may name its own.
	LeaveDeadline time.Duration
	// Standbys is the number of standby replicas of each stateful task, for
	// every strategy (Kafka Streams' num.standby.replicas).
	Standbys int
	// ReplayLag is how far a replica that has caught up (a standby, a
	// learner, a warm-up, state on disk) trails the active while the active
	// writes. A replica keeps replaying after the active stops (released at
	// a join, revoked, crashed, left), so taking the task over costs what is
	// left of this much replay; state on disk, which replays nothing until
	// assigned, pays all of it.
	ReplayLag time.Duration
	// Handover is the learner strategies' round structure: how a ready
	// learner's task reaches it (see Handover).
	Handover Handover

	// Tasks are the topology's tasks in order; Size is the state in MB,
	// zero for a stateless task.
	Tasks []TaskSpec
	// Members is the group at time zero, balanced and with warm state.
	Members []MemberSpec
	// Events is the script, in time order.
	Events []Event
}

// TaskSpec is one task of a Scenario.
type TaskSpec struct {
	ID   string
	Size float64 // MB of state; 0 means stateless
}

// MemberSpec is one member of a Scenario.
type MemberSpec struct {
	ID   string
	Rate float64 // restore rate, MB/s
}

// EventKind is what happens in an Event.
type EventKind int

const (
	// Join adds new members.
	Join EventKind = iota
	// Leave announces that members leave (shut down gracefully).
	Leave
	// Crash kills members without notice.
	Crash
	// CrashLeader kills the member that is the group's leader at the time.
	CrashLeader
	// Restart kills members and starts them again after a while with the
	// state they had on disk, as new members of the group.
	Restart
)

var eventNames = [...]string{Join: "join", Leave: "leave", Crash: "crash", CrashLeader: "crash-leader", Restart: "restart"}

// String returns the event's keyword in the scenario format.
func (k EventKind) String() string { return eventNames[k] }

// Event is one scripted event.
type Event struct {
	At      time.Duration
	Kind    EventKind
	Members []MemberSpec // joining members, or the IDs leaving, crashing or restarting
	// Deadline of a Leave: a learner strategy's leaving member shuts down
	// then. Zero takes the scenario's LeaveDeadline; negative means none.
	Deadline time.Duration
	// After is how long a Restart keeps the member down.
	After time.Duration
	// Line is the event's line in the scenario text, for errors; 0 for an
	// event built in Go.
	Line int
}

// Defaults of the settings a scenario may leave out: Kafka's own defaults
// where Kafka has one (probing.rebalance.interval.ms, max.warmup.replicas).
const (
	defaultPause          = 3 * time.Second
	defaultSessionTimeout = 10 * time.Second
	// minSessionTimeout keeps every strategy on the same timeout: the
	// coordinator strategy heartbeats every third of it, 20 ms a round trip,
	// and the coordinator refuses a timeout under a millisecond (at zero the
	// classic strategies would notice a crash at once). A second is below
	// Kafka's own minimum (group.min.session.timeout.ms, 6 s).
	minSessionTimeout      = time.Second
	defaultProbingInterval = 10 * time.Minute
	defaultMaxWarmups      = 2
	defaultRate            = 50.0
	defaultRestartAfter    = 30 * time.Second
)

// Parse reads a scenario. The format is line based; '#' starts a comment.
// Durations are Go durations (90s, 10m, 1h30m), sizes MB, rates MB/s. IDs
// may be written as ranges: S1-S8 is S1 S2 ... S8.
//
//	duration 6h                  # simulated time (required)
//	pause 3s                     # cost of one rebalance (default 3s)
//	session-timeout 10s          # until a crash is noticed (default 10s)
//	probing-interval 10m         # warm-up strategy (default 10m)
//	max-warmups 2                # warm-up strategy (default 2)
//	leave-deadline 10m           # learner strategies' time-bounded leave (default 0: none)
//	standbys 1                   # standby replicas of each stateful task (default 0)
//	replay-lag 1s                # how far a caught-up replica trails the active (default 0)
//	handover follow-up-ready     # learner strategies: follow-up-ready, follow-up, one-round or withhold (default follow-up-ready)
//	restore-rate 50              # default rate of members that name none (default 50)
//	tasks T1-T80 size 100-8000 seed 1   # stateful, sizes drawn uniformly with the seed
//	tasks T81 T82 size 500       # stateful, one size
//	tasks T83-T96 stateless
//	stateless T6 T12             # make tasks defined above stateless
//	members S1-S8 rate 40        # the group at time zero, balanced and warm
//	at 1m join S9 S10 rate 60
//	at 2h leave S3 S7            # with the scenario's leave-deadline
//	at 2h30m leave S2 deadline 5m  # or its own ("deadline none": none)
//	at 3h crash S5
//	at 3h30m restart S6 after 1m # down for 1m (default 30s), then back with its disk state
//	at 4h crash-leader
//
// Each setting is given at most once, and restore-rate before the first
// members or event line. Events come in time order, within the duration.
// A scenario has at most 10,000 tasks, 2,000 members, 10,000 events and
// 100,000 IDs written (ranges expanded), lines of at most 1 MB and
// MaxScenarioSize bytes. Check, which Run calls, also bounds its Work. A
// UTF-8 byte-order mark at the start is skipped, as the notation's parser
// skips one.
//
// Every error wraps ErrScenario; one about a line of src is a *LineError.
func Parse(src string) (*Scenario, error) {
	// A Windows editor may start the file with one; it would otherwise
	// make the first directive unknown.
	src = strings.TrimPrefix(src, "\uFEFF")
	if len(src) > MaxScenarioSize {
		return nil, fmt.Errorf("sim: scenario of %d bytes, longer than %d bytes: %w", len(src), MaxScenarioSize, ErrScenario)
	}
	sc := &Scenario{
		Pause:           defaultPause,
		SessionTimeout:  defaultSessionTimeout,
		ProbingInterval: defaultProbingInterval,
		MaxWarmups:      defaultMaxWarmups,
		Handover:        DefaultHandover,
	}
	rate := defaultRate
	seen := &idTable{defined: map[string]definedID{}}
	durations := sc.durations()
	// settingLine holds the line of each setting given: a second one is an
	// error, not a silent override. firstRated is the first line that adds
	// members (at time zero or in an event), which take restore-rate as it
	// stands: a restore-rate after it would apply to some members only.
	settingLine := map[string]int{}
	firstRated := 0
	sc2 := bufio.NewScanner(strings.NewReader(src))
	// A long line is legitimate (a member list written out), but the
	// Scanner's default 64 KB limit would end the scan there silently.
	sc2.Buffer(nil, maxLine+1)
	n := 1
	for ; sc2.Scan(); n++ {
		line, _, _ := strings.Cut(sc2.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		fail := func(format string, args ...any) error {
			return &LineError{Line: n, Msg: fmt.Sprintf(format, args...), Err: ErrScenario}
		}
		setting := func(ds durationSetting) error {
			if len(f) != 2 {
				return fail("%s takes one duration", f[0])
			}
			d, err := time.ParseDuration(f[1])
			if err != nil || d < 0 {
				return fail("%s: bad duration %q", f[0], f[1])
			}
			*ds.d = d
			return onLine(n, ds.check())
		}
		number := func(dst *int, lo, hi int) error {
			if len(f) != 2 {
				return fail("%s takes one number", f[0])
			}
			v, err := strconv.Atoi(f[1])
			if err != nil || v < lo || v > hi {
				return fail("%s: want %d to %d, got %q", f[0], lo, hi, f[1])
			}
			*dst = v
			return nil
		}
		switch f[0] {
		case "tasks", "stateless": // each adds to the scenario
		case "members", "at":
			if firstRated == 0 {
				firstRated = n
			}
		default: // a setting, or a directive refused below
			if prev := settingLine[f[0]]; prev > 0 {
				return nil, fail("%s set twice (also on line %d)", f[0], prev)
			}
			settingLine[f[0]] = n
			if f[0] == "restore-rate" && firstRated > 0 {
				return nil, fail("restore-rate after line %d, whose members it would not apply to", firstRated)
			}
		}
		var err error
		switch f[0] {
		case "standbys":
			err = number(&sc.Standbys, 0, MaxStandbys)
		case "handover":
			if len(f) != 2 {
				return nil, fail("handover takes one of %s", HandoverChoices())
			}
			sc.Handover, err = ParseHandover(f[1])
			err = onLine(n, err)
		case "max-warmups":
			err = number(&sc.MaxWarmups, 1, maxWarmups)
		case "restore-rate":
			if len(f) != 2 {
				return nil, fail("restore-rate takes one number")
			}
			if rate, err = parseRate(f[1]); err != nil {
				return nil, fail("restore-rate: %v", err)
			}
		case "tasks":
			err = sc.parseTasks(f[1:], seen, n, fail)
		case "stateless":
			err = sc.parseStateless(f[1:], seen, fail)
		case "members":
			var ms []MemberSpec
			if ms, err = parseMembers(f[1:], rate, seen, n, fail); err == nil {
				sc.Members = append(sc.Members, ms...)
			}
		case "at":
			err = sc.parseEvent(f[1:], rate, seen, n, fail)
		default:
			if i := slices.IndexFunc(durations, func(ds durationSetting) bool { return ds.name == f[0] }); i >= 0 {
				err = setting(durations[i])
			} else {
				err = fail("unknown directive %q", f[0])
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if err := sc2.Err(); err != nil {
		// bufio.ErrTooLong is the only error a string reader allows.
		return nil, &LineError{Line: n, Msg: fmt.Sprintf("longer than %d bytes", maxLine), Err: ErrScenario}
	}
	switch {
	case sc.Duration <= 0:
		return nil, fmt.Errorf("sim: no duration: %w", ErrScenario)
	case len(sc.Tasks) == 0:
		return nil, fmt.Errorf("sim: no tasks: %w", ErrScenario)
	case len(sc.Members) == 0:
		return nil, fmt.Errorf("sim: no members at time zero: %w", ErrScenario)
	}
	// Not Check: the work bound waits for the settings a caller may still
	// change (the command's -duration shortens a long scenario).
	if err := sc.checkSettings(); err != nil {
		return nil, err
	}
	return sc, nil
}

// maxLine bounds a scenario line: a megabyte, tens of thousands of IDs.
const maxLine = 1 << 20

// MaxScenarioSize bounds a scenario's text, 64 MB: more than its 100,000
// IDs of at most 255 bytes and its 10,000 events take, so that a reader
// can stop there (the command line reads -scenario through it) rather than
// read a mistaken file, or /dev/zero, until memory runs out.
const MaxScenarioSize = 64 << 20

// MaxStandbys bounds the standbys setting: more copies than that is no
// configuration anyone runs, and it keeps the placement loops small.
const MaxStandbys = 8

// RangeError reports a setting outside its allowed range. Name is the
// setting as the scenario format and the command's flags spell it, Got the
// value given and Want the range allowed, as the error message shows them.
// Parse wraps one out of range on its own line in a *LineError; one out of
// range only with what other lines set (a duration too long for the
// number of tasks) comes bare, as from Check.
type RangeError struct {
	Name, Got, Want string
}

// Error names the setting, the value and what the setting allows.
func (e *RangeError) Error() string { return scenarioText(e.msg()) }

func (e *RangeError) msg() string { return fmt.Sprintf("%s %s: want %s", e.Name, e.Got, e.Want) }

// Unwrap returns ErrScenario.
func (e *RangeError) Unwrap() error { return ErrScenario }

// Bounds of the settings: wide enough for any real group, narrow enough
// that no arithmetic on them overflows.
const (
	maxDuration = 1000 * time.Hour
	maxSetting  = time.Hour // pause, session timeout, replay lag
)

// durationSetting is one duration setting of a scenario and its bounds.
type durationSetting struct {
	name   string // as the scenario format and the command's flags spell it
	d      *time.Duration
	lo, hi time.Duration
}

// durations lists sc's duration settings, for Parse, which checks each on
// its line, and Check, which checks them all.
func (sc *Scenario) durations() []durationSetting {
	return []durationSetting{
		{"duration", &sc.Duration, time.Second, maxDuration},
		{"pause", &sc.Pause, 0, maxSetting},
		{"session-timeout", &sc.SessionTimeout, minSessionTimeout, maxSetting},
		{"probing-interval", &sc.ProbingInterval, time.Second, maxDuration},
		{"leave-deadline", &sc.LeaveDeadline, 0, maxDuration},
		{"replay-lag", &sc.ReplayLag, 0, maxSetting},
	}
}

// check reports a *RangeError unless lo <= d <= hi.
func (ds durationSetting) check() error {
	if d := *ds.d; d < ds.lo || d > ds.hi {
		return &RangeError{Name: ds.name, Got: d.String(), Want: fmt.Sprintf("%v to %v", ds.lo, ds.hi)}
	}
	return nil
}

// Check reports the first setting out of range, then the first event after
// the duration (the simulation would never reach it) or with a leave
// deadline or restart delay out of range, in a *LineError at the event's
// Line when it has one, then a Work past MaxWork. Run calls it; so does the
// command after applying its flags. Parse checks all but the Work.
func (sc *Scenario) Check() error {
	if err := sc.checkSettings(); err != nil {
		return err
	}
	// Each setting is bounded, their product is not: 2,000 members for
	// 1000h, or 10,000 events in a group of 10,000 tasks, would run for
	// hours or fill memory.
	if w := sc.Work(); w.Total > MaxWork {
		return &WorkError{Work: w}
	}
	return nil
}

// checkSettings is Check without the Work.
func (sc *Scenario) checkSettings() error {
	for _, ds := range sc.durations() {
		if err := ds.check(); err != nil {
			return err
		}
	}
	// Parse counts these as it reads; a scenario built in Go is held to
	// the same bounds here.
	joining := 0
	for _, ev := range sc.Events {
		if ev.Kind == Join {
			joining += len(ev.Members)
		}
	}
	for _, c := range []struct {
		name     string
		n, limit int
	}{{"tasks", len(sc.Tasks), maxTasks}, {"members", len(sc.Members) + joining, maxMembers}, {"events", len(sc.Events), maxEvents}} {
		if c.n > c.limit {
			return &RangeError{Name: c.name, Got: strconv.Itoa(c.n), Want: fmt.Sprintf("at most %d", c.limit)}
		}
	}
	// The metrics sum task-time (downtime and processing add up to tasks x
	// duration): it must fit a Duration, which 10,000 tasks for 1000h do not.
	if n := time.Duration(len(sc.Tasks)); n > 0 && sc.Duration > math.MaxInt64/n {
		return &RangeError{Name: "duration", Got: sc.Duration.String(), Want: fmt.Sprintf("at most %v with %d tasks, so that the task-time fits the metrics", (math.MaxInt64 / n).Truncate(time.Hour), n)}
	}
	switch {
	case sc.MaxWarmups < 1 || sc.MaxWarmups > maxWarmups:
		return &RangeError{Name: "max-warmups", Got: strconv.Itoa(sc.MaxWarmups), Want: fmt.Sprintf("1 to %d", maxWarmups)}
	case sc.Standbys < 0 || sc.Standbys > MaxStandbys:
		return &RangeError{Name: "standbys", Got: strconv.Itoa(sc.Standbys), Want: fmt.Sprintf("0 to %d", MaxStandbys)}
	case sc.Handover < 0 || int(sc.Handover) >= len(handoverNames):
		return &RangeError{Name: "handover", Got: sc.Handover.String(), Want: HandoverChoices()}
	}
	for _, ev := range sc.Events {
		if ev.At > sc.Duration {
			return onLine(ev.Line, &LateEventError{Event: ev, Duration: sc.Duration})
		}
		if err := ev.checkDelay(); err != nil {
			return onLine(ev.Line, err)
		}
	}
	return nil
}

// Work is what simulating a scenario under every strategy costs, in
// entries: a member or a task copy (a task's active, or a standby of a
// stateful one) in a heartbeat or a rebalance. See Scenario.Work.
type Work struct {
	Members, TaskCopies int
	// Heartbeats is each member's over the duration, Events the script's,
	// Probings the warm-up strategy's probing rebalances at most.
	Heartbeats, Events, Probings int64
	// Total is (Members + TaskCopies) x (Heartbeats + 600 x Events + 40 x
	// Probings), at most math.MaxInt64.
	Total int64
}

// Work weights, measured against a heartbeat (about a microsecond an entry
// on two cores): an event starts rebalances under every strategy, and
// every round is kept for the log and the picture (200 restarts of 100
// members with 2,000 tasks took 94 s and 2.5 GB); a probing rebalance is
// the warm-up strategy's alone.
const (
	eventWork   = 600
	probingWork = 40
)

// MaxWork bounds a scenario's Work.Total, and the command line's suite's
// sum: a few minutes and about a gigabyte at most (measured on two cores:
// 1,000 members with 8,000 tasks for 6h, 198 million, more than 4.5
// minutes of CPU and 1.6 GB; 200 restarts of 100 members with 2,000 tasks,
// 504 million, 94 s and 2.5 GB; at the bound, 1,000 members with 3,800
// tasks, 99.9 million, 109 s of CPU and 1.0 GB).
const MaxWork = 100_000_000

// Work estimates what simulating sc costs: the coordinator strategy
// simulates every member's heartbeat, each listing the member's tasks, and
// every strategy rebalances at each event, each round listing every member
// and task copy, so the cost is the group's entries times the heartbeats
// and (weighted) rebalances. Members counts those that join; Probings is
// the duration over the probing interval (the warm-up strategy probes only
// while warm-ups catch up, but a slow restore keeps them at it).
func (sc *Scenario) Work() Work {
	w := Work{Members: len(sc.Members), TaskCopies: len(sc.Tasks), Events: int64(len(sc.Events))}
	for _, ev := range sc.Events {
		if ev.Kind == Join {
			w.Members += len(ev.Members)
		}
	}
	for _, t := range sc.Tasks {
		if t.Size > 0 {
			w.TaskCopies += max(sc.Standbys, 0)
		}
	}
	if hb := heartbeatEvery(sc); hb > 0 {
		w.Heartbeats = int64(sc.Duration / hb)
	}
	if sc.ProbingInterval > 0 {
		w.Probings = int64(sc.Duration / sc.ProbingInterval)
	}
	// In floating point: Work is exported, for scenarios Check has not
	// bounded.
	total := float64(w.Members+w.TaskCopies) * (float64(w.Heartbeats) + eventWork*float64(w.Events) + probingWork*float64(w.Probings))
	w.Total = math.MaxInt64
	if total < math.MaxInt64 {
		w.Total = int64(total)
	}
	return w
}

// WorkError reports a scenario whose settings are each in range but whose
// Work is more than MaxWork.
type WorkError struct{ Work Work }

// Error shows the product and its factors, and what would shrink them.
func (e *WorkError) Error() string {
	w := e.Work
	return fmt.Sprintf("sim: too large to simulate: (%d members + %d task copies) x (%d heartbeats + %d x %d events + %d x %d probing rebalances) is %d entries, more than %d (a few minutes, a gigabyte); shorten the duration, lengthen the probing interval or a session timeout under 9s (members heartbeat every third of it, at most every 3s), or take fewer members, tasks, standbys or events: %v",
		w.Members, w.TaskCopies, w.Heartbeats, eventWork, w.Events, probingWork, w.Probings, w.Total, MaxWork, ErrScenario)
}

// Unwrap returns ErrScenario.
func (e *WorkError) Unwrap() error { return ErrScenario }

// checkDelay bounds a leave's deadline and a restart's time down like the
// duration, so that the engine's time arithmetic on them cannot overflow
// (an overflowed restart time came back at once).
func (ev Event) checkDelay() error {
	name, d := "", time.Duration(0)
	switch ev.Kind {
	case Leave:
		name, d = "leave deadline", max(ev.Deadline, 0) // negative: none
	case Restart:
		name, d = "restart after", ev.After
	}
	if d < 0 || d > maxDuration {
		return &RangeError{Name: name, Got: d.String(), Want: fmt.Sprintf("0s to %v", maxDuration)}
	}
	return nil
}

// LateEventError reports an event after the scenario's duration. An event
// with a Line comes wrapped in a *LineError.
type LateEventError struct {
	Event    Event
	Duration time.Duration
}

// Error names the event's kind, its time and the duration.
func (e *LateEventError) Error() string { return scenarioText(e.msg()) }

func (e *LateEventError) msg() string {
	return fmt.Sprintf("%s event at %v is after the duration %v", e.Event.Kind, e.Event.At, e.Duration)
}

// Unwrap returns ErrScenario.
func (e *LateEventError) Unwrap() error { return ErrScenario }

const maxWarmups = 1000

func (sc *Scenario) parseTasks(f []string, seen *idTable, n int, fail func(string, ...any) error) error {
	i := 0
	var ids []string
	for ; i < len(f) && f[i] != "size" && f[i] != "stateless"; i++ {
		more, err := seen.expand(f[i])
		if err != nil {
			return fail("%v", err)
		}
		ids = append(ids, more...)
	}
	if len(ids) == 0 {
		return fail("tasks: no task IDs")
	}
	sizes := make([]float64, len(ids)) // stateless unless a size follows
	switch rest := f[i:]; {
	case len(rest) == 1 && rest[0] == "stateless":
	case len(rest) == 2 && rest[0] == "size":
		s, err := parseRate(rest[1])
		if err != nil {
			return fail("tasks: size: %v", err)
		}
		for j := range sizes {
			sizes[j] = s
		}
	case len(rest) == 4 && rest[0] == "size" && rest[2] == "seed":
		lo, hi, ok := strings.Cut(rest[1], "-")
		a, errA := parseRate(lo)
		b, errB := parseRate(hi)
		seed, errS := strconv.ParseUint(rest[3], 10, 64)
		if !ok || errA != nil || errB != nil || a > b {
			return fail("tasks: want size MIN-MAX with 0 < MIN <= MAX, got %q", rest[1])
		}
		if errS != nil {
			return fail("tasks: bad seed %q", rest[3])
		}
		// The only randomness of the simulator: drawn here, once, from
		// the seed the scenario names, so a scenario is reproducible.
		r := rand.New(rand.NewPCG(seed, 0x6c6561726e6572))
		for j := range sizes {
			sizes[j] = float64(int(a + r.Float64()*(b-a)))
			if sizes[j] < a {
				sizes[j] = a
			}
		}
	default:
		return fail("tasks: want IDs then 'stateless', 'size MB' or 'size MIN-MAX seed N'")
	}
	for j, id := range ids {
		if err := seen.define(id, n, false); err != nil {
			return fail("%v", err)
		}
		sc.Tasks = append(sc.Tasks, TaskSpec{ID: id, Size: sizes[j]})
	}
	return nil
}

// parseStateless marks tasks defined before as stateless, like the
// notation's "stateless:" line.
func (sc *Scenario) parseStateless(f []string, seen *idTable, fail func(string, ...any) error) error {
	if len(f) == 0 {
		return fail("stateless: no task IDs")
	}
	for _, s := range f {
		ids, err := seen.expand(s)
		if err != nil {
			return fail("%v", err)
		}
		for _, id := range ids {
			i := slices.IndexFunc(sc.Tasks, func(t TaskSpec) bool { return t.ID == id })
			if i < 0 {
				return fail("stateless: unknown task %q", id)
			}
			sc.Tasks[i].Size = 0
		}
	}
	return nil
}

// definedID is where a task or member ID was defined.
type definedID struct {
	line   int
	member bool
}

// Bounds of a scenario: far above any group the simulator models (Kafka
// Streams groups are tens of members), low enough that a scenario cannot
// exhaust memory or run for days.
const (
	maxTasks   = 10000
	maxMembers = 2000 // at time zero and joining
	maxEvents  = 10000
	maxIDs     = 100000 // written, ranges expanded: tasks, members, events
)

// idTable is what Parse knows of IDs: where each task and member was
// defined, and how many IDs the scenario has written so far.
type idTable struct {
	defined        map[string]definedID
	tasks, members int
	written        int
}

// define records a new task or member ID defined on line.
func (seen *idTable) define(id string, line int, member bool) error {
	if d, dup := seen.defined[id]; dup {
		return fmt.Errorf("ID %q already defined on line %d", id, d.line)
	}
	count, limit, what := &seen.tasks, maxTasks, "tasks"
	if member {
		count, limit, what = &seen.members, maxMembers, "members"
	}
	if *count == limit {
		return fmt.Errorf("more than %d %s", limit, what)
	}
	*count++
	seen.defined[id] = definedID{line: line, member: member}
	return nil
}

// parseMembers reads "IDs [rate R]" and records the new IDs in seen.
func parseMembers(f []string, rate float64, seen *idTable, n int, fail func(string, ...any) error) ([]MemberSpec, error) {
	if len(f) >= 2 && f[len(f)-2] == "rate" {
		r, err := parseRate(f[len(f)-1])
		if err != nil {
			return nil, fail("rate: %v", err)
		}
		rate, f = r, f[:len(f)-2]
	}
	var ms []MemberSpec
	for _, s := range f {
		ids, err := seen.expand(s)
		if err != nil {
			return nil, fail("%v", err)
		}
		for _, id := range ids {
			if err := seen.define(id, n, true); err != nil {
				return nil, fail("%v", err)
			}
			ms = append(ms, MemberSpec{ID: id, Rate: rate})
		}
	}
	if len(ms) == 0 {
		return nil, fail("no member IDs")
	}
	return ms, nil
}

func (sc *Scenario) parseEvent(f []string, rate float64, seen *idTable, n int, fail func(string, ...any) error) error {
	if len(f) < 2 {
		return fail("want 'at DURATION join|leave|crash IDs' or 'at DURATION crash-leader'")
	}
	if len(sc.Events) == maxEvents {
		return fail("more than %d events", maxEvents)
	}
	at, err := time.ParseDuration(f[0])
	if err != nil || at < 0 {
		return fail("bad time %q", f[0])
	}
	if k := len(sc.Events); k > 0 && at < sc.Events[k-1].At {
		return fail("event at %v before the previous one at %v", at, sc.Events[k-1].At)
	}
	e := Event{At: at, Line: n}
	switch f[1] {
	case "join":
		e.Kind = Join
		if e.Members, err = parseMembers(f[2:], rate, seen, n, fail); err != nil {
			return err
		}
	case "leave", "crash", "restart":
		e.Kind = map[string]EventKind{"leave": Leave, "crash": Crash, "restart": Restart}[f[1]]
		ids := f[2:]
		// An optional trailing "deadline D" (leave) or "after D" (restart).
		if k := len(ids); k >= 2 && (e.Kind == Leave && ids[k-2] == "deadline" || e.Kind == Restart && ids[k-2] == "after") {
			d, err := time.ParseDuration(ids[k-1])
			switch {
			case ids[k-2] == "deadline" && ids[k-1] == "none":
				e.Deadline = -1
			case err != nil || d <= 0:
				return fail("%s: %s: want a positive duration, got %q", f[1], ids[k-2], ids[k-1])
			case e.Kind == Leave:
				e.Deadline = d
			default:
				e.After = d
			}
			ids = ids[:k-2]
		}
		if e.Kind == Restart && e.After == 0 {
			e.After = defaultRestartAfter
		}
		for _, s := range ids {
			ids, err := seen.expand(s)
			if err != nil {
				return fail("%v", err)
			}
			for _, id := range ids {
				switch d, ok := seen.defined[id]; {
				case !ok:
					return fail("%s: unknown member %q", f[1], id)
				case !d.member:
					return fail("%s: %q is a task (line %d), not a member", f[1], id, d.line)
				}
				e.Members = append(e.Members, MemberSpec{ID: id})
			}
		}
		if len(e.Members) == 0 {
			return fail("%s: no member IDs", f[1])
		}
	case "crash-leader":
		e.Kind = CrashLeader
		if len(f) != 2 {
			return fail("crash-leader takes no arguments")
		}
	default:
		return fail("unknown event %q", f[1])
	}
	sc.Events = append(sc.Events, e)
	return nil
}

func parseRate(s string) (float64, error) {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || !(r > 0) || r > 1e12 {
		return 0, fmt.Errorf("want a positive number, got %q", s)
	}
	return r, nil
}

// expand expands a range PREFIX<a>-PREFIX<b> (S1-S8) into its IDs; any
// other word is one ID. Every ID is one the library accepts
// (learner.ValidID), so that a scenario fails here, naming its line, rather
// than in the middle of a run. It counts the IDs against maxIDs before
// expanding a range, so a huge one fails without its memory.
func (seen *idTable) expand(s string) ([]string, error) {
	prefix, a, b := s, int64(0), int64(0) // s alone, unless it is a range
	lo, hi, ok := strings.Cut(s, "-")
	if ok {
		pl, from, errA := splitNumber(lo)
		ph, to, errB := splitNumber(hi)
		if pl == ph && pl != "" && pl != lo && ph != hi {
			// A range, whatever its numbers: a bound too large to count
			// once made the whole word one ID, a scenario of one task
			// where "T1-T1000000000" meant a billion.
			if errA != nil || errB != nil || from > to {
				return nil, fmt.Errorf("bad range %q", s)
			}
			prefix, a, b = pl, from, to
		}
	}
	if b-a >= int64(maxIDs-seen.written) {
		return nil, fmt.Errorf("more than %d IDs", maxIDs)
	}
	ids := []string{s}
	if prefix != s {
		ids = make([]string, 0, b-a+1)
		// By offset: a loop up to b would overflow at b = MaxInt64.
		for k := range b - a + 1 {
			ids = append(ids, prefix+strconv.FormatInt(a+k, 10))
		}
	}
	for _, id := range ids {
		if !learner.ValidID(id) {
			return nil, fmt.Errorf("malformed ID %q (want 1 to %d letters, digits, '_', '-', '.')", id, learner.MaxIDLen)
		}
	}
	seen.written += len(ids)
	return ids, nil
}

// splitNumber splits "S12" into "S" and 12; a word that does not end in a
// digit is its own prefix. The error reports a number beyond an int64.
func splitNumber(s string) (string, int64, error) {
	i := len(s)
	for i > 0 && '0' <= s[i-1] && s[i-1] <= '9' {
		i--
	}
	if i == len(s) {
		return s, 0, nil
	}
	v, err := strconv.ParseInt(s[i:], 10, 64)
	return s[:i], v, err
}

// plain writes v as a decimal without an exponent: %g writes 1e+06, which
// reads back, and 1e-05, which "size MIN-MAX" cannot (its '-' splits it).
func plain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// DefaultParams shape DefaultText.
type DefaultParams struct {
	Members   int     // peak group size, at least 4
	Tasks     int     // number of tasks
	Stateless int     // how many of them are stateless (every k-th task)
	MinSize   float64 // MB, stateful tasks' sizes are drawn in [MinSize, MaxSize]
	MaxSize   float64
	Rate      float64 // restore rate of every member, MB/s
	Seed      uint64  // seed of the sizes
}

// Check reports the first parameter out of range, named like the command's
// flag that sets it.
func (p DefaultParams) Check() error {
	switch {
	case p.Members < 4 || p.Members > maxDefaultMembers:
		return &RangeError{Name: "members", Got: strconv.Itoa(p.Members), Want: fmt.Sprintf("4 to %d", maxDefaultMembers)}
	case p.Tasks < 1 || p.Tasks > maxDefaultTasks:
		return &RangeError{Name: "tasks", Got: strconv.Itoa(p.Tasks), Want: fmt.Sprintf("1 to %d", maxDefaultTasks)}
	case p.Stateless < 0 || p.Stateless > p.Tasks:
		return &RangeError{Name: "stateless", Got: strconv.Itoa(p.Stateless), Want: fmt.Sprintf("0 to %d (the number of tasks)", p.Tasks)}
	case !(0 < p.MinSize && p.MinSize <= p.MaxSize && p.MaxSize <= maxSize):
		return &RangeError{Name: "size", Got: fmt.Sprintf("%g-%g", p.MinSize, p.MaxSize), Want: fmt.Sprintf("MIN-MAX with 0 < MIN <= MAX <= %g", maxSize)}
	case !(p.Rate > 0 && p.Rate <= maxSize):
		return &RangeError{Name: "rate", Got: fmt.Sprintf("%g", p.Rate), Want: fmt.Sprintf("above 0, at most %g", maxSize)}
	}
	return nil
}

// Bounds of the default scenario's shape, the scenario format's for tasks.
// Not a simulation that runs in seconds: its time grows about as members x
// tasks, the coordinator strategy's heartbeats most of it (measured: 12 x 96
// about 1 s for every strategy, 40 x 800 11 s, 100 x 2,000 52 s).
const (
	maxDefaultMembers = 1000
	maxDefaultTasks   = 10000
	maxSize           = 1e12
)

// Defaults is the default scenario's shape: 12 members, 96 tasks.
var Defaults = DefaultParams{Members: 12, Tasks: 96, Stateless: 16, MinSize: 100, MaxSize: 8000, Rate: 50, Seed: 1}

// DefaultText returns the default scenario: the design document's three
// stories grown to p's size, two hours apart.
//
//   - Scale Up: the group starts with two thirds of p.Members; half of the
//     newcomers join at 1m and the rest at 2m, while the first are learning.
//   - Scale Down: at 2h two members announce that they leave.
//   - Leader Transfer: at 4h a member joins, and 30s later, before its
//     learners are ready, the leader crashes.
func DefaultText(p DefaultParams) (string, error) {
	if err := p.Check(); err != nil {
		return "", err
	}
	start := p.Members * 2 / 3
	mid := start + (p.Members-start+1)/2
	var b strings.Builder
	fmt.Fprintf(&b, `# learner simulate: default scenario (%d members, %d tasks, %d stateless).
# The design document's stories: Scale Up, Scale Down, Leader Transfer.
duration 6h
pause 3s                 # one rebalance, join to assignment
session-timeout 10s      # until a crash is noticed
probing-interval 10m     # warm-up strategy: Kafka's default
max-warmups 2            # warm-up strategy: Kafka's default
leave-deadline 10m       # learner strategies: time-bounded scale-down
standbys 1               # standby replicas of each stateful task, every strategy
replay-lag 1s            # a caught-up replica trails its active by this much
handover %-16s# learner strategies: what kgolearner does
restore-rate %-12s# MB/s of every member
`, p.Members, p.Tasks, p.Stateless, DefaultHandover, plain(p.Rate))
	// Stateless tasks are spread evenly through the topology.
	fmt.Fprintf(&b, "tasks T1-T%d size %s-%s seed %d\n", p.Tasks, plain(p.MinSize), plain(p.MaxSize), p.Seed)
	var stateless []string
	for i := 1; i <= p.Tasks; i++ {
		if (i*p.Stateless)/p.Tasks != ((i-1)*p.Stateless)/p.Tasks {
			stateless = append(stateless, fmt.Sprintf("T%d", i))
		}
	}
	if len(stateless) > 0 {
		fmt.Fprintf(&b, "stateless %s\n", strings.Join(stateless, " "))
	}
	ids := func(a, b int) string {
		if a == b {
			return fmt.Sprintf("S%d", a)
		}
		return fmt.Sprintf("S%d-S%d", a, b)
	}
	// Two members leave: S3 (the document's S2 of three) and the last of
	// the starting group but one, or its last when that one is S1, the
	// leader, which the Leader Transfer story needs, or S3 itself (four to
	// seven members). Every member has joined by 2h, S3 included.
	second := start - 1
	if second == 1 || second == 3 {
		second = start
	}
	leaving := fmt.Sprintf("S3 S%d", second)
	fmt.Fprintf(&b, `
# Scale Up
members %s
at 1m join %s
at 2m join %s
# Scale Down
at 2h leave %s
# Leader Transfer: the leader is the longest-standing member, S1
at 4h join S%d
at 4h30s crash-leader
`, ids(1, start), ids(start+1, mid), ids(mid+1, p.Members), leaving, p.Members+1)
	return b.String(), nil
}
