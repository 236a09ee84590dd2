// Package wire is the binary format that carries a member's report to the
// group leader (Kafka: the JoinGroup subscription's user data) and the
// leader's answer back (Kafka: the SyncGroup assignment's user data): a
// learner.MemberMetadata and a learner.Assignment, with tasks named by their
// position in the topology instead of by ID.
//
// Layout, version 1 (uvarint = encoding/binary's unsigned varint; string =
// uvarint length then bytes):
//
//	member metadata            assignment
//	  byte     version (1)       byte     version (1)
//	  byte     kind (1)          byte     kind (2)
//	  8 bytes  fingerprint       8 bytes  fingerprint
//	  string   ID                string   member ID
//	  byte     flags (1 leaving) taskset  assigned
//	  uvarint  capacity          taskset  revoked
//	  string   rack              taskset  learning
//	  taskset  assigned          taskset  learned
//	  taskset  revoked           taskset  standby
//	  taskset  learning
//	  taskset  ready
//	  taskset  standby
//	  taskset  tasks with lag, then one uvarint lag per task in that order
//
// A taskset names tasks by their index in the topology, so a task costs one
// or two bytes instead of its ID:
//
//	uvarint  count<<2 | names<<1 | bitset
//	bitset=0: count uvarints: the first index, then each gap minus one
//	          (indices strictly increase, so gaps are at least one)
//	bitset=1: uvarint first index, uvarint n, n bytes: bit j (LSB first)
//	          of the bytes is index first+j; count bits are set
//	names=1:  uvarint k, k strings: tasks the encoder's topology lacks
//
// The encoder picks whichever of the two index forms is shorter: gaps for a
// member's scattered share of a big topology, a bitset for a dense run.
//
// Compatibility: a decoder reads the fields it knows and ignores any bytes
// after them, so a newer minor revision appends fields at the end and older
// leaders keep working. An incompatible change bumps the version byte; a
// decoder rejects a version it does not know with ErrMalformed.
//
// Task indices only mean something to a receiver with the same task list,
// so every message carries the encoder's topology fingerprint. A receiver
// whose fingerprint differs gets ErrTopologyMismatch and keeps what does not
// depend on indices (IDs, flags, capacity, rack and tasks sent by name).
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"slices"

	"github.com/learnerassignor/learner"
)

// Errors returned by the decoders wrap one of these.
var (
	// ErrMalformed reports bytes that are not a message of a known version
	// of the wire format: truncated, corrupt, or from an incompatible version.
	ErrMalformed = errors.New("malformed wire format")
	// ErrTopologyMismatch reports a message encoded against a different
	// task list, whose task indices the receiver cannot interpret.
	ErrTopologyMismatch = errors.New("topology mismatch")
)

const (
	wireVersion         = 1
	wireKindMember      = 1
	wireKindAssignment  = 2
	wireHeaderLen       = 2 + 8
	wireFlagLeaving     = 1
	wireTasksetBitset   = 1
	wireTasksetNames    = 2
	wireTasksetHeaderSh = 2
	maxWireCapacity     = math.MaxInt32
)

// Codec encodes and decodes member metadata and assignments for one
// topology. It is immutable and safe for concurrent use; build it once per
// Assignor, since hashing the task list is linear in the topology.
type Codec struct {
	a           *learner.Assignor
	tasks       []learner.Task // a's tasks: a position's ID
	fingerprint uint64
}

// NewCodec returns a Codec for a's topology.
func NewCodec(a *learner.Assignor) *Codec {
	// Only the IDs and their order decide what an index means, so only they
	// are hashed: members that disagree on a task's statefulness can still
	// read each other's reports.
	h := fnv.New64a()
	var n [binary.MaxVarintLen64]byte
	tasks := a.Tasks()
	for _, t := range tasks {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(t.ID)))])
		h.Write([]byte(t.ID))
	}
	return &Codec{a: a, tasks: tasks, fingerprint: h.Sum64()}
}

// Fingerprint returns the hash of the topology's task IDs in order that
// every message carries.
func (c *Codec) Fingerprint() uint64 { return c.fingerprint }

