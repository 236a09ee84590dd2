package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// This file is the test harness shared by the property test and the fuzz
// target: honest members (Member plus a simulated application) heartbeating a
// Coordinator through a faulty network, with joins, leaves, crashes and
// coordinator failovers, checked at every step.
//
// A history may also be perturbed: its heartbeats delayed while their
// members wait for the responses, late heartbeats delivered between the
// step's others instead of before them all, members that send Seq 0
// throughout, and an embedder clock that steps back. The perturbations are
// drawn from a chooser of their own, so that the choices drawn from the
// history's chooser, and with them the history a seed gave before they
// existed, stay the same until the first perturbation.

// chooser makes the history's random choices. 0 is always the benign
// choice, so a fuzz input that runs out continues as a quiet history.
type chooser interface{ intn(n int) int }

// byteChooser reads choices from fuzz bytes.
type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) intn(n int) int {
	if c.i >= len(c.b) || n <= 1 {
		return 0
	}
	v := int(c.b[c.i])
	c.i++
	return v % n
}

// Timing of every history, in steps of 250ms.
const (
	step         = 250 * time.Millisecond
	interval     = time.Second
	session      = 5 * time.Second
	fenceTimeout = 3500 * time.Millisecond // members fence themselves before their session expires
)

type simMember struct {
	m        *Member
	alive    bool
	nextHB   time.Time
	lastResp time.Time      // when the last heartbeat that got a response was sent
	readyIn  map[string]int // learner task -> heartbeats until its replay is done
	// newest is the newest of its heartbeats the coordinator has taken
	// (Seq 0: none yet).
	newest Heartbeat
	// unnumbered: it sends Seq 0 throughout (a perturbation), so the
	// coordinator orders its heartbeats by epoch alone.
	unnumbered bool
}

// stashed is a heartbeat in the network, delivered at at. A late copy
// reaches the coordinator only: its member gave up on it. A delayed one
// (waiting set) has its member waiting for the response, which it applies
// if it is still that incarnation and has not fenced itself.
type stashed struct {
	at      time.Time
	hb      Heartbeat
	waiting *simMember
	m       *Member   // the incarnation that waits
	sent    time.Time // when the waiting member sent it
}

// history is one group's life.
type history struct {
	ch    chooser
	tasks []learner.Task
	// ever holds every task ID any topology of the history had: a response
	// may still list a removed task until its member has acknowledged the
	// target that drops it.
	ever     map[string]bool
	nextTask int
	cfg      Config
	k        int // learners are ready 1..k heartbeats after they start
	c        *Coordinator
	now      time.Time
	members  []*simMember
	nextID   int
	stash    []stashed
	faults   bool
	log      []string // the last events, printed on failure
	broken   []learnertest.Violation
	assigns  int // Assign calls checked
	// had and dropped: the IDs of members the current coordinator has had,
	// and of those among them that are dead and that it has dropped.
	had, dropped map[string]bool

	// fenced counts late heartbeats refused with ErrFenced: an honest
	// member's own heartbeats never are.
	failovers, timeouts, lost, dups, fenced, leaves, crashes, restarts, garbage, topologies int

	// pert draws the perturbations; nil: none.
	pert chooser
	// clockBack is how far the current coordinator's clock is behind
	// h.now. It only grows, so the clock steps back and never runs faster
	// than time (which would end sessions before members fence
	// themselves); a new coordinator has a clock of its own.
	clockBack time.Duration
	// Perturbations made: delayed heartbeats, late ones delivered between
	// the step's others, members sending Seq 0, clock steps back.
	delays, interleaved, unnumbered, clockSteps int
}

func newHistory(ch, pert chooser, nTasks, nMembers, k int, opts learner.Options) (*history, error) {
	h := &history{ch: ch, pert: pert, k: k, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), faults: true, had: map[string]bool{}, dropped: map[string]bool{}, ever: map[string]bool{}}
	for range nTasks {
		h.tasks = append(h.tasks, h.newTask())
	}
	h.cfg = Config{Options: opts, SessionTimeout: session, HeartbeatInterval: interval, FreshGroup: ch.intn(2) == 0}
	c, err := New(h.tasks, h.cfg)
	if err != nil {
		return nil, err
	}
	h.c = c
	c.assigned = h.checkAssign
	for range nMembers {
		h.join()
	}
	return h, nil
}

