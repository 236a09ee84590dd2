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
	return rand.Uint64()
}

// genGroup is one generated rebalance: the topology, the options and the
// members' reports.
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
	// One group in six is calm (a settled group that members joined):
	// no learners, orphans or leaving members, equal capacities, no racks.
	calm := r.IntN(6) == 0
	pLeaving := chance(r, 0, 0, 0, 0.2, 0.5, 1)
	if calm {
		pLeaving = 0
	}
	racks := 0
	if spec.features && !calm && r.IntN(2) == 0 {
		racks = 1 + r.IntN(3)
	}
	used := make([]map[string]bool, nm)
	for i, n := range nums {
		m := MemberMetadata{ID: "S" + strconv.Itoa(n+1), Leaving: r.Float64() < pLeaving}
		if spec.features && !calm && r.IntN(2) == 0 {
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
	if calm {
		pOrphan, pLearner = 0, 0
	}
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
// every invariant (checkAssign). It also counts what the groups contained
// and fails if some situation never came up: a generator that drifted would
// otherwise make the test pass without testing it.
func TestPropertyGeneratedGroups(t *testing.T) {
	seed := baseSeed(t)
	n := runs(2000, 100000)
	t.Logf("seed %d, %d groups", seed, n)
	seen := map[string]int{}
	failures := 0
	for i := range n {
		s := seed + uint64(i)
		g := generate(rand.New(rand.NewPCG(s, 1)), propertySpec)
		for _, trait := range traits(g) {
			seen[trait]++
		}
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
	for _, trait := range allTraits {
		t.Logf("%6d groups with %s", seen[trait], trait)
		if seen[trait] < n/200 {
			t.Errorf("only %d of %d groups with %s: the generator no longer tests it", seen[trait], n, trait)
		}
	}
}

var allTraits = []string{
	"no member", "an orphan", "an orphan with a learner", "an orphan with a standby", "a task claimed twice",
	"a task revoked at join", "a ready learner", "a not-ready learner", "competing learners", "a ready-by-lag learner",
	"an unknown task", "a leaving member", "every member leaving", "standbys", "reported standbys", "a learner budget",
	"capacities", "racks", "subtopology IDs", "stateless tasks", "the band checked", "a learner-free balanced output",
}

// traits lists the situations of allTraits that g contains.
func traits(g genGroup) []string {
	v := newInputView(g.tasks, g.opts, g.members)
	var ts []string
	add := func(ok bool, trait string) {
		if ok {
			ts = append(ts, trait)
		}
	}
	claims := make([]int, len(g.tasks))
	revoked, unknown, capacity, racks, leaving, reported := false, false, false, false, false, false
	for _, m := range g.members {
		for _, id := range slices.Concat(m.Assigned, m.Revoked) {
			if t, ok := v.taskIdx[id]; ok {
				claims[t]++
			}
		}
		for _, id := range slices.Concat(m.Assigned, m.Revoked, m.Learning, m.Standby) {
			_, ok := v.taskIdx[id]
			unknown = unknown || !ok
		}
		revoked = revoked || len(m.Revoked) > 0
		capacity = capacity || m.Capacity > 1
		racks = racks || m.Rack != ""
		leaving = leaving || m.Leaving
		reported = reported || len(m.Standby) > 0
	}
	var orphan, orphanLearner, orphanStandby, twice, ready, notReady, competing, lagReady, stateless, sub bool
	for t, task := range g.tasks {
		orphan = orphan || claims[t] == 0
		orphanLearner = orphanLearner || claims[t] == 0 && len(v.learners[t]) > 0
		orphanStandby = orphanStandby || claims[t] == 0 && len(v.standby[t]) > 0
		twice = twice || claims[t] > 1
		competing = competing || len(v.learners[t]) > 1
		for _, m := range v.learners[t] {
			flag := slices.Contains(v.members[m].Ready, task.ID)
			ready = ready || v.ready[m][t]
			notReady = notReady || !v.ready[m][t]
			lagReady = lagReady || v.ready[m][t] && !flag
		}
		stateless = stateless || !task.Stateful
		_, _, ok := parseSubtopologyID(task.ID)
		sub = sub || ok
	}
	add(len(g.members) == 0, "no member")
	add(orphan, "an orphan")
	add(orphanLearner, "an orphan with a learner")
	add(orphanStandby, "an orphan with a standby")
	add(twice, "a task claimed twice")
	add(revoked, "a task revoked at join")
	add(ready, "a ready learner")
	add(notReady, "a not-ready learner")
	add(competing, "competing learners")
	add(lagReady, "a ready-by-lag learner")
	add(unknown, "an unknown task")
	add(leaving, "a leaving member")
	add(len(g.members) > 0 && v.staying == 0, "every member leaving")
	add(g.opts.Standbys > 0, "standbys")
	add(reported, "reported standbys")
	add(g.opts.MaxLearners > 0, "a learner budget")
	add(capacity, "capacities")
	add(racks, "racks")
	add(sub, "subtopology IDs")
	add(stateless, "stateless tasks")
	if a, err := New(g.tasks, g.opts); err == nil {
		if out, err := a.Assign(g.members); err == nil {
			add(bandApplies(v, out), "the band checked")
			add(!hasLearners(out) && imbalance(g.members, out) == "", "a learner-free balanced output")
		}
	}
	return ts
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

// shrinkGroup returns a smaller group that still fails: it keeps taking the
// first one-step-smaller candidate (shrinkCandidates) that fails, within a
// budget of calls. Groups stay valid: a task removed from the topology is
// removed from every list too.
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
				if !sameMember(c.members[i], g.members[i]) {
					cs = append(cs, c)
				}
			}
		}
	}
	return cs
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
