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

// A member that keeps the Assigned list it reported gets a copy of it
// (output.go's asListed), by ID and by index: writing into what Assign and
// AssignIndexed return must leave their input as it was.
func TestAssignedCopiesDoNotAliasInput(t *testing.T) {
	tasks := tasksT(6)
	a, err := New(tasks, Options{})
	require.NoError(t, err)
	in := []MemberMetadata{{ID: "S1", Assigned: []string{"T1", "T2", "T3"}}, {ID: "S2", Assigned: []string{"T4", "T5", "T6"}}}
	before := learnertest.CloneMembers(in)
	out, err := a.Assign(in)
	require.NoError(t, err)
	require.Equal(t, before[0].Assigned, out[0].Assigned, "Assign(%v) = %v, want the input back", in, out)
	for i := range out {
		out[i].Assigned[0] = "changed"
	}
	assert.True(t, reflect.DeepEqual(before, in), "writing into Assign's output changed its input:\nbefore %+v\nafter  %+v", before, in)

	idx := learnertest.IndexedMembers(tasks, before)
	outIdx, err := a.AssignIndexed(idx)
	require.NoError(t, err)
	require.Equal(t, idx[1].Assigned, outIdx[1].Assigned, "AssignIndexed(%v) = %v, want the input back", idx, outIdx)
	for i := range outIdx {
		outIdx[i].Assigned[0] = 99
	}
	assert.Equal(t, learnertest.IndexedMembers(tasks, before), idx, "writing into AssignIndexed's output changed its input")
}

// Output copies the Assigned and Standby lists members reported where
// they keep them (output.go's asListed, standby.go's standbysAsListed)
// instead of writing them task by task, by ID and by index. Over group histories (learners
// getting ready, owners revoking, members joining, leaving and crashing,
// standbys moving), every call's copies must write what writing every task
// writes.
func TestOutputCopiesWriteWhatFillWrites(t *testing.T) {
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
