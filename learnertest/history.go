package learnertest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/learnerassignor/learner"
)

// historyMember is one member's own state: what it runs and learns, as it would
// report it at its next join.
type historyMember struct {
	id       string
	assigned []string
	learned  map[string]bool // tagged learned by the last assignment: revoke at next join
	learning map[string]int  // learner task -> rebalances until its replay is done
	standby  []string
	leaving  bool
	capacity int
	rack     string
}

// report is what the member sends when it joins: it revokes the tasks its
// last assignment tagged learned and reports learners whose replay is done
// as ready (and, with lags, every learner's remaining lag and its
// standbys' lag).
func (m *historyMember) report(opts learner.Options, lags bool) learner.MemberMetadata {
	md := learner.MemberMetadata{ID: m.id, Leaving: m.leaving, Capacity: m.capacity, Rack: m.rack, Standby: slices.Clone(m.standby)}
	for _, t := range m.assigned {
		if m.learned[t] {
			md.Revoked = append(md.Revoked, t)
		} else {
			md.Assigned = append(md.Assigned, t)
		}
	}
	for _, t := range sortedTasks(m.learning) {
		left := m.learning[t]
		md.Learning = append(md.Learning, t)
		if left <= 0 {
			md.Ready = append(md.Ready, t)
		}
		if lags {
			md.Lag = append(md.Lag, learner.TaskLag{Task: t, Lag: int64(max(left, 0)) * 60})
		}
	}
	if lags {
		// A standby keeps up: within AcceptableLag, as rule 13 needs
		// before it releases the copy a new standby replaces.
		for _, t := range m.standby {
			md.Lag = append(md.Lag, learner.TaskLag{Task: t, Lag: min(10, opts.AcceptableLag)})
		}
	}
	return md
}

func sortedTasks(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, learner.CompareIDs)
	return ks
}

// apply makes a the member's state; new learners need 1..k rebalances.
func (m *historyMember) apply(a learner.Assignment, r *rand.Rand, k int) {
	m.assigned = slices.Clone(a.Assigned)
	m.learned = map[string]bool{}
	for _, t := range a.Learned {
		m.learned[t] = true
	}
	learning := map[string]int{}
	for _, t := range a.Learning {
		left, ok := m.learning[t]
		if !ok {
			left = 1 + r.IntN(k)
		}
		learning[t] = left
	}
	m.learning = learning
	m.standby = slices.Clone(a.Standby)
}

// History drives Assign through a simulated group's history: members
// join, crash, restart without state and announce that they leave; every
// member applies its assignments the way a Worker would (revoke learned
// tasks at the next join, report a learner ready a few rebalances after it
// started) and every rebalance is checked with CheckAssign, so the
// leader's view is also shuffled (a leader change) every time. Between
// bursts of membership changes the group is left alone and must reach its
// fixed point within ConvergenceBound rebalances.
//
// Build one with NewHistory, adjust the exported fields, then call Run once.
type History struct {
	// Tasks and Options are the topology and options Assign runs with.
	Tasks   []learner.Task
	Options learner.Options
	// Assign is the Assignor's Assign, or a deliberately broken one.
	Assign AssignFunc
	// K bounds replay: every learner is ready within K rebalances, 1 to
	// MaxK (Run's error otherwise).
	K int
	// Capacities makes joining members draw capacities 1 to 3.
	Capacities bool
	// Racks, when positive, puts joining members in one of Racks racks.
	Racks int
	// NoShrink reports a broken rule without shrinking the round's input
	// (which re-runs the real Assignor, pointless for a broken Assign).
	NoShrink bool
	// Spread checks at every fixed point that no staying member runs more
	// than its share (by capacity, rounded up) plus one of a subtopology.
	Spread bool
	// Grow makes every membership change a join.
	Grow bool
	// MixedLags makes only the members with an odd number (S1, S3, ...)
	// report lags, whatever AcceptableLag, and the others none, as members
	// whose application does not call SetLag would (a rolling upgrade):
	// the rules that rank copies then compare reported lags with absent
	// ones. Without it every member reports lags under AcceptableLag, and
	// none without.
	MixedLags bool

	r       *rand.Rand
	members []*historyMember
	nextID  int
	round   int
	log     []string // the last rounds, printed on failure
}

