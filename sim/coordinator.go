package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/coordinator"
)

// The protocol timing. The heartbeat interval is Kafka's classic default
// (heartbeat.interval.ms), shortened by heartbeatEvery under a short session
// timeout, so every strategy's members heartbeat alike and only the
// protocol's own messages differ; the round trip is a loopback-to-datacentre
// figure for one heartbeat of the coordinator strategy.
const (
	heartbeatInterval = 3 * time.Second
	heartbeatRTT      = 20 * time.Millisecond
)

// coordStrategy is package coordinator: no rebalances. Every member keeps a
// coordinator.Member and heartbeats a coordinator.Coordinator, which answers
// with the member's target; members apply it on their own, one by one.
type coordStrategy struct {
	e       *engine
	tasks   []learner.Task
	cfg     coordinator.Config
	c       *coordinator.Coordinator
	cms     map[*member]*cmember
	started bool
	// taken is every ID in use in the protocol: the scenario's members'
	// and the incarnations given so far.
	taken map[string]bool
}

// cmember is one member's protocol state and its heartbeat schedule.
type cmember struct {
	m        *coordinator.Member
	gen      uint64 // bumped to cancel a scheduled heartbeat
	inFlight bool   // a heartbeat awaits its response
	again    bool   // heartbeat again as soon as the response is in
}

