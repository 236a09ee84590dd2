package learnertest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/learnerassignor/learner"
)

// AssignFunc is Assign as a function value, so that a deliberately broken
// assignor can be checked with the same code (the root package's mutation
// tests do).
type AssignFunc func([]learner.MemberMetadata) ([]learner.Assignment, error)

// CheckAssign runs assign, Assign or a function standing in for it, on in
// and checks everything: the rules of Check, and those that need more calls:
//
//	error          valid input is never refused
//	mutated        in is deep-equal before and after
//	deterministic  a second call gives identical output
//	permutation    so does a call on a shuffled copy (member order and
//	               every list: a leader change)
//	fixed-point    a learner-free, balanced output reported back by its
//	               members (Assigned, Standby) is returned unchanged:
//	               nothing revoked, no learners (the balanced stage)
//
// tasks and opts are the Assignor's; rng drives the shuffle (nil: a fixed
// seed). It returns the first call's output and every Violation; a nil
// assign is an "error" violation.
func CheckAssign(tasks []learner.Task, opts learner.Options, assign AssignFunc, in []learner.MemberMetadata, rng *rand.Rand) ([]learner.Assignment, []Violation) {
	if assign == nil {
		return nil, []Violation{{"error", "", "", "learnertest: CheckAssign: nil assign"}}
	}
	if rng == nil {
		rng = rand.New(rand.NewPCG(0, 0))
	}
	before := CloneMembers(in)
	out, err := assign(in)
	if err != nil {
		return nil, []Violation{{"error", "", "", err.Error()}}
	}
	vs := Check(tasks, opts, in, out)
	for i := range in {
		if !sameMember(before[i], in[i]) {
			vs = append(vs, Violation{"mutated", in[i].ID, "", fmt.Sprintf("Assign changed its input: %+v, was %+v", in[i], before[i])})
		}
	}
	again, err := assign(CloneMembers(before))
	if err != nil || !sameAssignments(out, again) {
		vs = append(vs, Violation{"deterministic", "", "", fmt.Sprintf("second call differs (err %v)", err)})
	}
	perm, err := assign(shuffleMembers(before, rng))
	if err != nil || !sameAssignments(out, perm) {
		vs = append(vs, Violation{"permutation", "", "", fmt.Sprintf("shuffled input gives different output (err %v):\n%swant:\n%s",
			err, learner.FormatAssignments(perm), learner.FormatAssignments(out))})
	}
	if !hasLearners(out) && !warmMoveInFlight(tasks, opts, before, out) && imbalance(before, out) == "" {
		next, err := assign(reportBack(before, out))
		for i := range next {
			if b := next[i]; i >= len(out) || !sameAssignments([]learner.Assignment{b}, []learner.Assignment{{MemberID: b.MemberID, Assigned: out[i].Assigned, Standby: out[i].Standby}}) {
				vs = append(vs, Violation{"fixed-point", b.MemberID, "", fmt.Sprintf("Assign(its own stable output) = %s, want %s",
					learner.FormatAssignment(b), learner.FormatAssignment(learner.Assignment{MemberID: b.MemberID, Assigned: out[i].Assigned, Standby: out[i].Standby}))})
			}
		}
		if err != nil {
			vs = append(vs, Violation{"fixed-point", "", "", "Assign(its own stable output): " + err.Error()})
		}
	}
	return out, vs
}

// sameMember compares two reports field by field, nil and empty lists alike.
func sameMember(a, b learner.MemberMetadata) bool {
	return a.ID == b.ID && a.Leaving == b.Leaving && a.Capacity == b.Capacity && a.Rack == b.Rack &&
		slices.Equal(a.Assigned, b.Assigned) && slices.Equal(a.Revoked, b.Revoked) && slices.Equal(a.Learning, b.Learning) &&
		slices.Equal(a.Ready, b.Ready) && slices.Equal(a.Standby, b.Standby) && slices.Equal(a.Lag, b.Lag)
}

func hasLearners(out []learner.Assignment) bool {
	return slices.ContainsFunc(out, func(a learner.Assignment) bool { return len(a.Learning) > 0 })
}

// reportBack is what members report after applying a learner-free output:
// they run Assigned, keep Standby, and nothing else.
func reportBack(in []learner.MemberMetadata, out []learner.Assignment) []learner.MemberMetadata {
	byID := map[string]learner.MemberMetadata{}
	for _, m := range in {
		byID[m.ID] = m
	}
	next := make([]learner.MemberMetadata, len(out))
	for i, a := range out {
		m := byID[a.MemberID]
		next[i] = learner.MemberMetadata{ID: a.MemberID, Assigned: slices.Clone(a.Assigned), Standby: slices.Clone(a.Standby),
			Leaving: m.Leaving, Capacity: m.Capacity, Rack: m.Rack}
	}
	return next
}

// shuffleMembers returns a deep copy of in with the members and every list
// in a random order (a leader change sees the same reports in another order).
func shuffleMembers(in []learner.MemberMetadata, rng *rand.Rand) []learner.MemberMetadata {
	out := CloneMembers(in)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		m := &out[i]
		for _, l := range [][]string{m.Assigned, m.Revoked, m.Learning, m.Ready, m.Standby} {
			rng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		}
		rng.Shuffle(len(m.Lag), func(i, j int) { m.Lag[i], m.Lag[j] = m.Lag[j], m.Lag[i] })
	}
	return out
}

// sameAssignments compares outputs, treating nil and empty lists alike.
func sameAssignments(a, b []learner.Assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.MemberID != y.MemberID || !slices.Equal(x.Assigned, y.Assigned) || !slices.Equal(x.Revoked, y.Revoked) ||
			!slices.Equal(x.Learning, y.Learning) || !slices.Equal(x.Learned, y.Learned) || !slices.Equal(x.Standby, y.Standby) {
			return false
		}
	}
	return true
}

// CloneMembers returns a deep copy of in: no list shares memory with in's.
func CloneMembers(in []learner.MemberMetadata) []learner.MemberMetadata {
	out := make([]learner.MemberMetadata, len(in))
	for i, m := range in {
		out[i] = m
		for _, l := range []*[]string{&out[i].Assigned, &out[i].Revoked, &out[i].Learning, &out[i].Ready, &out[i].Standby} {
			*l = slices.Clone(*l)
		}
		out[i].Lag = slices.Clone(m.Lag)
	}
	return out
}
