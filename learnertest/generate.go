package learnertest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/learnerassignor/learner"
)

// ErrInvalidArgument is wrapped by the errors of Generate, NewHistory and
// History.Run for arguments they cannot draw or run with.
var ErrInvalidArgument = errors.New("invalid argument")

// Spec bounds what Generate draws.
type Spec struct {
	// MaxMembers and MaxTasks bound the group's size, from 0 to what
	// Assign accepts (learner.MaxMembers, learner.MaxTasks); most groups
	// are much smaller (up to 8 members and 24 tasks, or 20 and 100).
	MaxMembers, MaxTasks int
	// Features adds capacities, a learner budget, lag-based readiness,
	// racks and subtopology IDs.
	Features bool
	// Extreme draws the numbers from the edges of their valid ranges, so
	// that overflow is searched for: capacities from ExtremeCapacities
	// (the same for every member of a calm group), lags and AcceptableLag
	// from ExtremeLags, and sometimes the largest Standbys New accepts
	// and a MaxLearners of MaxInt. It implies Features.
	Extreme bool
}

// ExtremeCapacities are the capacities Spec.Extreme draws from: the edges
// of [0, learner.MaxCapacity].
var ExtremeCapacities = []int{0, 1, 2, learner.MaxCapacity - 1, learner.MaxCapacity}

// ExtremeLags are the lags Spec.Extreme draws from: small ones, the edges
// of int32 and float64's exact integers, and the edge of int64.
var ExtremeLags = []int64{0, 1, 2, math.MaxInt32, 1 << 53, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}

// OutOfRangeCapacities are capacities Assign must reject: past
// learner.MaxCapacity up to the edge of int. Where int has 32 bits it is
// empty: learner.MaxCapacity is then the largest int.
var OutOfRangeCapacities = ints(learner.MaxCapacity+1, 1<<53, 1<<62, math.MaxInt64)

// ints returns the xs an int holds, so that a list of int64 edges
// compiles, and means the same, where int has 32 bits.
func ints(xs ...int64) []int {
	var out []int
	for _, x := range xs {
		if x <= math.MaxInt {
			out = append(out, int(x))
		}
	}
	return out
}

// pick returns a random element of xs.
func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// chance draws one of a few probabilities, so that every kind of group
// (none, some, most) shows up.
func chance(r *rand.Rand, ps ...float64) float64 { return ps[r.IntN(len(ps))] }

