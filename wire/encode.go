package wire

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/errtext"
)

// AppendMember appends the encoding of m to b. Lists may be in any order;
// tasks the topology lacks are sent by name. It fails, wrapping
// learner.ErrInvalidMember, on what Assign would reject in m alone (a
// malformed or empty ID, a task listed twice in one list or in two of
// assigned, revoked, learning and standby, a ready task not in learning, a
// capacity out of [0, learner.MaxCapacity] or a negative lag).
func (c *Codec) AppendMember(b []byte, m learner.MemberMetadata) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("wire: encode member %s: %v: %w", errtext.Quote(m.ID), err, learner.ErrInvalidMember)
	}
	if err := checkID("member ID", m.ID); err != nil {
		return fail(err)
	}
	if m.Capacity < 0 || m.Capacity > learner.MaxCapacity {
		return fail(fmt.Errorf("capacity %d out of range [0, %d]", m.Capacity, learner.MaxCapacity))
	}
	if m.Rack != "" {
		if err := checkID("rack", m.Rack); err != nil {
			return fail(err)
		}
	}
	sets, err := c.internAll(&memberKind, m.Assigned, m.Revoked, m.Learning, m.Ready, m.Standby)
	if err != nil {
		return fail(err)
	}
	lagIDs := make([]string, len(m.Lag))
	lagOf := make(map[string]int64, len(m.Lag))
	for i, l := range m.Lag {
		if l.Lag < 0 {
			return fail(fmt.Errorf("lag %d of task %s is negative", l.Lag, errtext.Quote(l.Task)))
		}
		lagIDs[i], lagOf[l.Task] = l.Task, l.Lag
	}
	lag, err := c.intern("lag", lagIDs)
	if err != nil {
		return fail(err)
	}

	b = c.appendHeader(b, wireKindMember)
	b = appendString(b, m.ID)
	var flags byte
	if m.Leaving {
		flags |= wireFlagLeaving
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(m.Capacity))
	b = appendString(b, m.Rack)
	for i := range sets {
		b = sets[i].appendTo(b)
	}
	b = lag.appendTo(b)
	for _, t := range lag.idx {
		b = binary.AppendUvarint(b, uint64(lagOf[c.taskID(t)]))
	}
	for _, name := range lag.names {
		b = binary.AppendUvarint(b, uint64(lagOf[name]))
	}
	return b, nil
}

// AppendAssignment appends the encoding of as to b. Lists may be in any
// order; tasks the topology lacks (a revoked task of an older topology) are
// sent by name. It fails, wrapping learner.ErrInvalidMember, on what Assign
// never sends: a malformed or empty member ID, a task listed twice in one
// list or in two of assigned, learning and standby, a learned task not in
// assigned.
func (c *Codec) AppendAssignment(b []byte, as learner.Assignment) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("wire: encode assignment of %s: %v: %w", errtext.Quote(as.MemberID), err, learner.ErrInvalidMember)
	}
	if err := checkID("member ID", as.MemberID); err != nil {
		return fail(err)
	}
	sets, err := c.internAll(&assignmentKind, as.Assigned, as.Revoked, as.Learning, as.Learned, as.Standby)
	if err != nil {
		return fail(err)
	}
	return c.appendAssignment(b, as.MemberID, &sets), nil
}

// AppendIndexedAssignment appends the encoding of as to b: the bytes
// AppendAssignment appends for the same assignment by ID (Revoked's IDs
// followed by Stale), without building the IDs and looking them up again,
// for a leader that keeps tasks as indices (learner.Assignor.AssignIndexed
// answers so). It fails, wrapping learner.ErrInvalidMember, on what
// AppendAssignment refuses, on an index outside the topology or a list not
// strictly increasing, and on a Stale task that is malformed, repeated or
// in the topology.
func (c *Codec) AppendIndexedAssignment(b []byte, as learner.IndexedAssignment) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, fmt.Errorf("wire: encode assignment of %s: %v: %w", errtext.Quote(as.MemberID), err, learner.ErrInvalidMember)
	}
	if err := checkID("member ID", as.MemberID); err != nil {
		return fail(err)
	}
	var sets [nLists]taskset
	var err error
	for i, idx := range [nLists][]int32{listAssigned: as.Assigned, listRevoked: as.Revoked, listLearning: as.Learning,
		listReady: as.Learned, listStandby: as.Standby} {
		if sets[i], err = c.indexed(assignmentKind.lists[i], idx); err != nil {
			return fail(err)
		}
	}
	if sets[listRevoked].names, err = c.stale(assignmentKind.lists[listRevoked], as.Stale); err != nil {
		return fail(err)
	}
	if err := assignmentKind.check(c, &sets); err != nil {
		return fail(err)
	}
	return c.appendAssignment(b, as.MemberID, &sets), nil
}

