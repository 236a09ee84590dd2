package sim

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// This file is the discrete-event engine every strategy shares: the group's
// members, their local state of each task, the rebalance round trip, restore
// progress and the metrics. Strategies only decide what members report at a
// join and what the leader assigns (strategy.go, sticky.go).

// role is what a member does with a task it holds local state of.
type role uint8

const (
	active   role = iota + 1
	learning      // a learner or a warm-up replica: replays beside the active
	standby       // a standby replica: replays beside the active, for good
	disk          // state left on disk by an earlier run: replays nothing
)

// slot is one member's local state of one task.
type slot struct {
	role    role
	stopped bool          // active, but stopped at join (state kept)
	have    float64       // MB restored as of since
	done    bool          // restored: have == the task's size
	since   time.Duration // when have was last brought up to date
	gen     uint64        // bumped to cancel a scheduled restore completion
	caught  time.Duration // when it caught up (done), for hand-over waits
	// replays is when it last became a caught-up replica (learning or
	// standby), which replays the changelog from then on, rebalances
	// included: restore consumers are not the group's consumer.
	replays time.Duration
}

type member struct {
	idx     int
	id      string
	rate    float64
	alive   bool // the process runs
	inGroup bool // the group counts it as a member
	leaving bool
	crashed bool          // it died without notice (crash or restart), not gracefully
	expires time.Duration // crashed: when its session times out
	slots   []*slot       // by task index (dense: simple and fast at simulator sizes); nil: no local state
	// held lists, increasing, the tasks whose slot is not nil. A member
	// holds about tasks/members of them, so the per-event scans (a
	// heartbeat's roles, record) walk it instead of all the slots: at 400
	// members x 4,000 tasks walking every slot was most of a run. Only
	// setSlot changes slots, which keeps the two in step.
	held []int
	// lagged lists, increasing, the tasks whose lag reportLags reported
	// last time.
	lagged []int
	worker *learner.Worker
}

type event struct {
	at  time.Duration
	seq uint64 // events at one instant run in the order they were scheduled
	run func()
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type engine struct {
	sc      *Scenario
	strat   strategy
	tasks   []learner.Task
	size    []float64
	index   map[string]int // task ID -> index
	members []*member      // in the order they joined, dead ones included
	now     time.Duration
	queue   eventQueue
	seq     uint64
	err     error

	rebalancing bool
	starting    bool            // a rebalance start is scheduled
	reasons     []string        // why the next rebalance starts
	lastOwner   []int           // per task, the member that last ran it active; -1
	cause       []Cause         // per task down now: why; 0 while it processes
	idleSince   []time.Duration // per task down now: since when; -1 while it processes
	// from is, per task, who had a caught-up copy of it when its move
	// began (copies); moving is whether a live owner gave it up by an
	// assignment and nobody has taken it over since.
	from   []int
	moving []bool
	// want is setRoles' scratch, per task: the roles an assignment gives
	// (bits 1 active, 2 learning, 4 standby); all zero between calls, so
	// that a call costs the member's tasks, not every task.
	want []uint8

	res     Result
	lastT   time.Duration // metrics are integrated up to here
	episode time.Duration // how long the group has been unbalanced

	// dirty is whether anything record reads (a slot's presence, role,
	// stopped or done; a member's presence in the process or the group, or
	// its leaving; a task's cause; the rebalance under way) changed since
	// record last ran: only then does it scan the group, members x tasks
	// slots. Most events change none of it (the coordinator strategy's
	// ticks and heartbeats, hundreds of thousands in a run).
	dirty bool
	// rate is what the integrated metrics gain per unit of time in the
	// state record last saw, which holds until something is dirty.
	rate rates
}

// recordAlways makes the engine record after every event, dirty or not: a
// test runs scenarios both ways to show that the dirty marks miss no change.
var recordAlways = false

// rates counts, in one state of the group, what each integrated metric
// gains per unit of time.
type rates struct {
	members      int // live members of the group
	processed    int // slots processing their task
	duplicate    int // learners and warm-ups of a task processed elsewhere
	down         [numCauses]int
	statefulDown int
	balanced     bool
}

// at schedules f at time t (not before now).
func (e *engine) at(t time.Duration, f func()) {
	e.seq++
	heap.Push(&e.queue, event{at: max(t, e.now), seq: e.seq, run: f})
}

func (e *engine) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf("sim: %s at %v: %s", e.strat.name(), e.now, fmt.Sprintf(format, args...))
	}
}