func (h *history) newTask() learner.Task {
	h.nextTask++
	t := learner.Task{ID: fmt.Sprintf("T%d", h.nextTask), Stateful: h.ch.intn(4) != 1}
	h.ever[t.ID] = true
	return t
}

// changeTopology removes a task, adds a new one or brings back one removed
// earlier (whose old owners may still run it).
func (h *history) changeTopology() {
	tasks := slices.Clone(h.tasks)
	switch h.ch.intn(3) {
	case 0:
		if len(tasks) > 1 {
			i := h.ch.intn(len(tasks))
			tasks = slices.Delete(tasks, i, i+1)
		}
	case 1:
		tasks = append(tasks, h.newTask())
	case 2:
		var gone []string
		for id := range h.ever {
			if !slices.ContainsFunc(tasks, func(t learner.Task) bool { return t.ID == id }) {
				gone = append(gone, id)
			}
		}
		slices.Sort(gone)
		if len(gone) > 0 {
			tasks = append(tasks, learner.Task{ID: gone[h.ch.intn(len(gone))], Stateful: h.ch.intn(4) != 1})
		}
	}
	if err := h.c.SetTopology(tasks); err != nil {
		panic(fmt.Sprintf("SetTopology(%v): %v", tasks, err))
	}
	h.tasks = tasks
	h.topologies++
	h.logf("topology %v", tasks)
}

func (h *history) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf("%v ", h.now.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))+fmt.Sprintf(format, args...))
	if len(h.log) > 40 {
		h.log = h.log[1:]
	}
}

func (h *history) join() {
	h.nextID++
	sm := &simMember{m: must(NewMember(fmt.Sprintf("M%d", h.nextID))), alive: true, nextHB: h.now, lastResp: h.now, readyIn: map[string]int{}}
	h.members = append(h.members, sm)
	h.logf("%s joins", sm.m.ID())
	if h.perturbing() && h.pert.intn(4) == 1 {
		sm.unnumbered = true
		h.unnumbered++
		h.logf("%s sends Seq 0 throughout", sm.m.ID())
	}
}

func (h *history) live() []*simMember {
	var out []*simMember
	for _, sm := range h.members {
		if sm.alive {
			out = append(out, sm)
		}
	}
	return out
}

// chaos draws this step's group events.
func (h *history) chaos() {
	live := h.live()
	switch h.ch.intn(60) {
	case 1:
		if len(live) < 10 {
			h.join()
		}
	case 2:
		if sm := pick(h.ch, live); sm != nil && !sm.m.Heartbeat().Leaving {
			var deadline time.Time
			if h.ch.intn(2) == 1 {
				deadline = h.now.Add(time.Duration(1+h.ch.intn(20)) * time.Second)
			}
			sm.m.Leave(deadline)
			h.leaves++
			h.logf("%s leaves (deadline %v)", sm.m.ID(), !deadline.IsZero())
		}
	case 3:
		if sm := pick(h.ch, live); sm != nil {
			sm.m.Stop()
			sm.alive = false
			h.crashes++
			h.logf("%s crashes", sm.m.ID())
			if h.ch.intn(2) == 1 { // its process restarts at once
				h.join()
				n := h.members[len(h.members)-1]
				n.m = must(RestartOf(n.m.ID(), sm.m.ID()))
				h.restarts++
				h.logf("%s restarts as %s", sm.m.ID(), n.m.ID())
			}
		}
	case 4:
		c, err := New(h.tasks, Config{Options: h.cfg.Options, SessionTimeout: session, HeartbeatInterval: interval})
		if err != nil {
			panic(err)
		}
		h.c = c
		h.clockBack = 0
		c.assigned = h.checkAssign
		clear(h.had)
		clear(h.dropped)
		for _, sm := range h.members {
			sm.newest = Heartbeat{}
		}
		h.failovers++
		h.logf("coordinator fails over")
	case 5:
		h.garbageHeartbeat()
	case 6: // what it reports changes within an epoch
		if sm := pick(h.ch, live); sm != nil {
			if err := sm.m.SetCapacity(h.ch.intn(4), ""); err != nil {
				panic(err)
			}
			h.logf("%s reports capacity %d", sm.m.ID(), sm.m.Heartbeat().Capacity)
		}
	case 7:
		h.changeTopology()
	}
}

