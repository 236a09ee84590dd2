package coordinator

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/errtext"
)

// Config configures a Coordinator. The zero value is usable: Kafka-like
// timing and the recovery window of a coordinator that takes over a group.
type Config struct {
	// Options are the assignor's: standbys, learner budget, acceptable lag.
	Options learner.Options
	// SessionTimeout is how long the coordinator waits for a member's
	// heartbeat before it drops the member and gives its tasks away. Members
	// must stop every task (fence themselves) when they have had no
	// response for a shorter time; see the package documentation.
	// Zero means 10s; at most 24h.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often members heartbeat. Zero means a third
	// of SessionTimeout; it must be shorter than SessionTimeout.
	HeartbeatInterval time.Duration
	// WaitInterval is the heartbeat interval of a member waiting for a task
	// that its previous owner is releasing: the task is down from the
	// owner's acknowledgement until the waiting member's next heartbeat.
	// Zero means a tenth of HeartbeatInterval.
	WaitInterval time.Duration
	// FreshGroup says that no coordinator has ever granted tasks in this
	// group, so this one may grant at once. Otherwise (the zero value) the
	// coordinator takes over from a previous one: for one SessionTimeout
	// after its first event it only listens, answering every member with
	// what it reports, until every live member has told it what it runs.
	FreshGroup bool
	// MaxMembers is the most members the group holds, as Kafka's
	// group.max.size: a heartbeat that would add one more is refused with
	// an error wrapping ErrGroupFull, so that a flood of joins cannot grow
	// the coordinator's memory and every recompute without bound. Zero
	// means learner.MaxMembers, the most learner.Assign takes; more is
	// invalid.
	MaxMembers int
}

const defaultSessionTimeout = 10 * time.Second

// withDefaults fills in zero fields and checks the result.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = defaultSessionTimeout
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = cfg.SessionTimeout / 3
	}
	if cfg.WaitInterval == 0 {
		cfg.WaitInterval = cfg.HeartbeatInterval / 10
	}
	if cfg.MaxMembers == 0 {
		cfg.MaxMembers = learner.MaxMembers
	}
	switch {
	case cfg.SessionTimeout < time.Millisecond || cfg.SessionTimeout > maxSessionTimeout:
		return cfg, fmt.Errorf("coordinator: session timeout %v out of range [1ms, %v]: %w", cfg.SessionTimeout, maxSessionTimeout, ErrInvalidConfig)
	case cfg.HeartbeatInterval <= 0 || cfg.HeartbeatInterval >= cfg.SessionTimeout:
		return cfg, fmt.Errorf("coordinator: heartbeat interval %v not in (0, session timeout %v): %w", cfg.HeartbeatInterval, cfg.SessionTimeout, ErrInvalidConfig)
	case cfg.WaitInterval <= 0 || cfg.WaitInterval > cfg.HeartbeatInterval:
		return cfg, fmt.Errorf("coordinator: wait interval %v not in (0, heartbeat interval %v]: %w", cfg.WaitInterval, cfg.HeartbeatInterval, ErrInvalidConfig)
	case cfg.MaxMembers < 0 || cfg.MaxMembers > learner.MaxMembers:
		return cfg, fmt.Errorf("coordinator: max members %d out of range [0, %d]: %w", cfg.MaxMembers, learner.MaxMembers, ErrInvalidConfig)
	}
	return cfg, nil
}