func run(sc *Scenario, s Strategy) (*Result, error) {
	if err := sc.Check(); err != nil {
		return nil, err
	}
	e := &engine{sc: sc, lastOwner: make([]int, len(sc.Tasks)), cause: make([]Cause, len(sc.Tasks)), idleSince: make([]time.Duration, len(sc.Tasks)),
		index: make(map[string]int, len(sc.Tasks)), from: make([]int, len(sc.Tasks)), moving: make([]bool, len(sc.Tasks)),
		want: make([]uint8, len(sc.Tasks))}
	for i, t := range sc.Tasks {
		e.tasks = append(e.tasks, learner.Task{ID: t.ID, Stateful: t.Size > 0})
		e.size = append(e.size, t.Size)
		e.index[t.ID] = i
	}
	var err error
	if e.strat, err = newStrategy(s, e); err != nil {
		return nil, err
	}
	e.res.Strategy = s
	e.start()
	for _, ev := range sc.Events {
		e.at(ev.At, func() { e.script(ev) })
	}
	for e.err == nil && len(e.queue) > 0 && e.queue[0].at <= sc.Duration {
		ev := heap.Pop(&e.queue).(event)
		e.integrate(ev.at)
		e.now = ev.at
		ev.run()
		if e.dirty || recordAlways {
			e.record()
		}
	}
	if e.err != nil {
		return nil, e.err
	}
	e.integrate(sc.Duration)
	e.now = sc.Duration
	if _, ok := e.strat.(rebalanceFree); !ok {
		e.res.Metrics.Messages += int(e.res.Metrics.MemberTime / heartbeatEvery(sc))
	}
	e.res.Timeline.End = sc.Duration
	return &e.res, nil
}

