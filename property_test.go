package learner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// Property tests: Assign on generated groups must satisfy every invariant
// of invariants_test.go. Groups are drawn by a small seeded generator (no
// dependency; each group is reproducible from one number). A failure prints
// the seed and a shrunk input in the notation.
//
//	go test -run Property                       # 2,000 groups (CI)
//	LEARNER_LONG=1 go test -run Property        # 100,000 groups
//	LEARNER_SEED=123 go test -run Property      # replay a printed seed

// runs returns n, or long under LEARNER_LONG=1.
func runs(n, long int) int {
	if os.Getenv("LEARNER_LONG") != "" {
		return long
	}
	return n
}

// baseSeed returns LEARNER_SEED, or a fresh random seed. It is logged, so a
// failing run prints it.
func baseSeed(t testing.TB) uint64 {
	if s := os.Getenv("LEARNER_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LEARNER_SEED=%q: %v", s, err)
		}
		return n
	}
	return rand.Uint64() >> 1
}

// group is one generated rebalance: the topology, options and reports.
type genGroup struct {
	tasks   []Task
	opts    Options
	members []MemberMetadata
}

func (g genGroup) String() string {
	return Rebalance{Tasks: g.tasks, Options: g.opts, Members: g.members}.String()
}

// genSpec bounds what the generator draws.
type genSpec struct {
	maxMembers, maxTasks int
	features             bool // capacity, learner budget, lag, racks, subtopology IDs (issue 4)
}

// chance draws one of a few probabilities, so that every kind of group
// (none, some, most) shows up.
func chance(r *rand.Rand, ps ...float64) float64 { return ps[r.IntN(len(ps))] }

// generate draws a valid group: every member ID unique, no task twice in one
// member's lists, Ready ⊆ Learning, one lag per task. Everything else is
// random, including conflicts the rules must resolve: tasks claimed by two
// members, assigned on one and revoked on another, orphans, learners of
// orphans, competing learners, tasks the topology does not have, leaving
// members, everyone leaving.
func generate(r *rand.Rand, spec genSpec) genGroup {
	var g genGroup
	nm, nt := 0, 0
	switch x := r.IntN(20); {
	case x < 10:
		nm, nt = r.IntN(min(8, spec.maxMembers)+1), r.IntN(min(24, spec.maxTasks)+1)
	case x < 17:
		nm, nt = r.IntN(min(20, spec.maxMembers)+1), r.IntN(min(100, spec.maxTasks)+1)
	default:
		nm, nt = r.IntN(spec.maxMembers+1), r.IntN(spec.maxTasks+1)
	}

	subtopologies := spec.features && r.IntN(2) == 0
	pStateless := chance(r, 0, 0, 0.3, 1)
	for i := range nt {
		id := "T" + strconv.Itoa(i+1)
		if subtopologies {
			id = fmt.Sprintf("%d_%d", i%3, i/3)
		}
		g.tasks = append(g.tasks, Task{ID: id, Stateful: r.Float64() >= pStateless})
	}
	g.opts.Standbys = r.IntN(4)
	if spec.features && r.IntN(3) == 0 {
		g.opts.MaxLearners = 1 + r.IntN(5)
	}
	if spec.features && r.IntN(3) == 0 {
		g.opts.AcceptableLag = 100
	}

	// Member IDs: distinct numbers in random order, so natural order matters.
	nums := r.Perm(3 * (nm + 1))[:nm]
	pLeaving := chance(r, 0, 0, 0.2, 0.5, 1)
	racks := 0
	if spec.features && r.IntN(2) == 0 {
		racks = 1 + r.IntN(3)
	}
	used := make([]map[string]bool, nm)
	for i, n := range nums {
		m := MemberMetadata{ID: "S" + strconv.Itoa(n+1), Leaving: r.Float64() < pLeaving}
		if spec.features && r.IntN(2) == 0 {
			m.Capacity = r.IntN(5)
		}
		if racks > 0 {
			m.Rack = "r" + strconv.Itoa(r.IntN(racks))
		}
		g.members = append(g.members, m)
		used[i] = map[string]bool{}
	}
	if nm == 0 {
		return g
	}

	// free returns a random member that does not list id yet, or -1.
	free := func(id string) int {
		for range 4 {
			if m := r.IntN(nm); !used[m][id] {
				used[m][id] = true
				return m
			}
		}
		return -1
	}
	pOrphan, pOverlap := chance(r, 0, 0.05, 0.5, 1), chance(r, 0, 0, 0.05, 0.3)
	pRevoked, pLearner := chance(r, 0, 0.1, 0.5), chance(r, 0, 0.1, 0.4)
	pReady, pStandby := chance(r, 0, 0.5, 1), chance(r, 0, 0.2, 0.6)
	pLag := chance(r, 0, 0.5)
	lag := func(m int, id string) {
		if r.Float64() < pLag {
			g.members[m].Lag = append(g.members[m].Lag, TaskLag{Task: id, Lag: int64(r.IntN(250))})
		}
	}
	hold := func(id string) {
		m := free(id)
		if m < 0 {
			return
		}
		if r.Float64() < pRevoked {
			g.members[m].Revoked = append(g.members[m].Revoked, id)
		} else {
			g.members[m].Assigned = append(g.members[m].Assigned, id)
		}
	}
	learn := func(id string) {
		m := free(id)
		if m < 0 {
			return
		}
		g.members[m].Learning = append(g.members[m].Learning, id)
		if r.Float64() < pReady {
			g.members[m].Ready = append(g.members[m].Ready, id)
		}
		lag(m, id)
	}
	for _, task := range g.tasks {
		id := task.ID
		if r.Float64() >= pOrphan {
			hold(id)
			if r.Float64() < pOverlap {
				hold(id)
			}
		}
		if r.Float64() < pLearner {
			learn(id)
			if r.Float64() < pOverlap {
				learn(id)
			}
		}
		for range r.IntN(4) {
			if r.Float64() < pStandby {
				if m := free(id); m >= 0 {
					g.members[m].Standby = append(g.members[m].Standby, id)
					lag(m, id)
				}
			}
		}
	}
	// Tasks the topology does not have (removed by a topology change).
	if pUnknown := chance(r, 0, 0, 0.2); pUnknown > 0 {
		for m := range g.members {
			if r.Float64() >= pUnknown {
				continue
			}
			id := "X" + strconv.Itoa(r.IntN(5))
			if used[m][id] {
				continue
			}
			used[m][id] = true
			mm := &g.members[m]
			switch r.IntN(4) {
			case 0:
				mm.Assigned = append(mm.Assigned, id)
			case 1:
				mm.Revoked = append(mm.Revoked, id)
			case 2:
				mm.Learning = append(mm.Learning, id)
				mm.Ready = append(mm.Ready, id)
			default:
				mm.Standby = append(mm.Standby, id)
			}
		}
	}
	for m := range g.members {
		mm := &g.members[m]
		r.Shuffle(len(mm.Assigned), func(i, j int) { mm.Assigned[i], mm.Assigned[j] = mm.Assigned[j], mm.Assigned[i] })
	}
	return g
}