// Coordinator is the group coordinator's state machine: it takes heartbeats,
// ticks and topology changes and answers each heartbeat with the member's
// target. Like learner.Assign it is pure and deterministic: no I/O, clocks,
// goroutines or randomness; time comes in as an argument and the same events
// give the same responses. It is not safe for concurrent use: the embedder
// serializes calls (one lock, or one goroutine owning it). Build it with
// New: the zero Coordinator has no topology and admits no member.
type Coordinator struct {
	cfg      Config
	assignor *learner.Assignor

	// Tasks are interned in the topology's order, then the tasks members
	// still hold that a topology change removed: a member's claim on such a
	// task keeps counting until the member stops it. inTopo says which
	// interned tasks the topology has now. SetTopology numbers them afresh
	// and forgets the tasks nobody holds any more, so they are never more
	// than the topology's and the members' tasks.
	tasks  []learner.Task
	index  map[string]int32
	inTopo []bool
	// holders counts, per interned task, the members that may run it active.
	// A task is granted only when no other member may run it.
	holders []int32

	members []*member // in ID order: map order never reaches the output
	byID    map[string]*member
	// buriedUntil holds the IDs of members that left or were dropped, with
	// when a heartbeat under them stops being refused: a late copy of a join
	// would otherwise bring back, as a member that runs nothing, an
	// incarnation that is over. Kept for a session timeout, then forgotten
	// (Tick), so it holds the members removed in the last session timeout
	// and, up to Config.MaxMembers entries in all, IDs never heard of
	// (buryUnknown).
	buriedUntil map[string]time.Time
	// nextExpiry is when the earliest session expiry or burial end that
	// Tick's last scan found is due (zero: none was pending), so that Tick,
	// which an embedder calls often (the simulator: at every heartbeat and
	// every 100 ms), scans the members and buried IDs only when one can be
	// due: scanning them at every call made a run's ticks cost members x
	// heartbeats. Every expiry or burial end set later is the clock's time
	// then plus SessionTimeout, no earlier than any already pending, so the
	// bound holds until the scan it calls for.
	nextExpiry time.Time

	now          time.Time
	started      bool
	recoverUntil time.Time
	// dirty says that Assign's input changed since the target was computed.
	dirty bool
	// assigned, when set (by tests), sees every Assign call's input and output.
	assigned func(tasks []learner.Task, in []learner.MemberMetadata, out []learner.Assignment)
}

// member is the coordinator's view of one member.
type member struct {
	id        string
	lastHeard time.Time
	// acked is the highest epoch the member reported, sent the epoch of the
	// last target the coordinator answered with. acked == sent: the member
	// has applied the latest target, and only then may it change.
	acked, sent int64
	// seq is the Seq of the latest heartbeat recorded (epoch acked).
	seq int64

	// What the member reported in its latest heartbeat (highest epoch).
	repActive   set
	repExtra    []string // active tasks that are not interned
	repLearning set
	repStandby  set
	ready       set // learners reported ready, kept until the learner goes
	// lag holds the lags reported of interned tasks, by increasing task:
	// a sorted slice, not a map, since recompute reads every member's in
	// task order (ranging over maps and sorting was a fifth of its time
	// at 1,000 members x 10,000 tasks) and members report a few each.
	lag      []learner.IndexedLag
	leaving  bool
	capacity int
	rack     string

	// The member's share of Assign's latest output.
	tgtActive, tgtLearning, tgtStandby set

	// The target last sent (epoch sent).
	active, learning, standby set

	// mayRun = repActive ∪ active: what the member may run now or once it
	// applies a response already sent. Counted in holders.
	mayRun set
}

// sets returns m's sets of interned tasks, for renumbering.
func (m *member) sets() []*set {
	return []*set{&m.repActive, &m.repLearning, &m.repStandby, &m.ready, &m.tgtActive, &m.tgtLearning, &m.tgtStandby, &m.active, &m.learning, &m.standby, &m.mayRun}
}

// New returns a coordinator for the given topology. It fails, wrapping
// ErrInvalidConfig, on a bad Config or a task list learner.New refuses.
func New(tasks []learner.Task, cfg Config) (*Coordinator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, index: make(map[string]int32), byID: make(map[string]*member), buriedUntil: make(map[string]time.Time)}
	if err := c.SetTopology(tasks); err != nil {
		return nil, err
	}
	return c, nil
}

// Config returns the configuration with defaults filled in.
func (c *Coordinator) Config() Config { return c.cfg }

// SetTopology replaces the group's tasks. Tasks that remain keep their
// owners; removed tasks are stopped at their owners' next heartbeats; new
// tasks get owners as members heartbeat. A removed task is remembered only
// while a member still runs or holds it. It fails, wrapping
// ErrInvalidConfig, on a task list learner.New refuses, and then changes
// nothing.
func (c *Coordinator) SetTopology(tasks []learner.Task) error {
	a, err := learner.New(tasks, c.cfg.Options)
	if err != nil {
		return fmt.Errorf("coordinator: %w: %w", ErrInvalidConfig, err)
	}
	c.assignor = a
	c.reintern(tasks)
	for _, m := range c.members {
		// Claims on tasks that were unknown until now start counting.
		ids, extra := c.intern(m.repExtra)
		m.repExtra = extra
		c.setRepActive(m, union(m.repActive, ids))
		m.tgtActive, m.tgtLearning, m.tgtStandby = c.inTopology(m.tgtActive), c.inTopology(m.tgtLearning), c.inTopology(m.tgtStandby)
	}
	c.dirty = true
	return nil
}

