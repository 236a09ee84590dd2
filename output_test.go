package learner_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// A member that keeps the Assigned and Standby lists it reported gets
// those lists back (output.go's reported), by ID and by index, as Assign
// documents: the same memory, capped, so that appending to a returned
// list copies it and leaves the input as it was.
func TestKeptListsComeBackCapped(t *testing.T) {
	tasks := tasksT(6)
	a, err := New(tasks, Options{Standbys: 1})
	require.NoError(t, err)
	in := []MemberMetadata{
		{ID: "S1", Assigned: []string{"T1", "T2", "T3"}, Standby: []string{"T4", "T5", "T6"}},
		{ID: "S2", Assigned: []string{"T4", "T5", "T6"}, Standby: []string{"T1", "T2", "T3"}},
	}
	before := learnertest.CloneMembers(in)
	out, err := a.Assign(in)
	require.NoError(t, err)
	for i := range out {
		require.Equal(t, before[i].Assigned, out[i].Assigned, "Assign(%v)[%d].Assigned = %v, want the input back", before, i, out[i].Assigned)
		require.Equal(t, before[i].Standby, out[i].Standby, "Assign(%v)[%d].Standby = %v, want the input back", before, i, out[i].Standby)
		assert.Same(t, &in[i].Assigned[0], &out[i].Assigned[0], "Assign(...)[%d].Assigned is a copy, want the member's own list", i)
		assert.Same(t, &in[i].Standby[0], &out[i].Standby[0], "Assign(...)[%d].Standby is a copy, want the member's own list", i)
		out[i].Assigned = append(out[i].Assigned, "appended")
		out[i].Standby = append(out[i].Standby, "appended")
	}
	assert.True(t, reflect.DeepEqual(before, in), "appending to Assign's output changed its input:\nbefore %+v\nafter  %+v", before, in)

	idx := learnertest.IndexedMembers(tasks, before)
	outIdx, err := a.AssignIndexed(idx)
	require.NoError(t, err)
	for i := range outIdx {
		require.Equal(t, idx[i].Assigned, outIdx[i].Assigned, "AssignIndexed(%v)[%d].Assigned = %v, want the input back", idx, i, outIdx[i].Assigned)
		assert.Same(t, &idx[i].Assigned[0], &outIdx[i].Assigned[0], "AssignIndexed(...)[%d].Assigned is a copy, want the member's own list", i)
		assert.Same(t, &idx[i].Standby[0], &outIdx[i].Standby[0], "AssignIndexed(...)[%d].Standby is a copy, want the member's own list", i)
		outIdx[i].Assigned = append(outIdx[i].Assigned, 99)
		outIdx[i].Standby = append(outIdx[i].Standby, 99)
	}
	assert.Equal(t, learnertest.IndexedMembers(tasks, before), idx, "appending to AssignIndexed's output changed its input")
}

// Output returns (or merges into) the Assigned and Standby lists members
// reported where they keep them (output.go's asListed, standby.go's
// standbysAsListed) instead of writing them task by task, by ID and by
// index. Over group histories (learners getting ready, owners revoking,
// members joining, leaving and crashing, standbys moving), what every
// call returns that way must be what writing every task writes.
func TestOutputReuseWritesWhatFillWrites(t *testing.T) {
	seed := baseSeed(t)
	n := runs(60, 2000)
	t.Logf("seed %d, %d histories", seed, n)
	calls := 0
	for i := range n {
		s, err := learnertest.NewHistory(rand.New(rand.NewPCG(seed+uint64(i), 7)), i%2 == 1)
		require.NoError(t, err)
		a, err := New(s.Tasks, s.Options)
		require.NoError(t, err)
		s.Assign = func(in []MemberMetadata) ([]Assignment, error) {
			calls++
			out, err := a.Assign(in)
			want, wantErr := a.AssignWritingEveryTask(in)
			require.Equal(t, wantErr, err, "history %d (LEARNER_SEED=%d): Assign(%s) errs %v, writing every task %v",
				i, seed, Rebalance{Tasks: s.Tasks, Options: s.Options, Members: in}, err, wantErr)
			require.Equal(t, want, out, "history %d (LEARNER_SEED=%d): Assign(%s) =\n%swant (writing every task)\n%s",
				i, seed, Rebalance{Tasks: s.Tasks, Options: s.Options, Members: in}, FormatAssignments(out), FormatAssignments(want))
			idx := learnertest.IndexedMembers(s.Tasks, in)
			outIdx, err := a.AssignIndexed(idx)
			wantIdx, wantErr := a.AssignIndexedWritingEveryTask(idx)
			require.Equal(t, wantErr, err, "history %d (LEARNER_SEED=%d): AssignIndexed errs %v, writing every task %v", i, seed, err, wantErr)
			require.Equal(t, wantIdx, outIdx, "history %d (LEARNER_SEED=%d): AssignIndexed(%s) = %v, want (writing every task) %v",
				i, seed, Rebalance{Tasks: s.Tasks, Options: s.Options, Members: in}, outIdx, wantIdx)
			return out, err
		}
		require.NoError(t, s.Run(100, nil), "history %d (LEARNER_SEED=%d)", i, seed)
	}
	t.Logf("%d calls", calls)
}
