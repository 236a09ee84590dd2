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
// A leader can keep the tasks as indices from end to end: DecodeIndexedMember
// gives learner.Assignor.AssignIndexed its input without building a task ID,
// and AppendIndexedAssignment encodes its answer.
//
// Task indices only mean something to a receiver with the same task list,
// so every message carries the encoder's topology fingerprint. A receiver
// whose fingerprint differs gets ErrTopologyMismatch and keeps what does not
// depend on indices (IDs, flags, capacity, rack and tasks sent by name).
//
// Neither end sends or accepts a message the other would refuse: the
// encoders and the decoders check the rules Assign enforces on one member's
// report (a valid member ID, a task in at most one of assigned, revoked,
// learning and standby, ready tasks among the learning ones) and the rules
// of Assign's output a member relies on (a valid member ID, a task in at most
// one of assigned, learning and standby, learned tasks among the assigned).
// Rules that need the whole group, such as unique member IDs, are Assign's.
package wire

import (
	"encoding/binary"
	"errors"
	"hash/fnv"

	"github.com/learnerassignor/learner"
)

// Errors returned by the decoders wrap one of these; errors returned by
// the encoders wrap learner.ErrInvalidMember.
var (
	// ErrMalformed reports bytes that are not a message of a known version
	// of the wire format (truncated, corrupt, or from an incompatible
	// version), or a message no encoder writes: one that breaks a rule of
	// its contents that the encoder enforces.
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
)

// The task lists of each message kind, in wire order.
const (
	listAssigned = iota
	listRevoked
	listLearning
	listReady // assignment: learned
	listStandby
	nLists
)

// Codec encodes and decodes member metadata and assignments for one
// topology. It is immutable and safe for concurrent use; build it with
// NewCodec once per Assignor, since hashing the task list is linear in the
// topology. The zero Codec, and NewCodec's of a nil Assignor, have an empty
// topology, as the zero learner.Assignor has: every task is unknown to
// them, so they encode tasks by name and refuse task indices.
type Codec struct {
	a *learner.Assignor
	// ids holds a's task IDs back to back, task t's at ids[at[t]:at[t+1]]:
	// one string and a slice without pointers, where a's task list would
	// hold a pointer per task for the garbage collector to follow at every
	// cycle for as long as the Codec lives (2 to 4 ms of marking CPU a
	// cycle at 100,000 tasks, by GODEBUG=gctrace=1). Decoded IDs are
	// slices of ids.
	ids         string
	at          []int
	fingerprint uint64
}

// NewCodec returns a Codec for a's topology (an empty one for a nil a).
func NewCodec(a *learner.Assignor) *Codec {
	if a == nil {
		return &Codec{}
	}
	// Only the IDs and their order decide what an index means, so only they
	// are hashed: members that disagree on a task's statefulness can still
	// read each other's reports.
	h := fnv.New64a()
	var n [binary.MaxVarintLen64]byte
	tasks := a.Tasks()
	var ids []byte
	at := make([]int, 1, len(tasks)+1)
	for _, t := range tasks {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(t.ID)))])
		h.Write([]byte(t.ID))
		ids = append(ids, t.ID...)
		at = append(at, len(ids))
	}
	return &Codec{a: a, ids: string(ids), at: at, fingerprint: h.Sum64()}
}

// taskIndex returns the index of the task with the given ID, or -1 if the
// topology has no such task; the zero Codec's has none.
func (c *Codec) taskIndex(id string) int {
	if c.a == nil {
		return -1
	}
	return c.a.TaskIndex(id)
}

// taskID returns the ID of task t (its index in the topology).
func (c *Codec) taskID(t int32) string { return c.ids[c.at[t]:c.at[t+1]] }

// taskCount returns the number of tasks in the topology.
func (c *Codec) taskCount() int { return len(c.at) - 1 }

// Fingerprint returns the hash of the topology's task IDs in order that
// every message carries.
func (c *Codec) Fingerprint() uint64 { return c.fingerprint }

// taskset is one task list in the codec's dense form: the topology's tasks
// by index, strictly increasing, then the tasks the topology lacks by name.
// A decoded taskset from another topology has no indices. Both directions
// check the rules on this form, before any task ID string is built, so a
// decoder into Assign's dense integers would need no second check.
type taskset struct {
	idx   []int32
	names []string
}

func (s *taskset) len() int { return len(s.idx) + len(s.names) }

// idLists sets each *out[i] to sets[i] as task IDs in wire order, the
// topology's own ID strings: a leader decodes every member's lists, so they
// are carved from one allocation (each capped, so that appending to one
// copies it). Empty lists are nil.
func (c *Codec) idLists(sets []taskset, out ...*[]string) {
	n := 0
	for i := range sets {
		n += sets[i].len()
	}
	pool := make([]string, 0, n)
	for i := range sets {
		*out[i] = nil
		if sets[i].len() == 0 {
			continue
		}
		from := len(pool)
		for _, t := range sets[i].idx {
			pool = append(pool, c.taskID(t))
		}
		pool = append(pool, sets[i].names...)
		*out[i] = pool[from:len(pool):len(pool)]
	}
}

// indexLists sets each *out[i] to sets[i] as task indices in wire order,
// the lists of a member message carved from one allocation (each capped,
// so that appending to one copies it): the decoder's indices live in a
// borrowed buffer. A task sent by name goes by index when the topology has
// it (only from another topology), else to m.Stale when out[i] holds tasks
// the member holds (assigned, revoked), else nowhere. Empty lists are nil.
func (c *Codec) indexLists(sets []taskset, m *learner.IndexedMember, out ...*[]int32) {
	n := 0
	for i := range sets {
		n += sets[i].len()
	}
	pool := make([]int32, 0, n)
	for i := range sets {
		from := len(pool)
		pool = append(pool, sets[i].idx...)
		for _, name := range sets[i].names {
			if t := c.taskIndex(name); t >= 0 {
				pool = append(pool, int32(t))
			} else if i == listAssigned || i == listRevoked {
				m.Stale = append(m.Stale, name)
			}
		}
		*out[i] = nil
		if len(pool) > from {
			*out[i] = pool[from:len(pool):len(pool)]
		}
	}
}