// reintern numbers the tasks afresh: topo's in its order, then those a
// member still holds that topo lacks, in their old order. The rest are
// forgotten, lags reported for them included. A topology task's index is
// then its index in the assignor's topology, as recompute needs.
func (c *Coordinator) reintern(topo []learner.Task) {
	held := make([]bool, len(c.tasks))
	for _, m := range c.members {
		for _, s := range m.sets() {
			for _, t := range *s {
				held[t] = true
			}
		}
	}
	tasks := make([]learner.Task, 0, len(topo))
	index := make(map[string]int32, len(topo))
	for _, t := range topo {
		index[t.ID] = int32(len(tasks))
		tasks = append(tasks, t)
	}
	remap := make([]int32, len(c.tasks))
	for i, t := range c.tasks {
		j, ok := index[t.ID]
		switch {
		case ok:
		case held[i]:
			j = int32(len(tasks))
			index[t.ID] = j
			tasks = append(tasks, t)
		default:
			j = -1
		}
		remap[i] = j
	}
	holders := make([]int32, len(tasks))
	for i, n := range c.holders {
		if remap[i] >= 0 {
			holders[remap[i]] = n // a task some member may run is held
		}
	}
	inTopo := make([]bool, len(tasks))
	for i := range topo {
		inTopo[i] = true
	}
	for _, m := range c.members {
		for _, s := range m.sets() {
			r := make(set, len(*s)) // new: sets may share arrays
			for i, t := range *s {
				r[i] = remap[t]
			}
			slices.Sort(r)
			*s = r
		}
		var lag []learner.IndexedLag
		for _, l := range m.lag {
			if remap[l.Task] >= 0 {
				lag = append(lag, learner.IndexedLag{Task: remap[l.Task], Lag: l.Lag})
			}
		}
		slices.SortFunc(lag, byTask)
		m.lag = lag
	}
	c.tasks, c.index, c.inTopo, c.holders = tasks, index, inTopo, holders
}

func (c *Coordinator) inTopology(s set) set {
	return slices.DeleteFunc(slices.Clone(s), func(t int32) bool { return !c.inTopo[t] })
}

// intern splits task IDs into interned indices (as a set) and the rest.
func (c *Coordinator) intern(ids []string) (set, []string) {
	var s []int32
	var extra []string
	for _, id := range ids {
		if i, ok := c.index[id]; ok {
			s = append(s, i)
		} else {
			extra = append(extra, id)
		}
	}
	return newSet(s), extra
}

// names returns the IDs of s's tasks in the order they are interned: the
// topology's order, then the tasks it no longer has.
func (c *Coordinator) names(s set) []string {
	if len(s) == 0 {
		return nil
	}
	out := make([]string, len(s))
	for i, t := range s {
		out[i] = c.tasks[t].ID
	}
	return out
}

// advance moves the coordinator's clock to now; time never goes back.
func (c *Coordinator) advance(now time.Time) {
	if !c.started {
		c.started = true
		c.now = now
		if !c.cfg.FreshGroup {
			c.recoverUntil = now.Add(c.cfg.SessionTimeout)
		}
	}
	if now.After(c.now) {
		c.now = now
	}
}

// Recovering reports whether the coordinator is still in its recovery
// window: it has taken over a group (Config.FreshGroup false) less than a
// session timeout ago and grants nothing yet.
func (c *Coordinator) Recovering() bool { return c.started && c.now.Before(c.recoverUntil) }

