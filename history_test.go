package learner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Multi-round histories: a simulated group applies every assignment the way
// its members would (revoke learned tasks at the next join, run learners,
// report them ready a few rebalances later, leave, crash, join, restart) and
// drives Assign for hundreds of rebalances. Every rebalance is checked with
// checkAssign, so the leader's view is also shuffled (a leader change) every
// time. Between bursts of membership changes the group is left alone and
// must reach its fixed point within convergenceBound rebalances.
//
//	go test -run History                        # 200 histories (CI)
//	LEARNER_LONG=1 go test -run History         # 5,000 histories
//	LEARNER_SEED=123 go test -run History       # replay a printed seed

// simMember is one member's own state: what it runs and learns, as it would
// report it at its next join.
type simMember struct {
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
// as ready (and, under AcceptableLag, every learner's remaining lag).
func (m *simMember) report(opts Options) MemberMetadata {
	md := MemberMetadata{ID: m.id, Leaving: m.leaving, Capacity: m.capacity, Rack: m.rack, Standby: slices.Clone(m.standby)}
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
		if opts.AcceptableLag > 0 {
			md.Lag = append(md.Lag, TaskLag{Task: t, Lag: int64(max(left, 0)) * 60})
		}
	}
	if opts.AcceptableLag > 0 {
		for _, t := range m.standby {
			md.Lag = append(md.Lag, TaskLag{Task: t, Lag: 10})
		}
	}
	return md
}

func sortedTasks(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, compareIDs)
	return ks
}

// apply makes a the member's state; new learners need 1..k rebalances.
func (m *simMember) apply(a Assignment, r *rand.Rand, k int) {
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

// simGroup is the simulated group and its history so far.
type simGroup struct {
	t       *testing.T
	r       *rand.Rand
	a       *Assignor
	k       int // every learner is ready within k rebalances
	members []*simMember
	nextID  int
	round   int
	log     []string // the last rounds, printed on failure
	caps    bool     // members draw capacities
	racks   int
}

func (s *simGroup) join() {
	s.nextID++
	m := &simMember{id: "S" + strconv.Itoa(s.nextID)}
	if s.caps {
		m.capacity = 1 + s.r.IntN(3)
	}
	if s.racks > 0 {
		m.rack = "r" + strconv.Itoa(s.r.IntN(s.racks))
	}
	s.members = append(s.members, m)
	s.logf("%s joins", m.id)
}

// event applies one random membership change.
func (s *simGroup) event() {
	if len(s.members) == 0 {
		s.join()
		return
	}
	i := s.r.IntN(len(s.members))
	m := s.members[i]
	switch x := s.r.IntN(10); {
	case x < 4:
		s.join()
	case x < 6:
		s.members = slices.Delete(s.members, i, i+1)
		s.logf("%s crashes", m.id)
	case x < 8:
		m.leaving = true
		s.logf("%s announces it is leaving", m.id)
	default:
		// A restart: same ID, empty state (a new process without local state).
		*m = simMember{id: m.id, capacity: m.capacity, rack: m.rack}
		s.logf("%s restarts without state", m.id)
	}
}

// rebalance runs one rebalance: every member reports, Assign (checked),
// every member applies its assignment, empty leaving members shut down. It
// returns the reports and the output.
func (s *simGroup) rebalance() ([]MemberMetadata, []Assignment) {
	s.round++
	in := make([]MemberMetadata, len(s.members))
	for i, m := range s.members {
		for t := range m.learning {
			m.learning[t]--
		}
		in[i] = m.report(s.a.Options())
	}
	s.r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] }) // whoever leads
	out, vs := checkAssign(s.a, in, s.r)
	s.logf("round %d input:\n%sround %d output:\n%s", s.round, Rebalance{Tasks: s.a.Tasks(), Options: s.a.Options(), Members: in}, s.round, FormatAssignments(out))
	if len(vs) > 0 {
		s.t.Fatalf("round %d: %d violations:\n%s\nhistory (last rounds):\n%s", s.round, len(vs), joinViolations(vs), strings.Join(s.log, "\n"))
	}
	byID := map[string]Assignment{}
	for _, a := range out {
		byID[a.MemberID] = a
	}
	kept := s.members[:0]
	for _, m := range s.members {
		m.apply(byID[m.id], s.r, s.k)
		if m.leaving && len(m.assigned) == 0 {
			s.logf("%s shuts down", m.id)
			continue
		}
		kept = append(kept, m)
	}
	s.members = kept
	return in, out
}

func (s *simGroup) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
	if len(s.log) > 12 {
		s.log = s.log[len(s.log)-12:]
	}
}

