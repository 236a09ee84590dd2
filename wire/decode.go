package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/learnerassignor/learner"
)

// DecodeMember decodes member metadata encoded by AppendMember, by this
// version of the package or a newer one. Lists come back in topology order
// followed by tasks sent by name; empty lists are nil.
//
// Bytes from an unknown version, that do not parse, or that hold what
// AppendMember refuses to encode give an error wrapping ErrMalformed. A
// message from a different topology gives an error wrapping
// ErrTopologyMismatch together with the metadata minus the tasks sent by
// index. Decoding never panics, and allocates in proportion to len(b), at
// most about 160 bytes per byte (a bitset byte holds up to eight tasks, each
// a 4-byte index and then a 16-byte string header: 135 bytes per byte
// measured for a dense bitset; a two-byte name costs a string and a map
// entry): every declared length is checked against the bytes that remain
// before anything is allocated.
func (c *Codec) DecodeMember(b []byte) (learner.MemberMetadata, error) {
	d := decoder{c: c, b: b, kind: &memberKind}
	defer d.release()
	match := d.header()
	p := d.member(match)
	if d.err != nil {
		return learner.MemberMetadata{}, d.err
	}
	m := learner.MemberMetadata{ID: p.id, Leaving: p.leaving, Capacity: p.capacity, Rack: p.rack}
	c.idLists(p.sets[:], &m.Assigned, &m.Revoked, &m.Learning, &m.Ready, &m.Standby)
	if len(p.lags) > 0 {
		m.Lag = make([]learner.TaskLag, 0, len(p.lags))
		for i, t := range p.lag.idx {
			m.Lag = append(m.Lag, learner.TaskLag{Task: c.taskID(t), Lag: p.lags[i]})
		}
		for i, name := range p.lag.names {
			m.Lag = append(m.Lag, learner.TaskLag{Task: name, Lag: p.lags[len(p.lag.idx)+i]})
		}
	}
	return m, d.mismatch(match)
}

// DecodeIndexedMember decodes member metadata encoded by AppendMember into
// the form learner.Assignor.AssignIndexed takes, for a leader: tasks by
// index, with no task ID built. Tasks sent by name that the topology lacks
// are, when the member holds them (assigned or revoked), in Stale, in the
// order sent, and otherwise left out, as Assign drops them. Lists are in
// topology order; empty lists are nil. Errors, allocation and the partial
// result on ErrTopologyMismatch are as for DecodeMember; in that partial
// result, the tasks sent by name that this topology has are given by its
// index, in the order sent.
//
// What DecodeIndexedMember returns without an error is a report
// AssignIndexed accepts on its own: the rules on one member's lists are
// checked here as for DecodeMember.
func (c *Codec) DecodeIndexedMember(b []byte) (learner.IndexedMember, error) {
	d := decoder{c: c, b: b, kind: &memberKind}
	defer d.release()
	match := d.header()
	p := d.member(match)
	if d.err != nil {
		return learner.IndexedMember{}, d.err
	}
	m := learner.IndexedMember{ID: p.id, Leaving: p.leaving, Capacity: p.capacity, Rack: p.rack}
	c.indexLists(p.sets[:], &m, &m.Assigned, &m.Revoked, &m.Learning, &m.Ready, &m.Standby)
	if len(p.lags) > 0 {
		m.Lag = make([]learner.IndexedLag, 0, len(p.lags))
		for i, t := range p.lag.idx {
			m.Lag = append(m.Lag, learner.IndexedLag{Task: t, Lag: p.lags[i]})
		}
		for i, name := range p.lag.names {
			if t := c.taskIndex(name); t >= 0 { // another topology's name for one of ours
				m.Lag = append(m.Lag, learner.IndexedLag{Task: int32(t), Lag: p.lags[len(p.lag.idx)+i]})
			}
		}
		if len(m.Lag) == 0 { // every lag for a task the topology lacks
			m.Lag = nil
		}
	}
	return m, d.mismatch(match)
}

// memberParts is a member message as read, before its lists take the
// form of IDs or of indices.
type memberParts struct {
	id       string
	leaving  bool
	capacity int
	rack     string
	sets     [nLists]taskset
	lag      taskset
	lags     []int64 // the lags of lag's tasks, indices first
}