// AppendMember appends the encoding of m to b. Lists may be in any order;
// tasks the topology lacks are sent by name. It fails, wrapping
// learner.ErrInvalidMember, on a task listed twice in one list, a negative capacity
// or lag, or a malformed ID.
func (c *Codec) AppendMember(b []byte, m learner.MemberMetadata) ([]byte, error) {
	where := func(err error) error {
		return fmt.Errorf("wire: encode member %q: %v: %w", m.ID, err, learner.ErrInvalidMember)
	}
	if m.Capacity < 0 || m.Capacity > maxWireCapacity {
		return nil, where(fmt.Errorf("capacity %d out of range", m.Capacity))
	}
	b = c.appendHeader(b, wireKindMember)
	var err error
	if b, err = appendID(b, "ID", m.ID); err != nil {
		return nil, where(err)
	}
	var flags byte
	if m.Leaving {
		flags |= wireFlagLeaving
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(m.Capacity))
	if b, err = appendID(b, "rack", m.Rack); err != nil {
		return nil, where(err)
	}
	b, err = c.appendTasksets(b, namedList{"assigned", m.Assigned}, namedList{"revoked", m.Revoked},
		namedList{"learning", m.Learning}, namedList{"ready", m.Ready}, namedList{"standby", m.Standby})
	if err != nil {
		return nil, where(err)
	}
	ids := make([]string, len(m.Lag))
	lags := make(map[string]int64, len(m.Lag))
	for i, l := range m.Lag {
		if l.Lag < 0 {
			return nil, where(fmt.Errorf("lag %d of task %q is negative", l.Lag, l.Task))
		}
		ids[i], lags[l.Task] = l.Task, l.Lag
	}
	var order []string
	if b, order, err = c.appendTaskset(b, "lag", ids); err != nil {
		return nil, where(err)
	}
	for _, id := range order {
		b = binary.AppendUvarint(b, uint64(lags[id]))
	}
	return b, nil
}

// AppendAssignment appends the encoding of as to b. Lists may be in any
// order; tasks the topology lacks (a revoked task of an older topology) are
// sent by name. It fails, wrapping learner.ErrInvalidMember, on a task listed twice
// in one list or a malformed ID.
func (c *Codec) AppendAssignment(b []byte, as learner.Assignment) ([]byte, error) {
	where := func(err error) error {
		return fmt.Errorf("wire: encode assignment of %q: %v: %w", as.MemberID, err, learner.ErrInvalidMember)
	}
	b = c.appendHeader(b, wireKindAssignment)
	var err error
	if b, err = appendID(b, "member ID", as.MemberID); err != nil {
		return nil, where(err)
	}
	b, err = c.appendTasksets(b, namedList{"assigned", as.Assigned}, namedList{"revoked", as.Revoked},
		namedList{"learning", as.Learning}, namedList{"learned", as.Learned}, namedList{"standby", as.Standby})
	if err != nil {
		return nil, where(err)
	}
	return b, nil
}

// DecodeMember decodes member metadata encoded by AppendMember, by this
// version of the package or a newer one. Lists come back in topology order
// followed by tasks sent by name; empty lists are nil.
//
// Bytes from an unknown version or that do not parse give an error wrapping
// ErrMalformed. A message from a different topology gives an error
// wrapping ErrTopologyMismatch together with the metadata minus the tasks
// sent by index. Decoding never panics, and allocates at most a small
// multiple of len(b): every declared length is checked against the bytes
// that remain before anything is allocated.
func (c *Codec) DecodeMember(b []byte) (learner.MemberMetadata, error) {
	d := wireDecoder{c: c, b: b, what: "member metadata"}
	match := d.header(wireKindMember)
	var m learner.MemberMetadata
	m.ID = d.id("ID", true)
	flags := d.byte("flags")
	m.Leaving = flags&wireFlagLeaving != 0
	capacity := d.uvarint("capacity")
	if d.err == nil && capacity > maxWireCapacity {
		d.fail("capacity %d out of range", capacity)
	}
	m.Capacity = int(capacity)
	m.Rack = d.id("rack", true)
	m.Assigned = d.taskset("assigned", match)
	m.Revoked = d.taskset("revoked", match)
	m.Learning = d.taskset("learning", match)
	m.Ready = d.taskset("ready", match)
	m.Standby = d.taskset("standby", match)
	lagIndexed, lagNamed, n := d.readTaskset("lag", match)
	for i := range n {
		lag := d.uvarint("lag")
		if d.err == nil && lag > math.MaxInt64 {
			d.fail("lag %d out of range", lag)
		}
		switch byName := i - (n - len(lagNamed)); {
		case d.err != nil:
		case byName >= 0:
			m.Lag = append(m.Lag, learner.TaskLag{Task: lagNamed[byName], Lag: int64(lag)})
		case match:
			m.Lag = append(m.Lag, learner.TaskLag{Task: lagIndexed[i], Lag: int64(lag)})
		}
	}
	if d.err != nil {
		return learner.MemberMetadata{}, d.err
	}
	return m, d.mismatch(match)
}

