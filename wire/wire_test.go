package wire

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
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
		if c.taskIndex(id) >= 0 {
			known = append(known, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	slices.SortFunc(known, func(x, y string) int { return c.taskIndex(x) - c.taskIndex(y) })
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

// indexedMember is m as DecodeIndexedMember gives what DecodeMember gives
// as m.
func (c *Codec) indexedMember(m learner.MemberMetadata) learner.IndexedMember {
	return learnertest.IndexedMembers(c.a.Tasks(), []learner.MemberMetadata{m})[0]
}

func denseIDs(from, to int) []string {
	var ids []string
	for i := from; i < to; i++ {
		ids = append(ids, fmt.Sprintf("0_%d", i))
	}
	return ids
}

var wireMembers = []learner.MemberMetadata{
	{ID: "S0"},
	{ID: "S1", Assigned: []string{"0_3", "0_1"}, Revoked: []string{"alpha"}, Learning: []string{"0_7"}},
	{ID: "kgo-2b7f.x_1", Assigned: denseIDs(0, 60), Standby: denseIDs(64, 100), Leaving: true, Capacity: 8, Rack: "rack-a"},
	{ID: "S4", Learning: []string{"1_0", "beta", "0_9"}, Ready: []string{"beta", "1_0"}, Standby: []string{"0_2"},
		Lag: []learner.TaskLag{{Task: "0_9", Lag: 1 << 40}, {Task: "1_0", Lag: 0}, {Task: "gone_7", Lag: 5}, {Task: "0_2", Lag: 12}}},
	{ID: "S5", Assigned: []string{"0_99", "old-task"}, Revoked: []string{"older", "0_0"}, Capacity: 1<<31 - 1},
}

var wireAssignments = []learner.Assignment{
	{MemberID: "S0"},
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

// TestWireDecodeIndexedMember: DecodeIndexedMember decodes what
// DecodeMember decodes, by index, and what it decodes AssignIndexed takes.
func TestWireDecodeIndexedMember(t *testing.T) {
	c, other := wireTopology(t, 100), wireTopology(t, 101)
	for _, m := range wireMembers {
		b, err := c.AppendMember(nil, m)
		require.NoError(t, err, "AppendMember(%+v)", m)
		for _, codec := range []*Codec{c, other} {
			byID, idErr := codec.DecodeMember(b)
			got, err := codec.DecodeIndexedMember(b)
			require.Equal(t, idErr, err, "DecodeIndexedMember(AppendMember(%+v)) error, want DecodeMember's", m)
			require.Equal(t, codec.indexedMember(byID), got, "DecodeIndexedMember(AppendMember(%+v))", m)
			if err == nil {
				_, err := codec.a.AssignIndexed([]learner.IndexedMember{got})
				require.NoError(t, err, "AssignIndexed(DecodeIndexedMember(AppendMember(%+v)))", m)
			}
		}
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
	dense, err := c.AppendAssignment(nil, learner.Assignment{MemberID: "S", Assigned: denseIDs(0, 60)})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(dense), wireHeaderLen+2+1+4+8+4,
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

// TestWireEncodeErrorsCutLongIDs: an encoding error quotes a malformed ID
// cut to its first bytes, as the core's errors do: a megabyte ID must not
// make a megabyte log line (twice: in the member and in the ID's problem).
func TestWireEncodeErrorsCutLongIDs(t *testing.T) {
	c := wireTopology(t, 10)
	long := strings.Repeat("x", 1<<20) + " "
	for _, m := range []learner.MemberMetadata{
		{ID: long},
		{ID: "S1", Rack: long},
		{ID: "S1", Learning: []string{long}},
		{ID: "S1", Lag: []learner.TaskLag{{Task: long, Lag: 1}}},
	} {
		_, err := c.AppendMember(nil, m)
		require.ErrorIs(t, err, learner.ErrInvalidMember)
		assert.Less(t, len(err.Error()), 400, "AppendMember(a 1 MB malformed ID) = error %.300s...", err)
	}
	for _, as := range []learner.Assignment{{MemberID: long}, {MemberID: "S1", Standby: []string{long}}} {
		_, err := c.AppendAssignment(nil, as)
		require.ErrorIs(t, err, learner.ErrInvalidMember)
		assert.Less(t, len(err.Error()), 400, "AppendAssignment(a 1 MB malformed ID) = error %.300s...", err)
	}
}

// refusedMembers are reports Assign rejects for a rule the codec can check
// on one member alone, each with the words its error must hold.
var refusedMembers = []struct {
	name string
	m    learner.MemberMetadata
	msg  string
}{
	{"empty member ID", learner.MemberMetadata{Assigned: []string{"0_1"}}, `ID ""`},
	{"known task assigned and standby", learner.MemberMetadata{ID: "S1", Assigned: []string{"0_1"}, Standby: []string{"0_1", "0_2"}},
		`task "0_1" listed in both assigned and standby`},
	{"known task revoked and learning", learner.MemberMetadata{ID: "S1", Revoked: []string{"alpha", "0_3"}, Learning: []string{"0_2", "alpha"}},
		`task "alpha" listed in both revoked and learning`},
	{"unknown task assigned and revoked", learner.MemberMetadata{ID: "S1", Assigned: []string{"gone"}, Revoked: []string{"gone"}},
		`task "gone" listed in both assigned and revoked`},
	{"unknown task learning and standby", learner.MemberMetadata{ID: "S1", Learning: []string{"gone"}, Standby: []string{"0_1", "gone"}},
		`task "gone" listed in both learning and standby`},
	{"ready task not learning", learner.MemberMetadata{ID: "S1", Assigned: []string{"0_3"}, Learning: []string{"0_4"}, Ready: []string{"0_4", "0_3"}},
		`ready task "0_3" is not in learning`},
	{"unknown ready task not learning", learner.MemberMetadata{ID: "S1", Learning: []string{"gone"}, Ready: []string{"gone", "gone-too"}},
		`ready task "gone-too" is not in learning`},
}

// TestWireEncodeRefusesWhatAssignRejects: a member cannot send a report the
// leader's Assign would reject for the whole group.
func TestWireEncodeRefusesWhatAssignRejects(t *testing.T) {
	c := wireTopology(t, 10)
	for _, tc := range refusedMembers {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.a.Assign([]learner.MemberMetadata{tc.m})
			require.ErrorIs(t, err, learner.ErrInvalidMember, "Assign(%+v): the case must be one Assign rejects", tc.m)
			b, err := c.AppendMember(nil, tc.m)
			require.ErrorIs(t, err, learner.ErrInvalidMember, "AppendMember(%+v) = %x", tc.m, b)
			assert.Contains(t, err.Error(), tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "wire: encode member "), "error %q lacks the package prefix", err)
		})
	}
}

// TestWireDecodeRefusesWhatAssignRejects: the same reports, written by hand
// as a faulty or hostile encoder would, do not decode.
func TestWireDecodeRefusesWhatAssignRejects(t *testing.T) {
	c := wireTopology(t, 10)
	for _, tc := range refusedMembers {
		t.Run(tc.name, func(t *testing.T) {
			b := rawMember(c, tc.m)
			m, err := c.DecodeMember(b)
			require.ErrorIs(t, err, ErrMalformed, "DecodeMember(%x) = %+v", b, m)
			assert.Contains(t, err.Error(), tc.msg)
			assert.True(t, strings.HasPrefix(err.Error(), "wire: decode member metadata"), "error %q lacks the package prefix", err)
		})
	}
}

// refusedAssignments break the rules of Assign's output that a member
// relies on: a member ID, each task in at most one of assigned, learning and
// standby (Worker.Apply refuses the rest), learned tasks among the assigned.
var refusedAssignments = []struct {
	name string
	as   learner.Assignment
	msg  string
}{
	{"empty member ID", learner.Assignment{Assigned: []string{"0_1"}}, `member ID ""`},
	{"known task assigned and learning", learner.Assignment{MemberID: "S1", Assigned: []string{"0_1", "0_2"}, Learning: []string{"0_2"}},
		`task "0_2" listed in both assigned and learning`},
	{"unknown task learning and standby", learner.Assignment{MemberID: "S1", Learning: []string{"gone"}, Standby: []string{"gone"}},
		`task "gone" listed in both learning and standby`},
	{"learned task not assigned", learner.Assignment{MemberID: "S1", Assigned: []string{"0_1"}, Learned: []string{"0_1", "0_4"}},
		`learned task "0_4" is not in assigned`},
}

func TestWireAssignmentRefusesWhatAssignNeverSends(t *testing.T) {
	c := wireTopology(t, 10)
	for _, tc := range refusedAssignments {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.AppendAssignment(nil, tc.as)
			require.ErrorIs(t, err, learner.ErrInvalidMember, "AppendAssignment(%+v) = %x", tc.as, b)
			assert.Contains(t, err.Error(), tc.msg)

			b = rawAssignment(c, tc.as)
			as, err := c.DecodeAssignment(b)
			require.ErrorIs(t, err, ErrMalformed, "DecodeAssignment(%x) = %+v", b, as)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// rawMember writes m as the package doc lays it out, without the encoder's
// checks: capacity 1, no rack, flags or lags.
func rawMember(c *Codec, m learner.MemberMetadata) []byte {
	b := c.appendHeader(nil, wireKindMember)
	b = binary.AppendUvarint(b, uint64(len(m.ID)))
	b = append(append(b, m.ID...), 0, 1, 0)
	b = appendRawTasksets(c, b, m.Assigned, m.Revoked, m.Learning, m.Ready, m.Standby)
	return append(b, 0)
}

// rawAssignment is rawMember for an assignment.
func rawAssignment(c *Codec, as learner.Assignment) []byte {
	b := c.appendHeader(nil, wireKindAssignment)
	b = binary.AppendUvarint(b, uint64(len(as.MemberID)))
	b = append(b, as.MemberID...)
	return appendRawTasksets(c, b, as.Assigned, as.Revoked, as.Learning, as.Learned, as.Standby)
}

// appendRawTasksets writes each list as a taskset of gaps and names.
func appendRawTasksets(c *Codec, b []byte, lists ...[]string) []byte {
	for _, l := range lists {
		var idx []int
		var names []string
		for _, id := range l {
			if t := c.a.TaskIndex(id); t >= 0 {
				idx = append(idx, t)
			} else {
				names = append(names, id)
			}
		}
		slices.Sort(idx)
		header := uint64(len(idx)) << 2
		if len(names) > 0 {
			header |= 2
		}
		b = binary.AppendUvarint(b, header)
		prev := -1
		for _, t := range idx {
			b = binary.AppendUvarint(b, uint64(t-prev-1))
			prev = t
		}
		if len(names) > 0 {
			b = binary.AppendUvarint(b, uint64(len(names)))
			for _, name := range names {
				b = binary.AppendUvarint(b, uint64(len(name)))
				b = append(b, name...)
			}
		}
	}
	return b
}

func TestWireDecodeRejectsHostileInput(t *testing.T) {
	c := wireTopology(t, 100)
	valid, err := c.AppendMember(nil, wireMembers[3])
	require.NoError(t, err)
	header := valid[:wireHeaderLen]
	// body builds a member message after a valid header; s1 starts it
	// with ID "S1", no flags, capacity 1 and no rack.
	body := func(b ...byte) []byte { return append(slices.Clone(header), b...) }
	s1 := func(b ...byte) []byte { return body(append([]byte{2, 'S', '1', 0, 1, 0}, b...)...) }
	cases := []struct {
		name string
		b    []byte
		msg  string
	}{
		{"empty", nil, "shorter than the 10-byte header"},
		{"version 0", append([]byte{0}, valid[1:]...), "unknown version 0"},
		{"version 2", append([]byte{2}, valid[1:]...), "unknown version 2"},
		{"version 255", append([]byte{255}, valid[1:]...), "unknown version 255"},
		{"assignment kind", append([]byte{1, wireKindAssignment}, valid[2:]...), "message kind 2, want 1"},
		{"huge ID length", body(0xff, 0xff, 0xff, 0xff, 0x0f), "ID length: declared"},
		{"ID length past the end", body(5, 'a', 'b'), "ID length: declared 5"},
		{"ID not an ID", body(2, 'a', ' '), `malformed ID "a "`},
		{"varint overflow", body(2, 'S', '1', 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "capacity: varint overflows"},
		{"capacity too big", body(2, 'S', '1', 0, 0x80, 0x80, 0x80, 0x80, 0x08), "capacity 2147483648 out of range"},
		{"huge task count", s1(0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1, 1), "assigned: declared"},
		{"index past topology", s1(1<<2, 103), "assigned: task index 0+103 beyond"},
		{"gap overflow", s1(2<<2, 50, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "assigned: task index 51+"},
		{"huge bitset length", s1(1<<2|1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1), "assigned bitset length: declared"},
		{"bitset count mismatch", s1(2<<2|1, 0, 1, 1), "assigned: bitset of 1 bytes holds 1 tasks, header declares 2"},
		{"bitset zero tail", s1(1<<2|1, 0, 2, 1, 0), "no zero byte at the end"},
		{"bitset past topology", s1(1<<2|1, 99, 1, 0x10), "assigned: bitset of tasks 99 to 103 beyond"},
		{"huge name count", s1(2, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 'x'), "assigned name count: declared"},
		{"empty name list", s1(2, 0), "assigned: empty name list flagged"},
		{"known task by name", s1(2, 1, 3, '0', '_', '1'), `assigned: task "0_1" sent by name, but the topology has it`},
		{"name twice", s1(2, 2, 1, 'x', 1, 'x'), `assigned: task "x" listed twice`},
		{"lag out of range", s1(0, 0, 0, 0, 0, 1<<2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "lag 18446744073709551615 out of range"},
	}
	for i := range len(valid) {
		cases = append(cases, struct {
			name string
			b    []byte
			msg  string
		}{fmt.Sprintf("truncated to %d of %d bytes", i, len(valid)), valid[:i], ""})
	}
	for _, tc := range cases {
		m, err := c.DecodeMember(tc.b)
		if assert.ErrorIs(t, err, ErrMalformed, "%s: DecodeMember(%x) = %+v", tc.name, tc.b, m) {
			assert.True(t, strings.HasPrefix(err.Error(), "wire: decode member metadata: "), "%s: error %q lacks the package prefix", tc.name, err)
			assert.Contains(t, err.Error(), tc.msg, "%s: DecodeMember(%x)", tc.name, tc.b)
		}
	}
}

// TestWireDecodeAllocationBounded checks that declared lengths cannot make
// the decoder allocate more than the input justifies.
func TestWireDecodeAllocationBounded(t *testing.T) {
	c := wireTopology(t, 100_000)
	huge := c.appendHeader(nil, wireKindMember)
	huge = append(huge, 2, 'S', '1', 0, 1, 0, 0xfc, 0xff, 0xff, 0xff, 0x0f)
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
		// A decoded task is a 4-byte index, which the rules are checked on,
		// then a 16-byte string header sharing the topology's ID; a bitset
		// byte holds up to 8 of them.
		perRun := (after.TotalAlloc - before.TotalAlloc) / 10
		assert.LessOrEqual(t, perRun, uint64(8*(4+16)*len(b)+4096), "%s: DecodeMember(%d bytes) allocated bytes per call", name, len(b))
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
			// Kafka balancer sends a 4-byte placeholder in the user data.
			b, err := c.AppendMember(nil, learner.MemberMetadata{ID: "self", Assigned: assigned[i], Standby: standby[i]})
			require.NoError(t, err)
			total += len(b)
		}
		t.Logf("%s: JoinGroup user data for %d members x %d tasks, 1 standby: %d bytes in all, %.1f bytes per member",
			placement.name, members, tasks, total, float64(total)/members)
		assert.LessOrEqual(t, total, 512<<10, "%s: JoinGroup user data, want at most 512 KiB (well under Kafka's 1 MB)", placement.name)
	}
}

// BenchmarkWireDecodeMember decodes the JoinGroup user data of a leader of
// 1,000 members and 100,000 tasks (as in TestWireJoinGroupPayload, random
// placement): 100 assigned and 100 standby tasks each, per operation, into
// the form a leader assigns from (DecodeIndexedMember, for AssignIndexed).
// BenchmarkWireDecodeMemberByID decodes the same into task IDs
// (DecodeMember, for Assign).
func BenchmarkWireDecodeMember(b *testing.B) {
	benchmarkDecode(b, func(c *Codec, d []byte) error {
		_, err := c.DecodeIndexedMember(d)
		return err
	})
}

func BenchmarkWireDecodeMemberByID(b *testing.B) {
	benchmarkDecode(b, func(c *Codec, d []byte) error {
		_, err := c.DecodeMember(d)
		return err
	})
}

func benchmarkDecode(b *testing.B, decode func(*Codec, []byte) error) {
	const members, tasks = 1000, 100_000
	c := wireTopology(b, tasks)
	perm := rand.New(rand.NewPCG(1, 2)).Perm(tasks)
	ms := make([]learner.MemberMetadata, members)
	for task := range tasks {
		o := perm[task] % members
		ms[o].Assigned = append(ms[o].Assigned, fmt.Sprintf("0_%d", task))
		ms[(o+1)%members].Standby = append(ms[(o+1)%members].Standby, fmt.Sprintf("0_%d", task))
	}
	data := make([][]byte, members)
	for i := range ms {
		ms[i].ID = "self"
		var err error
		data[i], err = c.AppendMember(nil, ms[i])
		require.NoError(b, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range data {
			if err := decode(c, d); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestWireIndexedAssignment checks AppendIndexedAssignment against
// AppendAssignment, byte for byte, and its refusals: what AppendAssignment
// refuses, and indices outside the topology or out of order.
func TestWireIndexedAssignment(t *testing.T) {
	c := wireTopology(t, 100) // 103 tasks
	indices := func(ids []string) []int32 {
		var idx []int32
		for _, id := range ids {
			if t := c.a.TaskIndex(id); t >= 0 { // the others are Stale
				idx = append(idx, int32(t))
			}
		}
		slices.Sort(idx)
		return idx
	}
	indexed := func(as learner.Assignment) learner.IndexedAssignment {
		var stale []string
		for _, id := range as.Revoked {
			if c.a.TaskIndex(id) < 0 {
				stale = append(stale, id)
			}
		}
		return learner.IndexedAssignment{MemberID: as.MemberID, Assigned: indices(as.Assigned), Revoked: indices(as.Revoked),
			Learning: indices(as.Learning), Learned: indices(as.Learned), Standby: indices(as.Standby), Stale: stale}
	}
	for _, as := range append(slices.Clone(wireAssignments), learner.Assignment{MemberID: "S3", Assigned: denseIDs(0, 60), Learned: denseIDs(2, 9)}) {
		want, err := c.AppendAssignment([]byte("prefix"), as)
		require.NoError(t, err, "AppendAssignment(%+v)", as)
		got, err := c.AppendIndexedAssignment([]byte("prefix"), indexed(as))
		require.NoError(t, err, "AppendIndexedAssignment(%+v)", indexed(as))
		assert.Equal(t, want, got, "AppendIndexedAssignment(%+v), against AppendAssignment(%+v)", indexed(as), as)
	}
	type refusal struct {
		name string
		as   learner.IndexedAssignment
		msg  string
	}
	refused := []refusal{
		{"index past the topology", learner.IndexedAssignment{MemberID: "S1", Assigned: []int32{2, 103}}, "task index 103 in assigned outside the topology's 103 tasks"},
		{"negative index", learner.IndexedAssignment{MemberID: "S1", Learning: []int32{-1}}, "task index -1 in learning outside"},
		{"out of order", learner.IndexedAssignment{MemberID: "S1", Assigned: []int32{5, 3}}, "task indices in assigned not strictly increasing (3 after 5)"},
		{"repeated", learner.IndexedAssignment{MemberID: "S1", Assigned: []int32{4}, Learned: []int32{4, 4}}, "task indices in learned not strictly increasing"},
		{"stale task of the topology", learner.IndexedAssignment{MemberID: "S1", Stale: []string{"0_7"}}, `task "0_7" in revoked sent by name, but the topology has it (index 7)`},
		{"stale task twice", learner.IndexedAssignment{MemberID: "S1", Stale: []string{"old", "old"}}, `task "old" listed twice in revoked`},
		{"malformed stale task", learner.IndexedAssignment{MemberID: "S1", Stale: []string{"o/d"}}, `malformed task ID in revoked "o/d"`},
	}
	for _, tc := range refusedAssignments {
		unknown := func(id string) bool { return c.a.TaskIndex(id) < 0 }
		if slices.ContainsFunc(slices.Concat(tc.as.Assigned, tc.as.Learning, tc.as.Learned, tc.as.Standby), unknown) {
			continue // a task the topology lacks has no index
		}
		refused = append(refused, refusal{tc.name, indexed(tc.as), tc.msg})
	}
	for _, tc := range refused {
		b, err := c.AppendIndexedAssignment(nil, tc.as)
		if assert.ErrorIs(t, err, learner.ErrInvalidMember, "%s: AppendIndexedAssignment(%+v) = %x", tc.name, tc.as, b) {
			assert.Contains(t, err.Error(), tc.msg, "%s: AppendIndexedAssignment(%+v)", tc.name, tc.as)
		}
	}
}

// The zero Codec and NewCodec(nil) have an empty topology, as the zero
// Assignor has: they encode every task by name, round trip what they
// encode, and refuse task indices with an error. Both panicked on their
// first task (a nil Assignor's TaskIndex).
func TestZeroCodec(t *testing.T) {
	for name, c := range map[string]*Codec{"zero": {}, "NewCodec(nil)": NewCodec(nil)} {
		m := learner.MemberMetadata{ID: "S1", Assigned: []string{"T1"}, Learning: []string{"T2"}, Ready: []string{"T2"},
			Lag: []learner.TaskLag{{Task: "T3", Lag: 7}}}
		b, err := c.AppendMember(nil, m)
		require.NoError(t, err, "%s: AppendMember", name)
		got, err := c.DecodeMember(b)
		require.NoError(t, err, "%s: DecodeMember", name)
		assert.Equal(t, c.canonicalMember(m), got, "%s: DecodeMember(AppendMember(m))", name)
		as := learner.Assignment{MemberID: "S1", Assigned: []string{"T1"}, Learned: []string{"T1"}}
		b, err = c.AppendAssignment(nil, as)
		require.NoError(t, err, "%s: AppendAssignment", name)
		gotAs, err := c.DecodeAssignment(b)
		require.NoError(t, err, "%s: DecodeAssignment", name)
		assert.Equal(t, c.canonicalAssignment(as), gotAs, "%s: DecodeAssignment(AppendAssignment(as))", name)
		_, err = c.AppendIndexedAssignment(nil, learner.IndexedAssignment{MemberID: "S1", Assigned: []int32{0}})
		assert.ErrorIs(t, err, learner.ErrInvalidMember, "%s: AppendIndexedAssignment of task index 0", name)
		_, err = c.DecodeIndexedMember(b)
		assert.Error(t, err, "%s: DecodeIndexedMember of an assignment", name)
	}
}