// stale checks tasks sent by name because the topology lacks them: each a
// valid ID the topology does not have, once.
func (c *Codec) stale(what string, ids []string) ([]string, error) {
	var seen map[string]bool // rare: tasks of an older topology
	for _, id := range ids {
		if err := checkID("task ID in "+what, id); err != nil {
			return nil, err
		}
		if t := c.taskIndex(id); t >= 0 {
			return nil, fmt.Errorf("task %s in %s sent by name, but the topology has it (index %d)", errtext.Quote(id), what, t)
		}
		if seen[id] {
			return nil, fmt.Errorf("task %s listed twice in %s", errtext.Quote(id), what)
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[id] = true
	}
	return ids, nil
}

// appendAssignment appends an assignment whose lists passed assignmentKind's
// checks.
func (c *Codec) appendAssignment(b []byte, memberID string, sets *[nLists]taskset) []byte {
	b = c.appendHeader(b, wireKindAssignment)
	b = appendString(b, memberID)
	for i := range sets {
		b = sets[i].appendTo(b)
	}
	return b
}

// indexed returns idx as a taskset, checking that its indices are in the
// topology and strictly increasing.
func (c *Codec) indexed(what string, idx []int32) (taskset, error) {
	for i, t := range idx {
		if t < 0 || int(t) >= c.taskCount() {
			return taskset{}, fmt.Errorf("task index %d in %s outside the topology's %d tasks", t, what, c.taskCount())
		}
		if i > 0 && t <= idx[i-1] {
			return taskset{}, fmt.Errorf("task indices in %s not strictly increasing (%d after %d)", what, t, idx[i-1])
		}
	}
	return taskset{idx: idx}, nil
}

func (c *Codec) appendHeader(b []byte, kind byte) []byte {
	b = append(b, wireVersion, kind)
	return binary.BigEndian.AppendUint64(b, c.fingerprint)
}

func checkID(what, id string) error {
	if !learner.ValidID(id) {
		return fmt.Errorf("malformed %s %s (want 1-%d letters, digits, '_', '-', '.')", what, errtext.Quote(id), learner.MaxIDLen)
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// internAll interns a message's lists, in wire order, and checks k's rules
// on them.
func (c *Codec) internAll(k *kind, lists ...[]string) (sets [nLists]taskset, err error) {
	for i, ids := range lists {
		if sets[i], err = c.intern(k.lists[i], ids); err != nil {
			return sets, err
		}
	}
	return sets, k.check(c, &sets)
}

// intern turns a task list into a taskset: known tasks by index, sorted,
// the others by name in the given order. A task listed twice, or a
// malformed name, is an error.
func (c *Codec) intern(what string, ids []string) (taskset, error) {
	s := taskset{idx: make([]int32, 0, len(ids))}
	for _, id := range ids {
		if t := c.taskIndex(id); t >= 0 {
			s.idx = append(s.idx, int32(t))
			continue
		}
		if err := checkID("task ID in "+what, id); err != nil {
			return taskset{}, err
		}
		s.names = append(s.names, id)
	}
	slices.Sort(s.idx)
	for i := 1; i < len(s.idx); i++ {
		if s.idx[i] == s.idx[i-1] {
			return taskset{}, fmt.Errorf("task %s listed twice in %s", errtext.Quote(c.taskID(s.idx[i])), what)
		}
	}
	if len(s.names) > 1 {
		seen := make(map[string]bool, len(s.names))
		for _, name := range s.names {
			if seen[name] {
				return taskset{}, fmt.Errorf("task %s listed twice in %s", errtext.Quote(name), what)
			}
			seen[name] = true
		}
	}
	return s, nil
}

// appendTo appends s in whichever index form is shorter.
func (s *taskset) appendTo(b []byte) []byte {
	idx := s.idx
	header := uint64(len(idx)) << wireTasksetHeaderSh
	if len(s.names) > 0 {
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
	if len(s.names) > 0 {
		b = binary.AppendUvarint(b, uint64(len(s.names)))
		for _, name := range s.names {
			b = appendString(b, name)
		}
	}
	return b
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }
