package learner_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/cputime"
	"github.com/learnerassignor/learner/learnertest"
)

// TestAssignIndexedAgrees: on generated groups, valid (shuffled) or with
// one malformed report (corruptGroup), AssignIndexed answers what Assign
// answers, by index: the same assignments, or the same error; it leaves
// its input as it was. A malformed task ID has
// no index: the indexed report holds it in Stale, and the error names that
// list instead.
func TestAssignIndexedAgrees(t *testing.T) {
	n := runs(1000, 50000)
	seed := baseSeed(t)
	t.Logf("seed %d, %d groups", seed, n)
	corrupted := 0
	defer func() {
		require.GreaterOrEqual(t, corrupted, n/4, "only %d of %d groups malformed: the errors are not compared", corrupted, n)
	}()
	for i := range n {
		r := rand.New(rand.NewPCG(seed+uint64(i), 7))
		g, err := learnertest.Generate(r, propertySpec)
		require.NoError(t, err, "Generate")
		a, err := New(g.Tasks, g.Options)
		require.NoError(t, err, "New(generated topology)")
		what, corrupt := "", false
		if len(g.Tasks) > 0 {
			what, corrupt = corruptGroup(&g, byte(r.IntN(256)), r)
		}
		want, wantErr := a.Assign(g.Members)
		indexed := learnertest.IndexedMembers(g.Tasks, g.Members)
		if wantErr == nil { // any order gives the same answer; with an error, the first malformed member's
			r.Shuffle(len(indexed), func(i, j int) { indexed[i], indexed[j] = indexed[j], indexed[i] })
		}
		before := learnertest.IndexedMembers(g.Tasks, membersByID(t, a, indexed))
		got, err := a.AssignIndexed(indexed)
		where := fmt.Sprintf("group %d (LEARNER_SEED=%d), %s:\n%s", i, seed, what, g)
		require.Equal(t, before, learnertest.IndexedMembers(g.Tasks, membersByID(t, a, indexed)), "AssignIndexed(%s) changed its input", where)
		if wantErr == nil {
			require.False(t, corrupt, "Assign accepted %s", where)
			require.NoError(t, err, "AssignIndexed(%s)", where)
			require.Equal(t, want, assignmentsByID(t, a, got), "AssignIndexed(%s) by ID, want Assign's answer", where)
			continue
		}
		corrupted++
		require.Error(t, err, "AssignIndexed(%s), want Assign's error %v", where, wantErr)
		if what == "a malformed task ID" {
			var x, y *MemberError
			require.ErrorAs(t, wantErr, &x)
			require.ErrorAs(t, err, &y, "AssignIndexed(%s)", where)
			require.Equal(t, x.Position, y.Position, "AssignIndexed(%s) error %v, want one for the member of %v", where, err, wantErr)
			require.Contains(t, err.Error(), "in stale", "AssignIndexed(%s)", where)
			continue
		}
		require.Equal(t, wantErr.Error(), err.Error(), "AssignIndexed(%s) error, want Assign's", where)
	}
}

