package learner_test

import (
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