// Tick advances the coordinator's clock to now and drops every member whose
// last heartbeat is a session timeout old or older. It returns the dropped
// members' IDs in order; their tasks are ownerless and go to other members
// as those heartbeat. A time before the latest one seen counts as that one.
func (c *Coordinator) Tick(now time.Time) []string {
	c.advance(now)
	if c.now.Before(c.nextExpiry) {
		return nil // nothing is due
	}
	c.nextExpiry = time.Time{}
	for id, until := range c.buriedUntil {
		if !c.now.Before(until) {
			delete(c.buriedUntil, id)
		}
	}
	// One pass over the members, not remove's one per member dropped: when
	// 1,000 of 10,000 members expire at once (a rack lost), 1.1 ms against
	// 27.6 ms (BenchmarkTickExpiry, medians of 5 runs).
	var gone []string
	c.members = slices.DeleteFunc(c.members, func(m *member) bool {
		if c.now.Sub(m.lastHeard) < c.cfg.SessionTimeout {
			return false
		}
		gone = append(gone, m.id)
		c.forget(m) // buries m.id: its end is noted below
		return true
	})
	due := func(t time.Time) {
		if c.nextExpiry.IsZero() || t.Before(c.nextExpiry) {
			c.nextExpiry = t
		}
	}
	for _, m := range c.members {
		due(m.lastHeard.Add(c.cfg.SessionTimeout))
	}
	for _, until := range c.buriedUntil {
		due(until)
	}
	return gone
}

// Heartbeat takes one member's heartbeat, received at now, and returns the
// member's target. A heartbeat older than one already seen from the member
// (a late or duplicate delivery) changes nothing and gets the current
// target. Errors wrap ErrInvalidHeartbeat (malformed; nothing changes) or
// ErrFenced (the member must stop everything and rejoin under a new ID),
// and also ErrGroupFull when the member would be one more than
// Config.MaxMembers.
func (c *Coordinator) Heartbeat(now time.Time, hb Heartbeat) (Response, error) {
	c.advance(now)
	if err := validate(hb); err != nil {
		return Response{}, err
	}
	m := c.byID[hb.MemberID]
	switch {
	case hb.Leave:
		if m != nil {
			c.remove(m)
		} else {
			c.buryUnknown(hb.MemberID) // its join may still be on its way
		}
		return Response{MemberID: hb.MemberID, Epoch: hb.Epoch, Shutdown: true, HeartbeatInterval: c.cfg.HeartbeatInterval}, nil
	case m == nil && c.buried(hb.MemberID):
		// A late heartbeat, a join among them, of a member that left or was
		// dropped: that incarnation is over.
		return Response{}, fmt.Errorf("coordinator: member %s at epoch %d left or was dropped (an ID is one incarnation): %w", errtext.Quote(hb.MemberID), hb.Epoch, ErrFenced)
	case m == nil && (hb.Epoch == 0 || c.Recovering()):
		if len(c.members) >= c.cfg.MaxMembers && c.byID[hb.Replaces] == nil {
			return Response{}, fmt.Errorf("coordinator: member %s at epoch %d would be member %d of a group of at most %d: %w: %w",
				errtext.Quote(hb.MemberID), hb.Epoch, len(c.members)+1, c.cfg.MaxMembers, ErrGroupFull, ErrFenced)
		}
		if old := c.byID[hb.Replaces]; old != nil {
			c.remove(old) // it has stopped: its process restarted as hb's sender
		} else if hb.Replaces != "" {
			// Over all the same, though never heard of (its join may still
			// be on its way, or heard only by a previous coordinator).
			c.buryUnknown(hb.Replaces)
		}
		m = c.add(hb)
	case m == nil:
		return Response{}, fmt.Errorf("coordinator: member %s at epoch %d is not in the group (timed out or left): %w", errtext.Quote(hb.MemberID), hb.Epoch, ErrFenced)
	case hb.Epoch == 0 && m.acked > 0:
		// A late copy of its join, or a restarted member reusing the ID of
		// an incarnation that may still hold tasks: never a fresh start.
		return Response{}, fmt.Errorf("coordinator: member %s joins with epoch 0, but its ID is in use at epoch %d (an ID is one incarnation): %w", errtext.Quote(hb.MemberID), m.acked, ErrFenced)
	case hb.Epoch > m.sent && c.Recovering():
		// The coordinator has sent no target of its own yet (it grants
		// nothing in the window), only what heartbeats reported: the one it
		// took m from was a late copy of an older one. The newer report is
		// what m runs now, so it replaces the older.
		c.adopt(m, hb)
	case hb.Epoch > m.sent:
		return Response{}, fmt.Errorf("coordinator: member %s reports epoch %d, the coordinator sent it %d: %w", errtext.Quote(hb.MemberID), hb.Epoch, m.sent, ErrFenced)
	case m.sent >= MaxEpoch:
		// No epoch is left to give it a new target: it must start over. Its
		// tasks stay counted until its session expires.
		return Response{}, fmt.Errorf("coordinator: member %s has used up its epochs: %w", errtext.Quote(hb.MemberID), ErrFenced)
	case hb.Epoch < m.acked || hb.Epoch == m.acked && hb.Seq < m.seq:
		return c.response(m), nil // late or duplicate: newer news is in already
	}
	c.report(m, hb)
	if m.acked == m.sent && !c.Recovering() {
		if err := c.reconcile(m); err != nil {
			return Response{}, err
		}
	}
	return c.response(m), nil
}