// member reads a member message past its header.
func (d *decoder) member(match bool) (p memberParts) {
	p.id = d.id("ID", false)
	flags := d.byte("flags")
	p.leaving = flags&wireFlagLeaving != 0
	capacity := d.uvarint(label{what: "capacity"})
	if d.err == nil && capacity > learner.MaxCapacity {
		d.fail("capacity %d out of range [0, %d]", capacity, learner.MaxCapacity)
	}
	p.capacity = int(capacity)
	p.rack = d.id("rack", true)
	p.sets = d.tasksets(match)
	var sent int
	p.lag, sent = d.taskset("lag", match)
	p.lags = make([]int64, 0, p.lag.len())
	for i := range sent {
		l := d.uvarint(label{what: "lag"})
		if d.err == nil && l > math.MaxInt64 {
			d.fail("lag %d out of range", l)
		}
		if i >= sent-p.lag.len() { // not an index of another topology
			p.lags = append(p.lags, int64(l))
		}
	}
	return p
}

// DecodeAssignment decodes an assignment encoded by AppendAssignment, by this
// version of the package or a newer one. Errors, allocation and the partial
// result on ErrTopologyMismatch are as for DecodeMember.
func (c *Codec) DecodeAssignment(b []byte) (learner.Assignment, error) {
	d := decoder{c: c, b: b, kind: &assignmentKind}
	defer d.release()
	match := d.header()
	var as learner.Assignment
	as.MemberID = d.id("member ID", false)
	sets := d.tasksets(match)
	if d.err != nil {
		return learner.Assignment{}, d.err
	}
	c.idLists(sets[:], &as.Assigned, &as.Revoked, &as.Learning, &as.Learned, &as.Standby)
	return as, d.mismatch(match)
}

// decoder reads one message. The first error sticks: later reads return
// zero values, so decoding code reads straight through without checks.
type decoder struct {
	c    *Codec
	b    []byte
	kind *kind
	off  int // next byte to read
	at   int // where the item being read starts, for errors
	err  error
	// idx holds every taskset's indices, which live only until the
	// message's ID lists are built: borrowed from idxPool, since a leader
	// decodes one message per member.
	idx *[]int32
}

var idxPool = sync.Pool{New: func() any { return new([]int32) }}

// indices returns room for n more indices: a slice of length 0 whose
// capacity is n, in the borrowed buffer.
func (d *decoder) indices(n int) []int32 {
	if d.idx == nil {
		d.idx = idxPool.Get().(*[]int32)
		*d.idx = (*d.idx)[:0]
	}
	buf := slices.Grow(*d.idx, n)
	*d.idx = buf[:len(buf)+n]
	return buf[len(buf) : len(buf) : len(buf)+n]
}

// release returns the borrowed buffer; the message's indices are dead.
func (d *decoder) release() {
	if d.idx != nil {
		idxPool.Put(d.idx)
	}
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("wire: decode %s: byte %d: %s: %w", d.kind.what, d.at, fmt.Sprintf(format, args...), ErrMalformed)
	}
}

// header checks version and kind and reports whether the fingerprint
// matches this codec's topology.
func (d *decoder) header() bool {
	if len(d.b) < wireHeaderLen {
		d.fail("%d bytes, shorter than the %d-byte header", len(d.b), wireHeaderLen)
		return false
	}
	if v := d.b[0]; v != wireVersion {
		d.fail("unknown version %d (this decoder reads version %d)", v, wireVersion)
		return false
	}
	if k := d.b[1]; k != d.kind.code {
		d.fail("message kind %d, want %d", k, d.kind.code)
		return false
	}
	d.off = wireHeaderLen
	return binary.BigEndian.Uint64(d.b[2:]) == d.c.fingerprint
}