// convergenceBound is the most rebalances a group may need to reach its
// fixed point, counting the one right after its last membership change,
// when every learner is ready within k rebalances and there is no learner
// budget.
//
// Derivation. A learner placed at rebalance r is ready and promoted at the
// latest at r+k; its old owner drops the task with that assignment, so the
// next rebalance can see output == input. If rebalance 1 can place every
// learner the group needs (a clean start: members joined a settled group),
// the last promotion is at 1+k and the fixed point at k+2 (the design's
// Scale Up walkthrough: k = 2 there, 4 rebalances). After arbitrary changes
// rebalance 1 may not be able to: a task it gives an orphan's warm member,
// or promotes, is not moved again in the same rebalance, and a learner kept
// from before pins its member's load. Learners from before rebalance 1 are
// promoted by rebalance k, so the balancing learners are placed by k+1
// (by 2 for an orphan), promoted by 2k+1, and the fixed point is at 2k+2.
func convergenceBound(k int, clean bool) int {
	if clean {
		return k + 2
	}
	return 2*k + 2
}

// settle runs rebalances without membership changes until the fixed point
// and returns how many it took. It fails the test past bound.
func (s *simGroup) settle(bound int) int {
	for n := 1; ; n++ {
		in, out := s.rebalance()
		if sameAsInput(in, out) {
			s.checkBalanced(in, out)
			return n
		}
		if n >= bound {
			s.t.Fatalf("round %d: no fixed point after %d quiet rebalances (bound %d, k %d)\nhistory (last rounds):\n%s",
				s.round, n, bound, s.k, strings.Join(s.log, "\n"))
		}
	}
}

// checkBalanced checks the fixed point: loads balanced by capacity and no
// leaving member holding anything while a member stays.
func (s *simGroup) checkBalanced(in []MemberMetadata, out []Assignment) {
	if d := imbalance(in, out); d != "" {
		s.t.Fatalf("round %d: fixed point not balanced: %s\nhistory:\n%s", s.round, d, strings.Join(s.log, "\n"))
	}
	staying := slices.ContainsFunc(in, func(m MemberMetadata) bool { return !m.Leaving })
	for i, a := range out {
		if staying && len(a.Assigned) > 0 && memberByID(in, a.MemberID).Leaving {
			s.t.Fatalf("round %d: fixed point leaves %v on leaving member %s", s.round, out[i].Assigned, a.MemberID)
		}
	}
}

func memberByID(in []MemberMetadata, id string) MemberMetadata {
	for _, m := range in {
		if m.ID == id {
			return m
		}
	}
	return MemberMetadata{}
}

// historySpec draws one history's topology and options.
func newSimGroup(t *testing.T, r *rand.Rand, features bool) *simGroup {
	nt := r.IntN(60)
	pStateless := chance(r, 0, 0.2, 1)
	var tasks []Task
	for i := range nt {
		tasks = append(tasks, Task{ID: "T" + strconv.Itoa(i+1), Stateful: r.Float64() >= pStateless})
	}
	opts := Options{Standbys: r.IntN(3)}
	s := &simGroup{t: t, r: r, k: 1 + r.IntN(4)}
	if features {
		s.caps = r.IntN(2) == 0
		if r.IntN(2) == 0 {
			s.racks = 1 + r.IntN(3)
		}
		if r.IntN(2) == 0 {
			opts.AcceptableLag = 100
		}
	}
	a, err := New(tasks, opts)
	if err != nil {
		t.Fatalf("New(%d tasks, %+v): %v", nt, opts, err)
	}
	s.a = a
	return s
}

// TestHistoryChaosAndConvergence runs histories of bursts of membership
// changes, each followed by a quiet spell that must reach the fixed point
// within convergenceBound. Invariants are checked at every rebalance.
func TestHistoryChaosAndConvergence(t *testing.T) {
	seed := baseSeed(t)
	n := runs(200, 5000)
	t.Logf("seed %d, %d histories", seed, n)
	type key struct {
		k     int
		clean bool
	}
	worst := map[key]int{} // most quiet rebalances seen
	rounds, spells := 0, 0
	for i := range n {
		r := rand.New(rand.NewPCG(seed+uint64(i), 3))
		s := newSimGroup(t, r, i%2 == 1)
		s.log = append(s.log, fmt.Sprintf("history %d (LEARNER_SEED=%d), k=%d", i, seed, s.k))
		for s.round < 300 {
			// A burst: membership changes at some rebalances.
			for range 1 + r.IntN(30) {
				for range r.IntN(3) {
					s.event()
				}
				s.rebalance()
			}
			// The quiet spell starts after arbitrary changes, or after
			// members joined a settled group (a clean start).
			clean := r.IntN(3) == 0
			if clean {
				s.settle(convergenceBound(s.k, false))
				for range 1 + r.IntN(3) {
					s.join()
				}
			} else if !slices.ContainsFunc(s.members, func(m *simMember) bool { return !m.leaving }) {
				s.join()
			}
			took := s.settle(convergenceBound(s.k, clean))
			kk := key{s.k, clean}
			worst[kk] = max(worst[kk], took)
			spells++
		}
		rounds += s.round
	}
	t.Logf("%d rebalances, %d quiet spells; most rebalances to the fixed point (k: clean start, after chaos):", rounds, spells)
	for k := 1; k <= 4; k++ {
		t.Logf("  k=%d: %d (bound %d), %d (bound %d)", k, worst[key{k, true}], convergenceBound(k, true),
			worst[key{k, false}], convergenceBound(k, false))
	}
}
