package learner_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// Mutation check: the invariants are only worth something if a broken
// assignor breaks them. Each mutation wraps the real Assign in a test-only
// fault (drop a learner, duplicate a task, ignore readiness, ...) and
// TestMutationsAreCaught requires that the property tests or the histories
// report one of the rules the fault breaks. A group only counts when the
// real Assign does not break that rule on it, so a bug in the core cannot
// pass for a caught mutation.

// mutation is one deliberately broken assignor.
type mutation struct {
	name string
	want []string // the rules that must catch it (any of them)
	wrap func(a *Assignor) learnertest.AssignFunc
}

// afterAssign builds a mutation that edits a copy of the real output.
func afterAssign(edit func(in []MemberMetadata, out []Assignment, a *Assignor)) func(a *Assignor) learnertest.AssignFunc {
	return func(a *Assignor) learnertest.AssignFunc {
		return func(in []MemberMetadata) ([]Assignment, error) {
			out, err := a.Assign(in)
			if err != nil {
				return out, err
			}
			out = cloneAssignments(out)
			edit(in, out, a)
			return out, nil
		}
	}
}

// beforeAssign builds a mutation that hides something from the real Assign.
func beforeAssign(edit func(m *MemberMetadata)) func(a *Assignor) learnertest.AssignFunc {
	return func(a *Assignor) learnertest.AssignFunc {
		return func(in []MemberMetadata) ([]Assignment, error) {
			in = learnertest.CloneMembers(in)
			for i := range in {
				edit(&in[i])
			}
			return a.Assign(in)
		}
	}
}

func cloneAssignments(out []Assignment) []Assignment {
	c := slices.Clone(out)
	for i := range c {
		a := &c[i]
		a.Assigned, a.Revoked, a.Learning = slices.Clone(a.Assigned), slices.Clone(a.Revoked), slices.Clone(a.Learning)
		a.Learned, a.Standby = slices.Clone(a.Learned), slices.Clone(a.Standby)
	}
	return c
}

func remove(l []string, id string) []string {
	return slices.DeleteFunc(l, func(s string) bool { return s == id })
}

// firstWith returns the index of the first assignment whose list (picked by
// f) is not empty, or -1.
func firstWith(out []Assignment, f func(*Assignment) []string) int {
	return slices.IndexFunc(out, func(a Assignment) bool { return len(f(&a)) > 0 })
}

// owned returns the index of the member running task id, or -1.
func owned(out []Assignment, id string) int {
	return slices.IndexFunc(out, func(a Assignment) bool { return slices.Contains(a.Assigned, id) })
}

// insert adds id to l in topology order, so that a mutation breaks only
// the rule it is about, not the list order.
func insert(a *Assignor, l []string, id string) []string {
	l = append(l, id)
	slices.SortFunc(l, func(x, y string) int { return a.TaskIndex(x) - a.TaskIndex(y) })
	return l
}

func holds(a Assignment, id string) bool {
	return slices.Contains(a.Assigned, id) || slices.Contains(a.Learning, id) || slices.Contains(a.Standby, id)
}

func isLeaving(in []MemberMetadata, id string) bool {
	return slices.ContainsFunc(in, func(m MemberMetadata) bool { return m.ID == id && m.Leaving })
}