// DecodeAssignment decodes an assignment encoded by AppendAssignment, by this
// version of the package or a newer one. Errors, allocation and the partial
// result on ErrTopologyMismatch are as for DecodeMember.
func (c *Codec) DecodeAssignment(b []byte) (learner.Assignment, error) {
	d := wireDecoder{c: c, b: b, what: "assignment"}
	match := d.header(wireKindAssignment)
	var as learner.Assignment
	as.MemberID = d.id("member ID", true)
	as.Assigned = d.taskset("assigned", match)
	as.Revoked = d.taskset("revoked", match)
	as.Learning = d.taskset("learning", match)
	as.Learned = d.taskset("learned", match)
	as.Standby = d.taskset("standby", match)
	if d.err != nil {
		return learner.Assignment{}, d.err
	}
	return as, d.mismatch(match)
}

func (c *Codec) appendHeader(b []byte, kind byte) []byte {
	b = append(b, wireVersion, kind)
	return binary.BigEndian.AppendUint64(b, c.fingerprint)
}

// appendID appends an ID (empty only where the decoder allows it).
func appendID(b []byte, what, s string) ([]byte, error) {
	if s != "" && !learner.ValidID(s) {
		return nil, fmt.Errorf("malformed %s %q (want 1-%d letters, digits, '_', '-', '.')", what, s, learner.MaxIDLen)
	}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...), nil
}

// namedList is a task list and its name for errors.
type namedList struct {
	name string
	ids  []string
}