// MaxK is the largest History.K: it bounds Run's arithmetic (its livelock
// limit is 10·(tasks+2)·K rebalances) far from overflow, and is far beyond
// any replay a history needs to model.
const MaxK = 1 << 16

// Failure is the error Run returns at a history's first broken rule.
type Failure struct {
	// Rules are the rules broken at that rebalance.
	Rules []string
	// Msg says what broke, with the last rounds of the history.
	Msg string
}

// Error returns f.Msg.
func (f *Failure) Error() string { return f.Msg }

func (s *History) fail(rules []string, format string, args ...any) {
	panic(&Failure{rules, fmt.Sprintf(format, args...) + "\nhistory (last rounds):\n" + strings.Join(s.log, "\n")})
}

func (s *History) join() {
	s.nextID++
	m := &historyMember{id: "S" + strconv.Itoa(s.nextID)}
	if s.Capacities {
		m.capacity = 1 + s.r.IntN(3)
	}
	if s.Racks > 0 {
		m.rack = "r" + strconv.Itoa(s.r.IntN(s.Racks))
	}
	s.members = append(s.members, m)
	s.logf("%s joins", m.id)
}

// event applies one random membership change.
func (s *History) event() {
	if len(s.members) == 0 {
		s.join()
		return
	}
	i := s.r.IntN(len(s.members))
	m := s.members[i]
	switch x := s.r.IntN(10); {
	case x < 4 || s.Grow:
		s.join()
	case x < 6:
		s.members = slices.Delete(s.members, i, i+1)
		s.logf("%s crashes", m.id)
	case x < 8:
		m.leaving = true
		s.logf("%s announces it is leaving", m.id)
	default:
		// A restart: same ID, empty state (a new process without local state).
		*m = historyMember{id: m.id, capacity: m.capacity, rack: m.rack}
		s.logf("%s restarts without state", m.id)
	}
}

// rebalance runs one rebalance: every member reports, Assign (checked),
// every member applies its assignment, empty leaving members shut down. It
// returns the reports and the output.
func (s *History) rebalance() ([]learner.MemberMetadata, []learner.Assignment) {
	s.round++
	in := make([]learner.MemberMetadata, len(s.members))
	for i, m := range s.members {
		for t := range m.learning {
			m.learning[t]--
		}
		in[i] = m.report(s.Options, s.reportsLags(m))
	}
	s.r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] }) // whoever leads
	out, vs := CheckAssign(s.Tasks, s.Options, s.Assign, in, s.r)
	s.logf("round %d input:\n%sround %d output:\n%s", s.round, learner.Rebalance{Tasks: s.Tasks, Options: s.Options, Members: in}, s.round, learner.FormatAssignments(out))
	if len(vs) > 0 {
		var rules []string
		for _, v := range vs {
			rules = append(rules, v.Rule)
		}
		if s.NoShrink {
			s.fail(rules, "round %d: %d violations:\n%s", s.round, len(vs), FormatViolations(vs))
		}
		// Shrink with the real assignor on each smaller topology (a history
		// with a broken assignor is quick and never gets here).
		g := learner.Rebalance{Tasks: s.Tasks, Options: s.Options, Members: in}
		small := Shrink(g, func(h learner.Rebalance) bool { return HasRule(CheckRebalance(h, 1), vs[0].Rule) })
		s.fail(rules, "round %d: %d violations:\n%sthe round's input shrunk to:\n%sits violations:\n%s",
			s.round, len(vs), FormatViolations(vs), small, FormatViolations(CheckRebalance(small, 1)))
	}
	byID := map[string]learner.Assignment{}
	for _, a := range out {
		byID[a.MemberID] = a
	}
	kept := s.members[:0]
	for _, m := range s.members {
		m.apply(byID[m.id], s.r, s.K)
		if m.leaving && len(m.assigned) == 0 {
			s.logf("%s shuts down", m.id)
			continue
		}
		kept = append(kept, m)
	}
	s.members = kept
	return in, out
}

