package sim

import (
	"fmt"
	"time"

	"github.com/learnerassignor/learner"
)

// strategy is what differs between the rebalancing strategies: what a member
// reports and stops at a join, what the leader assigns, and how members
// react to events. The engine calls it; it calls back into the engine.
type strategy interface {
	name() string
	// initial sets up member m's side at time zero, running a.
	initial(m *member, a learner.Assignment)
	// joined sets up a member that has just joined the group.
	joined(m *member)
	// leave handles m's announcement that it leaves.
	leave(m *member)
	// join returns what m reports at a join and stops what it gives up.
	join(m *member) learner.MemberMetadata
	// assign is the leader: assignments for the members that joined, in
	// any order, and the tasks withheld for a follow-up rebalance.
	assign(joins []learner.MemberMetadata) ([]learner.Assignment, []string, error)
	// apply makes m run its assignment.
	apply(m *member, a learner.Assignment)
	// restored handles m's learner or warm-up of task t catching up.
	restored(m *member, t int)
	// settled runs after a round's assignments are applied.
	settled(r Round)
}

func newStrategy(s Strategy, e *engine) (strategy, error) {
	switch s {
	case LearnerStable, LearnerEager:
		a, err := learner.New(e.tasks, learner.Options{})
		if err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		policy := learner.RejoinStable
		if s == LearnerEager {
			policy = learner.RejoinEager
		}
		return &learnerStrategy{e: e, assignor: a, policy: policy, label: s.String()}, nil
	case StopTheWorld, Cooperative, WarmUp:
		return &stickyStrategy{e: e, kind: s}, nil
	}
	return nil, fmt.Errorf("sim: unknown strategy %d", int(s))
}

// epoch is the wall-clock time of simulated time zero, for learner.Worker.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// learnerStrategy is this library: every member keeps a learner.Worker and
// the leader calls learner.Assignor.Assign on what the workers report.
type learnerStrategy struct {
	e        *engine
	assignor *learner.Assignor
	policy   learner.RejoinPolicy
	label    string
}

func (s *learnerStrategy) name() string { return s.label }

func (s *learnerStrategy) wall() time.Time { return epoch.Add(s.e.now) }

func (s *learnerStrategy) initial(m *member, a learner.Assignment) {
	s.joined(m)
	m.worker.Join()
	if _, err := m.worker.Apply(a); err != nil {
		s.e.fail("%v", err)
	}
}

func (s *learnerStrategy) joined(m *member) { m.worker = learner.NewWorker(m.id, s.policy) }

func (s *learnerStrategy) leave(m *member) {
	var deadline time.Time
	if d := s.e.sc.LeaveDeadline; d > 0 {
		deadline = s.wall().Add(d)
		s.e.at(s.e.now+d, func() {
			if m.alive && m.worker.ShouldShutdown(s.wall()) {
				s.e.depart(m, "shuts down at its leave deadline")
			}
		})
	}
	m.worker.Leave(deadline)
	if m.worker.ShouldRejoin(s.wall()) {
		s.e.requestRebalance(m.id + " announces it leaves")
	}
}

func (s *learnerStrategy) join(m *member) learner.MemberMetadata {
	md := m.worker.Join()
	for _, id := range md.Revoked {
		s.e.stop(m, s.e.index[id])
	}
	return md
}

func (s *learnerStrategy) assign(joins []learner.MemberMetadata) ([]learner.Assignment, []string, error) {
	as, err := s.assignor.Assign(joins)
	return as, nil, err
}

func (s *learnerStrategy) apply(m *member, a learner.Assignment) {
	c, err := m.worker.Apply(a)
	if err != nil {
		s.e.fail("%v", err)
		return
	}
	s.e.setRoles(m, a)
	if c.Shutdown {
		s.e.depart(m, "has handed over its tasks and leaves")
	}
}

func (s *learnerStrategy) restored(m *member, t int) {
	m.worker.Restored(s.e.tasks[t].ID)
	if m.worker.ShouldRejoin(s.wall()) {
		s.e.requestRebalance(m.id + " rejoins: learners ready")
	}
}

func (s *learnerStrategy) settled(Round) {
	for _, m := range s.e.members {
		// A learner may have become ready while the round was under way.
		if m.alive && m.inGroup && m.worker.ShouldRejoin(s.wall()) {
			s.e.requestRebalance(m.id + " rejoins: learners ready")
		}
	}
}