// propertySpec is the generator's range for the property tests: up to 60
// members and 400 tasks with every feature of issue 4.
var propertySpec = genSpec{maxMembers: 60, maxTasks: 400, features: true}

// TestPropertyGeneratedGroups runs Assign on generated groups and checks
// every invariant, including permutation invariance and no mutation.
func TestPropertyGeneratedGroups(t *testing.T) {
	seed := baseSeed(t)
	n := runs(2000, 100000)
	t.Logf("seed %d, %d groups", seed, n)
	failures := 0
	for i := range n {
		s := seed + uint64(i)
		g := generate(rand.New(rand.NewPCG(s, 1)), propertySpec)
		vs := checkGroup(g, s)
		if len(vs) == 0 {
			continue
		}
		small := shrinkGroup(g, func(h genGroup) bool { return hasRule(checkGroup(h, s), vs[0].rule) })
		t.Errorf("group %d (LEARNER_SEED=%d): %d violations, first: %v\nshrunk input:\n%s\nits violations:\n%s",
			i, seed, len(vs), vs[0], small, joinViolations(checkGroup(small, s)))
		if failures++; failures == 3 {
			t.FailNow()
		}
	}
}

// checkGroup runs checkAssign on g; the seed drives the shuffles.
func checkGroup(g genGroup, seed uint64) []violation {
	a, err := New(g.tasks, g.opts)
	if err != nil {
		return []violation{{"error", "", "", "New: " + err.Error()}}
	}
	_, vs := checkAssign(a, g.members, rand.New(rand.NewPCG(seed, 2)))
	return vs
}

func hasRule(vs []violation, rule string) bool {
	return slices.ContainsFunc(vs, func(v violation) bool { return v.rule == rule })
}

func joinViolations(vs []violation) string {
	s := ""
	for _, v := range vs {
		s += "  " + v.String() + "\n"
	}
	return s
}

