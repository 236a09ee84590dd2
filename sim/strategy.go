package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
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
	// leave handles m's announcement that it leaves; deadline bounds a
	// learner strategy's hand-over (zero: none).
	leave(m *member, deadline time.Duration)
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

// strategies is the registry: each Strategy's name and constructor, in the
// order the tables print them. A new strategy is a constant in result.go, a
// line here and a file implementing strategy.
var strategies = [...]struct {
	name  string
	build func(e *engine, s Strategy) (strategy, error)
}{
	LearnerStable: {"learner (stable)", newLearnerStrategy},
	LearnerEager:  {"learner (eager)", newLearnerStrategy},
	StopTheWorld:  {"stop-the-world", newStickyStrategy},
	Cooperative:   {"cooperative", newStickyStrategy},
	WarmUp:        {"warm-up+probing", newStickyStrategy},
	Coordinator:   {"learner (coordinator)", newCoordStrategy},
}

func newStrategy(s Strategy, e *engine) (strategy, error) {
	if s < 0 || int(s) >= len(strategies) {
		return nil, fmt.Errorf("sim: unknown strategy %d", int(s))
	}
	return strategies[s].build(e, s)
}

// Handover is the round structure by which the learner strategies hand a
// ready learner its task: the structures the Kafka binding (kgolearner) can
// run, so the simulator promises nothing the binding does not do.
type Handover int

const (
	// HandoverOneRound is the design document's: the owner stops the
	// learned task at its join and the leader gives it to the ready learner
	// in the same rebalance.
	HandoverOneRound Handover = iota
	// HandoverFollowUp is kgolearner's one-round hand-over before it kept
	// unready learned tasks through kgo's follow-up: a ready learner's
	// task moves in the rebalance its owner released it in, and kgo
	// follows a rebalance in which a member lost partitions with one more,
	// in which nothing moves (owners release their learned tasks at its
	// join too). A stateless task that moves stays with its owner one more
	// generation, tagged learned, and moves at the next rebalance.
	HandoverFollowUp
	// HandoverWithhold withholds a task that moves for one generation: the
	// old owner revokes it, the new owner keeps learning it, and the
	// follow-up rebalance gives it to the new owner.
	HandoverWithhold
	// HandoverFollowUpReady is what kgolearner does: HandoverFollowUp,
	// except that when a round makes a member lose a task, so that kgo's
	// follow-up comes next, the leader tags learned only the stateful
	// tasks whose learner reported them ready: the others' owners keep
	// running them through the follow-up, in which their learners cannot
	// be promoted anyway.
	HandoverFollowUpReady
)

// DefaultHandover is what kgolearner does: one-round hand-over, and kgo's
// follow-up rebalance, through which owners keep the learned tasks whose
// learner is not ready (kgolearner/followup.go).
const DefaultHandover = HandoverFollowUpReady

var handoverNames = [...]string{HandoverOneRound: "one-round", HandoverFollowUp: "follow-up", HandoverWithhold: "withhold",
	HandoverFollowUpReady: "follow-up-ready"}

// Handovers returns every handover, in the order of their keywords.
func Handovers() []Handover {
	all := make([]Handover, len(handoverNames))
	for i := range all {
		all[i] = Handover(i)
	}
	return all
}

// String returns the handover's keyword in the scenario format.
func (h Handover) String() string {
	if h < 0 || int(h) >= len(handoverNames) {
		return fmt.Sprintf("Handover(%d)", int(h))
	}
	return handoverNames[h]
}

// ParseHandover reads a handover keyword; any other word is a *RangeError
// naming the keywords.
func ParseHandover(s string) (Handover, error) {
	if i := slices.Index(handoverNames[:], s); i >= 0 {
		return Handover(i), nil
	}
	return 0, &RangeError{Name: "handover", Got: strconv.Quote(s), Want: HandoverChoices()}
}

// HandoverChoices lists the handover keywords as errors and the command's
// usage show them: "one-round, follow-up, withhold or follow-up-ready".
func HandoverChoices() string {
	last := len(handoverNames) - 1
	return strings.Join(handoverNames[:last], ", ") + " or " + handoverNames[last]
}

// epoch is the wall-clock time of simulated time zero, for learner.Worker.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// learnerStrategy is this library: every member keeps a learner.Worker and
// the leader calls learner.Assignor.Assign on what the workers report.
type learnerStrategy struct {
	e        *engine
	assignor *learner.Assignor
	policy   learner.RejoinPolicy
	kind     Strategy
}