func (c *Codec) appendTasksets(b []byte, lists ...namedList) ([]byte, error) {
	for _, l := range lists {
		var err error
		if b, _, err = c.appendTaskset(b, l.name, l.ids); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendTaskset appends one task list and returns the order the decoder
// will list the tasks in: by index, then the names in the given order.
func (c *Codec) appendTaskset(b []byte, what string, ids []string) ([]byte, []string, error) {
	idx := make([]int32, 0, len(ids))
	var names []string
	for _, id := range ids {
		if t := c.a.TaskIndex(id); t >= 0 {
			idx = append(idx, int32(t))
		} else {
			names = append(names, id)
		}
	}
	slices.Sort(idx)
	for i := 1; i < len(idx); i++ {
		if idx[i] == idx[i-1] {
			return nil, nil, fmt.Errorf("task %q listed twice in %s", c.tasks[idx[i]].ID, what)
		}
	}
	if len(names) > 0 {
		seen := make(map[string]bool, len(names))
		for _, name := range names {
			if name == "" || seen[name] {
				return nil, nil, fmt.Errorf("task %q listed twice or empty in %s", name, what)
			}
			seen[name] = true
		}
	}

	header := uint64(len(idx)) << wireTasksetHeaderSh
	if len(names) > 0 {
		header |= wireTasksetNames
	}
	gapLen, prev := 0, int32(-1)
	for _, t := range idx {
		gapLen += uvarintLen(uint64(t - prev - 1))
		prev = t
	}
	var bitsetLen, span int
	if len(idx) > 0 {
		span = int(idx[len(idx)-1]-idx[0])/8 + 1
		bitsetLen = uvarintLen(uint64(idx[0])) + uvarintLen(uint64(span)) + span
	}
	if len(idx) > 0 && bitsetLen < gapLen {
		b = binary.AppendUvarint(b, header|wireTasksetBitset)
		b = binary.AppendUvarint(b, uint64(idx[0]))
		b = binary.AppendUvarint(b, uint64(span))
		start := len(b)
		b = append(b, make([]byte, span)...)
		for _, t := range idx {
			j := t - idx[0]
			b[start+int(j/8)] |= 1 << (j % 8)
		}
	} else {
		b = binary.AppendUvarint(b, header)
		prev = -1
		for _, t := range idx {
			b = binary.AppendUvarint(b, uint64(t-prev-1))
			prev = t
		}
	}
	if len(names) > 0 {
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, name := range names {
			var err error
			if b, err = appendID(b, "task ID in "+what, name); err != nil {
				return nil, nil, err
			}
		}
	}
	order := make([]string, 0, len(ids))
	for _, t := range idx {
		order = append(order, c.tasks[t].ID)
	}
	return b, append(order, names...), nil
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// wireDecoder reads one message. The first error sticks: later reads return
// zero values, so decoding code reads straight through without checks.
type wireDecoder struct {
	c    *Codec
	b    []byte
	off  int // next byte to read
	at   int // where the item being read starts, for errors
	what string
	err  error
}

func (d *wireDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("wire: decode %s: byte %d: %s: %w", d.what, d.at, fmt.Sprintf(format, args...), ErrMalformed)
	}
}

// header checks version and kind and reports whether the fingerprint
// matches this codec's topology.
func (d *wireDecoder) header(kind byte) bool {
	if len(d.b) < wireHeaderLen {
		d.fail("%d bytes, shorter than the %d-byte header", len(d.b), wireHeaderLen)
		return false
	}
	if v := d.b[0]; v != wireVersion {
		d.fail("unknown version %d (this decoder reads version %d)", v, wireVersion)
		return false
	}
	if k := d.b[1]; k != kind {
		d.fail("message kind %d, want %d", k, kind)
		return false
	}
	d.off = wireHeaderLen
	return binary.BigEndian.Uint64(d.b[2:]) == d.c.fingerprint
}

func (d *wireDecoder) mismatch(match bool) error {
	if match {
		return nil
	}
	return fmt.Errorf("wire: decode %s: fingerprint %016x, this topology's is %016x: %w",
		d.what, binary.BigEndian.Uint64(d.b[2:]), d.c.fingerprint, ErrTopologyMismatch)
}

func (d *wireDecoder) remaining() int { return len(d.b) - d.off }

func (d *wireDecoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	d.at = d.off
	if d.remaining() < 1 {
		d.fail("%s: truncated", what)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *wireDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	d.at = d.off
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		if n == 0 {
			d.fail("%s: truncated", what)
		} else {
			d.fail("%s: varint overflows 64 bits", what)
		}
		return 0
	}
	d.off += n
	return x
}

// length reads a count of items that take at least minBytes each, bounded
// by the bytes that remain so that no allocation outgrows the input.
func (d *wireDecoder) length(what string, minBytes int) int {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(d.remaining()/minBytes) {
		d.fail("%s: declared %d, but only %d bytes remain", what, n, d.remaining())
		return 0
	}
	return int(n)
}

// id reads a string that must be a well-formed ID (or empty, if allowed).
func (d *wireDecoder) id(what string, emptyOK bool) string {
	n := d.length(what+" length", 1)
	if d.err != nil {
		return ""
	}
	if n > learner.MaxIDLen {
		d.fail("%s of %d bytes is longer than %d", what, n, learner.MaxIDLen)
		return ""
	}
	raw := d.b[d.off : d.off+n]
	if !(n == 0 && emptyOK) && !learner.ValidID(string(raw)) {
		d.fail("%s %q is not a valid ID", what, raw)
		return ""
	}
	d.off += n
	return string(raw)
}

// taskset reads one task list: the tasks sent by index (when the topology
// matches), then the tasks sent by name.
func (d *wireDecoder) taskset(what string, match bool) []string {
	indexed, named, _ := d.readTaskset(what, match)
	if len(named) == 0 {
		return indexed
	}
	return append(indexed, named...)
}

// readTaskset reads one taskset. It returns the tasks sent by index (nil
// unless the topology matches), the tasks sent by name, and the total count
// of both, so that lists parallel to the taskset can be read in step.
func (d *wireDecoder) readTaskset(what string, match bool) (indexed, named []string, total int) {
	header := d.uvarint(what + " header")
	if d.err != nil {
		return nil, nil, 0
	}
	count := header >> wireTasksetHeaderSh
	if header&wireTasksetBitset == 0 {
		indexed = d.gaps(what, count, match)
	} else {
		indexed = d.bitset(what, count, match)
	}
	if d.err == nil && header&wireTasksetNames != 0 {
		named = d.names(what, match)
	}
	if d.err != nil {
		return nil, nil, 0
	}
	return indexed, named, int(count) + len(named)
}

// gaps reads count indices sent as gaps; each takes at least one byte.
func (d *wireDecoder) gaps(what string, count uint64, match bool) []string {
	if count > uint64(d.remaining()) {
		d.fail("%s: declared %d tasks, but only %d bytes remain", what, count, d.remaining())
		return nil
	}
	var ids []string
	if match && count > 0 {
		ids = make([]string, 0, count)
	}
	tasks := d.c.tasks
	nt, next := uint64(len(tasks)), uint64(0)
	for range count {
		gap := d.uvarint(what + " index")
		if d.err != nil || !match {
			continue // without the sender's topology the indices mean nothing
		}
		if gap >= nt || next > nt-1-gap {
			d.fail("%s: task index %d+%d beyond the topology's %d tasks", what, next, gap, nt)
			return nil
		}
		ids = append(ids, tasks[next+gap].ID)
		next += gap + 1
	}
	return ids
}

// bitset reads count indices sent as a bitset.
func (d *wireDecoder) bitset(what string, count uint64, match bool) []string {
	first := d.uvarint(what + " first index")
	span := d.length(what+" bitset length", 1)
	if d.err != nil {
		return nil
	}
	bs := d.b[d.off : d.off+span]
	set := 0
	for _, x := range bs {
		set += bits.OnesCount8(x)
	}
	if set == 0 || uint64(set) != count || bs[span-1] == 0 {
		d.fail("%s: bitset of %d bytes holds %d tasks, header declares %d (want at least one, no zero byte at the end)", what, span, set, count)
		return nil
	}
	d.off += span
	if !match {
		return nil
	}
	tasks := d.c.tasks
	nt := uint64(len(tasks))
	if last := uint64(span*8 - 1 - bits.LeadingZeros8(bs[span-1])); first >= nt || last >= nt-first {
		d.fail("%s: bitset of tasks %d to %d beyond the topology's %d tasks", what, first, first+last, nt)
		return nil
	}
	ids := make([]string, 0, count)
	for j, x := range bs {
		for ; x != 0; x &= x - 1 {
			ids = append(ids, tasks[first+uint64(j*8+bits.TrailingZeros8(x))].ID)
		}
	}
	return ids
}

// names reads the tasks of a taskset sent by name.
func (d *wireDecoder) names(what string, match bool) []string {
	k := d.length(what+" name count", 2) // a length byte and at least one byte each
	if d.err == nil && k == 0 {
		d.fail("%s: empty name list flagged", what)
	}
	if d.err != nil {
		return nil
	}
	names := make([]string, 0, k)
	seen := make(map[string]bool, k)
	for range k {
		name := d.id(what+" task ID", false)
		switch {
		case d.err != nil:
			return nil
		case match && d.c.a.TaskIndex(name) >= 0:
			d.fail("%s: task %q sent by name, but the topology has it", what, name)
			return nil
		case seen[name]:
			d.fail("%s: task %q listed twice", what, name)
			return nil
		}
		seen[name] = true
		names = append(names, name)
	}
	return names
}