// reportsLags reports whether m reports lags (see MixedLags).
func (s *History) reportsLags(m *historyMember) bool {
	if !s.MixedLags {
		return s.Options.AcceptableLag > 0
	}
	n, _ := strconv.Atoi(m.id[1:]) // join names members S1, S2, ...
	return n%2 == 1
}

func (s *History) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
	if len(s.log) > 12 {
		s.log = s.log[len(s.log)-12:]
	}
}

// ConvergenceBound is the most rebalances a group may need to reach its
// fixed point, counting the one right after its last membership change,
// when every learner is ready within k rebalances, the learner budget is
// budget (0: none), and learners is the number of new learners the group
// placed on the way.
//
// Derivation without a budget. A learner placed at rebalance r is ready and
// promoted at the latest at r+k; its old owner drops the task with that
// assignment, so the next rebalance can see output == input. If rebalance 1
// can place every learner the group needs (a clean start: members joined a
// settled group), the last promotion is at 1+k and the fixed point at k+2
// (the design's Scale Up walkthrough: k = 2 there, 4 rebalances). After
// arbitrary changes rebalance 1 may not be able to: a stateless task it
// gives an orphan's warm member is not moved again in the same rebalance,
// and a learner kept from before pins its member's load.
// Learners from before rebalance 1 are promoted by rebalance k, so the
// balancing learners are placed by k+1 (by 2 for an orphan), promoted by
// 2k+1, and the fixed point is at 2k+2.
//
// With a budget of N the learners go in batches: each of the N slots runs
// one learner after the other, each for at most k rebalances, and a slot
// freed by a promotion is refilled in the same rebalance. Placing learners
// learners takes at most ceil(learners/N) turns of k rebalances per slot,
// so k·ceil(learners/N) + 2 for a clean start and one batch (k) more after
// chaos. Without a budget ceil(learners/N) is 1, which gives the bounds
// above.
func ConvergenceBound(k, budget, learners int, clean bool) int {
	batches := min(learners, 1)
	if budget > 0 {
		batches = (learners + budget - 1) / budget
	}
	if clean {
		return k*batches + 2
	}
	return k*(batches+1) + 2
}

// settle runs rebalances without membership changes until the fixed point
// and checks that it took at most ConvergenceBound rebalances (and gives
// up on a livelock long after it). It returns the rebalances and the bound.
func (s *History) settle(clean bool) (took, bound int) {
	learners, warm := 0, 0
	limit := 10 * (len(s.Tasks) + 2) * s.K // any bound: stop a livelock
	for n := 1; ; n++ {
		in, out := s.rebalance()
		learners += newLearners(in, out)
		warm += b2i(s.Options.Standbys > 0 && warmMoveInFlight(s.Tasks, s.Options, in, out))
		bound := ConvergenceBound(s.K, s.Options.MaxLearners, learners, clean) + warmMoveRounds(s.Options.Standbys, warm)
		if FixedPoint(in, out) {
			s.checkFixedPoint(in, out)
			if n > bound {
				s.fail([]string{"convergence"}, "round %d: fixed point after %d quiet rebalances, bound %d (k %d, budget %d, %d learners placed)",
					s.round, n, bound, s.K, s.Options.MaxLearners, learners)
			}
			return n, bound
		}
		// Without a budget the bound is at most its value for one learner.
		if n >= limit || s.Options.MaxLearners == 0 && n > ConvergenceBound(s.K, 0, 1, clean)+warmMoveRounds(s.Options.Standbys, warm) {
			s.fail([]string{"convergence"}, "round %d: no fixed point after %d quiet rebalances (bound %d, k %d, budget %d, %d learners placed)",
				s.round, n, bound, s.K, s.Options.MaxLearners, learners)
		}
	}
}

// warmMoveRounds is what standby moves add to ConvergenceBound when the
// quiet spell had warm rounds: rebalances whose output keeps an extra
// standby (a warm standby move in flight, rule warm-copies). The last
// promotion can move standbys or leave its old owner a copy, released a
// rebalance later, and a release changes the standby counts, which can
// start one more move: 2 rounds with standbys, plus one per warm round past
// the first. Warm rounds come one after the other only where rack spread
// and quotas hand one standby at a time to a member in another rack (seen
// in about one history in 800); each still ends, and a livelock still
// fails at the limit.
func warmMoveRounds(standbys, warm int) int {
	if standbys == 0 {
		return 0
	}
	return 2 + max(warm-1, 0)
}

// newLearners counts the learners of out that in did not report.
func newLearners(in []learner.MemberMetadata, out []learner.Assignment) int {
	was := map[string]map[string]bool{}
	for _, m := range in {
		was[m.ID] = map[string]bool{}
		for _, id := range m.Learning {
			was[m.ID][id] = true
		}
	}
	n := 0
	for _, a := range out {
		for _, id := range a.Learning {
			if !was[a.MemberID][id] {
				n++
			}
		}
	}
	return n
}

// checkFixedPoint checks the fixed point: loads balanced by capacity, no
// leaving member holding anything while a member stays, and (if s.Spread)
// subtopologies spread.
func (s *History) checkFixedPoint(in []learner.MemberMetadata, out []learner.Assignment) {
	if d := imbalance(in, out); d != "" {
		s.fail([]string{"fixed-point-balance"}, "round %d: fixed point not balanced: %s", s.round, d)
	}
	leaving := map[string]bool{}
	staying := false
	for _, m := range in {
		leaving[m.ID] = m.Leaving
		staying = staying || !m.Leaving
	}
	for _, a := range out {
		if staying && len(a.Assigned) > 0 && leaving[a.MemberID] {
			s.fail([]string{"fixed-point-leaving"}, "round %d: fixed point leaves %v on leaving member %s", s.round, a.Assigned, a.MemberID)
		}
	}
	if d := overSpread(s.Tasks, in, out); s.Spread && d != "" {
		s.fail([]string{"fixed-point-spread"}, "round %d: fixed point: %s", s.round, d)
	}
}

// overSpread checks issue 4's per-subtopology spread where every task ID
// has the form "<subtopology>_<partition>": no staying member runs more than
// its share of a subtopology (by capacity, rounded up) plus one. It
// describes the first member that does, or returns "".
func overSpread(tasks []learner.Task, in []learner.MemberMetadata, out []learner.Assignment) string {
	sub := map[string]int{}
	count := map[int]int64{}
	for _, t := range tasks {
		s, ok := subtopologyOf(t.ID)
		if !ok {
			return ""
		}
		sub[t.ID] = s
		count[s]++
	}
	caps := map[string]int64{}
	var capTotal int64
	for _, m := range in {
		if !m.Leaving {
			caps[m.ID] = capacityOf(m)
			capTotal += capacityOf(m)
		}
	}
	for _, a := range out {
		c, ok := caps[a.MemberID]
		if !ok {
			continue
		}
		held := map[int]int64{}
		for _, id := range a.Assigned {
			held[sub[id]]++
		}
		for s, n := range held {
			if share := (count[s]*c + capTotal - 1) / capTotal; n > share+1 {
				return fmt.Sprintf("%s runs %d tasks of subtopology %d, share %d (+1)", a.MemberID, n, s, share)
			}
		}
	}
	return ""
}

// NewHistory draws a history's topology (up to 60 tasks), options and K
// from r, which then drives the whole history; features adds capacities,
// racks, lag-based readiness and a learner budget. Assign is a new
// Assignor's. A nil r is an error wrapping ErrInvalidArgument.
func NewHistory(r *rand.Rand, features bool) (*History, error) {
	if r == nil {
		return nil, fmt.Errorf("learnertest: NewHistory with a nil *rand.Rand: %w", ErrInvalidArgument)
	}
	nt := r.IntN(60)
	pStateless := chance(r, 0, 0.2, 1)
	subtopologies := features && r.IntN(2) == 0
	var tasks []learner.Task
	for _, id := range taskIDs(r, nt, subtopologies) {
		tasks = append(tasks, learner.Task{ID: id, Stateful: r.Float64() >= pStateless})
	}
	opts := learner.Options{Standbys: r.IntN(3)}
	s := &History{r: r, K: 1 + r.IntN(4)}
	if features {
		s.Capacities = r.IntN(2) == 0
		if r.IntN(2) == 0 {
			s.Racks = 1 + r.IntN(3)
		}
		if r.IntN(2) == 0 {
			opts.AcceptableLag = 100
		}
		if r.IntN(3) == 0 {
			opts.MaxLearners = 1 + r.IntN(4)
		}
	}
	a, err := learner.New(tasks, opts)
	if err != nil {
		return nil, err
	}
	s.Tasks, s.Options, s.Assign = tasks, opts, a.Assign
	return s, nil
}