func newLearnerStrategy(e *engine, s Strategy) (strategy, error) {
	a, err := learner.New(e.tasks, learner.Options{Standbys: e.sc.Standbys})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	policy := learner.RejoinStable
	if s == LearnerEager {
		policy = learner.RejoinEager
	}
	return &learnerStrategy{e: e, assignor: a, policy: policy, kind: s}, nil
}

func (s *learnerStrategy) name() string { return s.kind.String() }

func (s *learnerStrategy) wall() time.Time { return epoch.Add(s.e.now) }

func (s *learnerStrategy) initial(m *member, a learner.Assignment) {
	s.joined(m)
	m.worker.Join()
	if _, err := m.worker.Apply(a); err != nil {
		s.e.fail("%v", err)
	}
}

func (s *learnerStrategy) joined(m *member) { m.worker = learner.NewWorker(m.id, s.policy) }

func (s *learnerStrategy) leave(m *member, d time.Duration) {
	var deadline time.Time
	if d > 0 {
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

// join reports the lag of every replica and of state on disk (what the
// application tells its Worker with SetLag), then joins: the owner stops
// the learned tasks it revokes.
func (s *learnerStrategy) join(m *member) learner.MemberMetadata {
	s.e.reportLags(m, m.worker.SetLag)
	md := m.worker.Join()
	for _, id := range md.Revoked {
		t := s.e.index[id]
		why := CauseJoin
		if s.e.caughtUp(t, learning) {
			why = CausePromotion
		}
		s.e.stop(m, t, why)
	}
	return md
}

func (s *learnerStrategy) assign(joins []learner.MemberMetadata) ([]learner.Assignment, []string, error) {
	as, err := s.assignor.Assign(joins)
	if err != nil {
		return nil, nil, err
	}
	if vs := learnertest.Check(s.e.tasks, s.assignor.Options(), joins, as); len(vs) > 0 {
		return nil, nil, fmt.Errorf("sim: Assign breaks rules:\n%s", learnertest.FormatViolations(vs))
	}
	switch s.e.sc.Handover {
	case HandoverWithhold:
		return withhold(as, joins, s.e.index, s.e.tasks)
	case HandoverFollowUp, HandoverFollowUpReady:
		holdMoved(as, joins, s.e.index)
		if s.e.sc.Handover == HandoverFollowUpReady && lostTask(joins, as) {
			tagReadyOnly(as, joins, s.e.index, s.e.tasks, s.assignor.Options())
		}
	}
	return as, nil, nil
}

// tagReadyOnly drops the learned tag of every stateful task whose learner
// did not report it ready at this join, by the rule Assign promotes by
// (Options.LearnerReady), as kgolearner's leader does: its owner keeps
// running it through the next rebalance instead of releasing it.
func tagReadyOnly(as []learner.Assignment, joins []learner.MemberMetadata, index map[string]int, tasks []learner.Task, opts learner.Options) {
	joinOf := make(map[string]int, len(joins)) // member ID -> its join
	for i, j := range joins {
		joinOf[j.ID] = i
	}
	learnerOf := map[string]int{} // task ID -> its learner's join
	for _, a := range as {
		for _, id := range a.Learning {
			learnerOf[id] = joinOf[a.MemberID]
		}
	}
	for i := range as {
		as[i].Learned = slices.DeleteFunc(as[i].Learned, func(id string) bool {
			j, learning := learnerOf[id]
			return tasks[index[id]].Stateful && !(learning && opts.LearnerReady(joins[j], id))
		})
	}
}

// withhold is kgolearner's leader: a task assigned to a member while another
// member still claims it (reported it in Assigned or Revoked) is withheld
// for one generation. A stateful one stays a learner task of its new owner,
// which keeps its replayed state and takes the task once nobody claims it; a
// stateless one is assigned afresh in the next generation.
func withhold(as []learner.Assignment, joins []learner.MemberMetadata, index map[string]int, tasks []learner.Task) ([]learner.Assignment, []string, error) {
	claims := make(map[string][]string)
	for _, j := range joins {
		for _, id := range slices.Concat(j.Assigned, j.Revoked) {
			claims[id] = append(claims[id], j.ID)
		}
	}
	var withheld []string
	for i := range as {
		a := &as[i]
		var keep, learn []string
		for _, id := range a.Assigned {
			c := claims[id]
			switch {
			case len(c) == 0 || slices.Contains(c, a.MemberID):
				keep = append(keep, id)
			case tasks[index[id]].Stateful:
				learn = append(learn, id)
				withheld = append(withheld, id)
			default:
				withheld = append(withheld, id)
			}
		}
		if len(keep) == len(a.Assigned) {
			continue
		}
		a.Assigned = keep
		a.Learned = slices.DeleteFunc(a.Learned, func(id string) bool { return !slices.Contains(keep, id) })
		a.Learning = slices.Concat(a.Learning, learn)
		slices.SortFunc(a.Learning, func(x, y string) int { return index[x] - index[y] })
	}
	slices.SortFunc(withheld, func(x, y string) int { return index[x] - index[y] })
	return as, withheld, nil
}

// holdMoved is kgolearner's leader (handOver): a task that Assign moves away
// from a member that still runs it (reported it in Assigned) stays with that
// member one more generation, tagged learned, while the new owner learns it;
// the owner releases it at its next join and the next rebalance gives it to
// the learner. Kafka cannot make the owner stop first. Stateless tasks move
// this way; a stateful one only when its owner had not released it.
func holdMoved(as []learner.Assignment, joins []learner.MemberMetadata, index map[string]int) {
	runs := make(map[string]int, len(joins)) // task -> position in as of the member running it
	for _, j := range joins {
		i := slices.IndexFunc(as, func(a learner.Assignment) bool { return a.MemberID == j.ID })
		for _, id := range j.Assigned {
			if i >= 0 {
				runs[id] = i
			}
		}
	}
	byIndex := func(x, y string) int { return index[x] - index[y] }
	// Assign may return the joins' own lists (those a member keeps), so
	// a list is filtered into a new slice, never in place.
	drop := func(l []string, id string) []string {
		return slices.DeleteFunc(slices.Clone(l), func(x string) bool { return x == id })
	}
	add := func(l []string, id string) []string {
		if slices.Contains(l, id) {
			return l
		}
		l = append(l, id)
		slices.SortFunc(l, byIndex)
		return l
	}
	for i := range as {
		a := &as[i]
		for _, id := range slices.Clone(a.Assigned) {
			o, ok := runs[id]
			if !ok || o == i {
				continue
			}
			a.Assigned, a.Learned = drop(a.Assigned, id), drop(a.Learned, id)
			a.Learning = add(a.Learning, id)
			old := &as[o]
			old.Revoked, old.Standby = drop(old.Revoked, id), drop(old.Standby, id)
			old.Assigned, old.Learned = add(old.Assigned, id), add(old.Learned, id)
		}
	}
}

func (s *learnerStrategy) apply(m *member, a learner.Assignment) {
	c, err := m.worker.Apply(a)
	if err != nil {
		s.e.fail("%v", err)
		return
	}
	s.e.setRoles(m, a)
	for _, id := range a.Learning {
		// A withheld task's learner stays ready.
		if t := s.e.index[id]; m.slots[t].done {
			m.worker.Restored(id)
		}
	}
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

func (s *learnerStrategy) settled(r Round) {
	switch s.e.sc.Handover {
	case HandoverWithhold:
		if len(r.Withheld) > 0 {
			s.e.requestRebalance("follow-up for withheld tasks")
		}
	case HandoverFollowUp, HandoverFollowUpReady:
		if lostTask(r.Joins, r.Assignments) {
			s.e.requestRebalance("kgo's follow-up: a member lost a partition")
		}
	}
	for _, m := range s.e.members {
		// A learner may have become ready while the round was under way.
		if m.alive && m.inGroup && m.worker.ShouldRejoin(s.wall()) {
			s.e.requestRebalance(m.id + " rejoins: learners ready")
		}
	}
	for _, id := range unpromoted(r) {
		// kgolearner's member rejoins when it reported a learner ready
		// and the leader did not promote it (the move was deferred).
		s.e.requestRebalance(id + " rejoins: a ready learner was not promoted")
	}
}

// unpromoted returns the members of the round that reported a learner ready
// and still learn it: the leader deferred its promotion.
func unpromoted(r Round) []string {
	var ids []string
	for _, j := range r.Joins {
		i := slices.IndexFunc(r.Assignments, func(a learner.Assignment) bool { return a.MemberID == j.ID })
		if i >= 0 && slices.ContainsFunc(j.Ready, func(id string) bool { return slices.Contains(r.Assignments[i].Learning, id) }) {
			ids = append(ids, j.ID)
		}
	}
	return ids
}

// lostTask reports whether a member that joined loses a task it reported
// (in Assigned or Revoked) in the assignments as: kgo then rejoins at once.
func lostTask(joins []learner.MemberMetadata, as []learner.Assignment) bool {
	for _, j := range joins {
		i := slices.IndexFunc(as, func(a learner.Assignment) bool { return a.MemberID == j.ID })
		if i < 0 {
			continue
		}
		for _, id := range slices.Concat(j.Assigned, j.Revoked) {
			if !slices.Contains(as[i].Assigned, id) {
				return true
			}
		}
	}
	return false
}
