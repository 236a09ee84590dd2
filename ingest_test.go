package learner_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// TestUnstampedReadAgrees: a member that reports no lags is read without
// stamps while its lists rise and stay apart (ingest.go's stampless); the
// same lists with a lag that changes nothing are read with them. Both must
// give the same error or the same assignments, by ID and by index, for
// lists in and out of order, with repeats, tasks in two lists, ready tasks
// not learning, unknown and malformed IDs, and indices outside the
// topology.
func TestUnstampedReadAgrees(t *testing.T) {
	tasks := tasksT(8)
	a, err := New(tasks, Options{})
	require.NoError(t, err)
	pool := []string{"T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "X1", "bad id"}
	r := rand.New(rand.NewPCG(1, 2))
	draw := func(n int) []string {
		list := make([]string, r.IntN(n+1))
		for j := range list {
			list[j] = pool[r.IntN(len(pool))]
		}
		if r.IntN(4) > 0 {
			slices.Sort(list) // rising, with repeats at times
		}
		return list
	}
	for i := range 5000 {
		m := MemberMetadata{ID: "S1", Assigned: draw(5), Revoked: draw(2), Standby: draw(2), Learning: draw(3)}
		switch r.IntN(4) {
		case 0, 1: // a subset of Learning
			m.Ready = slices.DeleteFunc(slices.Clone(m.Learning), func(string) bool { return r.IntN(2) == 0 })
		case 2: // with a repeat
			if len(m.Learning) > 0 {
				k := r.IntN(len(m.Learning))
				m.Ready = slices.Insert(slices.Clone(m.Learning), k, m.Learning[k])
			}
		default:
			m.Ready = draw(2)
		}
		plain := []MemberMetadata{m, {ID: "S2", Assigned: []string{"T6", "T8"}}}
		stamped := learnertest.CloneMembers(plain)
		stamped[0].Lag = []TaskLag{{Task: "Y1", Lag: 1}} // a task the topology lacks: the lag is dropped

		want, wantErr := a.Assign(stamped)
		got, gotErr := a.Assign(plain)
		require.Equal(t, wantErr, gotErr, "%d: Assign(%v): error without stamps, want the stamped read's", i, m)
		require.Equal(t, want, got, "%d: Assign(%v) without stamps, want the stamped read's", i, m)

		idx := learnertest.IndexedMembers(tasks, plain)
		if r.IntN(3) == 0 { // an index outside the topology
			l := [...]*[]int32{&idx[0].Assigned, &idx[0].Revoked, &idx[0].Standby, &idx[0].Learning, &idx[0].Ready}[r.IntN(5)]
			*l = slices.Insert(*l, r.IntN(len(*l)+1), []int32{-1, 8, 1 << 30}[r.IntN(3)])
		}
		idxStamped := slices.Clone(idx)
		held := slices.IndexFunc(idx[0].Assigned, func(t int32) bool { return t >= 0 && t < 8 && !slices.Contains(idx[1].Assigned, t) })
		if held < 0 {
			continue // no task to report a lag for that changes nothing
		}
		idxStamped[0].Lag = []IndexedLag{{Task: idx[0].Assigned[held], Lag: 1}} // a lag for a task it holds changes nothing
		wantIdx, wantErr := a.AssignIndexed(idxStamped)
		gotIdx, gotErr := a.AssignIndexed(idx)
		require.Equal(t, wantErr, gotErr, "%d: AssignIndexed(%v): error without stamps, want the stamped read's", i, idx[0])
		require.Equal(t, wantIdx, gotIdx, "%d: AssignIndexed(%v) without stamps, want the stamped read's", i, idx[0])
	}
}

// TestContestLoserIsWarm: a member whose claim to a task lost still has
// the task's state, and the lag it reported for it ranks it among the
// other copies when a leaving owner's task gets a learner (rule 6), by ID
// and by index alike.
func TestContestLoserIsWarm(t *testing.T) {
	for _, tc := range []struct {
		src, learner string
	}{
		{`tasks: T1 T2 T3
S1(assigned: [T2], revoked: [T1], learning: [], lag: [T1=5])
S2(assigned: [T1, T3], revoked: [], learning: [], leaving)
S3(assigned: [], revoked: [], learning: [], standby: [T1], lag: [T1=100])`, "S1"},
		{`tasks: T1 T2 T3
S1(assigned: [T2], revoked: [T1], learning: [], lag: [T1=100])
S2(assigned: [T1, T3], revoked: [], learning: [], leaving)
S3(assigned: [], revoked: [], learning: [], standby: [T1], lag: [T1=5])`, "S3"},
		{`tasks: T1 T2 T3
S1(assigned: [T1, T3], revoked: [], learning: [], leaving)
S2(assigned: [T2], revoked: [], learning: [], lag: [T1=7])
S3(assigned: [T1], revoked: [], learning: [], leaving, lag: [T1=0])
S4(assigned: [], revoked: [T1], learning: [], lag: [T1=3])`, "S4"},
	} {
		r, err := ParseRebalance(tc.src)
		require.NoError(t, err)
		a, err := New(r.Tasks, r.Options)
		require.NoError(t, err)
		out, err := a.Assign(r.Members)
		require.NoError(t, err, "Assign(%s)", tc.src)
		var learner string
		for _, as := range out {
			if slices.Contains(as.Learning, "T1") {
				learner = as.MemberID
			}
		}
		require.Equal(t, tc.learner, learner, "Assign(%s): T1's learner, want the member with the smallest lag", tc.src)
		idx, err := a.AssignIndexed(learnertest.IndexedMembers(r.Tasks, r.Members))
		require.NoError(t, err, "AssignIndexed(%s)", tc.src)
		require.Equal(t, out, assignmentsByID(t, a, idx), "AssignIndexed(%s) by ID, want Assign's answer", tc.src)
	}
}