// start sets up the group at time zero: balanced, every member warm, tasks
// dealt out in contiguous blocks like the document's S1[T1, T2], S2[T3, T4],
// and each stateful task's standbys, caught up, on the members other than its
// owner's, spread over the others.
func (e *engine) start() {
	for i := range e.lastOwner {
		e.lastOwner[i], e.idleSince[i], e.from[i] = -1, -1, nobody
	}
	n, k := len(e.tasks), len(e.sc.Members)
	as := make([]learner.Assignment, k)
	next := 0
	for i, ms := range e.sc.Members {
		e.addMember(ms)
		as[i].MemberID = ms.ID
		for c := range n/k + b2i(i < n%k) {
			as[i].Assigned = append(as[i].Assigned, e.tasks[next].ID)
			for j := range min(e.sc.Standbys, k-1) {
				if e.tasks[next].Stateful {
					// Spread over every other member, so that one crash
					// does not land all its tasks on one.
					o := (i + 1 + (c+j)%(k-1)) % k
					as[o].Standby = append(as[o].Standby, e.tasks[next].ID)
				}
			}
			next++
		}
	}
	for i, m := range e.members {
		slices.SortFunc(as[i].Standby, func(x, y string) int { return e.index[x] - e.index[y] })
		e.strat.initial(m, as[i])
		for _, id := range as[i].Assigned {
			t := e.index[id]
			e.setSlot(m, t, &slot{role: active, have: e.size[t], done: true})
			e.lastOwner[t] = m.idx
		}
		for _, id := range as[i].Standby {
			t := e.index[id]
			e.setSlot(m, t, &slot{role: standby, have: e.size[t], done: true})
		}
	}
	e.record()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (e *engine) addMember(ms MemberSpec) *member {
	e.dirty = true
	m := &member{idx: len(e.members), id: ms.ID, rate: ms.Rate, alive: true, inGroup: true, slots: make([]*slot, len(e.tasks))}
	e.members = append(e.members, m)
	e.res.Timeline.Members = append(e.res.Timeline.Members, MemberTimeline{ID: m.id, Joined: e.now, Gone: -1})
	return m
}

// taskSet turns a list of IDs into a per-task membership vector.
func (e *engine) taskSet(ids []string) []bool {
	in := make([]bool, len(e.tasks))
	for _, id := range ids {
		if t, ok := e.index[id]; ok {
			in[t] = true
		}
	}
	return in
}

// byID returns the newest member with the ID (a restart adds one).
func (e *engine) byID(id string) *member {
	for i := len(e.members) - 1; i >= 0; i-- {
		if e.members[i].id == id {
			return e.members[i]
		}
	}
	return nil
}

// leader is the longest-standing live member of the group.
func (e *engine) leader() *member {
	for _, m := range e.members {
		if m.alive && m.inGroup {
			return m
		}
	}
	return nil
}

func (e *engine) script(ev Event) {
	label := ev.Kind.String()
	for _, ms := range ev.Members {
		label += " " + ms.ID
	}
	if l := e.leader(); ev.Kind == CrashLeader && l != nil {
		label += " " + l.id
	}
	e.res.Timeline.Events = append(e.res.Timeline.Events, Mark{At: e.now, Label: label})
	switch ev.Kind {
	case Join:
		for _, ms := range ev.Members {
			m := e.addMember(ms)
			e.strat.joined(m)
			e.requestRebalance(m.id + " joins")
		}
	case Leave:
		deadline := e.sc.LeaveDeadline
		if ev.Deadline != 0 {
			deadline = max(ev.Deadline, 0)
		}
		for _, ms := range ev.Members {
			if m := e.byID(ms.ID); m != nil && m.alive && !m.leaving {
				m.leaving, e.dirty = true, true
				e.strat.leave(m, deadline)
			}
		}
	case Crash, CrashLeader, Restart:
		victims := []*member{e.leader()}
		if ev.Kind != CrashLeader {
			victims = victims[:0]
			for _, ms := range ev.Members {
				victims = append(victims, e.byID(ms.ID))
			}
		}
		for _, m := range victims {
			if m == nil || !m.alive {
				continue
			}
			onDisk := e.crash(m)
			if ev.Kind == Restart {
				e.at(e.now+ev.After, func() { e.restart(m, onDisk) })
			}
		}
	}
}

// crash kills m without notice; the group notices when its session times
// out. It returns the state m leaves on disk.
func (e *engine) crash(m *member) []*slot {
	onDisk := make([]*slot, len(m.slots))
	for _, t := range m.held {
		s := m.slots[t]
		e.settle(m, t)
		onDisk[t] = &slot{role: disk, have: s.have, done: s.done}
		if s.role == active {
			e.cause[t], e.dirty = CauseCrash, true
		}
	}
	m.crashed, m.expires = true, e.lastBeat(m)+e.sc.SessionTimeout
	e.kill(m)
	e.at(m.expires, func() {
		if m.inGroup { // no rebalance has dropped it yet
			m.inGroup, e.dirty = false, true
			e.requestRebalance(m.id + "'s session timed out")
		}
	})
	return onDisk
}

// lastBeat is when m's last heartbeat up to now went out: every
// heartbeatEvery from its phase, its join, or for the members at time zero
// spread over the interval, as the coordinator strategy spreads them.
// Kafka's coordinator times a session from the member's last heartbeat,
// and the coordinator strategy's does: timing it from the crash charged
// the rebalancing strategies up to an interval more per crash.
func (e *engine) lastBeat(m *member) time.Duration {
	every := heartbeatEvery(e.sc)
	phase := e.res.Timeline.Members[m.idx].Joined
	if m.idx < len(e.sc.Members) {
		phase = firstBeat(e.sc, m.idx)
	}
	if e.now < phase {
		return e.now // not yet one: its join stands for it
	}
	return e.now - (e.now-phase)%every
}

// restart starts a crashed member again as a new member of the group (a new
// Worker, as after a real restart) with the state it left on disk.
func (e *engine) restart(old *member, onDisk []*slot) {
	m := e.addMember(MemberSpec{ID: old.id, Rate: old.rate})
	for t, s := range onDisk {
		if s != nil {
			s.since = e.now
			e.setSlot(m, t, s)
		}
	}
	e.strat.joined(m)
	e.requestRebalance(m.id + " restarts")
}

// kill stops a member's process; its local state is lost with it.
func (e *engine) kill(m *member) {
	m.alive, e.dirty = false, true
	e.res.Timeline.Members[m.idx].Gone = e.now
	for _, t := range slices.Clone(m.held) {
		m.slots[t].gen++
		e.setSlot(m, t, nil)
	}
}

// setSlot makes s (nil: none) m's local state of t.
func (e *engine) setSlot(m *member, t int, s *slot) {
	at, found := slices.BinarySearch(m.held, t)
	switch {
	case s != nil && !found:
		m.held = slices.Insert(m.held, at, t)
	case s == nil && found:
		m.held = slices.Delete(m.held, at, at+1)
	}
	m.slots[t] = s
}

// depart is a graceful exit: the member stops and leaves the group at once,
// which starts a rebalance. A task it runs that another member has a
// caught-up replica of is a hand-over to that replica, a promotion, under
// every strategy: the classic ones' leaving members hand over this way,
// the learner strategies' at their leave deadline (before it, they revoke
// at a join, as promotions too).
func (e *engine) depart(m *member, why string) {
	if !m.alive {
		return
	}
	for _, t := range m.held {
		if s := m.slots[t]; s.role == active && e.caughtUp(t, learning, standby) {
			e.setCause(t, CausePromotion)
		}
	}
	e.kill(m)
	m.inGroup, e.dirty = false, true
	e.requestRebalance(m.id + " " + why)
}

// rebalanceFree is implemented by a strategy that never rebalances (the
// coordinator): the engine then starts no rebalance, and the strategy counts
// its own messages.
type rebalanceFree interface{ rebalanceFree() }

// heartbeatEvery is every strategy's heartbeat interval: Kafka's
// heartbeat.interval.ms default, or a third of a shorter session timeout's
// (Kafka wants the interval below the timeout, a third at most). The
// rebalancing strategies and the coordinator's members heartbeat alike, so
// that the messages they are charged differ only by the protocol's own
// requests: with a 3 s session timeout the coordinator's members
// heartbeated every second and the others' every 3 s, which charged the
// coordinator three times their heartbeats.
func heartbeatEvery(sc *Scenario) time.Duration { return min(heartbeatInterval, sc.SessionTimeout/3) }

// firstBeat is when member idx of the group at time zero first heartbeats:
// the members' heartbeats are spread over the interval, as they are when
// members joined at different times.
func firstBeat(sc *Scenario, idx int) time.Duration {
	return time.Duration(idx) * heartbeatEvery(sc) / time.Duration(len(sc.Members))
}

// requestRebalance asks for a rebalance. It starts once everything else
// happening at this instant is done (so members joining together join one
// rebalance), or after the rebalance under way.
func (e *engine) requestRebalance(reason string) {
	if _, ok := e.strat.(rebalanceFree); ok {
		return
	}
	e.reasons = append(e.reasons, reason)
	e.scheduleStart()
}

func (e *engine) scheduleStart() {
	if e.rebalancing || e.starting || len(e.reasons) == 0 {
		return
	}
	e.starting = true
	e.at(e.now, func() {
		e.starting = false
		reasons := e.reasons
		e.reasons = nil
		e.startRebalance(reasons)
	})
}

// startRebalance is the join round: every live member of the group reports
// its status (and stops what the strategy stops at join); the leader's
// assignment arrives a pause after the join phase completes.
//
// A crashed member whose session has not timed out is still a member to
// Kafka's group coordinator, which completes the join phase only when
// every member has joined: the round waits until its session expires and
// then completes without it (a restart joins as a new member). The same
// holds for a round that restarts because its leader died.
func (e *engine) startRebalance(reasons []string) {
	var group []*member
	joined := e.now // when the join phase completes
	for _, m := range e.members {
		if m.inGroup && !m.alive {
			m.inGroup, e.dirty = false, true // it cannot join: the round completes without it
			joined = max(joined, m.expires)
		}
		if m.inGroup {
			group = append(group, m)
		}
	}
	if len(group) == 0 {
		return // nobody to rebalance: the group waits for a member to join
	}
	e.rebalancing, e.dirty = true, true
	e.res.Metrics.Rebalances++
	e.res.Metrics.Messages += 2 * len(group) // JoinGroup and SyncGroup
	r := Round{Start: e.now, Reasons: reasons}
	leader := e.leader()
	if leader != nil {
		r.Leader = leader.id
	}
	for t := range e.tasks {
		e.noteCopies(t) // before any member stops or drops anything
	}
	for _, m := range group {
		r.Joins = append(r.Joins, e.strat.join(m))
	}
	e.at(joined+e.sc.Pause, func() { e.finishRebalance(r, group, leader) })
}

func (e *engine) finishRebalance(r Round, group []*member, leader *member) {
	r.End = e.now
	if leader == nil || !leader.alive {
		r.Aborted = true
		e.res.Rounds = append(e.res.Rounds, r)
		e.reasons = append(e.reasons, "the leader died during the rebalance")
	} else {
		as, withheld, err := e.strat.assign(r.Joins)
		if err != nil {
			e.fail("assign: %v", err)
			return
		}
		r.Assignments, r.Withheld = as, withheld
		if vs := checkRound(e.tasks, r); len(vs) > 0 {
			e.fail("round breaks rules:\n%s", learnertest.FormatViolations(vs))
			return
		}
		e.res.Rounds = append(e.res.Rounds, r)
		byID := make(map[string]*member, len(group))
		for _, m := range group {
			byID[m.id] = m
		}
		for _, a := range as {
			if m := byID[a.MemberID]; m.alive && m.inGroup {
				e.strat.apply(m, a)
			}
		}
		e.strat.settled(r)
	}
	e.rebalancing, e.dirty = false, true
	e.scheduleStart()
}

// setRoles gives member m the assignment's active, learning and standby
// tasks; it keeps the local state of tasks it held in any role and drops the
// rest (state left on disk included: the model has no cleanup delay; the
// classic strategies assign a withheld task's target a temporary standby
// instead, see stickyStrategy.assign).
func (e *engine) setRoles(m *member, a learner.Assignment) {
	want := e.want
	ts := slices.Clone(m.held)
	for r, ids := range [...][]string{a.Assigned, a.Learning, a.Standby} {
		for _, id := range ids {
			if t, ok := e.index[id]; ok {
				want[t] |= 1 << r
				ts = append(ts, t)
			}
		}
	}
	// Only the tasks m holds or is given can change, so only they are
	// visited, in task order as a walk over every task would: setRole
	// schedules events, and their order breaks ties between events at one
	// instant. A walk over every task was most of the coordinator
	// strategy's time, one per heartbeat response.
	slices.Sort(ts)
	for _, t := range slices.Compact(ts) {
		before := m.slots[t].view()
		e.setRole(m, t, want[t]&1 != 0, want[t]&2 != 0, want[t]&4 != 0)
		e.dirty = e.dirty || m.slots[t].view() != before
		want[t] = 0
	}
}

// setRole gives member m task t active, learning, standby or, with none of
// them, drops its local state.
func (e *engine) setRole(m *member, t int, act, lrn, sby bool) {
	s := m.slots[t]
	if was := s != nil && s.role == active; was != act {
		if _, free := e.strat.(rebalanceFree); free {
			// Without rebalances a move begins and ends with one
			// member's own change.
			e.noteCopies(t)
		}
		if was && !e.activeElsewhere(t, m) {
			e.moving[t] = true // m gives it up: its move begins
		}
	}
	if !act && !lrn && !sby {
		if s != nil {
			s.gen++
			e.setSlot(m, t, nil)
		}
		return
	}
	if s == nil {
		s = &slot{done: e.size[t] == 0, since: e.now}
		e.setSlot(m, t, s)
	}
	e.settle(m, t)
	was := s.role
	switch {
	case act:
		s.role, s.stopped = active, false
		if was != active {
			e.takeOver(m, t, s, was)
		}
	case lrn:
		if was != learning && s.done {
			s.caught = e.now // a standby turned learner is caught up from now on
		}
		s.role, s.stopped = learning, false
	default:
		s.role, s.stopped = standby, false
	}
	if s.done && s.role != active && was != learning && was != standby {
		s.replays = e.now
	}
	e.schedule(m, t)
}

// slotView is what record reads of a slot.
type slotView struct {
	held          bool
	role          role
	stopped, done bool
}

func (s *slot) view() slotView {
	if s == nil {
		return slotView{}
	}
	return slotView{true, s.role, s.stopped, s.done}
}

// takeOver makes m the active owner of t, whose local state on m is s:
// counted as a move when another member ran it last, as a cold hand-over
// when s has not caught up. A caught-up copy still replays what is left of
// its ReplayLag (replayLeft).
func (e *engine) takeOver(m *member, t int, s *slot, was role) {
	e.moving[t] = false
	last := e.lastOwner[t]
	if last >= 0 && last != m.idx {
		e.res.Metrics.Moves++
	}
	e.lastOwner[t] = m.idx
	if e.size[t] == 0 {
		return
	}
	if s.done && was == learning {
		mt := &e.res.Metrics
		mt.WarmHandovers++
		mt.HandoverWait += e.now - s.caught
		mt.HandoverWaitMax = max(mt.HandoverWaitMax, e.now-s.caught)
	}
	if !s.done {
		e.res.Metrics.Cold++
		if last >= 0 && !e.members[last].crashed {
			e.res.Metrics.ColdPlanned++
		}
		if w := e.from[t]; w == nobody || w == m.idx {
			e.res.Metrics.ColdUnavoidable++
		}
		e.setCause(t, CauseCold)
		return
	}
	if lag := m.rate * e.replayLeft(t, s, was).Seconds(); lag > 0 {
		s.have, s.done = max(0, e.size[t]-lag), false
		e.setCause(t, CausePromotion)
	}
}

// replayLeft is how much of the ReplayLag a caught-up copy s of t still has
// to replay when it takes t over. A replica trails a writing active by the
// ReplayLag; once the active stops writing (it released t at a join, was
// revoked, crashed or left), the replica, which keeps replaying through the
// rebalance, catches up on the rest: it is at the changelog's end
// ReplayLag after the later of that stop and its own catching up. State on
// disk replays nothing until it is assigned, so it pays the whole lag.
func (e *engine) replayLeft(t int, s *slot, was role) time.Duration {
	if was != learning && was != standby {
		return e.sc.ReplayLag
	}
	since := e.now // the active stops at this instant
	if e.idleSince[t] >= 0 {
		since = e.idleSince[t]
	}
	return max(0, e.sc.ReplayLag-(e.now-max(since, s.replays)))
}

// Who has a caught-up copy of a task, as copies reports it: nobody, one
// member's index, or several.
const (
	nobody  = -1
	several = -2
)

// copies reports which live members have a caught-up copy of t.
func (e *engine) copies(t int) int {
	who := nobody
	for _, o := range e.members {
		if o.alive && o.slots[t] != nil && o.slots[t].done {
			if who != nobody {
				return several
			}
			who = o.idx
		}
	}
	return who
}

// noteCopies records who has a caught-up copy of t where a move of t may
// begin: at the start of a rebalance, before anything in it changes (so
// that what a round drops does not depend on the order members apply it
// in), and for the coordinator at a member's change. A task that a live
// owner gave up earlier and nobody has taken over yet (the cooperative
// protocol's revoke, then the follow-up) keeps who had one then: its move
// began then, and the owner's own copy counts. A cold take-over is
// unavoidable when nobody but its new owner had a copy.
func (e *engine) noteCopies(t int) {
	c := e.copies(t)
	if w := e.from[t]; e.moving[t] && w != nobody {
		switch c {
		case nobody, w:
			c = w
		default:
			c = several
		}
	}
	e.from[t] = c
}

// activeElsewhere reports whether a live member other than m has t active.
func (e *engine) activeElsewhere(t int, m *member) bool {
	for _, o := range e.members {
		if o != m && o.alive && o.slots[t] != nil && o.slots[t].role == active {
			return true
		}
	}
	return false
}

// setCause records why t is down, keeping a weightier cause already
// recorded: a crash outweighs a cold move, which outweighs a promotion,
// which outweighs a join pause.
func (e *engine) setCause(t int, c Cause) {
	if c > e.cause[t] {
		e.cause[t], e.dirty = c, true
	}
}

// stop stops an active task of m, keeping its state (revoked at join); why
// is the cause of the downtime that follows.
func (e *engine) stop(m *member, t int, why Cause) {
	if s := m.slots[t]; s != nil && s.role == active {
		e.settle(m, t)
		if !s.stopped && s.done {
			e.setCause(t, why)
		}
		s.stopped, e.dirty = true, true
		e.schedule(m, t)
	}
}

// caughtUp reports whether some live member has a caught-up copy of t in
// one of the roles: a task stopped for a caught-up learner or warm-up (or,
// when its owner leaves, standby) waits for a promotion.
func (e *engine) caughtUp(t int, roles ...role) bool {
	for _, m := range e.members {
		if s := m.slots[t]; m.alive && s != nil && s.done && slices.Contains(roles, s.role) {
			return true
		}
	}
	return false
}

func (e *engine) restoring(m *member, s *slot) bool {
	return m.alive && !s.done && s.role != disk && !(s.role == active && s.stopped)
}

// settle brings a slot's restore progress up to now.
func (e *engine) settle(m *member, t int) {
	s := m.slots[t]
	if e.restoring(m, s) {
		s.have = math.Min(e.size[t], s.have+m.rate*(e.now-s.since).Seconds())
	}
	s.since = e.now
}

// lag is the MB m still has to replay of t (0 when caught up), as members
// report it at join.
func (e *engine) lag(m *member, t int) int64 {
	s := m.slots[t]
	if s.done {
		return 0
	}
	e.settle(m, t)
	return int64(math.Ceil(e.size[t] - s.have))
}

// reportLags reports, with setLag (a member's Worker.SetLag or the
// like), the lag of each of m's replicas and state on disk, and forgets
// (a negative lag) the lags it reported last time that m no longer has:
// what an application tells its worker before a join or heartbeat. It
// visits m's held tasks and last report only: reporting or forgetting
// every task, at every heartbeat or join of every member, was most of a
// run. A worker keeps lags in a map, so the order of the calls does not
// matter. setLag refuses only malformed task IDs, which a checked
// scenario has none of, so its error fails the run.
func (e *engine) reportLags(m *member, setLag func(task string, lag int64) error) {
	report := func(t int, lag int64) {
		if err := setLag(e.tasks[t].ID, lag); err != nil {
			e.fail("%v", err)
		}
	}
	var lagged []int
	for _, t := range m.held {
		if m.slots[t].role != active {
			report(t, e.lag(m, t))
			lagged = append(lagged, t)
		}
	}
	for _, t := range m.lagged {
		if _, still := slices.BinarySearch(lagged, t); !still {
			report(t, -1)
		}
	}
	m.lagged = lagged
}

// schedule (re)schedules the slot's restore completion, if it restores.
func (e *engine) schedule(m *member, t int) {
	s := m.slots[t]
	s.gen++
	if !e.restoring(m, s) {
		return
	}
	gen := s.gen
	// In float: sizes and rates reach 10^12, and a restore's time in
	// nanoseconds can exceed a Duration. One ending after the run never
	// completes as far as the run can tell: it is not scheduled.
	left := math.Ceil((e.size[t] - s.have) / m.rate * float64(time.Second))
	if left > float64(e.sc.Duration-e.now) {
		return
	}
	e.at(e.now+time.Duration(left), func() {
		if s.gen != gen || m.slots[t] != s {
			return
		}
		s.have, s.done, s.since, s.caught, s.replays = e.size[t], true, e.now, e.now, e.now
		e.dirty = true
		if s.role == learning {
			e.strat.restored(m, t)
		}
	})
}

// integrate adds the metrics of the interval [lastT, to), during which the
// state is constant: nothing changes between events, so each metric gains
// its rate, as record last counted it, times the interval.
func (e *engine) integrate(to time.Duration) {
	dt := to - e.lastT
	if dt <= 0 {
		return
	}
	e.lastT = to
	mt, r := &e.res.Metrics, &e.rate
	times := func(n int) time.Duration { return time.Duration(n) * dt }
	mt.MemberTime += times(r.members)
	mt.Processed += times(r.processed)
	mt.Duplicate += times(r.duplicate)
	for c, n := range r.down {
		mt.Downtime += times(n)
		mt.DowntimeBy[c] += times(n)
	}
	mt.StatefulDown += times(r.statefulDown)
	if r.balanced {
		e.episode = 0
	} else {
		mt.Unbalanced += dt
		e.episode += dt
		mt.LongestUnbalanced = max(mt.LongestUnbalanced, e.episode)
	}
}

// processing counts, per task, the members processing it now.
func (e *engine) processing() []int {
	procs := make([]int, len(e.tasks))
	for _, m := range e.members {
		for _, t := range m.held {
			if s := m.slots[t]; m.alive && s.role == active && !s.stopped && s.done {
				procs[t]++
			}
		}
	}
	return procs
}

// balanced reports whether the group has settled: no rebalance under way,
// every task processed, no learner or warm-up in flight, leaving members
// without tasks, and staying members' active counts at most one apart.
// Standbys still catching up do not count: they are redundancy, not work.
func (e *engine) balanced(procs []int) bool {
	if e.rebalancing || slices.Contains(procs, 0) {
		return false
	}
	lo, hi := math.MaxInt, 0
	for _, m := range e.members {
		if !m.alive {
			continue
		}
		n := 0
		for _, t := range m.held {
			switch m.slots[t].role {
			case learning:
				return false
			case active:
				n++
			}
		}
		if m.leaving && n > 0 {
			return false
		}
		if !m.leaving {
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	return hi-lo <= 1
}

// record classifies the tasks down now by cause, updates the peaks, appends
// changed member states to the timeline and counts the rates integrate
// adds until the next change. The engine runs it after an event that left
// something dirty: an event that changed nothing would find what it found
// last.
func (e *engine) record() {
	e.dirty = false
	tl := &e.res.Timeline
	procs := e.processing()
	r := rates{balanced: e.balanced(procs)}
	for t, p := range procs {
		if p > 0 {
			e.cause[t], e.idleSince[t] = 0, -1
			continue
		}
		if e.idleSince[t] < 0 {
			e.idleSince[t] = e.now
		}
		if e.cause[t] == 0 {
			// Nothing recorded why: nobody runs it (a follow-up or the
			// end of a rebalance will assign it), or it restores.
			e.cause[t] = CauseJoin
		}
		r.down[e.cause[t]]++
		if e.size[t] > 0 {
			r.statefulDown++
		}
	}
	if k := len(tl.Down); k == 0 || tl.Down[k-1].N != r.down {
		tl.Down = append(tl.Down, Count{At: e.now, N: r.down})
	}
	mt := &e.res.Metrics
	for _, m := range e.members {
		if m.alive && m.inGroup {
			r.members++
		}
		var st MemberState
		st.At = e.now
		for _, t := range m.held {
			switch s := m.slots[t]; {
			case !m.alive || s.role == disk:
			case s.role == learning:
				st.Learning++
				if procs[t] > 0 {
					r.duplicate++
				}
			case s.role == standby:
				st.Standby++
			case s.stopped || !s.done:
				st.Down++
			default:
				st.Active++
			}
		}
		r.processed += st.Active
		mt.PeakActive = max(mt.PeakActive, st.Active+st.Down)
		mt.PeakBusy = max(mt.PeakBusy, st.Active+st.Down+st.Learning+st.Standby)
		mtl := &tl.Members[m.idx]
		if k := len(mtl.States); k > 0 && mtl.States[k-1].sameCounts(st) {
			continue
		}
		if k := len(mtl.States); k > 0 && mtl.States[k-1].At == e.now {
			mtl.States[k-1] = st
		} else {
			mtl.States = append(mtl.States, st)
		}
	}
	e.rate = r
}
