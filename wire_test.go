package learner

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// wireTopology is the topology of most wire tests: Kafka Streams style IDs
// and a few plain names, so both interning paths are exercised.
func wireTopology(t testing.TB, n int) *Codec {
	t.Helper()
	tasks := make([]Task, 0, n+3)
	for i := range n {
		tasks = append(tasks, Task{ID: fmt.Sprintf("0_%d", i), Stateful: i%5 != 4})
	}
	tasks = append(tasks, Task{ID: "alpha", Stateful: true}, Task{ID: "beta"}, Task{ID: "1_0", Stateful: true})
	a, err := New(tasks, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
		if c.a.index.lookup(id) != none {
			known = append(known, id)
		} else {
			unknown = append(unknown, id)
		}
	}
	slices.SortFunc(known, func(x, y string) int { return int(c.a.index.lookup(x) - c.a.index.lookup(y)) })
	return append(known, unknown...)
}

func (c *Codec) canonicalMember(m MemberMetadata) MemberMetadata {
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
		m.Lag = append(m.Lag, TaskLag{Task: id, Lag: lags[id]})
	}
	return m
}

func (c *Codec) canonicalAssignment(as Assignment) Assignment {
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

var wireMembers = []MemberMetadata{
	{},
	{ID: "S1", Assigned: []string{"0_3", "0_1"}, Revoked: []string{"alpha"}, Learning: []string{"0_7"}},
	{ID: "kgo-2b7f.x_1", Assigned: denseIDs(0, 60), Standby: denseIDs(64, 100), Leaving: true, Capacity: 8, Rack: "rack-a"},
	{ID: "S4", Learning: []string{"1_0", "beta", "0_9"}, Ready: []string{"beta", "1_0"}, Standby: []string{"0_2"},
		Lag: []TaskLag{{Task: "0_9", Lag: 1 << 40}, {Task: "1_0", Lag: 0}, {Task: "gone_7", Lag: 5}, {Task: "0_2", Lag: 12}}},
	{ID: "S5", Assigned: []string{"0_99", "old-task"}, Revoked: []string{"older", "0_0"}, Capacity: 1<<31 - 1},
}

var wireAssignments = []Assignment{
	{},
	{MemberID: "S1", Assigned: []string{"0_1", "alpha"}, Learned: []string{"alpha"}, Standby: []string{"0_50"}},
	{MemberID: "S2", Assigned: denseIDs(10, 90), Revoked: []string{"old-task", "0_5"}, Learning: []string{"1_0", "beta"}},
}

func TestWireMemberRoundTrip(t *testing.T) {
	c := wireTopology(t, 100)
	for _, m := range wireMembers {
		b, err := c.AppendMember(nil, m)
		if err != nil {
			t.Fatalf("AppendMember(%+v) = %v", m, err)
		}
		got, err := c.DecodeMember(b)
		if want := c.canonicalMember(m); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeMember(AppendMember(%+v)) = %+v, %v; want %+v, nil", m, got, err, want)
		}
	}
}

func TestWireAssignmentRoundTrip(t *testing.T) {
	c := wireTopology(t, 100)
	for _, as := range wireAssignments {
		b, err := c.AppendAssignment([]byte("prefix"), as)
		if err != nil {
			t.Fatalf("AppendAssignment(%+v) = %v", as, err)
		}
		if !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("AppendAssignment(prefix, ...) = %q, lost the prefix", b)
		}
		got, err := c.DecodeAssignment(b[len("prefix"):])
		if want := c.canonicalAssignment(as); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeAssignment(AppendAssignment(%+v)) = %+v, %v; want %+v, nil", as, got, err, want)
		}
	}
}

// TestWireDenseUsesBitset checks the encoder picks the shorter index form:
// 60 consecutive tasks fit a bitset of 8 bytes instead of 60 gap bytes.
func TestWireDenseUsesBitset(t *testing.T) {
	c := wireTopology(t, 100)
	dense, err := c.AppendAssignment(nil, Assignment{Assigned: denseIDs(0, 60)})
	if err != nil {
		t.Fatal(err)
	}
	if len(dense) > wireHeaderLen+1+4+8+4 {
		t.Errorf("AppendAssignment(60 consecutive tasks) = %d bytes, want a bitset of about 8", len(dense))
	}
}

func TestWireForwardCompatible(t *testing.T) {
	c := wireTopology(t, 100)
	m := wireMembers[3]
	b, err := c.AppendMember(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	// A newer minor revision appends fields; this decoder skips them.
	newer := append(b, 0x07, 0xff, 0xff, 'x')
	got, err := c.DecodeMember(newer)
	if want := c.canonicalMember(m); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeMember(encoding + trailing fields) = %+v, %v; want %+v, nil", got, err, want)
	}
	as, err := c.AppendAssignment(nil, wireAssignments[2])
	if err != nil {
		t.Fatal(err)
	}
	gotAs, err := c.DecodeAssignment(append(as, 1, 2, 3))
	if want := c.canonicalAssignment(wireAssignments[2]); err != nil || !reflect.DeepEqual(gotAs, want) {
		t.Errorf("DecodeAssignment(encoding + trailing fields) = %+v, %v; want %+v, nil", gotAs, err, want)
	}
}

