package learner_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
)

func TestParseRebalance(t *testing.T) {
	src := `# a comment
tasks: T1 T2, T3 0_1
stateless: T3
standbys: 1
max-learners: 2
acceptable-lag: 100
	S1(assigned: [T1, T2], revoked: [], learning: []) // the document's comment style
S4(learning: [T1], ready: [T1], standby: [T3], lag: [T1=1200, T3=0], capacity: 4, rack: a-1)
S2( assigned:[0_1] , leaving )
S3()
`
	r, err := ParseRebalance(src)
	require.NoError(t, err)
	want := Rebalance{
		Tasks:   []Task{{"T1", true}, {"T2", true}, {"T3", false}, {"0_1", true}},
		Options: Options{Standbys: 1, MaxLearners: 2, AcceptableLag: 100},
		Members: []MemberMetadata{
			{ID: "S1", Assigned: []string{"T1", "T2"}},
			{ID: "S4", Learning: []string{"T1"}, Ready: []string{"T1"}, Standby: []string{"T3"},
				Lag: []TaskLag{{"T1", 1200}, {"T3", 0}}, Capacity: 4, Rack: "a-1"},
			{ID: "S2", Assigned: []string{"0_1"}, Leaving: true},
			{ID: "S3"},
		},
	}
	assert.Equal(t, want, r)

	again, err := ParseRebalance(r.String())
	require.NoError(t, err, "ParseRebalance(String()) of\n%s", r)
	assert.True(t, reflect.DeepEqual(r, again), "ParseRebalance(%q) = %+v, want %+v", r.String(), again, r)
}

func TestParseRebalanceErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"S1(assigned: [T1])", "line 1: missing the tasks: line"},
		{"tasks: T1\ntasks: T2", "line 2: tasks: given twice (first on line 1)"},
		{"tasks: T1\nS1(assigned: [T1]", "line 2: member S1: want ',' or ')', got \"\""},
		{"tasks: T1\nS1(assigned: T1)", "line 2: member S1: want 'assigned: [...]'"},
		{"tasks: T1\nS1(assigned: [T1 T2])", "line 2: member S1: assigned: want ',' or ']', got \"T2])\""},
		{"tasks: T1\nS1(learned: [T1])", `line 2: member S1: unknown field "learned"`},
		{"tasks: T1\nS1(leaving, leaving)", "line 2: member S1: field leaving given twice"},
		{"tasks: T1\nS1(capacity: x)", "line 2: member S1: capacity: want a non-negative integer"},
		{"tasks: T1\nS1(lag: [T1])", "line 2: member S1: lag of T1: want '=' and a number"},
		{"tasks: T1\nS1(assigned: [T/1])", `line 2: member S1: assigned: want ',' or ']', got "/1])"`},
		{"tasks: T1\nS1(assigned: [T1]) trailing", `line 2: member S1: unexpected "trailing" after ')'`},
		{"tasks: T1\n\nstandbys: two", "line 3: standbys: want a non-negative integer"},
		{"tasks: T1\nstandbys: 1 2", `line 2: standbys: unexpected "2" after the number`},
		{"tasks: T1\nreplicas: 1", `line 2: unknown header "replicas"`},
		{"tasks: T1 T1", `line 1: task "T1" listed twice`},
		{"tasks: T1\nstateless: T2", `line 2: stateless task "T2" is not in tasks`},
		{"tasks: T1\n(assigned: [])", `line 2: want a header (tasks:, stateless:, ...) or a member line`},
		{"tasks: T1\nS1 assigned", `line 2: want ':' or '(' after "S1"`},
	} {
		_, err := ParseRebalance(tc.src)
		var se *SyntaxError
		require.True(t, errors.As(err, &se), "ParseRebalance(%q) = %v, want a *SyntaxError", tc.src, err)
		assert.ErrorIs(t, err, ErrSyntax)
		assert.Contains(t, err.Error(), tc.want, "ParseRebalance(%q)", tc.src)
	}
}

func TestFormatAssignment(t *testing.T) {
	got := FormatAssignment(Assignment{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T2"}, Standby: []string{"T3"}})
	assert.Equal(t, "S1(assigned: [T1, T2], revoked: [], learning: [], learned: [T2], standby: [T3])", got)
}