// add makes hb's sender a member, adopted from hb.
func (c *Coordinator) add(hb Heartbeat) *member {
	m := &member{id: hb.MemberID}
	at, _ := slices.BinarySearchFunc(c.members, m.id, func(x *member, id string) int {
		switch {
		case x.id < id:
			return -1
		case x.id > id:
			return 1
		}
		return 0
	})
	c.members = slices.Insert(c.members, at, m)
	c.byID[m.id] = m
	c.adopt(m, hb)
	return m
}

// adopt takes m at hb's epoch. A joining member (epoch 0) runs nothing; one
// that reports an epoch (in the recovery window, after a failover) is taken
// at its word: what it runs, learns and keeps as standby is both its
// current target and, until Assign says otherwise, its share of the group's
// target. Readiness it reported before starts over: it was of another epoch.
func (c *Coordinator) adopt(m *member, hb Heartbeat) {
	m.acked, m.sent = hb.Epoch, hb.Epoch
	m.active, _ = c.intern(hb.Active)
	m.learning, _ = c.intern(hb.Learning)
	m.standby, _ = c.intern(hb.Standby)
	m.tgtActive, m.tgtLearning, m.tgtStandby = c.inTopology(m.active), c.inTopology(m.learning), c.inTopology(m.standby)
	m.ready = nil
	c.setMayRun(m, union(m.repActive, m.active))
	c.dirty = true
}

// remove drops m from the group: it has left or its session expired, so it
// has stopped every task (members fence themselves before their session
// can expire).
func (c *Coordinator) remove(m *member) {
	c.forget(m)
	c.members = slices.DeleteFunc(c.members, func(x *member) bool { return x == m })
}

// forget is remove but for taking m out of c.members, which the caller
// does: Tick takes out every expired member in one pass.
func (c *Coordinator) forget(m *member) {
	c.setMayRun(m, nil)
	delete(c.byID, m.id)
	c.bury(m.id)
	c.dirty = true
}

// bury refuses heartbeats under id for a session timeout. A copy of one of
// its heartbeats delayed longer than that can still make it a member again,
// one that never heartbeats: it is given tasks it never runs until its
// session expires, which delays them but never runs one twice.
func (c *Coordinator) bury(id string) { c.buriedUntil[id] = c.now.Add(c.cfg.SessionTimeout) }

// buryUnknown buries the ID of a member never heard of, named by a Leave or
// a Replaces, unless Config.MaxMembers IDs are buried already: anyone can
// send those, and a flood of new IDs would grow the burials without bound.
// Past the limit the ID is not kept, and a late join under it adds a member
// that runs nothing, which its session timeout then drops.
func (c *Coordinator) buryUnknown(id string) {
	if len(c.buriedUntil) < c.cfg.MaxMembers {
		c.bury(id)
	}
}

// buried reports whether heartbeats under id are refused.
func (c *Coordinator) buried(id string) bool {
	until, ok := c.buriedUntil[id]
	return ok && c.now.Before(until)
}

// setMayRun replaces m's contribution to holders.
func (c *Coordinator) setMayRun(m *member, s set) {
	for _, t := range m.mayRun {
		c.holders[t]--
	}
	for _, t := range s {
		c.holders[t]++
	}
	m.mayRun = s
}

func (c *Coordinator) setRepActive(m *member, s set) {
	m.repActive = s
	c.setMayRun(m, union(s, m.active))
}