func (d *decoder) mismatch(match bool) error {
	if match {
		return nil
	}
	return fmt.Errorf("wire: decode %s: fingerprint %016x, this topology's is %016x: %w",
		d.kind.what, binary.BigEndian.Uint64(d.b[2:]), d.c.fingerprint, ErrTopologyMismatch)
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) byte(what string) byte {
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

// label names what the decoder reads, for errors: its parts are joined
// only when an error is reported, since a leader reads thousands of
// tasksets per rebalance.
type label struct{ what, part string }

func (l label) String() string { return l.what + l.part }

func (d *decoder) uvarint(what label) uint64 {
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
func (d *decoder) length(what label, minBytes int) int {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(d.remaining()/minBytes) {
		d.fail("%s: declared %d, but only %d bytes remain", what, n, d.remaining())
		return 0
	}
	return int(n)
}

// id reads a string that must be a well-formed ID (or empty, if allowed).
func (d *decoder) id(what string, emptyOK bool) string {
	n := d.length(label{what, " length"}, 1)
	if d.err != nil || n == 0 && emptyOK {
		return ""
	}
	if n > learner.MaxIDLen {
		d.fail("%s of %d bytes is longer than %d", what, n, learner.MaxIDLen)
		return ""
	}
	raw := d.b[d.off : d.off+n]
	if !learner.ValidID(string(raw)) {
		d.fail("malformed %s %q", what, raw)
		return ""
	}
	d.off += n
	return string(raw)
}

// tasksets reads a message's task lists and checks its kind's rules on
// them.
func (d *decoder) tasksets(match bool) (sets [nLists]taskset) {
	for i := range sets {
		sets[i], _ = d.taskset(d.kind.lists[i], match)
	}
	if d.err == nil {
		if err := d.kind.check(d.c, &sets); err != nil {
			d.at = d.off
			d.fail("%v", err)
		}
	}
	return sets
}

// taskset reads one taskset. It returns the tasks it can interpret (by
// index only when the topology matches) and the count of tasks sent, so
// that lists parallel to the taskset can be read in step.
func (d *decoder) taskset(what string, match bool) (s taskset, sent int) {
	header := d.uvarint(label{what, " header"})
	if d.err != nil {
		return taskset{}, 0
	}
	count := header >> wireTasksetHeaderSh
	if header&wireTasksetBitset == 0 {
		s.idx = d.gaps(what, count, match)
	} else {
		s.idx = d.bitset(what, count, match)
	}
	if d.err == nil && header&wireTasksetNames != 0 {
		s.names = d.names(what, match)
	}
	if d.err != nil {
		return taskset{}, 0
	}
	return s, int(count) + len(s.names)
}

// gaps reads count indices sent as gaps; each takes at least one byte.
func (d *decoder) gaps(what string, count uint64, match bool) []int32 {
	if count > uint64(d.remaining()) {
		d.fail("%s: declared %d tasks, but only %d bytes remain", what, count, d.remaining())
		return nil
	}
	var idx []int32
	if match && count > 0 {
		idx = d.indices(int(count))
	}
	nt, next := uint64(d.c.taskCount()), uint64(0)
	for range count {
		// Gaps of a member's share of a big topology take one or two
		// bytes: read those here, the rest (and the errors) through
		// uvarint.
		var gap uint64
		d.at = d.off
		if b := d.b[d.off:]; len(b) >= 2 && b[0] < 0x80 {
			gap, d.off = uint64(b[0]), d.off+1
		} else if len(b) >= 2 && b[1] < 0x80 {
			gap, d.off = uint64(b[0]&0x7f)|uint64(b[1])<<7, d.off+2
		} else {
			gap = d.uvarint(label{what, " index"})
		}
		if d.err != nil || !match {
			continue // without the sender's topology the indices mean nothing
		}
		if gap >= nt || next > nt-1-gap {
			d.fail("%s: task index %d+%d beyond the topology's %d tasks", what, next, gap, nt)
			return nil
		}
		idx = append(idx, int32(next+gap))
		next += gap + 1
	}
	return idx
}

// bitset reads count indices sent as a bitset.
func (d *decoder) bitset(what string, count uint64, match bool) []int32 {
	first := d.uvarint(label{what, " first index"})
	span := d.length(label{what, " bitset length"}, 1)
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
	nt := uint64(d.c.taskCount())
	if last := uint64(span*8 - 1 - bits.LeadingZeros8(bs[span-1])); first >= nt || last >= nt-first {
		d.fail("%s: bitset of tasks %d to %d beyond the topology's %d tasks", what, first, first+last, nt)
		return nil
	}
	idx := d.indices(int(count))
	for j, x := range bs {
		for ; x != 0; x &= x - 1 {
			idx = append(idx, int32(first+uint64(j*8+bits.TrailingZeros8(x))))
		}
	}
	return idx
}

// names reads the tasks of a taskset sent by name.
func (d *decoder) names(what string, match bool) []string {
	k := d.length(label{what, " name count"}, 2) // a length byte and at least one byte each
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
		case match && d.c.taskIndex(name) >= 0:
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