func newCoordStrategy(e *engine, _ Strategy) (strategy, error) {
	s := &coordStrategy{e: e, tasks: e.tasks, cms: map[*member]*cmember{}, taken: map[string]bool{}}
	for _, ms := range e.sc.Members {
		s.taken[ms.ID] = true
	}
	for _, ev := range e.sc.Events {
		if ev.Kind == Join {
			for _, ms := range ev.Members {
				s.taken[ms.ID] = true
			}
		}
	}
	s.cfg = coordinator.Config{
		Options:           learner.Options{Standbys: e.sc.Standbys},
		SessionTimeout:    e.sc.SessionTimeout,
		HeartbeatInterval: heartbeatEvery(e.sc),
	}
	c, err := coordinator.New(e.tasks, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	s.c = c
	c.Tick(epoch.Add(-s.cfg.SessionTimeout)) // it has run since before time zero
	// The coordinator fails over when the script crashes the leader: the
	// coordinator mode's counterpart of a group leader's crash.
	for _, ev := range e.sc.Events {
		if ev.Kind == CrashLeader {
			e.at(ev.At, s.failover)
		}
	}
	return s, nil
}

func (s *coordStrategy) name() string { return Coordinator.String() }

func (s *coordStrategy) rebalanceFree() {}

func (s *coordStrategy) wall() time.Time { return epoch.Add(s.e.now) }

// initial sets m up as if the group had run under this coordinator before
// time zero: it has applied its target and reports it just before time zero,
// when the coordinator's recovery window (opened a session timeout earlier)
// closes.
func (s *coordStrategy) initial(m *member, a learner.Assignment) {
	cm := &cmember{}
	var err error
	if cm.m, err = coordinator.NewMember(s.incarnation(m)); err != nil {
		s.e.fail("%v", err) // Scenario.Check and incarnation keep IDs valid
		return
	}
	s.cms[m] = cm
	if _, err := cm.m.Apply(coordinator.Response{MemberID: cm.m.ID(), Epoch: 1, Active: a.Assigned, Standby: a.Standby, HeartbeatInterval: s.cfg.HeartbeatInterval}); err != nil {
		s.e.fail("%v", err)
		return
	}
	if _, err := s.c.Heartbeat(epoch.Add(-time.Nanosecond), cm.m.Heartbeat()); err != nil {
		s.e.fail("%v", err)
	}
	s.scheduleBeat(m, firstBeat(s.e.sc, m.idx))
	s.startTicks()
}

// startTicks runs the coordinator's clock: session timeouts are noticed
// within a tenth of a second.
func (s *coordStrategy) startTicks() {
	if s.started {
		return
	}
	s.started = true
	var tick func()
	tick = func() {
		s.c.Tick(s.wall())
		s.e.at(s.e.now+100*time.Millisecond, tick)
	}
	s.e.at(0, tick)
}

// incarnation is m's ID in the protocol: a restarted member is a new
// incarnation, so it joins under a new ID (S5, then S5.2), one no member of
// the scenario has (the coordinator would fence the later of two) and
// valid (a long ID is cut to make room for the suffix).
func (s *coordStrategy) incarnation(m *member) string {
	if !slices.ContainsFunc(s.e.members[:m.idx], func(o *member) bool { return o.id == m.id }) {
		return m.id // its first incarnation: the scenario's ID
	}
	for n := 2; ; n++ {
		suffix := fmt.Sprintf(".%d", n)
		id := m.id[:min(len(m.id), learner.MaxIDLen-len(suffix))] + suffix
		if !s.taken[id] {
			s.taken[id] = true
			return id
		}
	}
}

// joined sets up a member that joins; a restarted one replaces its
// previous incarnation at once and reports the state it finds on disk.
func (s *coordStrategy) joined(m *member) {
	id, old := s.incarnation(m), ""
	for _, o := range slices.Backward(s.e.members[:m.idx]) {
		if o.id == m.id {
			old = s.cms[o].m.ID()
			break
		}
	}
	cm := &cmember{}
	var err error
	if old == "" {
		cm.m, err = coordinator.NewMember(id)
	} else {
		cm.m, err = coordinator.RestartOf(id, old)
	}
	if err != nil {
		s.e.fail("%v", err) // Scenario.Check and incarnation keep IDs valid
		return
	}
	s.cms[m] = cm
	s.beatNow(m)
}

func (s *coordStrategy) leave(m *member, d time.Duration) {
	var deadline time.Time
	if d > 0 {
		deadline = s.wall().Add(d)
		s.e.at(s.e.now+d, func() {
			if m.alive && s.cms[m].m.ShouldShutdown(s.wall()) {
				s.depart(m, "shuts down at its leave deadline")
			}
		})
	}
	s.cms[m].m.Leave(deadline)
	s.beatNow(m)
}

// failover replaces the coordinator with a new one that knows nothing.
func (s *coordStrategy) failover() {
	c, err := coordinator.New(s.tasks, s.cfg)
	if err != nil {
		s.e.fail("%v", err)
		return
	}
	s.c = c
}

func (s *coordStrategy) scheduleBeat(m *member, after time.Duration) {
	cm := s.cms[m]
	cm.gen++
	gen := cm.gen
	s.e.at(s.e.now+after, func() {
		if cm.gen == gen {
			s.beat(m)
		}
	})
}

// beatNow heartbeats at once, or as soon as the heartbeat in flight is
// answered: a member has one heartbeat in flight at most.
func (s *coordStrategy) beatNow(m *member) {
	if cm := s.cms[m]; cm.inFlight {
		cm.again = true
		return
	}
	s.scheduleBeat(m, 0)
}

// beat sends m's heartbeat; the coordinator answers at once, the member
// gets the answer a round trip later.
func (s *coordStrategy) beat(m *member) {
	if !m.alive {
		return // crashed or gone: no more heartbeats
	}
	cm := s.cms[m]
	s.e.reportLags(m, cm.m.SetLag)
	s.e.res.Metrics.Messages++
	s.c.Tick(s.wall())
	resp, err := s.c.Heartbeat(s.wall(), cm.m.Heartbeat())
	if errors.Is(err, coordinator.ErrFenced) {
		s.e.fail("%s fenced: %v", m.id, err) // members never miss a heartbeat here
		return
	}
	if err != nil {
		s.e.fail("heartbeat: %v", err)
		return
	}
	cm.inFlight = true
	cm.gen++ // the response schedules the next heartbeat
	s.e.at(s.e.now+heartbeatRTT, func() { s.respond(m, resp) })
}

func (s *coordStrategy) respond(m *member, r coordinator.Response) {
	cm := s.cms[m]
	cm.inFlight = false
	if !m.alive {
		return
	}
	ch, err := cm.m.Apply(r)
	if err != nil {
		s.e.fail("%v", err)
		return
	}
	for _, id := range ch.StopActive {
		s.e.stop(m, s.e.index[id], CausePromotion)
	}
	for _, id := range ch.StartActive {
		// The protocol's promise, checked on what the members run.
		t := s.e.index[id]
		for _, o := range s.e.members {
			if o != m && o.alive && o.slots[t] != nil && o.slots[t].role == active {
				s.e.fail("%s starts %s while %s runs it", m.id, id, o.id)
				return
			}
		}
	}
	s.e.setRoles(m, learner.Assignment{MemberID: m.id, Assigned: r.Active, Learning: r.Learning, Standby: r.Standby})
	ready := false
	for _, id := range ch.StartLearning {
		if t := s.e.index[id]; m.slots[t].done {
			ready = cm.m.Restored(id) || ready // a standby turned learner: caught up already
		}
	}
	if ch.Shutdown {
		s.depart(m, "has handed over its tasks and leaves")
		return
	}
	next := r.HeartbeatInterval
	if len(ch.StopActive) > 0 || ready || cm.again {
		next = 0 // acknowledge a stop, report a ready learner: at once
	}
	cm.again = false
	s.scheduleBeat(m, next)
}

func (s *coordStrategy) depart(m *member, why string) {
	cm := s.cms[m]
	cm.m.Stop()
	s.e.res.Metrics.Messages++
	if _, err := s.c.Heartbeat(s.wall(), cm.m.LeaveHeartbeat()); err != nil {
		s.e.fail("leave: %v", err)
	}
	s.e.depart(m, why)
}

func (s *coordStrategy) restored(m *member, t int) {
	if s.cms[m].m.Restored(s.e.tasks[t].ID) {
		s.beatNow(m)
	}
}

// The rebalance hooks: the engine starts no rebalance for this strategy.
func (s *coordStrategy) join(m *member) learner.MemberMetadata {
	s.e.fail("the coordinator strategy has no rebalances")
	return learner.MemberMetadata{}
}

func (s *coordStrategy) assign([]learner.MemberMetadata) ([]learner.Assignment, []string, error) {
	return nil, nil, errors.New("sim: the coordinator strategy has no rebalances")
}

func (s *coordStrategy) apply(*member, learner.Assignment) {}
func (s *coordStrategy) settled(Round)                     {}