// TestAssignIndexedRejects: what only an indexed report can get wrong is
// an error wrapping ErrInvalidMember that names the member, the list and
// the task; AssignIndexed never panics on it.
func TestAssignIndexedRejects(t *testing.T) {
	a, err := New([]Task{{ID: "0_0", Stateful: true}, {ID: "0_1", Stateful: true}, {ID: "x"}}, Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		m    IndexedMember
		want string
	}{
		{IndexedMember{ID: "S1", Assigned: []int32{0, 3}}, `task index 3 in assigned is outside the topology's 3 tasks`},
		{IndexedMember{ID: "S1", Revoked: []int32{-1}}, `task index -1 in revoked is outside the topology's 3 tasks`},
		{IndexedMember{ID: "S1", Standby: []int32{1 << 30}}, `task index 1073741824 in standby is outside`},
		{IndexedMember{ID: "S1", Learning: []int32{0}, Ready: []int32{0, 7}}, `task index 7 in ready is outside`},
		{IndexedMember{ID: "S1", Lag: []IndexedLag{{Task: 9, Lag: 1}}}, `task index 9 in lag is outside`},
		{IndexedMember{ID: "S1", Lag: []IndexedLag{{Task: 9, Lag: -1}}}, `lag -1 of task index 9 is negative`},
		{IndexedMember{ID: "S1", Assigned: []int32{1, 0, 1}}, `task "0_1" listed twice in assigned`},
		{IndexedMember{ID: "S1", Assigned: []int32{2}, Standby: []int32{2}}, `task "x" listed in both assigned and standby`},
		{IndexedMember{ID: "S1", Ready: []int32{0}}, `ready task "0_0" is not in learning`},
		{IndexedMember{ID: "S1", Stale: []string{"gone", "gone"}}, `task "gone" listed twice in stale`},
		{IndexedMember{ID: "S1", Stale: []string{"x"}}, `task "x" in stale is in the topology (index 2)`},
		{IndexedMember{ID: "S1", Stale: []string{"no/pe"}}, `malformed task ID "no/pe" in stale`},
		{IndexedMember{ID: "S 1"}, `malformed member ID`},
	} {
		members := []IndexedMember{{ID: "S0", Assigned: []int32{0}}, tc.m}
		out, err := a.AssignIndexed(members)
		require.ErrorIs(t, err, ErrInvalidMember, "AssignIndexed(%+v) = %v", tc.m, out)
		var me *MemberError
		require.True(t, errors.As(err, &me), "AssignIndexed(%+v) error %v, want a *MemberError", tc.m, err)
		require.Equal(t, 1, me.Position, "AssignIndexed(%+v) error %v, want position 1", tc.m, err)
		require.Contains(t, err.Error(), tc.want, "AssignIndexed(%+v)", tc.m)
		require.Contains(t, err.Error(), "learner: member", "AssignIndexed(%+v)", tc.m)
	}
}

// TestAssignIndexedEdges: no members give an empty answer; a stale task
// comes back in Stale, sorted, and lists come back in topology order
// whatever the order given.
func TestAssignIndexedEdges(t *testing.T) {
	a, err := New([]Task{{ID: "0_0"}, {ID: "0_1"}, {ID: "0_2"}}, Options{})
	require.NoError(t, err)
	out, err := a.AssignIndexed(nil)
	require.NoError(t, err)
	require.Empty(t, out, "AssignIndexed(nil)")
	out, err = a.AssignIndexed([]IndexedMember{{ID: "S1", Assigned: []int32{2, 0, 1}, Stale: []string{"b9", "b10", "a"}}})
	require.NoError(t, err)
	require.Equal(t, []IndexedAssignment{{MemberID: "S1", Assigned: []int32{0, 1, 2}, Stale: []string{"a", "b9", "b10"}}}, out)
	require.True(t, slices.IsSortedFunc(out[0].Stale, CompareIDs))
}

