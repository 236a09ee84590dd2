package learner_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
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
	// From MaxCapacity+1 to MaxInt64, where int has 64 bits (with 32,
	// MaxCapacity is the largest int).
	for _, capacity := range learnertest.OutOfRangeCapacities {
		var out []learner.Assignment
		require.NotPanics(t, func() { out, err = a.Assign(group(capacity)) })
		require.ErrorIs(t, err, learner.ErrInvalidMember, "Assign(capacities %d) = %v", capacity, out)
		assert.Contains(t, err.Error(), fmt.Sprintf(`member "S1" (position 0): capacity %d is out of range (0 to 2147483647)`, capacity))
	}

	out, err := a.Assign(group(maxCapacity))
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
	for _, capacity := range learnertest.OutOfRangeCapacities { // 2^62 and MaxInt64 among them
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

// A lag not reported is a flag, not a value: it ranks as AcceptableLag, after
// a reported lag of AcceptableLag and before any larger one (rule 5): among
// competing learners (not ready: AcceptableLag 0 readies none by lag), one
// reporting none loses to one reporting 0 and beats one reporting 1 or
// MaxInt64. (Before, "none" ranked after every reported lag, MaxInt64
// included.)
func TestNoLagRanksAtAcceptableLag(t *testing.T) {
	a, err := learner.New([]learner.Task{{ID: "T1", Stateful: true}}, learner.Options{})
	require.NoError(t, err)
	for _, c := range []struct {
		lag  int64
		want string // who keeps learning T1
	}{{0, "S3"}, {1, "S2"}, {math.MaxInt64, "S2"}} {
		out, err := a.Assign([]learner.MemberMetadata{
			{ID: "S1", Assigned: []string{"T1"}},
			{ID: "S2", Learning: []string{"T1"}},
			{ID: "S3", Learning: []string{"T1"}, Lag: []learner.TaskLag{{Task: "T1", Lag: c.lag}}},
		})
		require.NoError(t, err)
		got := learner.FormatAssignments(out)
		assert.Contains(t, got, c.want+"(assigned: [], revoked: [], learning: [T1])",
			"Assign(S2 learning T1 with no lag, S3 with lag %d) = %s, want %s learning T1", c.lag, got, c.want)
	}
}

// extremeSpec draws groups with every number at the edges of its range.
// They are smaller than propertySpec's: the numbers matter here, not the
// sizes, and standby placement is slow with many more copies of a task
// than racks (a largest-Standbys group of 60 members and 400 tasks in
// three racks takes seconds).
var extremeSpec = learnertest.Spec{MaxMembers: 24, MaxTasks: 100, Extreme: true}

// TestPropertyExtremeNumbers searches for overflow: on groups whose
// capacities, lags and options sit at the edges of their ranges
// (learnertest.Spec.Extreme), Assign
//
//   - never panics and keeps every rule of learnertest.CheckAssign,
//     "balanced" by capacity included;
//   - gives the same assignments with every capacity scaled by the largest
//     factor that keeps it within MaxCapacity: balancing compares loads per
//     unit of capacity, which scaling does not change unless some product
//     overflows;
//   - rejects a capacity past MaxCapacity with a *MemberError naming the
//     member.
//
// The number of groups:
//
//	go test -run PropertyExtreme                   # 1,000 groups (CI)
//	LEARNER_LONG=1 go test -run PropertyExtreme    # 20,000 groups
//	LEARNER_SEED=123 go test -run PropertyExtreme  # replay a printed seed
func TestPropertyExtremeNumbers(t *testing.T) {
	n := runs(1000, 20000)
	seen := checkGenerated(t, extremeSpec, 3, n, extremes, checkExtreme)
	for _, e := range []string{"capacity MaxCapacity", "capacities scaled", "lag >= 2^62", "acceptable lag >= 2^62", "largest standbys", "max learners MaxInt"} {
		t.Logf("%6d groups with %s", seen[e], e)
		assert.GreaterOrEqual(t, seen[e], n/50, "only %d of %d groups with %s: the generator no longer tests it", seen[e], n, e)
	}
}

// checkExtreme runs the checks of TestPropertyExtremeNumbers on g and
// describes the first failure, or returns "".
func checkExtreme(g learner.Rebalance, seed uint64) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprintf("panic: %v\ninput:\n%s", p, g)
		}
	}()
	if msg := checkRules(g, seed); msg != "" {
		return msg
	}
	a, err := learner.New(g.Tasks, g.Options)
	if err != nil {
		return "New: " + err.Error()
	}
	out, err := a.Assign(g.Members)
	if err != nil {
		return "Assign: " + err.Error()
	}
	if scaled, k := scaleCapacities(g.Members); k > 1 {
		other, err := a.Assign(scaled)
		if err != nil || learner.FormatAssignments(other) != learner.FormatAssignments(out) {
			return fmt.Sprintf("capacities times %d: Assign = %v, %v; want as unscaled:\n%sinput:\n%s",
				k, learner.FormatAssignments(other), err, learner.FormatAssignments(out), g)
		}
	}
	for i := range g.Members {
		for _, c := range learnertest.OutOfRangeCapacities {
			bad := learnertest.CloneMembers(g.Members)
			bad[i].Capacity = c
			out, err := a.Assign(bad)
			var me *learner.MemberError
			if !errors.As(err, &me) || me.Position != i || !errors.Is(err, learner.ErrInvalidMember) {
				return fmt.Sprintf("member %d with capacity %d: Assign = %v, %v; want a *MemberError at position %d\ninput:\n%s",
					i, c, learner.FormatAssignments(out), err, i, g)
			}
		}
	}
	return ""
}

// scaleCapacities returns members with every capacity (0 counting as 1)
// times k, the largest factor that keeps them within MaxCapacity.
func scaleCapacities(members []learner.MemberMetadata) ([]learner.MemberMetadata, int) {
	top := 1
	for _, m := range members {
		top = max(top, m.Capacity)
	}
	k := learner.MaxCapacity / top
	scaled := learnertest.CloneMembers(members)
	for i := range scaled {
		scaled[i].Capacity = max(scaled[i].Capacity, 1) * k
	}
	return scaled, k
}

// extremes names the edges of the ranges g reaches.
func extremes(g learner.Rebalance) []string {
	var es []string
	add := func(ok bool, e string) {
		if ok {
			es = append(es, e)
		}
	}
	top, lag := 0, int64(0)
	for _, m := range g.Members {
		top = max(top, m.Capacity)
		for _, l := range m.Lag {
			lag = max(lag, l.Lag)
		}
	}
	_, k := scaleCapacities(g.Members)
	add(top == learner.MaxCapacity, "capacity MaxCapacity")
	add(k > 1 && len(g.Members) > 1, "capacities scaled")
	add(lag >= 1<<62, "lag >= 2^62")
	add(g.Options.AcceptableLag >= 1<<62, "acceptable lag >= 2^62")
	add(g.Options.Standbys > 3, "largest standbys")
	add(g.Options.MaxLearners == math.MaxInt, "max learners MaxInt")
	return es
}
