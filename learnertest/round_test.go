package learnertest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// TestCheckRound checks the round rules on rounds an assignor other than
// Assign could send: members in any order, tasks withheld for a follow-up.
func TestCheckRound(t *testing.T) {
	tasks := []learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}, {ID: "T3"}}
	in := []learner.MemberMetadata{{ID: "S2", Assigned: []string{"T1", "T2"}}, {ID: "S1", Assigned: []string{"T3"}}}
	rules := func(vs []learnertest.Violation) []string {
		var rs []string
		for _, v := range vs {
			rs = append(rs, v.Rule+" "+v.Member+" "+v.Task)
		}
		return rs
	}
	for _, tc := range []struct {
		name     string
		out      []learner.Assignment
		withheld []string
		want     []string
	}{
		{"sound, join order", []learner.Assignment{
			{MemberID: "S2", Assigned: []string{"T1"}, Revoked: []string{"T2"}},
			{MemberID: "S1", Assigned: []string{"T3", "T2"}},
		}, nil, nil},
		{"T2 withheld", []learner.Assignment{
			{MemberID: "S2", Assigned: []string{"T1"}, Revoked: []string{"T2"}},
			{MemberID: "S1", Assigned: []string{"T3"}, Learning: []string{"T2"}},
		}, []string{"T2"}, nil},
		{"withheld task assigned", []learner.Assignment{
			{MemberID: "S2", Assigned: []string{"T1", "T2"}},
			{MemberID: "S1", Assigned: []string{"T3"}},
		}, []string{"T2"}, []string{"one-owner  T2"}},
		{"lost, doubled, two roles", []learner.Assignment{
			{MemberID: "S2", Assigned: []string{"T1"}, Standby: []string{"T1"}},
			{MemberID: "S1", Assigned: []string{"T1", "T3"}},
		}, nil, []string{"held-twice S2 T1", "one-owner  T1", "one-owner  T2"}},
		{"a member without an assignment, a stranger with one", []learner.Assignment{
			{MemberID: "S2", Assigned: []string{"T1", "T2", "T3"}, Learned: []string{"T4"}},
			{MemberID: "S3"},
		}, nil, []string{"shape S2 T4", "shape S2 T4", "shape S3 ", "shape S1 "}},
	} {
		assert.Equal(t, tc.want, rules(learnertest.CheckRound(tasks, in, tc.out, tc.withheld)), tc.name)
	}
}