// TestPropertyStableOutputIsFixedPoint: an output with no learners and
// balanced loads is the balanced stage, so reporting it back must give it
// back unchanged (rule 7): same Assigned and Standby, nothing revoked, no
// learners. (A learner-free output need not be balanced: orphans go to a
// member with their state whatever its load, and move only next round.)
func TestPropertyStableOutputIsFixedPoint(t *testing.T) {
	seed := baseSeed(t)
	n := runs(1000, 50000)
	t.Logf("seed %d, %d groups", seed, n)
	checked := 0
	for i := range n {
		s := seed + uint64(i)
		g := generate(rand.New(rand.NewPCG(s, 1)), propertySpec)
		if failsFixedPoint(g) == "" {
			if a, err := New(g.tasks, g.opts); err == nil {
				if out, err := a.Assign(g.members); err == nil && !hasLearners(out) && imbalance(g.members, out) == "" {
					checked++
				}
			}
			continue
		}
		small := shrinkGroup(g, func(h genGroup) bool { return failsFixedPoint(h) != "" })
		t.Fatalf("group %d (LEARNER_SEED=%d): %s\nshrunk input:\n%s\n%s", i, seed, failsFixedPoint(g), small, failsFixedPoint(small))
	}
	if checked < n/10 {
		t.Errorf("only %d of %d groups reached a learner-free output: the generator no longer tests this", checked, n)
	}
}

func hasLearners(out []Assignment) bool {
	return slices.ContainsFunc(out, func(a Assignment) bool { return len(a.Learning) > 0 })
}

// failsFixedPoint describes how g's learner-free output fails to be a fixed
// point, or returns "".
func failsFixedPoint(g genGroup) string {
	a, err := New(g.tasks, g.opts)
	if err != nil {
		return ""
	}
	out, err := a.Assign(g.members)
	if err != nil || hasLearners(out) || imbalance(g.members, out) != "" {
		return ""
	}
	next := reportBack(g.members, out)
	again, err := a.Assign(next)
	if err != nil {
		return "Assign(stable output) failed: " + err.Error()
	}
	for i, b := range again {
		x := out[i]
		if !slices.Equal(x.Assigned, b.Assigned) || !slices.Equal(x.Standby, b.Standby) || len(b.Revoked) > 0 || len(b.Learning) > 0 {
			return fmt.Sprintf("Assign(its own stable output) = %s, want %s\nfirst output:\n%s",
				FormatAssignment(b), FormatAssignment(Assignment{MemberID: x.MemberID, Assigned: x.Assigned, Standby: x.Standby}), FormatAssignments(out))
		}
	}
	return ""
}

// reportBack is what members report after applying a learner-free output:
// they run Assigned, keep Standby, and nothing else.
func reportBack(in []MemberMetadata, out []Assignment) []MemberMetadata {
	byID := map[string]MemberMetadata{}
	for _, m := range in {
		byID[m.ID] = m
	}
	next := make([]MemberMetadata, len(out))
	for i, a := range out {
		m := byID[a.MemberID]
		next[i] = MemberMetadata{ID: a.MemberID, Assigned: slices.Clone(a.Assigned), Standby: slices.Clone(a.Standby),
			Leaving: m.Leaving, Capacity: m.Capacity, Rack: m.Rack}
	}
	return next
}

// shrinkGroup returns a smaller group that still fails: members, tasks and
// list entries are removed one at a time while fails stays true. It keeps
// the group valid (a task removed from the topology is removed from every
// list too).
func shrinkGroup(g genGroup, fails func(genGroup) bool) genGroup {
	for budget := 5000; budget > 0; {
		progress := false
		for _, c := range shrinkCandidates(g) {
			if budget--; budget <= 0 {
				break
			}
			if fails(c) {
				g, progress = c, true
				break
			}
		}
		if !progress {
			break
		}
	}
	return g
}