// QuietStats records how long quiet spells took to reach their fixed point.
// Use NewQuietStats.
type QuietStats struct {
	// Budgeted counts the quiet spells with a learner budget, and
	// BudgetSlack is the least ConvergenceBound minus rebalances taken
	// among them.
	Budgeted, BudgetSlack int
	most                  map[[2]int]int // without a budget: {k, clean 0/1} -> most rebalances
}

// NewQuietStats returns empty stats.
func NewQuietStats() *QuietStats { return &QuietStats{most: map[[2]int]int{}, BudgetSlack: 1 << 30} }

// Most returns the most rebalances a quiet spell without a learner budget
// took to its fixed point, with learners ready within k rebalances, after
// members joined a settled group (clean) or after arbitrary changes.
func (q *QuietStats) Most(k int, clean bool) int { return q.most[[2]int{k, b2i(clean)}] }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Rebalances returns how many rebalances the history has run.
func (s *History) Rebalances() int { return s.round }

// Run drives the history for at least rounds rebalances: bursts of
// membership changes, each followed by a quiet spell that must reach the
// fixed point within ConvergenceBound. It records the quiet spells in stats
// (nil: not recorded) and returns the first broken rule as a *Failure, or
// nil. A History it cannot run (not built by NewHistory, a nil Assign, K
// outside 1 to MaxK) is an error wrapping ErrInvalidArgument, before any
// rebalance.
func (s *History) Run(rounds int, stats *QuietStats) (err error) {
	switch {
	case s.r == nil:
		return fmt.Errorf("learnertest: History not built by NewHistory (it has no random source): %w", ErrInvalidArgument)
	case s.Assign == nil:
		return fmt.Errorf("learnertest: History.Assign is nil: %w", ErrInvalidArgument)
	case s.K < 1 || s.K > MaxK:
		return fmt.Errorf("learnertest: History.K is %d, want 1 to %d (learners ready within K rebalances): %w", s.K, MaxK, ErrInvalidArgument)
	}
	if stats == nil {
		stats = NewQuietStats()
	}
	defer func() {
		// fail panics with a *Failure to unwind the rebalance loops.
		if r := recover(); r != nil {
			f, ok := r.(*Failure)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	r := s.r
	for s.round < rounds {
		// A burst: membership changes at some rebalances.
		for range 1 + r.IntN(30) {
			for range r.IntN(3) {
				s.event()
			}
			s.rebalance()
		}
		// The quiet spell starts after arbitrary changes, or after members
		// joined a settled group (a clean start).
		clean := r.IntN(3) == 0
		if clean {
			s.settle(false)
			for range 1 + r.IntN(3) {
				s.join()
			}
		} else if !slices.ContainsFunc(s.members, func(m *historyMember) bool { return !m.leaving }) {
			s.join()
		}
		took, bound := s.settle(clean)
		if s.Options.MaxLearners > 0 {
			stats.Budgeted++
			stats.BudgetSlack = min(stats.BudgetSlack, bound-took)
			continue
		}
		key := [2]int{s.K, b2i(clean)}
		stats.most[key] = max(stats.most[key], took)
	}
	return nil
}

// FixedPoint reports whether out leaves the group as in reported it: no
// learners, nothing revoked, every member keeps its active and standby
// tasks. Reporting out back to Assign then gives out again.
func FixedPoint(in []learner.MemberMetadata, out []learner.Assignment) bool {
	byID := map[string]learner.MemberMetadata{}
	for _, m := range in {
		byID[m.ID] = m
	}
	for _, o := range out {
		m := byID[o.MemberID]
		if len(o.Revoked)+len(o.Learning)+len(o.Learned)+len(m.Revoked)+len(m.Learning) > 0 ||
			!sameSet(o.Assigned, m.Assigned) || !sameSet(o.Standby, m.Standby) {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}