var mutations = []mutation{
	{"drop a learner", []string{"one-learner"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if i := firstWith(out, func(a *Assignment) []string { return a.Learning }); i >= 0 {
			out[i].Learning = out[i].Learning[1:]
		}
	})},
	{"drop a learner and its learned tag", []string{"keep-learner", "hand-over", "balanced"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if i := firstWith(out, func(a *Assignment) []string { return a.Learning }); i >= 0 {
			id := out[i].Learning[0]
			out[i].Learning = out[i].Learning[1:]
			if o := owned(out, id); o >= 0 {
				out[o].Learned = remove(out[o].Learned, id)
			}
		}
	})},
	{"duplicate a task", []string{"one-owner"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if i := firstWith(out, func(a *Assignment) []string { return a.Assigned }); i >= 0 && len(out) > 1 {
			j := (i + 1) % len(out)
			if id := out[i].Assigned[0]; !holds(out[j], id) {
				out[j].Assigned = insert(a, out[j].Assigned, id)
			}
		}
	})},
	{"lose a task", []string{"one-owner"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if i := firstWith(out, func(a *Assignment) []string { return a.Assigned }); i >= 0 {
			out[i].Assigned = out[i].Assigned[1:]
		}
	})},
	{"move a stateful task without a learner", []string{"stateful-move"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		tasks := a.Tasks()
		for i, o := range out {
			for _, id := range o.Assigned {
				if t := tasks[a.TaskIndex(id)]; !t.Stateful || slices.Contains(o.Learned, id) {
					continue
				}
				for j := range out {
					if j != i && !holds(out[j], id) && !isLeaving(in, out[j].MemberID) {
						out[i].Assigned = remove(out[i].Assigned, id)
						out[j].Assigned = insert(a, out[j].Assigned, id)
						return
					}
				}
			}
		}
	})},
	{"ignore ready flags", []string{"promote"}, beforeAssign(func(m *MemberMetadata) { m.Ready, m.Lag = nil, nil })},
	{"ignore leaving", []string{"leaving-gains", "hand-over"}, beforeAssign(func(m *MemberMetadata) { m.Leaving = false })},
	{"ignore learners of orphans", []string{"orphan", "keep-learner", "promote"}, beforeAssign(func(m *MemberMetadata) { m.Learning, m.Ready = nil, nil })},
	{"orphan to its learner however cold (old rule 5)", []string{"orphan"}, hideOrphanCopies},
	{"ignore local state (standbys, lags)", []string{"orphan", "hand-over"}, beforeAssign(func(m *MemberMetadata) { m.Standby, m.Lag = nil, nil })},
	{"forget revoked", []string{"revoked"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		for i := range out {
			out[i].Revoked = nil
		}
	})},
	{"standby on its owner", []string{"held-twice"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if i := firstWith(out, func(a *Assignment) []string { return a.Assigned }); i >= 0 {
			out[i].Standby = insert(a, out[i].Standby, out[i].Assigned[0])
		}
	})},
	{"drop a standby", []string{"standby", "warm-copies"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if i := firstWith(out, func(a *Assignment) []string { return a.Standby }); i >= 0 {
			out[i].Standby = out[i].Standby[1:]
		}
	})},
	{"move a caught-up standby cold", []string{"warm-copies"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		for i := range out {
			for _, id := range out[i].Standby {
				if !reportedStandby(in, out[i].MemberID, id) {
					continue
				}
				for j := range out {
					if j != i && !holds(out[j], id) && !slices.Contains(out[j].Learning, id) && !slices.Contains(out[j].Standby, id) &&
						!isLeaving(in, out[j].MemberID) && !reportedStandby(in, out[j].MemberID, id) {
						out[i].Standby = remove(out[i].Standby, id)
						out[j].Standby = insert(a, out[j].Standby, id)
						return
					}
				}
			}
		}
	})},
	{"pile standbys on one member", []string{"band"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		for j := range out {
			if j == 0 || isLeaving(in, out[0].MemberID) {
				continue
			}
			for _, id := range slices.Clone(out[j].Standby) {
				if !holds(out[0], id) && owned(out, id) != 0 {
					out[j].Standby = remove(out[j].Standby, id)
					out[0].Standby = insert(a, out[0].Standby, id)
				}
			}
		}
	})},
	{"place learners over the budget", []string{"budget"}, func(a *Assignor) learnertest.AssignFunc {
		opts := a.Options()
		opts.MaxLearners = 0
		free, _ := New(a.Tasks(), opts)
		return free.Assign
	}},
	{"never balance (drop new learners)", []string{"balanced", "hand-over", "convergence", "fixed-point-balance"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		for i := range out {
			for _, id := range slices.Clone(out[i].Learning) {
				if !slices.ContainsFunc(in, func(m MemberMetadata) bool { return m.ID == out[i].MemberID && slices.Contains(m.Learning, id) }) {
					out[i].Learning = remove(out[i].Learning, id)
					if o := owned(out, id); o >= 0 {
						out[o].Learned = remove(out[o].Learned, id)
					}
				}
			}
		}
	})},
	{"never settle (a learner whenever there is none)", []string{"convergence"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if slices.ContainsFunc(out, func(a Assignment) bool { return len(a.Learning) > 0 }) {
			return
		}
		for _, t := range a.Tasks() {
			o := owned(out, t.ID)
			if !t.Stateful || o < 0 {
				continue
			}
			for j := range out {
				if j != o && !holds(out[j], t.ID) && !isLeaving(in, out[j].MemberID) {
					out[j].Learning = insert(a, out[j].Learning, t.ID)
					out[o].Learned = insert(a, out[o].Learned, t.ID)
					return
				}
			}
		}
	})},
	{"depend on input order", []string{"permutation"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if len(out) > 1 && in[0].ID != out[0].MemberID {
			out[0].Assigned, out[1].Assigned = out[1].Assigned, out[0].Assigned
		}
	})},
	{"mutate the input", []string{"mutated"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		if len(in) > 0 && len(in[0].Assigned) > 1 {
			slices.Reverse(in[0].Assigned)
		}
	})},
	{"members out of order", []string{"shape"}, afterAssign(func(in []MemberMetadata, out []Assignment, a *Assignor) {
		slices.Reverse(out)
	})},
}