func pick(ch chooser, ms []*simMember) *simMember {
	if len(ms) == 0 {
		return nil
	}
	return ms[ch.intn(len(ms))]
}

// garbageHeartbeat sends a heartbeat no honest member would: it must be
// refused or, if well-formed, must not break anything.
func (h *history) garbageHeartbeat() {
	h.garbage++
	hb := Heartbeat{MemberID: fmt.Sprintf("X%d", h.ch.intn(4)), Epoch: int64(h.ch.intn(3))}
	for _, t := range h.tasks {
		switch h.ch.intn(8) {
		case 1:
			hb.Active = append(hb.Active, t.ID)
		case 2:
			hb.Learning = append(hb.Learning, t.ID)
			hb.Ready = append(hb.Ready, t.ID)
		case 3:
			hb.Standby = append(hb.Standby, t.ID)
		}
	}
	switch h.ch.intn(6) {
	case 1:
		hb.MemberID = "bad id"
	case 2:
		hb.Epoch = -1
	case 3:
		hb.Capacity = -5
	case 4:
		hb.Active = append(hb.Active, "T1", "T1")
	case 5:
		hb.Leave = true
	}
	_, err := h.c.Heartbeat(h.clock(), hb)
	if err != nil && !errors.Is(err, ErrInvalidHeartbeat) && !errors.Is(err, ErrFenced) {
		panic(fmt.Sprintf("garbage heartbeat %+v: error %v wraps no sentinel", hb, err))
	}
	if err == nil {
		// It is now a member that will never heartbeat again: a ghost the
		// session timeout removes. Its claims make it a holder until then.
		h.logf("garbage member %s accepted", hb.MemberID)
	}
}

// checkAssign judges every Assign call the coordinator makes by the
// assignor's rules (learnertest): the coordinator's input to Assign is the
// group's target and what members report, so this checks that it feeds
// Assign well-formed, consistent reports.
func (h *history) checkAssign(tasks []learner.Task, in []learner.MemberMetadata, out []learner.Assignment) {
	h.assigns++
	h.broken = append(h.broken, learnertest.Check(tasks, h.cfg.Options, in, out)...)
}

