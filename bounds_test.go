package learner_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/learnerassignor/learner"
)

// The reproducers of issue 11 ("Why" 1 to 4), each failing at afe76f4. They
// use only the API that commit had, so they can be run there unchanged.

// maxCapacity is learner.MaxCapacity, spelled out so these tests compile at
// afe76f4 too.
const maxCapacity = 1<<31 - 1

func TestMaxCapacityIsMaxInt32(t *testing.T) {
	assert.Equal(t, maxCapacity, learner.MaxCapacity)
}

// Why 1: capacities of MaxInt64 with standbys panicked in the standby
// quotas (slice bounds out of range [:-1]). They are now rejected, and the
// largest capacity allowed places the standby.
func TestHugeCapacityWithStandbysIsRejectedNotPanicking(t *testing.T) {
	a, err := learner.New([]learner.Task{{ID: "T1", Stateful: true}}, learner.Options{Standbys: 1})
	require.NoError(t, err)
	group := func(capacity int) []learner.MemberMetadata {
		return []learner.MemberMetadata{{ID: "S1", Assigned: []string{"T1"}, Capacity: capacity}, {ID: "S2", Capacity: capacity}}
	}
	var out []learner.Assignment
	require.NotPanics(t, func() { out, err = a.Assign(group(math.MaxInt64)) })
	require.ErrorIs(t, err, learner.ErrInvalidMember, "Assign(capacities MaxInt64) = %v", out)
	assert.Contains(t, err.Error(), `member "S1" (position 0): capacity 9223372036854775807 is out of range (0 to 2147483647)`)

	out, err = a.Assign(group(maxCapacity))
	require.NoError(t, err)
	assert.Equal(t, "S1(assigned: [T1], revoked: [], learning: [])\nS2(assigned: [], revoked: [], learning: [], standby: [T1])\n",
		learner.FormatAssignments(out), "Assign(capacities MaxCapacity)")
}

// Why 2: capacities of 2^62 and above overflowed the balance comparisons
// and left the heavier of two equal members with more. They are now
// rejected; at MaxCapacity every member gets what it gets at capacity 1.
func TestHugeCapacityIsRejectedAndMaxCapacityBalances(t *testing.T) {
	a, err := learner.New([]learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}, {ID: "T3", Stateful: true}}, learner.Options{})
	require.NoError(t, err)
	group := func(capacity int) []learner.MemberMetadata {
		return []learner.MemberMetadata{
			{ID: "S1", Assigned: []string{"T1"}, Capacity: capacity},
			{ID: "S2", Assigned: []string{"T2", "T3"}, Capacity: capacity},
		}
	}
	for _, capacity := range []int{1 << 62, math.MaxInt64} {
		out, err := a.Assign(group(capacity))
		require.ErrorIs(t, err, learner.ErrInvalidMember, "Assign(capacities %d) = %v", capacity, out)
		assert.Contains(t, err.Error(), "is out of range (0 to 2147483647)")
	}
	want, err := a.Assign(group(1))
	require.NoError(t, err)
	got, err := a.Assign(group(maxCapacity))
	require.NoError(t, err)
	assert.Equal(t, learner.FormatAssignments(want), learner.FormatAssignments(got), "Assign(capacities MaxCapacity), want as with capacities 1")
}

// Why 3: duplicates of a task the topology lacks passed in Ready and Lag,
// while the same duplicates of a known task were errors.
func TestDuplicateUnknownTasksAreErrors(t *testing.T) {
	a, err := learner.New([]learner.Task{{ID: "T1", Stateful: true}}, learner.Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		member learner.MemberMetadata
		msg    string
	}{
		{"ready twice", learner.MemberMetadata{ID: "S1", Learning: []string{"gone"}, Ready: []string{"gone", "gone"}}, `ready task "gone" listed twice`},
		{"lag twice", learner.MemberMetadata{ID: "S1", Lag: []learner.TaskLag{{Task: "gone", Lag: 1}, {Task: "gone", Lag: 2}}}, `lag of task "gone" reported twice`},
		{"assigned twice", learner.MemberMetadata{ID: "S1", Assigned: []string{"gone", "gone"}}, `task "gone" listed twice in assigned`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := a.Assign([]learner.MemberMetadata{tc.member})
			require.ErrorIs(t, err, learner.ErrInvalidMember, "Assign(%+v) = %v", tc.member, out)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// Why 4: with AcceptableLag MaxInt64 a learner that reported neither lag
// nor ready was promoted, because "no lag" was the value MaxInt64. A
// reported lag of MaxInt64 is within that bound, no lag is not.
func TestAcceptableLagMaxInt64NeedsAReportedLag(t *testing.T) {
	a, err := learner.New([]learner.Task{{ID: "T1", Stateful: true}}, learner.Options{AcceptableLag: math.MaxInt64})
	require.NoError(t, err)
	owner := learner.MemberMetadata{ID: "S1", Assigned: []string{"T1"}}

	out, err := a.Assign([]learner.MemberMetadata{owner, {ID: "S2", Learning: []string{"T1"}}})
	require.NoError(t, err)
	assert.Equal(t, "S1(assigned: [T1], revoked: [], learning: [], learned: [T1])\nS2(assigned: [], revoked: [], learning: [T1])\n",
		learner.FormatAssignments(out), "a learner without lag or ready flag keeps learning")

	out, err = a.Assign([]learner.MemberMetadata{owner, {ID: "S2", Learning: []string{"T1"}, Lag: []learner.TaskLag{{Task: "T1", Lag: math.MaxInt64}}}})
	require.NoError(t, err)
	assert.Equal(t, "S1(assigned: [], revoked: [T1], learning: [])\nS2(assigned: [T1], revoked: [], learning: [])\n",
		learner.FormatAssignments(out), "a learner with lag MaxInt64 <= AcceptableLag is ready")
}

// A reported lag, however large, ranks a learner before one that reported
// none: "none" is not the largest lag.
func TestReportedLagBeatsNoLag(t *testing.T) {
	a, err := learner.New([]learner.Task{{ID: "T1", Stateful: true}}, learner.Options{})
	require.NoError(t, err)
	out, err := a.Assign([]learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"T1"}},
		{ID: "S2", Learning: []string{"T1"}},
		{ID: "S3", Learning: []string{"T1"}, Lag: []learner.TaskLag{{Task: "T1", Lag: math.MaxInt64}}},
	})
	require.NoError(t, err)
	assert.Contains(t, learner.FormatAssignments(out), "S3(assigned: [], revoked: [], learning: [T1])", "the learner that reported a lag keeps learning")
}