// TestMutationsAreCaught runs every mutation through generated groups and,
// if they do not catch it, through histories, and logs which rule caught it
// where (go test -v -run Mutations prints the table).
func TestMutationsAreCaught(t *testing.T) {
	seed := baseSeed(t)
	t.Logf("seed %d", seed)
	for _, m := range mutations {
		by, where := catchInGroups(t, m, seed, 2000)
		if by == "" {
			by, where = catchInHistories(m, seed, 200)
		}
		if !assert.NotEmpty(t, by, "mutation %q: no property test or history reported %v", m.name, m.want) {
			continue
		}
		t.Logf("%-48s caught by %-20s in %s", m.name, by, where)
	}
}

// catchInGroups returns the wanted rule a generated group reports for the
// mutated assignor but not for the real one, and where.
func catchInGroups(t *testing.T, m mutation, seed uint64, n int) (rule, where string) {
	for i := range n {
		g, err := learnertest.Generate(rand.New(rand.NewPCG(seed+uint64(i), 1)), propertySpec)
		require.NoError(t, err, "Generate")
		a, err := New(g.Tasks, g.Options)
		if err != nil {
			continue
		}
		_, broken := learnertest.CheckAssign(g.Tasks, g.Options, m.wrap(a), g.Members, rand.New(rand.NewPCG(seed, 2)))
		_, real := learnertest.CheckAssign(g.Tasks, g.Options, a.Assign, g.Members, rand.New(rand.NewPCG(seed, 2)))
		for _, w := range m.want {
			if learnertest.HasRule(broken, w) && !learnertest.HasRule(real, w) {
				return w, "TestPropertyGeneratedGroups (group " + strconv.Itoa(i+1) + ")"
			}
		}
	}
	return "", ""
}

// catchInHistories returns the wanted rule a history reports for the mutated
// assignor, and where. A history that fails on a rule the mutation does not
// break (a bug of the core) does not count.
func catchInHistories(m mutation, seed uint64, n int) (rule, where string) {
	for i := range n {
		s, err := learnertest.NewHistory(rand.New(rand.NewPCG(seed+uint64(i), 3)), false)
		if err != nil {
			continue
		}
		a, _ := New(s.Tasks, s.Options)
		s.Assign, s.NoShrink = m.wrap(a), true
		var f *learnertest.Failure
		if !errors.As(s.Run(300, nil), &f) {
			continue
		}
		for _, w := range m.want {
			if slices.Contains(f.Rules, w) {
				return w, "TestHistoryChaosAndConvergence (history " + strconv.Itoa(i+1) + ", " + firstLine(f.Msg) + ")"
			}
		}
	}
	return "", ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// reportedStandby reports whether member id reported a standby of task
// with no lag (a caught-up copy, whatever the acceptable lag).
func reportedStandby(in []MemberMetadata, id, task string) bool {
	for _, m := range in {
		if m.ID == id && slices.Contains(m.Standby, task) && !slices.ContainsFunc(m.Lag, func(l TaskLag) bool { return l.Task == task && l.Lag > 0 }) {
			return true
		}
	}
	return false
}

// hideOrphanCopies hides from Assign every copy of an ownerless task but its
// learners', so the learner takes it even when a standby elsewhere reports a
// smaller lag: the rule 5 of the design document, before warmest copies.
func hideOrphanCopies(a *Assignor) learnertest.AssignFunc {
	return func(in []MemberMetadata) ([]Assignment, error) {
		in = learnertest.CloneMembers(in)
		learned, held := map[string]bool{}, map[string]bool{}
		for _, m := range in {
			for _, id := range m.Learning {
				learned[id] = true
			}
			for _, id := range slices.Concat(m.Assigned, m.Revoked) {
				held[id] = true
			}
		}
		orphan := func(id string) bool { return learned[id] && !held[id] }
		for i := range in {
			m := &in[i]
			m.Standby = slices.DeleteFunc(m.Standby, orphan)
			m.Lag = slices.DeleteFunc(m.Lag, func(l TaskLag) bool { return orphan(l.Task) && !slices.Contains(m.Learning, l.Task) })
		}
		return a.Assign(in)
	}
}