// shrinkCandidates lists groups one step smaller than g, biggest steps first.
func shrinkCandidates(g genGroup) []genGroup {
	var cs []genGroup
	// Halves, quarters, ... of the members and of the tasks, then single ones.
	for size := max(len(g.members), len(g.tasks)) / 2; size >= 1; size /= 2 {
		for i := 0; i+size <= len(g.members); i += size {
			c := g.clone()
			c.members = slices.Delete(c.members, i, i+size)
			cs = append(cs, c)
		}
		for i := 0; i+size <= len(g.tasks); i += size {
			c := g.clone()
			for _, task := range g.tasks[i : i+size] {
				for j := range c.members {
					c.members[j] = withoutTask(c.members[j], task.ID)
				}
			}
			c.tasks = slices.Delete(c.tasks, i, i+size)
			cs = append(cs, c)
		}
	}
	if g.opts != (Options{}) {
		for _, o := range []Options{{}, {Standbys: g.opts.Standbys}, {MaxLearners: g.opts.MaxLearners}, {AcceptableLag: g.opts.AcceptableLag}} {
			if o != g.opts {
				c := g.clone()
				c.opts = o
				cs = append(cs, c)
			}
		}
	}
	for i, m := range g.members {
		ids := slices.Concat(m.Assigned, m.Revoked, m.Learning, m.Standby)
		for _, id := range ids {
			c := g.clone()
			c.members[i] = withoutTask(c.members[i], id)
			cs = append(cs, c)
		}
		if m.Capacity != 0 || m.Rack != "" || m.Leaving || len(m.Lag) > 0 || len(m.Ready) > 0 {
			for _, f := range []func(*MemberMetadata){
				func(m *MemberMetadata) { m.Capacity = 0 }, func(m *MemberMetadata) { m.Rack = "" },
				func(m *MemberMetadata) { m.Leaving = false }, func(m *MemberMetadata) { m.Lag = nil },
				func(m *MemberMetadata) { m.Ready = nil },
			} {
				c := g.clone()
				f(&c.members[i])
				if !slices.EqualFunc(c.members, g.members, func(a, b MemberMetadata) bool { return a.ID == b.ID && sameMember(a, b) }) {
					cs = append(cs, c)
				}
			}
		}
	}
	return cs
}

func sameMember(a, b MemberMetadata) bool {
	return a.Capacity == b.Capacity && a.Rack == b.Rack && a.Leaving == b.Leaving && len(a.Lag) == len(b.Lag) && len(a.Ready) == len(b.Ready)
}

func (g genGroup) clone() genGroup {
	return genGroup{tasks: slices.Clone(g.tasks), opts: g.opts, members: deepCopyMembers(g.members)}
}

// withoutTask removes id from every list of m.
func withoutTask(m MemberMetadata, id string) MemberMetadata {
	drop := func(l []string) []string {
		return slices.DeleteFunc(slices.Clone(l), func(s string) bool { return s == id })
	}
	m.Assigned, m.Revoked, m.Learning, m.Ready, m.Standby = drop(m.Assigned), drop(m.Revoked), drop(m.Learning), drop(m.Ready), drop(m.Standby)
	m.Lag = slices.DeleteFunc(slices.Clone(m.Lag), func(l TaskLag) bool { return l.Task == id })
	return m
}

// TestPropertyLearnerFreeOutputIsBalanced: Assign places learners (or moves
// stateless tasks) until no move lowers the imbalance, so an output without
// learners must be balanced (imbalance() == "") — unless something it may
// not move this round made it so: learners in the input (promoted or kept
// tasks are not moved again), orphans given to a member with their state,
// or tasks handed over by leaving members.
func TestPropertyLearnerFreeOutputIsBalanced(t *testing.T) {
	seed := baseSeed(t)
	n := runs(1000, 50000)
	t.Logf("seed %d, %d groups", seed, n)
	checked := 0
	for i := range n {
		s := seed + uint64(i)
		g := generate(rand.New(rand.NewPCG(s, 1)), propertySpec)
		if !freeToBalance(g) {
			continue
		}
		checked++
		if failsBalance(g) == "" {
			continue
		}
		small := shrinkGroup(g, func(h genGroup) bool { return freeToBalance(h) && failsBalance(h) != "" })
		t.Fatalf("group %d (LEARNER_SEED=%d): %s\nshrunk input:\n%s\n%s", i, seed, failsBalance(g), small, failsBalance(small))
	}
	if checked < n/10 {
		t.Errorf("only %d of %d groups were free to balance: the generator no longer tests this", checked, n)
	}
}

// freeToBalance reports whether Assign may move any task of g: no learners,
// no leaving member holding tasks, no orphan with local state somewhere.
func freeToBalance(g genGroup) bool {
	v := newInputView(g.tasks, g.opts, g.members)
	for _, m := range g.members {
		if len(m.Learning) > 0 || m.Leaving && len(m.Assigned)+len(m.Revoked) > 0 {
			return false
		}
	}
	for t, o := range v.owner {
		if o < 0 && len(v.warm[t]) > 0 {
			return false
		}
	}
	return true
}

// failsBalance describes how g's learner-free output is unbalanced, or returns "".
func failsBalance(g genGroup) string {
	a, err := New(g.tasks, g.opts)
	if err != nil {
		return ""
	}
	out, err := a.Assign(g.members)
	if err != nil || hasLearners(out) {
		return ""
	}
	if d := imbalance(g.members, out); d != "" {
		return "learner-free output not balanced: " + d + "\n" + FormatAssignments(out)
	}
	return ""
}