// step advances the history by one step and checks the invariants.
func (h *history) step() error {
	h.now = h.now.Add(step)
	if h.faults {
		h.chaos()
	} else if !slices.ContainsFunc(h.live(), func(sm *simMember) bool { return !sm.m.Heartbeat().Leaving }) {
		h.join() // a quiet group needs a staying member to converge
	}
	perturbing := h.perturbing()
	if perturbing && h.pert.intn(40) == 1 {
		back := time.Duration(1+h.pert.intn(4)) * step
		h.clockBack += back
		h.clockSteps++
		h.logf("the coordinator's clock steps back %v", back)
	}
	var due []stashed // delivered between the step's heartbeats
	if perturbing {
		due = h.takeDue()
	} else if err := h.deliverStash(); err != nil {
		return err
	}
	if gone := h.c.Tick(h.clock()); len(gone) > 0 {
		h.timeouts += len(gone)
		h.logf("session timeout: %v", gone)
	}
	live := h.live()
	for i := len(live) - 1; i > 0; i-- { // heartbeats in any order
		j := h.ch.intn(i + 1)
		live[i], live[j] = live[j], live[i]
	}
	slot := make([]int, len(due))
	for i := range due {
		slot[i] = h.pert.intn(len(live) + 1)
		if slot[i] > 0 {
			h.interleaved++
		}
	}
	deliverAt := func(at int) error {
		for i, s := range due {
			if slot[i] == at {
				if err := h.deliver(s); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i, sm := range live {
		if err := deliverAt(i); err != nil {
			return err
		}
		if !sm.alive { // shut down by a delayed response delivered above
			continue
		}
		if err := h.tick(sm); err != nil {
			return err
		}
		if err := h.check(); err != nil {
			return err
		}
	}
	if err := deliverAt(len(live)); err != nil {
		return err
	}
	if len(h.broken) > 0 {
		return fmt.Errorf("Assign's output for the coordinator breaks a rule: %v", h.broken)
	}
	return h.checkGhosts()
}

// checkGhosts is the incarnation property: a dead member that the
// coordinator dropped never becomes a member again, whatever late copies of
// its heartbeats arrive (they are late by less than a session timeout here).
// A new coordinator knows nothing of the members dropped before it.
func (h *history) checkGhosts() error {
	in := map[string]bool{}
	for _, id := range h.c.Members() {
		in[id] = true
		h.had[id] = true
	}
	for _, sm := range h.members {
		id := sm.m.ID()
		switch {
		case sm.alive:
		case in[id] && h.dropped[id]:
			return fmt.Errorf("%s, dead and dropped, is a member again", id)
		case !in[id] && h.had[id]:
			h.dropped[id] = true
		}
	}
	return nil
}

// perturbing reports whether perturbations are drawn now: in a perturbed
// history, during the chaos.
func (h *history) perturbing() bool { return h.pert != nil && h.faults }

// clock is the time the embedder gives the coordinator.
func (h *history) clock() time.Time { return h.now.Add(-h.clockBack) }

// deliverStash delivers the heartbeats due by now, in the order sent.
func (h *history) deliverStash() error {
	for _, s := range h.takeDue() {
		if err := h.deliver(s); err != nil {
			return err
		}
	}
	return nil
}

// takeDue takes the heartbeats due by now out of the network.
func (h *history) takeDue() []stashed {
	var due []stashed
	keep := h.stash[:0]
	for _, s := range h.stash {
		if s.at.After(h.now) {
			keep = append(keep, s)
		} else {
			due = append(due, s)
		}
	}
	h.stash = keep
	return due
}

// deliver gives the coordinator a heartbeat from the network. A delayed
// one's response goes to its member if it still waits for it: the same
// incarnation, alive and not past its fence timeout. Else, as a late
// copy's, the response goes to a request the member gave up on: dropped.
func (h *history) deliver(s stashed) error {
	sm := s.waiting
	if sm != nil && sm.alive && sm.m == s.m {
		h.fenceIfDue(sm)
	}
	waits := sm != nil && sm.alive && sm.m == s.m
	resp, err := h.c.Heartbeat(h.clock(), s.hb)
	if errors.Is(err, ErrFenced) && !waits {
		h.fenced++
	}
	if !waits {
		h.logf("late heartbeat %s@%d#%d delivered: err=%v", s.hb.MemberID, s.hb.Epoch, s.hb.Seq, err)
	} else {
		h.logf("delayed heartbeat %s@%d#%d delivered: err=%v", s.hb.MemberID, s.hb.Epoch, s.hb.Seq, err)
		if err != nil {
			// Its member has had a response within its fence timeout,
			// so its session is live (see heartbeat).
			return fmt.Errorf("delayed Heartbeat(%+v) = %w, want no error from an honest member", s.hb, err)
		}
		if err := h.taken(sm, s.hb); err != nil {
			return err
		}
		again, err := h.receive(sm, s.sent, resp)
		if again && sm.alive {
			sm.nextHB = h.now // at once, at its next tick
		}
		return err
	}
	for _, sm := range h.members {
		if sm.m.ID() == s.hb.MemberID && err == nil {
			if err := h.taken(sm, s.hb); err != nil {
				return err
			}
		}
	}
	return nil
}

// taken checks, after the coordinator took one of sm's heartbeats without
// error, that it holds what sm's newest heartbeat it took reports: a late
// older one, of the same epoch too, changes nothing.
func (h *history) taken(sm *simMember, hb Heartbeat) error {
	if sm.unnumbered {
		return nil // ordered by epoch alone: a late one of the epoch counts again
	}
	if hb.Seq > sm.newest.Seq {
		sm.newest = hb
	}
	m := h.c.byID[sm.m.ID()]
	if m != nil && m.capacity != sm.newest.Capacity {
		return fmt.Errorf("the coordinator holds capacity %d for %s, whose newest heartbeat it took (%d#%d) reports %d",
			m.capacity, sm.m.ID(), sm.newest.Epoch, sm.newest.Seq, sm.newest.Capacity)
	}
	return nil
}

// tick runs one member's application for this step.
func (h *history) tick(sm *simMember) error {
	m := sm.m
	if h.fenceIfDue(sm) {
		return nil
	}
	if m.ShouldShutdown(h.now) {
		h.depart(sm, "its leave deadline passed")
		return nil
	}
	if h.now.Before(sm.nextHB) {
		return nil
	}
	// A member that stops an active task heartbeats at once (see
	// Response.Active): the task's next owner waits for that
	// acknowledgement. Its response may stop another task: a tick sends at
	// most three heartbeats, so that it stays bounded, and leaves a fourth
	// to the member's next tick.
	for range 3 {
		again, err := h.heartbeat(sm)
		if err != nil || !again || !sm.alive {
			return err
		}
		sm.nextHB = h.now
	}
	return nil
}

// fenceIfDue stops sm if it has had no response for its fence timeout, and
// reports whether it did.
func (h *history) fenceIfDue(sm *simMember) bool {
	if h.now.Sub(sm.lastResp) < fenceTimeout {
		return false
	}
	sm.m.Stop()
	sm.alive = false
	h.logf("%s fences itself", sm.m.ID())
	return true
}

// heartbeat sends one heartbeat through the network; again says that the
// member stopped an active task and heartbeats at once.
func (h *history) heartbeat(sm *simMember) (again bool, err error) {
	m := sm.m
	hb := m.Heartbeat()
	for _, t := range hb.Learning {
		if sm.readyIn[t]--; sm.readyIn[t] <= 0 {
			m.Restored(t)
		}
	}
	hb = m.Heartbeat()
	if sm.unnumbered {
		hb.Seq = 0
	}
	sm.nextHB = h.now.Add(interval) // retried then if nothing comes back
	fault := 0
	if h.faults {
		fault = h.ch.intn(12)
	}
	switch fault {
	case 1: // the request is lost
		h.lost++
		return false, nil
	case 2: // the request arrives late; the member gives up on it
		h.dups++
		h.stash = append(h.stash, stashed{at: h.now.Add(time.Duration(1+h.ch.intn(16)) * step), hb: hb})
		return false, nil
	case 3: // delivered now and again later
		h.dups++
		h.stash = append(h.stash, stashed{at: h.now.Add(time.Duration(1+h.ch.intn(16)) * step), hb: hb})
	}
	if (fault == 0 || fault > 4) && h.perturbing() && h.pert.intn(12) == 1 {
		// Delayed: the member waits for the response, sending nothing
		// meanwhile, and fences itself if it takes too long.
		h.delays++
		at := h.now.Add(time.Duration(1+h.pert.intn(6)) * step)
		h.stash = append(h.stash, stashed{at: at, hb: hb, waiting: sm, m: m, sent: h.now})
		sm.nextHB = at.Add(interval)
		return false, nil
	}
	resp, err := h.c.Heartbeat(h.clock(), hb)
	if err != nil {
		// Fenced included: a live member has had a response within its
		// fence timeout, so its session is live, and late copies of its
		// older heartbeats (after a failover too) must not make its epoch
		// look like one the coordinator never issued.
		return false, fmt.Errorf("Heartbeat(%+v) = %w, want no error from an honest member", hb, err)
	}
	if err := h.taken(sm, hb); err != nil {
		return false, err
	}
	if fault == 4 { // the response is lost
		h.lost++
		return false, nil
	}
	return h.receive(sm, h.now, resp)
}

// receive applies the response to the heartbeat sm sent at sent; again says
// that the member stopped an active task and heartbeats at once.
func (h *history) receive(sm *simMember, sent time.Time, resp Response) (again bool, err error) {
	m := sm.m
	if err := h.checkResponse(resp); err != nil {
		return false, err
	}
	before := m.Epoch()
	changes, err := m.Apply(resp)
	if err != nil {
		return false, fmt.Errorf("Apply(%+v) = %w", resp, err)
	}
	sm.lastResp = sent
	sm.nextHB = h.now.Add(resp.HeartbeatInterval)
	if resp.Epoch != before {
		h.logf("%s epoch %d: active %v learning %v standby %v", m.ID(), resp.Epoch, resp.Active, resp.Learning, resp.Standby)
	}
	for _, t := range changes.StartLearning {
		sm.readyIn[t] = 1 + h.ch.intn(h.k)
	}
	if changes.Shutdown {
		h.depart(sm, "it has handed everything over")
		return false, nil
	}
	return len(changes.StopActive) > 0, nil
}

// depart stops the member and sends its last heartbeat (which may be lost).
func (h *history) depart(sm *simMember, why string) {
	sm.m.Stop()
	sm.alive = false
	h.logf("%s departs: %s", sm.m.ID(), why)
	if h.faults && h.ch.intn(4) == 1 {
		return
	}
	if _, err := h.c.Heartbeat(h.clock(), sm.m.LeaveHeartbeat()); err != nil {
		panic(fmt.Sprintf("leave heartbeat: %v", err))
	}
}

func (h *history) checkResponse(r Response) error {
	for _, l := range [][]string{r.Active, r.Learning, r.Standby} {
		for _, t := range l {
			if !h.ever[t] {
				return fmt.Errorf("response %+v lists task %q, in no topology", r, t)
			}
		}
	}
	if r.HeartbeatInterval <= 0 || r.HeartbeatInterval > interval {
		return fmt.Errorf("response %+v: heartbeat interval %v, want (0, %v]", r, r.HeartbeatInterval, interval)
	}
	return nil
}

// check is the safety property: no task is active on two live members.
func (h *history) check() error {
	owner := map[string]string{}
	for _, sm := range h.members {
		if !sm.alive {
			continue
		}
		for _, t := range sm.m.Active() {
			if o, dup := owner[t]; dup {
				return fmt.Errorf("task %s active on %s and %s", t, o, sm.m.ID())
			}
			owner[t] = sm.m.ID()
		}
	}
	return nil
}

// unowned returns the tasks no live member runs active.
func (h *history) unowned() []string {
	owned := map[string]bool{}
	for _, sm := range h.live() {
		for _, t := range sm.m.Active() {
			owned[t] = true
		}
	}
	var out []string
	for _, t := range h.tasks {
		if !owned[t.ID] {
			out = append(out, t.ID)
		}
	}
	return out
}

// settled reports whether the group is at Assign's balanced fixed point:
// every task owned, no learners, no leaving member left, and Assign on what
// the members run gives it back unchanged.
func (h *history) settled() (bool, error) {
	live := h.live()
	if len(live) == 0 || len(h.unowned()) > 0 || h.c.Recovering() {
		return false, nil
	}
	var mds []learner.MemberMetadata
	for _, sm := range live {
		hb := sm.m.Heartbeat()
		if len(hb.Learning) > 0 || hb.Leaving {
			return false, nil
		}
		mds = append(mds, learner.MemberMetadata{ID: hb.MemberID, Assigned: hb.Active, Standby: hb.Standby, Capacity: hb.Capacity})
	}
	if got := h.c.Members(); len(got) != len(live) {
		return false, nil // a ghost (garbage or timed-out member) is still counted
	}
	a, err := learner.New(h.tasks, h.cfg.Options)
	if err != nil {
		return false, err
	}
	out, err := a.Assign(mds)
	if err != nil {
		return false, err
	}
	for _, as := range out {
		i := slices.IndexFunc(mds, func(md learner.MemberMetadata) bool { return md.ID == as.MemberID })
		if len(as.Learning) > 0 || len(as.Revoked) > 0 || !sameSet(as.Assigned, mds[i].Assigned) || !sameSet(as.Standby, mds[i].Standby) {
			return false, nil
		}
	}
	return true, nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func (h *history) trace() string {
	if h == nil {
		return ""
	}
	return strings.Join(h.log, "\n")
}