// readyNow reports whether m's learner of t counts as ready: flagged ready,
// or its lag within the acceptable lag.
func (c *Coordinator) readyNow(m *member, t int32) bool {
	if m.ready.has(t) {
		return true
	}
	lag, ok := lagOf(m, t)
	return ok && c.cfg.Options.AcceptableLag > 0 && lag <= c.cfg.Options.AcceptableLag
}

// lagOf returns the lag m reported of task t, if it reported one.
func lagOf(m *member, t int32) (int64, bool) {
	i, ok := slices.BinarySearchFunc(m.lag, t, func(l learner.IndexedLag, t int32) int { return cmp.Compare(l.Task, t) })
	if !ok {
		return 0, false
	}
	return m.lag[i].Lag, true
}

// holds reports whether m reported holding state of task t: running it,
// learning it or keeping its standby.
func (m *member) holds(t int32) bool {
	return m.repStandby.has(t) || m.repActive.has(t) || m.repLearning.has(t)
}

// warmth returns what Assign reads of m's report about its target's
// learners and standbys: each learner's readiness, and whether m holds each
// standby and has it caught up (no lag reported, or one within
// Options.AcceptableLag). A change in it changes Assign's input.
func (c *Coordinator) warmth(m *member) []bool {
	out := make([]bool, 0, len(m.tgtLearning)+2*len(m.tgtStandby))
	for _, t := range m.tgtLearning {
		out = append(out, c.readyNow(m, t))
	}
	for _, t := range m.tgtStandby {
		lag, ok := lagOf(m, t)
		out = append(out, m.holds(t), !ok || lag <= c.cfg.Options.AcceptableLag)
	}
	return out
}

// report records a heartbeat that is not older than what m reported before:
// of a higher epoch, or of the same one and no lower Seq. A duplicate of the
// latest is recorded again, which changes none of what m reported. Within one
// epoch a member's roles are the ones that epoch's target gave it; a member
// that does not number its heartbeats (Seq 0) may still have a late one of
// the epoch recorded, so its readiness and leaving are kept once reported. A
// member that numbers them has its late ones ignored, so its latest report
// is the whole truth: a learner it no longer reports ready (Member.Unready:
// its state fell behind again) is not ready, and is not promoted on the
// strength of an older report.
func (c *Coordinator) report(m *member, hb Heartbeat) {
	was := c.warmth(m)
	m.acked, m.seq = hb.Epoch, hb.Seq
	m.lastHeard = c.now
	active, extra := c.intern(hb.Active)
	m.repExtra = extra
	c.setRepActive(m, active)
	m.repLearning, _ = c.intern(hb.Learning)
	m.repStandby, _ = c.intern(hb.Standby)
	ready, _ := c.intern(hb.Ready) // a subset of Learning: validate checked
	if hb.Seq == 0 {
		ready = union(ready, slices.DeleteFunc(m.ready, func(t int32) bool { return !m.repLearning.has(t) }))
	}
	m.ready = ready
	m.lag = nil
	for _, l := range hb.Lag {
		if t, ok := c.index[l.Task]; ok {
			m.lag = append(m.lag, learner.IndexedLag{Task: t, Lag: l.Lag})
		}
	}
	slices.SortFunc(m.lag, byTask)
	if hb.Leaving && !m.leaving || hb.Capacity != m.capacity || hb.Rack != m.rack {
		c.dirty = true
	}
	m.leaving = m.leaving || hb.Leaving
	m.capacity, m.rack = hb.Capacity, hb.Rack
	if !slices.Equal(was, c.warmth(m)) {
		c.dirty = true
	}
}

// reconcile moves m's target one step towards the group's: tasks it should
// no longer run are dropped at once, tasks it should run are granted as soon
// as no other member may run them. m has applied its latest target.
func (c *Coordinator) reconcile(m *member) error {
	if c.dirty {
		if err := c.recompute(); err != nil {
			return err
		}
	}
	var active set
	for _, t := range m.tgtActive {
		others := c.holders[t]
		if m.mayRun.has(t) {
			others--
		}
		if m.active.has(t) || others == 0 {
			active = append(active, t)
		}
	}
	// A learner whose task is promoted to it keeps replaying until the task
	// is granted: no half-way bounce.
	waiting := minus(m.tgtActive, active)
	learning := minus(union(m.tgtLearning, intersect(waiting, m.learning)), active)
	standby := minus(minus(m.tgtStandby, active), learning)
	if slices.Equal(active, m.active) && slices.Equal(learning, m.learning) && slices.Equal(standby, m.standby) {
		return nil
	}
	m.sent++
	m.active, m.learning, m.standby = active, learning, standby
	c.setMayRun(m, union(m.repActive, active))
	return nil
}