func TestWireTopologyMismatch(t *testing.T) {
	leader, member := wireTopology(t, 100), wireTopology(t, 101)
	if leader.Fingerprint() == member.Fingerprint() {
		t.Fatalf("fingerprints of different topologies are equal: %016x", leader.Fingerprint())
	}
	m := MemberMetadata{ID: "S9", Assigned: []string{"0_1", "removed"}, Leaving: true, Capacity: 3, Rack: "r1",
		Lag: []TaskLag{{Task: "0_4", Lag: 3}, {Task: "removed-too", Lag: 9}}}
	b, err := member.AppendMember(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := leader.DecodeMember(b)
	if !errors.Is(err, ErrTopologyMismatch) || errors.Is(err, ErrWireFormat) {
		t.Fatalf("DecodeMember(other topology) error = %v, want ErrTopologyMismatch only", err)
	}
	want := MemberMetadata{ID: "S9", Assigned: []string{"removed"}, Leaving: true, Capacity: 3, Rack: "r1",
		Lag: []TaskLag{{Task: "removed-too", Lag: 9}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeMember(other topology) = %+v, want what does not depend on indices: %+v", got, want)
	}
	as, err := member.AppendAssignment(nil, Assignment{MemberID: "S9", Assigned: []string{"0_1"}, Revoked: []string{"removed"}})
	if err != nil {
		t.Fatal(err)
	}
	gotAs, err := leader.DecodeAssignment(as)
	if wantAs := (Assignment{MemberID: "S9", Revoked: []string{"removed"}}); !errors.Is(err, ErrTopologyMismatch) || !reflect.DeepEqual(gotAs, wantAs) {
		t.Errorf("DecodeAssignment(other topology) = %+v, %v; want %+v, ErrTopologyMismatch", gotAs, err, wantAs)
	}
}

func TestWireEncodeRejectsBadInput(t *testing.T) {
	c := wireTopology(t, 10)
	for _, m := range []MemberMetadata{
		{ID: "S1", Assigned: []string{"0_1", "0_1"}},
		{ID: "S1", Revoked: []string{"gone", "gone"}},
		{ID: "S1", Standby: []string{""}},
		{ID: "bad id"},
		{ID: strings.Repeat("x", 256)},
		{ID: "S1", Rack: "a/b"},
		{ID: "S1", Capacity: -1},
		{ID: "S1", Lag: []TaskLag{{Task: "0_1", Lag: -1}}},
		{ID: "S1", Lag: []TaskLag{{Task: "0_1", Lag: 1}, {Task: "0_1", Lag: 2}}},
	} {
		if b, err := c.AppendMember(nil, m); !errors.Is(err, ErrInvalidMember) {
			t.Errorf("AppendMember(%+v) = %q, %v; want an error wrapping ErrInvalidMember", m, b, err)
		}
	}
	if b, err := c.AppendAssignment(nil, Assignment{MemberID: "S1", Learned: []string{"0_2", "0_2"}}); !errors.Is(err, ErrInvalidMember) {
		t.Errorf("AppendAssignment(duplicate learned) = %q, %v; want an error wrapping ErrInvalidMember", b, err)
	}
}

func TestWireDecodeRejectsHostileInput(t *testing.T) {
	c := wireTopology(t, 100)
	valid, err := c.AppendMember(nil, wireMembers[3])
	if err != nil {
		t.Fatal(err)
	}
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
		if !errors.Is(err, ErrWireFormat) || !strings.HasPrefix(err.Error(), "learner: ") {
			t.Errorf("%s: DecodeMember(%x) = %+v, %v; want a learner: error wrapping ErrWireFormat", name, b, m, err)
		}
	}
	if _, err := c.DecodeMember(append([]byte{2}, valid[1:]...)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("DecodeMember(version 2) error = %v, want it to name the version", err)
	}
}

// TestWireDecodeAllocationBounded checks that declared lengths cannot make
// the decoder allocate more than the input justifies.
func TestWireDecodeAllocationBounded(t *testing.T) {
	c := wireTopology(t, 100_000)
	huge := c.appendHeader(nil, wireKindMember)
	huge = append(huge, 0, 0, 1, 0, 0xfc, 0xff, 0xff, 0xff, 0x0f)
	huge = append(huge, make([]byte, 1000)...) // 1000 zero gaps: tasks 0..999, then truncated
	dense, err := c.AppendMember(nil, MemberMetadata{ID: "S1", Standby: denseIDs(0, 100_000)})
	if err != nil {
		t.Fatal(err)
	}
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
		if limit := uint64(8*16*len(b) + 4096); perRun > limit {
			t.Errorf("%s: DecodeMember(%d bytes) allocated %d bytes per call, want at most %d", name, len(b), perRun, limit)
		}
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
			b, err := c.AppendMember(nil, MemberMetadata{Assigned: assigned[i], Standby: standby[i]})
			if err != nil {
				t.Fatal(err)
			}
			total += len(b)
		}
		t.Logf("%s: JoinGroup user data for %d members x %d tasks, 1 standby: %d bytes in all, %.1f bytes per member",
			placement.name, members, tasks, total, float64(total)/members)
		if total > 512<<10 {
			t.Errorf("%s: JoinGroup user data = %d bytes, want at most 512 KiB (well under Kafka's 1 MB)", placement.name, total)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to both decoders (no panic, errors wrap a
// sentinel, whatever decodes re-encodes to the same value) and also reads
// the bytes as a recipe for member metadata that must round-trip.
func FuzzDecode(f *testing.F) {
	c, other := wireTopology(f, 40), wireTopology(f, 41)
	for _, m := range wireMembers {
		b, err := c.AppendMember(nil, m)
		if err == nil {
			f.Add(b)
		}
	}
	for _, as := range wireAssignments {
		b, err := c.AppendAssignment(nil, as)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, codec := range []*Codec{c, other} {
			m, err := codec.DecodeMember(data)
			checkDecoded(t, codec, "DecodeMember", data, m, err, codec.AppendMember, codec.DecodeMember)
			as, err := codec.DecodeAssignment(data)
			checkDecoded(t, codec, "DecodeAssignment", data, as, err, codec.AppendAssignment, codec.DecodeAssignment)
		}
		m := memberFromRecipe(c, data)
		b, err := c.AppendMember(nil, m)
		if err != nil {
			t.Fatalf("AppendMember(%+v) = %v", m, err)
		}
		got, err := c.DecodeMember(b)
		if want := c.canonicalMember(m); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeMember(AppendMember(%+v)) = %+v, %v; want %+v", m, got, err, want)
		}
	})
}

func checkDecoded[T any](t *testing.T, c *Codec, name string, data []byte, v T, err error,
	encode func([]byte, T) ([]byte, error), decode func([]byte) (T, error)) {
	t.Helper()
	switch {
	case errors.Is(err, ErrWireFormat):
		var zero T
		if !reflect.DeepEqual(v, zero) {
			t.Fatalf("%s(%x) = %+v with error %v, want the zero value", name, data, v, err)
		}
		return
	case errors.Is(err, ErrTopologyMismatch):
		return // partial by design; the matching codec checks the round trip
	case err != nil:
		t.Fatalf("%s(%x) error = %v, want one wrapping ErrWireFormat or ErrTopologyMismatch", name, data, err)
	}
	b, err := encode(nil, v)
	if err != nil {
		t.Fatalf("%s(%x) = %+v, which does not re-encode: %v", name, data, v, err)
	}
	again, err := decode(b)
	if err != nil || !reflect.DeepEqual(again, v) {
		t.Fatalf("%s(re-encoded %+v) = %+v, %v; want it unchanged", name, v, again, err)
	}
}

// memberFromRecipe builds member metadata from fuzz bytes: each byte puts
// one task (known or not) into one of the lists.
func memberFromRecipe(c *Codec, data []byte) MemberMetadata {
	m := MemberMetadata{ID: "S1"}
	seen := map[string]bool{}
	for i, x := range data {
		id := c.a.tasks[int(x)%len(c.a.tasks)].ID
		if x >= 0xf0 {
			id = fmt.Sprintf("gone-%d", x&0x0f)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		switch i % 6 {
		case 0:
			m.Assigned = append(m.Assigned, id)
		case 1:
			m.Revoked = append(m.Revoked, id)
		case 2:
			m.Learning = append(m.Learning, id)
			if x&1 == 0 {
				m.Ready = append(m.Ready, id)
			}
		case 3:
			m.Standby = append(m.Standby, id)
		case 4:
			m.Lag = append(m.Lag, TaskLag{Task: id, Lag: int64(x) << (x % 50)})
		default:
			m.Leaving, m.Capacity, m.Rack = !m.Leaving, int(x), fmt.Sprintf("r%d", x%3)
		}
	}
	return m
}

func ExampleCodec() {
	a, err := New([]Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}, {ID: "T3"}}, Options{})
	if err != nil {
		panic(err)
	}
	c := NewCodec(a) // build once: every member of the group uses the same tasks
	join, err := c.AppendMember(nil, MemberMetadata{ID: "S4", Learning: []string{"T1"}, Ready: []string{"T1"}, Standby: []string{"T2"}})
	if err != nil {
		panic(err)
	}
	m, err := c.DecodeMember(join)
	fmt.Println(len(join), "bytes:", FormatMember(m), err)

	_, err = c.DecodeMember(join[:12])
	fmt.Println(errors.Is(err, ErrWireFormat), err)
	// Output:
	// 25 bytes: S4(assigned: [], revoked: [], learning: [T1], ready: [T1], standby: [T2]) <nil>
	// true learner: decode member metadata: byte 10: ID length: declared 2, but only 1 bytes remain: malformed wire format
}