// FuzzAssignIndexed reads the fuzz bytes as indexed reports, indices in
// and out of the topology: AssignIndexed never panics, refuses with an
// error wrapping ErrInvalidMember, or answers what Assign answers for the
// same reports by ID.
//
//	go test -run='^$' -fuzz='^FuzzAssignIndexed$' -fuzztime=10m
func FuzzAssignIndexed(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{9, 9, 0x80, 1, 0xff, 2, 3})
	f.Add([]byte("\x01\x11\x21\x31\x41\x51\x61\x71\x81"))
	a, err := New([]Task{{ID: "0_0", Stateful: true}, {ID: "0_1", Stateful: true}, {ID: "0_2"}, {ID: "x", Stateful: true}},
		Options{Standbys: 1, AcceptableLag: 5})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte) {
		var members []IndexedMember
		for i, x := range data {
			if i%12 == 0 {
				members = append(members, IndexedMember{ID: fmt.Sprintf("S%d", x%5), Leaving: x&0x40 != 0})
			}
			m := &members[len(members)-1]
			task := int32(x&0x0f) - 2 // -2 to 13: some outside the topology's 4
			switch x >> 4 % 8 {
			case 0:
				m.Assigned = append(m.Assigned, task)
			case 1:
				m.Revoked = append(m.Revoked, task)
			case 2:
				m.Learning = append(m.Learning, task)
			case 3:
				m.Ready = append(m.Ready, task)
			case 4:
				m.Standby = append(m.Standby, task)
			case 5:
				m.Lag = append(m.Lag, IndexedLag{Task: task, Lag: int64(x&3) - 1})
			case 6:
				m.Stale = append(m.Stale, fmt.Sprintf("gone%d", x&3))
			default:
				m.Capacity, m.Rack = int(x&7)-1, fmt.Sprintf("r%d", x&1)
			}
		}
		out, err := a.AssignIndexed(members)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidMember, "AssignIndexed(%+v)", members)
			return
		}
		byID := membersByID(t, a, members)
		want, err := a.Assign(byID)
		require.NoError(t, err, "Assign(%+v), whose indexed form AssignIndexed accepts", byID)
		require.Equal(t, want, assignmentsByID(t, a, out), "AssignIndexed(%+v) by ID, want Assign's answer", members)
	})
}

// membersByID returns indexed reports by task ID.
func membersByID(t testing.TB, a *Assignor, in []IndexedMember) []MemberMetadata {
	out := make([]MemberMetadata, len(in))
	for i, m := range in {
		var err error
		out[i], err = a.MemberByID(m)
		require.NoError(t, err, "MemberByID(%+v)", m)
	}
	return out
}

// assignmentsByID returns assignments by task ID.
func assignmentsByID(t testing.TB, a *Assignor, in []IndexedAssignment) []Assignment {
	out := make([]Assignment, len(in))
	for i, as := range in {
		var err error
		out[i], err = a.AssignmentByID(as)
		require.NoError(t, err, "AssignmentByID(%+v)", as)
	}
	return out
}

// TestByIDNamesIndexOutside checks that MemberByID and AssignmentByID
// name what they cannot convert instead of panicking.
func TestByIDNamesIndexOutside(t *testing.T) {
	a, err := New([]Task{{ID: "0_0", Stateful: true}, {ID: "0_1"}}, Options{})
	require.NoError(t, err)
	m, err := a.MemberByID(IndexedMember{ID: "S1", Assigned: []int32{1}, Revoked: []int32{0}, Stale: []string{"9_9"}, Lag: []IndexedLag{{Task: 0, Lag: 3}}})
	require.NoError(t, err)
	require.Equal(t, MemberMetadata{ID: "S1", Assigned: []string{"0_1"}, Revoked: []string{"0_0", "9_9"}, Lag: []TaskLag{{Task: "0_0", Lag: 3}}}, m, "MemberByID")
	_, err = a.MemberByID(IndexedMember{ID: "S1", Lag: []IndexedLag{{Task: 2}}})
	require.ErrorIs(t, err, ErrInvalidMember)
	require.EqualError(t, err, `learner: member "S1": task index 2 in lag is outside the topology's 2 tasks: invalid member metadata`)
	_, err = a.AssignmentByID(IndexedAssignment{MemberID: "S2", Learned: []int32{-1}})
	require.EqualError(t, err, `learner: assignment of member "S2": task index -1 in learned is outside the topology's 2 tasks: invalid member metadata`)
}

// BenchmarkAssignIndexed is BenchmarkAssign for reports by task index
// (AssignIndexed), on the same inputs; the conversion to indices is not
// timed.
func BenchmarkAssignIndexed(b *testing.B) {
	forEachBenchInput(b, func(b *testing.B, a *Assignor, members []MemberMetadata) {
		in := learnertest.IndexedMembers(a.Tasks(), members)
		cputime.Loop(b, func() error {
			_, err := a.AssignIndexed(in)
			return err
		})
	})
}