// recompute runs Assign on the group's target, each learner's readiness as
// its member reports it, and the tasks members still run that their
// target no longer has (as Revoked: state they still hold). Owners' learned
// tags are ignored: the coordinator stops a learned task exactly when its
// learner is ready, so nothing else pauses.
//
// It runs AssignIndexed on the interned indices, which for the topology's
// tasks are the assignor's (reintern). By ID, each call named every task
// and looked every name up again: at 1,000 members x 100,000 tasks a
// heartbeat that runs Assign took 18.9 ms, by index 5.5 ms (medians,
// BenchmarkHeartbeatRecompute, bench/results/coordinator-recompute).
func (c *Coordinator) recompute() error {
	mds := make([]learner.IndexedMember, len(c.members))
	var learnt, unstarted []bool // by task, made when first needed
	for i, m := range c.members {
		md := learner.IndexedMember{
			ID:       m.id,
			Assigned: m.tgtActive,
			Revoked:  c.revoked(m),
			Learning: m.tgtLearning,
			Standby:  m.tgtStandby,
			Leaving:  m.leaving,
			Capacity: m.capacity,
			Rack:     m.rack,
		}
		for _, t := range m.tgtLearning {
			if m.ready.has(t) {
				md.Ready = append(md.Ready, t)
			}
		}
		for _, l := range m.lag {
			if c.inTopo[l.Task] && !m.tgtActive.has(l.Task) {
				md.Lag = append(md.Lag, l)
			}
		}
		// A standby of the target that m has not reported holding has no
		// state yet, as far as the coordinator knows. Told of with no lag,
		// Assign would count it caught up and release at once the copy it
		// replaces, which rule 13 keeps until the new one reports caught up.
		// (Once m reports its target's standbys, the steady state, there
		// is none.) So it goes to Assign with the largest lag, whether or
		// not some member learns its task: the copy it replaces is released
		// alike, and if the task's owner went the task would go to the
		// learner or the unstarted standby, with the caught-up copy gone.
		if !slices.Equal(m.tgtStandby, m.repStandby) {
			for _, t := range m.tgtStandby {
				if _, ok := lagOf(m, t); ok || m.holds(t) {
					continue
				}
				if !c.lagRanks() {
					if learnt == nil {
						learnt = c.learnt()
					}
					if learnt[t] {
						continue // see lagRanks
					}
				}
				md.Lag = append(md.Lag, learner.IndexedLag{Task: t, Lag: math.MaxInt64})
				if unstarted == nil {
					unstarted = make([]bool, len(c.tasks))
				}
				unstarted[t] = true
			}
		}
		mds[i] = md
	}
	// The copies such a standby replaces, kept until it catches up, are
	// caught up when their members report them running or kept as
	// standbys with no lag (warmth), and must still rank before it: else,
	// if the task's owner went, it would go to the unstarted copy, cold,
	// with a caught-up one at hand. Told of with lag 0 they do, and before
	// a learner reporting no lag too (it is not caught up: it would say
	// Ready). Such a learner needs nothing: a lag not reported ranks as
	// Options.AcceptableLag (rule 5), before the unstarted copy's largest
	// lag, as a member that has replayed some of the state should.
	if unstarted != nil {
		for i, m := range c.members {
			for _, t := range m.tgtStandby {
				_, ok := lagOf(m, t)
				if unstarted[t] && !ok && (m.repStandby.has(t) || m.repActive.has(t)) {
					mds[i].Lag = append(mds[i].Lag, learner.IndexedLag{Task: t})
				}
			}
		}
	}
	as, err := c.assignor.AssignIndexed(mds)
	if err != nil {
		return fmt.Errorf("coordinator: assigning the group's target: %w", err)
	}
	if c.assigned != nil {
		c.reportAssign(mds, as)
	}
	changed := false
	for _, a := range as {
		m := c.byID[a.MemberID]
		// The output's lists are strictly increasing: sets as they are.
		// A kept one is the member's own set, which nothing edits in place.
		act, lrn, stb := set(a.Assigned), set(a.Learning), set(a.Standby)
		if !slices.Equal(act, m.tgtActive) || !slices.Equal(lrn, m.tgtLearning) || !slices.Equal(stb, m.tgtStandby) {
			changed = true
		}
		m.tgtActive, m.tgtLearning, m.tgtStandby = act, lrn, stb
	}
	// One more pass after a change confirms the new target is Assign's
	// fixed point (the budget, for one, places learners step by step).
	c.dirty = changed
	return nil
}

// lagRanks reports whether a lag beyond Options.AcceptableLag exists, so
// that recompute can tell Assign of a copy that is not caught up. At
// AcceptableLag math.MaxInt64 every lag is acceptable: an unstarted standby
// counts caught up whatever lag it is told of, and a learner told of one
// would count ready and be promoted. Then the unstarted standby of a task
// some member learns goes to Assign with no lag, ranking after the learner,
// which reports none either (rule 5: a learner before a standby at equal
// lags).
func (c *Coordinator) lagRanks() bool { return c.cfg.Options.AcceptableLag < math.MaxInt64 }

// learnt returns, by interned task, whether some member learns it in the
// target.
func (c *Coordinator) learnt() []bool {
	out := make([]bool, len(c.tasks))
	for _, m := range c.members {
		for _, t := range m.tgtLearning {
			out[t] = true
		}
	}
	return out
}

// revoked returns the topology's tasks m runs that its target no longer
// has. It filters rather than composing set operations: recompute calls it
// for every member, and the unions and copies those allocate were a tenth
// of recompute's time at 1,000 members x 10,000 tasks, where nearly every
// member's result is empty.
func (c *Coordinator) revoked(m *member) set {
	var out set
	for _, t := range m.repActive {
		if c.inTopo[t] && !m.tgtActive.has(t) && !m.tgtLearning.has(t) && !m.tgtStandby.has(t) {
			out = append(out, t)
		}
	}
	return out
}

func byTask(a, b learner.IndexedLag) int { return cmp.Compare(a.Task, b.Task) }

// reportAssign gives the assigned hook (tests) an Assign call's input and
// output by ID.
func (c *Coordinator) reportAssign(in []learner.IndexedMember, out []learner.IndexedAssignment) {
	c.assigned(c.assignor.Tasks(), byID(in, c.assignor.MemberByID), byID(out, c.assignor.AssignmentByID))
}

// byID converts what AssignIndexed took or gave to IDs; it cannot fail on
// what AssignIndexed took or gave.
func byID[T, U any](xs []T, f func(T) (U, error)) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		u, err := f(x)
		if err != nil {
			panic(fmt.Sprintf("coordinator: AssignIndexed's input or output by ID: %v", err))
		}
		out[i] = u
	}
	return out
}

func (c *Coordinator) response(m *member) Response {
	r := Response{
		MemberID:          m.id,
		Epoch:             m.sent,
		Active:            c.names(m.active),
		Learning:          c.names(m.learning),
		Standby:           c.names(m.standby),
		Shutdown:          m.leaving && len(m.active) == 0,
		HeartbeatInterval: c.cfg.HeartbeatInterval,
	}
	if len(minus(m.tgtActive, m.active)) > 0 {
		r.HeartbeatInterval = c.cfg.WaitInterval
	}
	return r
}

// Target returns the group's target as Assign last computed it, one
// assignment per member in ID order (Revoked and Learned left empty): where
// the group is heading. Members reach it task by task.
func (c *Coordinator) Target() []learner.Assignment {
	out := make([]learner.Assignment, len(c.members))
	for i, m := range c.members {
		out[i] = learner.Assignment{MemberID: m.id, Assigned: c.names(m.tgtActive), Learning: c.names(m.tgtLearning), Standby: c.names(m.tgtStandby)}
	}
	return out
}

// Members returns the IDs of the group's members in order.
func (c *Coordinator) Members() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.id
	}
	return out
}