// Generate draws a valid group: every member ID unique, no task twice in one
// member's lists, Ready ⊆ Learning, one lag per task. Everything else is
// random, including conflicts the rules must resolve: tasks claimed by two
// members, assigned on one and revoked on another, orphans, learners of
// orphans, competing learners, tasks the topology does not have, leaving
// members, everyone leaving. A nil r, or a MaxMembers or MaxTasks out of
// its range, is an error wrapping ErrInvalidArgument.
func Generate(r *rand.Rand, spec Spec) (learner.Rebalance, error) {
	if err := spec.check(r); err != nil {
		return learner.Rebalance{}, err
	}
	spec.Features = spec.Features || spec.Extreme
	var g learner.Rebalance
	nm, nt := 0, 0
	switch x := r.IntN(20); {
	case x < 10:
		nm, nt = r.IntN(min(8, spec.MaxMembers)+1), r.IntN(min(24, spec.MaxTasks)+1)
	case x < 17:
		nm, nt = r.IntN(min(20, spec.MaxMembers)+1), r.IntN(min(100, spec.MaxTasks)+1)
	default:
		nm, nt = r.IntN(spec.MaxMembers+1), r.IntN(spec.MaxTasks+1)
	}

	subtopologies := spec.Features && r.IntN(2) == 0
	pStateless := chance(r, 0, 0, 0.3, 1)
	for _, id := range taskIDs(r, nt, subtopologies) {
		g.Tasks = append(g.Tasks, learner.Task{ID: id, Stateful: r.Float64() >= pStateless})
	}
	g.Options.Standbys = r.IntN(4)
	if spec.Features && r.IntN(3) == 0 {
		g.Options.MaxLearners = 1 + r.IntN(5)
	}
	if spec.Features && r.IntN(3) == 0 {
		g.Options.AcceptableLag = 100
	}
	if spec.Extreme {
		if r.IntN(2) == 0 {
			g.Options.AcceptableLag = pick(r, ExtremeLags)
		}
		if r.IntN(4) == 0 {
			g.Options.MaxLearners = math.MaxInt
		}
		if r.IntN(4) == 0 {
			g.Options.Standbys = learner.MaxStandbyReplicas / max(countStateful(g.Tasks), 1) // the largest New accepts
		}
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
	if spec.Features && !calm && r.IntN(2) == 0 {
		racks = 1 + r.IntN(3)
	}
	used := make([]map[string]bool, nm)
	calmCapacity := 0
	if spec.Extreme {
		calmCapacity = pick(r, ExtremeCapacities)
	}
	for i, n := range nums {
		m := learner.MemberMetadata{ID: "S" + strconv.Itoa(n+1), Leaving: r.Float64() < pLeaving}
		switch {
		case spec.Extreme && calm:
			m.Capacity = calmCapacity
		case spec.Extreme:
			m.Capacity = pick(r, ExtremeCapacities)
		case spec.Features && !calm && r.IntN(2) == 0:
			m.Capacity = r.IntN(5)
		}
		if racks > 0 {
			m.Rack = "r" + strconv.Itoa(r.IntN(racks))
		}
		g.Members = append(g.Members, m)
		used[i] = map[string]bool{}
	}
	if nm == 0 {
		return g, nil
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
			l := int64(r.IntN(250))
			if spec.Extreme {
				l = pick(r, ExtremeLags)
			}
			g.Members[m].Lag = append(g.Members[m].Lag, learner.TaskLag{Task: id, Lag: l})
		}
	}
	hold := func(id string) {
		m := free(id)
		if m < 0 {
			return
		}
		if r.Float64() < pRevoked {
			g.Members[m].Revoked = append(g.Members[m].Revoked, id)
		} else {
			g.Members[m].Assigned = append(g.Members[m].Assigned, id)
		}
	}
	learn := func(id string) {
		m := free(id)
		if m < 0 {
			return
		}
		g.Members[m].Learning = append(g.Members[m].Learning, id)
		if r.Float64() < pReady {
			g.Members[m].Ready = append(g.Members[m].Ready, id)
		}
		lag(m, id)
	}
	for _, task := range g.Tasks {
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
					g.Members[m].Standby = append(g.Members[m].Standby, id)
					lag(m, id)
				}
			}
		}
	}
	// Tasks the topology does not have (removed by a topology change).
	if pUnknown := chance(r, 0, 0, 0.2); pUnknown > 0 {
		for m := range g.Members {
			if r.Float64() >= pUnknown {
				continue
			}
			id := "X" + strconv.Itoa(r.IntN(5))
			if used[m][id] {
				continue
			}
			used[m][id] = true
			mm := &g.Members[m]
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
	for m := range g.Members {
		mm := &g.Members[m]
		r.Shuffle(len(mm.Assigned), func(i, j int) { mm.Assigned[i], mm.Assigned[j] = mm.Assigned[j], mm.Assigned[i] })
	}
	return g, nil
}

// check returns Generate's error for drawing from r with spec: the sizes
// are bounded before Generate draws from 0 to them (r.IntN(n+1)).
func (spec Spec) check(r *rand.Rand) error {
	switch {
	case r == nil:
		return fmt.Errorf("learnertest: Generate with a nil *rand.Rand: %w", ErrInvalidArgument)
	case spec.MaxMembers < 0 || spec.MaxMembers > learner.MaxMembers:
		return fmt.Errorf("learnertest: Spec.MaxMembers is %d, want 0 to %d: %w", spec.MaxMembers, learner.MaxMembers, ErrInvalidArgument)
	case spec.MaxTasks < 0 || spec.MaxTasks > learner.MaxTasks:
		return fmt.Errorf("learnertest: Spec.MaxTasks is %d, want 0 to %d: %w", spec.MaxTasks, learner.MaxTasks, ErrInvalidArgument)
	}
	return nil
}

func countStateful(tasks []learner.Task) int {
	n := 0
	for _, t := range tasks {
		if t.Stateful {
			n++
		}
	}
	return n
}

// taskIDs draws the IDs of a topology of nt tasks: T1, T2, ... or, with
// subtopologies, Kafka Streams' "<subtopology>_<partition>" IDs, either
// interleaved (0_0, 1_0, 2_0, 0_1, ...) or, as Kafka Streams lists them, in
// topology order: each subtopology's partitions together, in subtopologies
// of different sizes. The assignor takes other paths for the second (its
// subtopology lookup, its one-each givers), so both must be drawn.
func taskIDs(r *rand.Rand, nt int, subtopologies bool) []string {
	var cuts []int // in topology order: subtopology s is tasks cuts[s] to cuts[s+1]-1
	if subtopologies && r.IntN(2) == 0 {
		cuts = []int{0, nt}
		for range r.IntN(4) {
			cuts = append(cuts, r.IntN(nt+1))
		}
		slices.Sort(cuts)
	}
	ids := make([]string, nt)
	for i := range ids {
		switch {
		case cuts != nil:
			s, _ := slices.BinarySearch(cuts, i+1) // after the last cut at or before i
			ids[i] = fmt.Sprintf("%d_%d", s-1, i-cuts[s-1])
		case subtopologies:
			ids[i] = fmt.Sprintf("%d_%d", i%3, i/3)
		default:
			ids[i] = "T" + strconv.Itoa(i+1)
		}
	}
	return ids
}

// AllTraits returns every situation Traits recognises: a test that counts
// them can fail when a drifted generator stops producing one.
func AllTraits() []string { return slices.Clone(allTraits) }

var allTraits = []string{
	"no member", "an orphan", "an orphan with a learner", "an orphan with a standby", "a task claimed twice",
	"a task revoked at join", "a ready learner", "a not-ready learner", "competing learners", "a ready-by-lag learner",
	"an unknown task", "a leaving member", "every member leaving", "standbys", "reported standbys", "a learner budget",
	"capacities", "racks", "subtopology IDs", "subtopologies in topology order", "stateless tasks", "the band checked", "a learner-free balanced output",
}

// Traits lists the situations of AllTraits that g contains; the last two
// run Assign on g.
func Traits(g learner.Rebalance) []string {
	v := newInputView(g.Tasks, g.Options, g.Members)
	var ts []string
	add := func(ok bool, trait string) {
		if ok {
			ts = append(ts, trait)
		}
	}
	claims := make([]int, len(g.Tasks))
	revoked, unknown, capacity, racks, leaving, reported := false, false, false, false, false, false
	for _, m := range g.Members {
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
	inOrder, lastSub := len(g.Tasks) > 1, -1 // every ID of the form, subtopologies in order
	for t, task := range g.Tasks {
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
		s, ok := subtopologyOf(task.ID)
		sub = sub || ok
		inOrder = inOrder && ok && s >= lastSub
		lastSub = s
	}
	add(len(g.Members) == 0, "no member")
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
	add(len(g.Members) > 0 && v.staying == 0, "every member leaving")
	add(g.Options.Standbys > 0, "standbys")
	add(reported, "reported standbys")
	add(g.Options.MaxLearners > 0, "a learner budget")
	add(capacity, "capacities")
	add(racks, "racks")
	add(sub, "subtopology IDs")
	add(inOrder && lastSub > 0, "subtopologies in topology order")
	add(stateless, "stateless tasks")
	if a, err := learner.New(g.Tasks, g.Options); err == nil {
		if out, err := a.Assign(g.Members); err == nil {
			add(bandApplies(v, out), "the band checked")
			add(!hasLearners(out) && imbalance(g.Members, out) == "", "a learner-free balanced output")
		}
	}
	return ts
}

// CheckRebalance builds an Assignor for g and runs CheckAssign on g's
// members; seed drives the shuffles, so a check is reproducible.
func CheckRebalance(g learner.Rebalance, seed uint64) []Violation {
	a, err := learner.New(g.Tasks, g.Options)
	if err != nil {
		return []Violation{{"error", "", "", "New: " + err.Error()}}
	}
	_, vs := CheckAssign(g.Tasks, g.Options, a.Assign, g.Members, rand.New(rand.NewPCG(seed, 2)))
	return vs
}

// HasRule reports whether vs holds a violation of rule.
func HasRule(vs []Violation, rule string) bool {
	return slices.ContainsFunc(vs, func(v Violation) bool { return v.Rule == rule })
}

// FormatViolations returns vs one to a line, indented, for a failure
// message.
func FormatViolations(vs []Violation) string {
	s := ""
	for _, v := range vs {
		s += "  " + v.String() + "\n"
	}
	return s
}

// Shrink returns a smaller group that still fails: it keeps taking the
// first one-step-smaller candidate that fails (halves of the members or
// tasks first, down to single tasks and fields), within a budget of calls.
// Groups stay valid: a task removed from the topology is removed from every
// list too.
func Shrink(g learner.Rebalance, fails func(learner.Rebalance) bool) learner.Rebalance {
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
func shrinkCandidates(g learner.Rebalance) []learner.Rebalance {
	var cs []learner.Rebalance
	// Halves, quarters, ... of the members and of the tasks, then single ones.
	for size := max(len(g.Members), len(g.Tasks)) / 2; size >= 1; size /= 2 {
		for i := 0; i+size <= len(g.Members); i += size {
			c := clone(g)
			c.Members = slices.Delete(c.Members, i, i+size)
			cs = append(cs, c)
		}
		for i := 0; i+size <= len(g.Tasks); i += size {
			c := clone(g)
			for _, task := range g.Tasks[i : i+size] {
				for j := range c.Members {
					c.Members[j] = WithoutTask(c.Members[j], task.ID)
				}
			}
			c.Tasks = slices.Delete(c.Tasks, i, i+size)
			cs = append(cs, c)
		}
	}
	if g.Options != (learner.Options{}) {
		for _, o := range []learner.Options{{}, {Standbys: g.Options.Standbys}, {MaxLearners: g.Options.MaxLearners}, {AcceptableLag: g.Options.AcceptableLag}} {
			if o != g.Options {
				c := clone(g)
				c.Options = o
				cs = append(cs, c)
			}
		}
	}
	for i, m := range g.Members {
		ids := slices.Concat(m.Assigned, m.Revoked, m.Learning, m.Standby)
		for _, id := range ids {
			c := clone(g)
			c.Members[i] = WithoutTask(c.Members[i], id)
			cs = append(cs, c)
		}
		if m.Capacity != 0 || m.Rack != "" || m.Leaving || len(m.Lag) > 0 || len(m.Ready) > 0 {
			for _, f := range []func(*learner.MemberMetadata){
				func(m *learner.MemberMetadata) { m.Capacity = 0 }, func(m *learner.MemberMetadata) { m.Rack = "" },
				func(m *learner.MemberMetadata) { m.Leaving = false }, func(m *learner.MemberMetadata) { m.Lag = nil },
				func(m *learner.MemberMetadata) { m.Ready = nil },
			} {
				c := clone(g)
				f(&c.Members[i])
				if !sameMember(c.Members[i], g.Members[i]) {
					cs = append(cs, c)
				}
			}
		}
	}
	return cs
}

func clone(g learner.Rebalance) learner.Rebalance {
	return learner.Rebalance{Tasks: slices.Clone(g.Tasks), Options: g.Options, Members: CloneMembers(g.Members)}
}

// WithoutTask returns m with id removed from every list (lags included).
func WithoutTask(m learner.MemberMetadata, id string) learner.MemberMetadata {
	drop := func(l []string) []string {
		return slices.DeleteFunc(slices.Clone(l), func(s string) bool { return s == id })
	}
	m.Assigned, m.Revoked, m.Learning, m.Ready, m.Standby = drop(m.Assigned), drop(m.Revoked), drop(m.Learning), drop(m.Ready), drop(m.Standby)
	m.Lag = slices.DeleteFunc(slices.Clone(m.Lag), func(l learner.TaskLag) bool { return l.Task == id })
	return m
}

// subtopologyOf returns the subtopology of a task ID of the Kafka Streams
// form "<subtopology>_<partition>", both numbers in canonical decimal (the
// IDs the assignor spreads by subtopology).
func subtopologyOf(id string) (int, bool) {
	s, p, ok := strings.Cut(id, "_")
	sub, okSub := canonical(s)
	_, okPart := canonical(p)
	return sub, ok && okSub && okPart
}

func canonical(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == s
}
