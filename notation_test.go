package learner_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
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
		MemberLines: []int{7, 8, 9, 10},
	}
	assert.Equal(t, want, r)

	again, err := ParseRebalance(r.String())
	require.NoError(t, err, "ParseRebalance(String()) of\n%s", r)
	assert.Equal(t, []int{6, 7, 8, 9}, again.MemberLines, "ParseRebalance(%q).MemberLines", r.String())
	again.MemberLines = r.MemberLines
	assert.True(t, reflect.DeepEqual(r, again), "ParseRebalance(%q) = %+v, want %+v", r.String(), again, r)
}

func TestParseRebalanceSkipsByteOrderMark(t *testing.T) {
	r, err := ParseRebalance("\uFEFFtasks: T1\nS1(assigned: [T1])\n")
	require.NoError(t, err)
	assert.Equal(t, []Task{{"T1", true}}, r.Tasks)
}

func TestRebalanceLocate(t *testing.T) {
	r, err := ParseRebalance("tasks: T1\n\nS2()\n# S1 twice\nS1(assigned: [T1])\nS1()\n")
	require.NoError(t, err)
	a, err := New(r.Tasks, r.Options)
	require.NoError(t, err)
	_, err = a.Assign(r.Members)
	located := r.Locate(err)
	assert.EqualError(t, located, "learner: line 6: member S1: duplicate member ID (also on line 5)")
	assert.Equal(t, &LineError{Line: 6, Msg: "member S1: duplicate member ID (also on line 5)", Err: err}, located)
	assert.ErrorIs(t, located, ErrInvalidMember)
	var me *MemberError
	require.ErrorAs(t, located, &me)
	assert.Equal(t, 2, me.Position)

	r.MemberLines = nil
	assert.Equal(t, err, r.Locate(err), "Locate for a Rebalance not parsed")
	assert.Equal(t, ErrSyntax, r.Locate(ErrSyntax), "Locate(an error not about a member)")
}

func TestRebalanceWarnings(t *testing.T) {
	r, err := ParseRebalance("tasks: T1 T2\n\nS1(assigned: [T1, T9], learning: [T8], ready: [T8], lag: [T8=3, T7=1])\nS2(revoked: [T2], standby: [T9])\n")
	require.NoError(t, err)
	assert.Equal(t, []Warning{
		{3, `member S1: task "T9" in assigned is not in the tasks`},
		{3, `member S1: task "T8" in learning is not in the tasks`},
		{3, `member S1: task "T7" in lag is not in the tasks`},
		{4, `member S2: task "T9" in standby is not in the tasks`},
	}, r.Warnings())
	assert.Equal(t, `line 3: member S1: task "T9" in assigned is not in the tasks`, r.Warnings()[0].String())

	r.MemberLines = nil
	assert.Equal(t, Warning{0, `member S1: task "T9" in assigned is not in the tasks`}, r.Warnings()[0], "Warnings of a Rebalance not parsed")
	assert.Equal(t, `member S1: task "T9" in assigned is not in the tasks`, r.Warnings()[0].String(), "a warning without a line")
}

func TestParseRebalanceErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"S1(assigned: [T1])", "line 1: missing the tasks: line"},
		{"tasks: T1\ntasks: T2", "line 2: tasks: given twice (first on line 1)"},
		{"tasks: T1\nS1(assigned: [T1]", "line 2: member S1: want ',' or ')', got end of line"},
		{"tasks: T1\nS1(assigned: T1)", "line 2: member S1: want 'assigned: [...]'"},
		{"tasks: T1\nS1(assigned: [T1 T2])", "line 2: member S1: assigned: want ',' or ']', got \"T2\""},
		{"tasks: T1\nS1(learned: [T1])", `line 2: member S1: unknown field "learned"`},
		{"tasks: T1\nS1(leaving, leaving)", "line 2: member S1: field leaving given twice"},
		{"tasks: T1\nS1(capacity: x)", "line 2: member S1: capacity: want a non-negative integer"},
		{"tasks: T1\nS1(lag: [T1])", "line 2: member S1: lag of T1: want '=' and a number"},
		{"tasks: T1\nS1(assigned: [T/1])", `line 2: member S1: assigned: want ',' or ']', got "/"`},
		{"tasks: T1\nS1(assigned: [T1]) trailing", `line 2: member S1: unexpected "trailing" after ')'`},
		{"tasks: T1\n\nstandbys: two", "line 3: standbys: want a non-negative integer"},
		{"tasks: T1\nstandbys: 1 2", `line 2: standbys: unexpected "2" after the number`},
		{"tasks: T1\nreplicas: 1", `line 2: unknown header "replicas"`},
		{"tasks: T1 T1", `line 1: task "T1" listed twice`},
		{"tasks: T1\nstateless: T2", `line 2: stateless task "T2" is not in tasks`},
		{"tasks: T1\n(assigned: [])", `line 2: want a header (tasks:, stateless:, ...) or a member line`},
		{"tasks: T1\nS1 assigned", `line 2: want ':' or '(' after "S1"`},
		// Tokens are quoted without the punctuation after them.
		{"tasks: T1\nS1(capacity: -3)", `line 2: member S1: capacity: want a non-negative integer, got "-3"`},
		{"tasks: T1\nS1(assigned: [T1], Ü)", `line 2: member S1: want a field name, got "Ü"`},
		// Numbers past their type's range.
		{"tasks: T1\nS1(capacity: 99999999999999999999)", `line 2: member S1: capacity: "99999999999999999999" is out of range (at most ` + strconv.Itoa(math.MaxInt) + `)`},
		{"tasks: T1\nS1(lag: [T1=99999999999999999999])", `line 2: member S1: lag of T1: "99999999999999999999" is out of range (at most 9223372036854775807)`},
		{"tasks: T1\nstandbys: 99999999999999999999", `line 2: standbys: "99999999999999999999" is out of range (at most ` + strconv.Itoa(math.MaxInt) + `)`},
		{"tasks: T1 T2 T3\nstateless: T3\n\nstandbys: 1073741824", `line 4: standbys 1073741824 is out of range (at most 2147483647 replicas over 2 stateful tasks)`},
		{"tasks: T1\nacceptable-lag: 9223372036854775808", `line 2: acceptable-lag: "9223372036854775808" is out of range (at most 9223372036854775807)`},
	} {
		_, err := ParseRebalance(tc.src)
		var se *SyntaxError
		require.True(t, errors.As(err, &se), "ParseRebalance(%q) = %v, want a *SyntaxError", tc.src, err)
		assert.ErrorIs(t, err, ErrSyntax)
		assert.Contains(t, err.Error(), tc.want, "ParseRebalance(%q)", tc.src)
		assert.Equal(t, fmt.Sprintf("learner: line %d: %s", se.Line, se.Msg), err.Error(), "ParseRebalance(%q)", tc.src)
	}
}

// Every error is one line and quotes at most errtext.Max bytes of a token,
// however long the token.
func TestParseRebalanceErrorsAreShort(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, src := range []string{
		"tasks: T1\nS1(rack: " + long + ")",
		"tasks: T1\nS1(capacity: " + strings.Repeat("9", 1<<20) + ")",
		"tasks: T1\n" + long + "(assigned: [])",
		"tasks: T1\nS1(assigned: [T1]) " + long,
		"tasks: T1\nS1(" + long + ": [T1])",
		"tasks: " + long,
		"tasks: T1\n" + long + ": 1",
		"tasks: T1\nS1(assigned: [T1 " + long + "])",
		"tasks: T1\nS1(assigned: [" + strings.Repeat("\x00", 1<<10) + "])",
	} {
		_, err := ParseRebalance(src)
		require.Error(t, err, "ParseRebalance(%.60q...)", src)
		msg := err.Error()
		assert.NotContains(t, msg, "\n", "ParseRebalance(%.60q...)", src)
		assert.LessOrEqual(t, len(msg), 200, "ParseRebalance(%.60q...) = %.300q..., want a short message", src, msg)
	}
}

func TestFormatAssignment(t *testing.T) {
	got := FormatAssignment(Assignment{MemberID: "S1", Assigned: []string{"T1", "T2"}, Learned: []string{"T2"}, Standby: []string{"T3"}})
	assert.Equal(t, "S1(assigned: [T1, T2], revoked: [], learning: [], learned: [T2], standby: [T3])", got)
}

// TestParseRebalanceNamesTheFirstUnknownStatelessTask: of several stateless
// tasks the tasks: line lacks, the error names the first, every time (it
// came from map order, so the same input gave different errors).
func TestParseRebalanceNamesTheFirstUnknownStatelessTask(t *testing.T) {
	src := "tasks: T1\nstateless: A B C D E F G H T1"
	for range 50 {
		_, err := ParseRebalance(src)
		require.Error(t, err, "ParseRebalance(%q)", src)
		require.Equal(t, `learner: line 2: stateless task "A" is not in tasks`, err.Error(), "ParseRebalance(%q)", src)
	}
}
