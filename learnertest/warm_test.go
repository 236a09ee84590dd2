package learnertest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// TestCheckWarmCopies checks rule warm-copies on hand-made outputs for one
// input: S4 has joined a group with one standby per task and learns T1;
// T2's standby moves from S3 (caught up) to S4 (no copy yet). S3 also
// reports a stale standby of T1, caught up.
func TestCheckWarmCopies(t *testing.T) {
	tasks := []learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}}
	opts := learner.Options{Standbys: 1, AcceptableLag: 100}
	in := []learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"T1", "T2"}},
		{ID: "S2", Standby: []string{"T1"}, Lag: []learner.TaskLag{{Task: "T1", Lag: 0}}},
		{ID: "S3", Standby: []string{"T1", "T2"}, Lag: []learner.TaskLag{{Task: "T1", Lag: 0}, {Task: "T2", Lag: 0}}},
		{ID: "S4"},
	}
	rules := func(vs []learnertest.Violation) []string {
		var rs []string
		for _, v := range vs {
			rs = append(rs, v.Rule+" "+v.Task)
		}
		return rs
	}
	out := func(s3, s4 []string) []learner.Assignment {
		return []learner.Assignment{
			{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T1"}},
			{MemberID: "S2", Standby: []string{"T1"}},
			{MemberID: "S3", Standby: s3},
			{MemberID: "S4", Learning: []string{"T1"}, Standby: s4},
		}
	}
	for _, tc := range []struct {
		name   string
		s3, s4 []string
		want   []string
	}{
		{"standby stays", []string{"T2"}, nil, nil},
		{"warm move: the old copy kept", []string{"T2"}, []string{"T2"}, nil},
		{"cold move: the caught-up copy dropped", nil, []string{"T2"}, []string{"warm-copies T2"}},
		{"an extra copy nobody needs: T1 has two caught-up copies without it", []string{"T1", "T2"}, nil, []string{"standby T1"}},
	} {
		assert.Equal(t, tc.want, rules(learnertest.Check(tasks, opts, in, out(tc.s3, tc.s4))), tc.name)
	}
}
