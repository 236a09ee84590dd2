package wire

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireTopology is the topology of most wire tests: Kafka Streams style IDs
// and a few plain names, so both interning paths are exercised.
func wireTopology(t testing.TB, n int) *Codec {
	t.Helper()
	tasks := make([]learner.Task, 0, n+3)
	for i := range n {
		tasks = append(tasks, learner.Task{ID: fmt.Sprintf("0_%d", i), Stateful: i%5 != 4})
	}
	tasks = append(tasks, learner.Task{ID: "alpha", Stateful: true}, learner.Task{ID: "beta"}, learner.Task{ID: "1_0", Stateful: true})
	a, err := learner.New(tasks, learner.Options{})
	require.NoError(t, err)
	return NewCodec(a)
}

// canonicalList is the order the decoder returns a list in: topology order,
// then tasks the topology lacks in the order given; empty is nil.
func (c *Codec) canonicalList(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	var known, unknown []string
	for _, id := range ids {
		if c.a.TaskIndex(id) >= 0 {
			known = append(known, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	slices.SortFunc(known, func(x, y string) int { return c.a.TaskIndex(x) - c.a.TaskIndex(y) })
	return append(known, unknown...)
}

func (c *Codec) canonicalMember(m learner.MemberMetadata) learner.MemberMetadata {
	m.Assigned, m.Revoked, m.Learning = c.canonicalList(m.Assigned), c.canonicalList(m.Revoked), c.canonicalList(m.Learning)
	m.Ready, m.Standby = c.canonicalList(m.Ready), c.canonicalList(m.Standby)
	if len(m.Lag) == 0 {
		m.Lag = nil
		return m
	}
	lags := map[string]int64{}
	var ids []string
	for _, l := range m.Lag {
		lags[l.Task] = l.Lag
		ids = append(ids, l.Task)
	}
	m.Lag = nil
	for _, id := range c.canonicalList(ids) {
		m.Lag = append(m.Lag, learner.TaskLag{Task: id, Lag: lags[id]})
	}
	return m
}

func (c *Codec) canonicalAssignment(as learner.Assignment) learner.Assignment {
	as.Assigned, as.Revoked, as.Learning = c.canonicalList(as.Assigned), c.canonicalList(as.Revoked), c.canonicalList(as.Learning)
	as.Learned, as.Standby = c.canonicalList(as.Learned), c.canonicalList(as.Standby)
	return as
}

func denseIDs(from, to int) []string {
	var ids []string
	for i := from; i < to; i++ {
		ids = append(ids, fmt.Sprintf("0_%d", i))
	}
	return ids
}

var wireMembers = []learner.MemberMetadata{
	{},
	{ID: "S1", Assigned: []string{"0_3", "0_1"}, Revoked: []string{"alpha"}, Learning: []string{"0_7"}},
	{ID: "kgo-2b7f.x_1", Assigned: denseIDs(0, 60), Standby: denseIDs(64, 100), Leaving: true, Capacity: 8, Rack: "rack-a"},
	{ID: "S4", Learning: []string{"1_0", "beta", "0_9"}, Ready: []string{"beta", "1_0"}, Standby: []string{"0_2"},
		Lag: []learner.TaskLag{{Task: "0_9", Lag: 1 << 40}, {Task: "1_0", Lag: 0}, {Task: "gone_7", Lag: 5}, {Task: "0_2", Lag: 12}}},
	{ID: "S5", Assigned: []string{"0_99", "old-task"}, Revoked: []string{"older", "0_0"}, Capacity: 1<<31 - 1},
}

var wireAssignments = []learner.Assignment{
	{},
	{MemberID: "S1", Assigned: []string{"0_1", "alpha"}, Learned: []string{"alpha"}, Standby: []string{"0_50"}},
	{MemberID: "S2", Assigned: denseIDs(10, 90), Revoked: []string{"old-task", "0_5"}, Learning: []string{"1_0", "beta"}},
}

func TestWireMemberRoundTrip(t *testing.T) {
	c := wireTopology(t, 100)
	for _, m := range wireMembers {
		b, err := c.AppendMember(nil, m)
		require.NoError(t, err, "AppendMember(%+v)", m)
		got, err := c.DecodeMember(b)
		require.NoError(t, err, "DecodeMember(AppendMember(%+v))", m)
		assert.Equal(t, c.canonicalMember(m), got, "DecodeMember(AppendMember(%+v))", m)
	}
}

func TestWireAssignmentRoundTrip(t *testing.T) {
	c := wireTopology(t, 100)
	for _, as := range wireAssignments {
		b, err := c.AppendAssignment([]byte("prefix"), as)
		require.NoError(t, err, "AppendAssignment(%+v)", as)
		require.True(t, strings.HasPrefix(string(b), "prefix"), "AppendAssignment(prefix, ...) = %q, lost the prefix", b)
		got, err := c.DecodeAssignment(b[len("prefix"):])
		require.NoError(t, err, "DecodeAssignment(AppendAssignment(%+v))", as)
		assert.Equal(t, c.canonicalAssignment(as), got, "DecodeAssignment(AppendAssignment(%+v))", as)
	}
}

// TestWireDenseUsesBitset checks the encoder picks the shorter index form:
// 60 consecutive tasks fit a bitset of 8 bytes instead of 60 gap bytes.
func TestWireDenseUsesBitset(t *testing.T) {
	c := wireTopology(t, 100)
	dense, err := c.AppendAssignment(nil, learner.Assignment{Assigned: denseIDs(0, 60)})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(dense), wireHeaderLen+1+4+8+4,
		"AppendAssignment(60 consecutive tasks) = %d bytes, want a bitset of about 8", len(dense))
}

func TestWireForwardCompatible(t *testing.T) {
	c := wireTopology(t, 100)
	m := wireMembers[3]
	b, err := c.AppendMember(nil, m)
	require.NoError(t, err)
	// A newer minor revision appends fields; this decoder skips them.
	got, err := c.DecodeMember(append(b, 0x07, 0xff, 0xff, 'x'))
	require.NoError(t, err, "DecodeMember(encoding + trailing fields)")
	assert.Equal(t, c.canonicalMember(m), got, "DecodeMember(encoding + trailing fields)")

	as, err := c.AppendAssignment(nil, wireAssignments[2])
	require.NoError(t, err)
	gotAs, err := c.DecodeAssignment(append(as, 1, 2, 3))
	require.NoError(t, err, "DecodeAssignment(encoding + trailing fields)")
	assert.Equal(t, c.canonicalAssignment(wireAssignments[2]), gotAs, "DecodeAssignment(encoding + trailing fields)")
}

func TestWireTopologyMismatch(t *testing.T) {
	leader, member := wireTopology(t, 100), wireTopology(t, 101)
	require.NotEqual(t, leader.Fingerprint(), member.Fingerprint(), "fingerprints of different topologies")
	m := learner.MemberMetadata{ID: "S9", Assigned: []string{"0_1", "removed"}, Leaving: true, Capacity: 3, Rack: "r1",
		Lag: []learner.TaskLag{{Task: "0_4", Lag: 3}, {Task: "removed-too", Lag: 9}}}
	b, err := member.AppendMember(nil, m)
	require.NoError(t, err)
	got, err := leader.DecodeMember(b)
	require.ErrorIs(t, err, ErrTopologyMismatch, "DecodeMember(other topology)")
	require.NotErrorIs(t, err, ErrMalformed, "DecodeMember(other topology)")
	want := learner.MemberMetadata{ID: "S9", Assigned: []string{"removed"}, Leaving: true, Capacity: 3, Rack: "r1",
		Lag: []learner.TaskLag{{Task: "removed-too", Lag: 9}}}
	assert.Equal(t, want, got, "DecodeMember(other topology) keeps what does not depend on indices")

	as, err := member.AppendAssignment(nil, learner.Assignment{MemberID: "S9", Assigned: []string{"0_1"}, Revoked: []string{"removed"}})
	require.NoError(t, err)
	gotAs, err := leader.DecodeAssignment(as)
	require.ErrorIs(t, err, ErrTopologyMismatch, "DecodeAssignment(other topology)")
	assert.Equal(t, learner.Assignment{MemberID: "S9", Revoked: []string{"removed"}}, gotAs, "DecodeAssignment(other topology)")
}

func TestWireEncodeRejectsBadInput(t *testing.T) {
	c := wireTopology(t, 10)
	for _, m := range []learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"0_1", "0_1"}},
		{ID: "S1", Revoked: []string{"gone", "gone"}},
		{ID: "S1", Standby: []string{""}},
		{ID: "bad id"},
		{ID: strings.Repeat("x", 256)},
		{ID: "S1", Rack: "a/b"},
		{ID: "S1", Capacity: -1},
		{ID: "S1", Lag: []learner.TaskLag{{Task: "0_1", Lag: -1}}},
		{ID: "S1", Lag: []learner.TaskLag{{Task: "0_1", Lag: 1}, {Task: "0_1", Lag: 2}}},
	} {
		b, err := c.AppendMember(nil, m)
		assert.ErrorIs(t, err, learner.ErrInvalidMember, "AppendMember(%+v) = %q", m, b)
	}
	b, err := c.AppendAssignment(nil, learner.Assignment{MemberID: "S1", Learned: []string{"0_2", "0_2"}})
	assert.ErrorIs(t, err, learner.ErrInvalidMember, "AppendAssignment(duplicate learned) = %q", b)
}

func TestWireDecodeRejectsHostileInput(t *testing.T) {
	c := wireTopology(t, 100)
	valid, err := c.AppendMember(nil, wireMembers[3])
	require.NoError(t, err)
	header := valid[:wireHeaderLen]
	// body builds a member message after a valid header.
	body := func(b ...byte) []byte { return append(slices.Clone(header), b...) }
	cases := map[string][]byte{
		"empty":                  nil,
		"version 0":              append([]byte{0}, valid[1:]...),
		"version 2":              append([]byte{2}, valid[1:]...),
		"version 255":            append([]byte{255}, valid[1:]...),
		"assignment kind":        append([]byte{1, wireKindAssignment}, valid[2:]...),
		"huge ID length":         body(0xff, 0xff, 0xff, 0xff, 0x0f),
		"ID length past the end": body(5, 'a', 'b'),
		"ID not an ID":           body(2, 'a', ' '),
		"varint overflow":        body(0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"capacity too big":       body(0, 0, 0x80, 0x80, 0x80, 0x80, 0x08),
		"huge task count":        body(0, 0, 1, 0, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 1),
		"index past topology":    body(0, 0, 1, 0, 1<<2, 103),
		"gap overflow":           body(0, 0, 1, 0, 2<<2, 50, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"huge bitset length":     body(0, 0, 1, 0, 1<<2|1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1),
		"bitset count mismatch":  body(0, 0, 1, 0, 2<<2|1, 0, 1, 1),
		"bitset zero tail":       body(0, 0, 1, 0, 1<<2|1, 0, 2, 1, 0),
		"bitset past topology":   body(0, 0, 1, 0, 1<<2|1, 99, 1, 0x10),
		"huge name count":        body(0, 0, 1, 0, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 'x'),
		"empty name list":        body(0, 0, 1, 0, 2, 0),
		"known task by name":     body(0, 0, 1, 0, 2, 1, 3, '0', '_', '1'),
		"name twice":             body(0, 0, 1, 0, 2, 2, 1, 'x', 1, 'x'),
		"lag out of range":       body(0, 0, 1, 0, 0, 0, 0, 0, 0, 1<<2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	}
	for i := range len(valid) {
		cases[fmt.Sprintf("truncated to %d of %d bytes", i, len(valid))] = valid[:i]
	}
	for name, b := range cases {
		m, err := c.DecodeMember(b)
		if assert.ErrorIs(t, err, ErrMalformed, "%s: DecodeMember(%x) = %+v", name, b, m) {
			assert.True(t, strings.HasPrefix(err.Error(), "wire: "), "%s: error %q lacks the package prefix", name, err)
		}
	}
	_, err = c.DecodeMember(append([]byte{2}, valid[1:]...))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "version 2", "DecodeMember(version 2) error names the version")
}

// TestWireDecodeAllocationBounded checks that declared lengths cannot make
// the decoder allocate more than the input justifies.
func TestWireDecodeAllocationBounded(t *testing.T) {
	c := wireTopology(t, 100_000)
	huge := c.appendHeader(nil, wireKindMember)
	huge = append(huge, 0, 0, 1, 0, 0xfc, 0xff, 0xff, 0xff, 0x0f)
	huge = append(huge, make([]byte, 1000)...) // 1000 zero gaps: tasks 0..999, then truncated
	dense, err := c.AppendMember(nil, learner.MemberMetadata{ID: "S1", Standby: denseIDs(0, 100_000)})
	require.NoError(t, err)
	for name, b := range map[string][]byte{"huge declared count": huge, "dense bitset": dense} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range 10 {
			c.DecodeMember(b)
		}
		runtime.ReadMemStats(&after)
		// A decoded task is a 16-byte string header sharing the topology's
		// ID; a bitset byte holds up to 8 of them.
		perRun := (after.TotalAlloc - before.TotalAlloc) / 10
		assert.LessOrEqual(t, perRun, uint64(8*16*len(b)+4096), "%s: DecodeMember(%d bytes) allocated bytes per call", name, len(b))
	}
}

// TestWireJoinGroupPayload measures the leader's whole JoinGroup user data
// for 1,000 members and 100,000 tasks with one standby each: every member
// owns 100 tasks and keeps standbys of 100 others. Kafka's default message
// limit is 1 MB; Kafka Streams once hit it with task IDs as strings.
func TestWireJoinGroupPayload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-task topology")
	}
	const members, tasks = 1000, 100_000
	c := wireTopology(t, tasks)
	// Two placements: round-robin (how orphans are dealt at group start:
	// gaps of 1,000) and random (after many rebalances).
	rng := rand.New(rand.NewPCG(1, 2))
	perm := rng.Perm(tasks)
	for _, placement := range []struct {
		name  string
		owner func(task int) int
	}{
		{"round-robin", func(task int) int { return task % members }},
		{"random", func(task int) int { return perm[task] % members }},
	} {
		assigned := make([][]string, members)
		standby := make([][]string, members)
		for task := range tasks {
			o := placement.owner(task)
			assigned[o] = append(assigned[o], fmt.Sprintf("0_%d", task))
			standby[(o+1)%members] = append(standby[(o+1)%members], fmt.Sprintf("0_%d", task))
		}
		total := 0
		for i := range members {
			// The member ID travels in Kafka's own JoinGroup fields, so the
			// Kafka balancer leaves it empty in the user data.
			b, err := c.AppendMember(nil, learner.MemberMetadata{Assigned: assigned[i], Standby: standby[i]})
			require.NoError(t, err)
			total += len(b)
		}
		t.Logf("%s: JoinGroup user data for %d members x %d tasks, 1 standby: %d bytes in all, %.1f bytes per member",
			placement.name, members, tasks, total, float64(total)/members)
		assert.LessOrEqual(t, total, 512<<10, "%s: JoinGroup user data, want at most 512 KiB (well under Kafka's 1 MB)", placement.name)
	}
}
