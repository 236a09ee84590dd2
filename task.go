package learner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/learnerassignor/learner/internal/errtext"
)

// Task is one task of the topology.
type Task struct {
	// ID names the task: non-empty, at most 255 bytes of letters, digits,
	// '_', '-' and '.'. IDs of the Kafka Streams form "<subtopology>_<partition>"
	// (for example "0_3") are interned without hashing and spread per
	// subtopology when balancing.
	ID string
	// Stateful tasks keep local state backed by a changelog: moving one goes
	// through a learner that replays it first. Stateless tasks move at once.
	Stateful bool
}

// none marks an absent task index or member rank in the dense int32 state.
const none = -1

// topology is what an Assignor knows of its tasks, fixed by New: the tasks
// in order, their index, and their subtopologies.
type topology struct {
	// ids holds every task's ID back to back in topology order, task t's
	// at ids[idAt[t]:idAt[t+1]] (id). One string and pointer-free offsets
	// rather than a []Task: an Assignor lives as long as its group, and
	// every garbage collection meanwhile would follow a pointer per task
	// to an ID string. Assign's output makes a collection every few calls
	// at the benchmarks' sizes; in cachegrind of 50 stable calls at 1,000
	// x 100,000 the collector's marking took 27% fewer instructions this
	// way. A task costs its ID's bytes and an 8-byte offset instead of a
	// 24-byte Task (peak RSS of a call at 10,000 x 1,000,000: 174 MB
	// instead of 184).
	ids   string
	idAt  []int
	index taskIndex
	// stateful is per task, nil when every task is of one kind (isStateful).
	stateful []bool
	sub      []int32 // per task: dense subtopology number, when every ID has the form
	nSubs    int     // distinct subtopologies; 0 when some ID lacks the form
	// subsInOrder reports that sub never decreases in topology order (the
	// usual layout), so tasks sorted by index are sorted by subtopology.
	subsInOrder bool
	// subFrom[s] is the first task of subtopology s when subsInOrder, with
	// subFrom[nSubs] the task count: s's tasks are subFrom[s]:subFrom[s+1].
	subFrom []int32
	subs    subLookup // sub's lookup, when subFrom is set
	// stateless counts the stateless tasks, so that code that only needs
	// the kind of a task can skip reading it when all tasks are alike.
	stateless int
}

// newTopology interns the tasks, which must have valid and unique IDs.
func newTopology(tasks []Task) (topology, error) {
	if len(tasks) > MaxTasks {
		return topology{}, fmt.Errorf("learner: %d tasks, more than %d: %w", len(tasks), MaxTasks, ErrInvalidTopology)
	}
	tp := topology{idAt: make([]int, 1, len(tasks)+1), index: newTaskIndex(len(tasks))}
	size := 0
	for _, t := range tasks {
		size += min(len(t.ID), MaxIDLen) // a longer one is refused below: room for no more
	}
	var ids strings.Builder
	ids.Grow(size)
	for i, t := range tasks {
		if !ValidID(t.ID) {
			return topology{}, fmt.Errorf("learner: task %d: malformed ID %s (want 1-%d letters, digits, '_', '-', '.'): %w",
				i, errtext.Quote(t.ID), MaxIDLen, ErrInvalidTopology)
		}
		if j := tp.index.lookup(t.ID); j != none {
			return topology{}, fmt.Errorf("learner: task %d: ID %s duplicates task %d: %w", i, errtext.Quote(t.ID), j, ErrInvalidTopology)
		}
		tp.index.add(t.ID, int32(i))
		ids.WriteString(t.ID)
		tp.idAt = append(tp.idAt, ids.Len())
		if !t.Stateful {
			tp.stateless++
		}
	}
	tp.index.seal()
	tp.ids = ids.String()
	if tp.stateless > 0 && tp.stateless < len(tasks) {
		tp.stateful = make([]bool, len(tasks))
		for i, t := range tasks {
			tp.stateful[i] = t.Stateful
		}
	}
	tp.sub, tp.nSubs = subtopologies(tasks)
	tp.subsInOrder = slices.IsSorted(tp.sub)
	if tp.subsInOrder && tp.nSubs > 0 {
		tp.subFrom = make([]int32, tp.nSubs+1)
		for t := len(tp.sub) - 1; t >= 0; t-- {
			tp.subFrom[tp.sub[t]] = int32(t)
		}
		tp.subFrom[tp.nSubs] = int32(len(tp.sub))
	}
	tp.subs = newSubLookup(tp.sub, tp.subFrom)
	return tp, nil
}

// subLookup finds a task's subtopology, sub[t], when subtopologies follow
// topology order, from a table a fraction of sub's size: sub has a word
// per task, and at a million tasks reading it out of topology order was a
// cache miss per read, where this table stays in the first-level cache.
// It is two words, so a hot loop that copies it into a local keeps it in
// registers.
type subLookup struct {
	// near[t>>shift] is the subtopology of task t>>shift<<shift and the
	// first task of the next one.
	near  []nearSub
	shift uint
}

type nearSub struct{ sub, next int32 }

// newSubLookup returns the lookup of sub, given subFrom (see topology),
// or the zero lookup when subFrom is nil. The shift is the largest whose
// stride is at most the smallest subtopology's size, so that the stride
// from t>>shift<<shift to t crosses at most one subtopology's start: the
// table has 8 bytes per 1<<shift tasks, a sixteenth of sub's size at 32
// tasks to the smallest subtopology, and twice it if one has a single
// task.
func newSubLookup(sub, subFrom []int32) subLookup {
	if subFrom == nil {
		return subLookup{}
	}
	smallest := int32(len(sub))
	for s := range len(subFrom) - 1 {
		smallest = min(smallest, subFrom[s+1]-subFrom[s])
	}
	shift := uint(0)
	for int64(2)<<shift <= int64(smallest) { // int64: 2<<30 overflows int32 for a topology of MaxTasks
		shift++
	}
	sl := subLookup{near: make([]nearSub, (len(sub)-1)>>shift+1), shift: shift}
	for i := range sl.near {
		s := sub[i<<shift]
		sl.near[i] = nearSub{sub: s, next: subFrom[s+1]}
	}
	return sl
}

// of returns task t's subtopology; the lookup must not be the zero one.
func (sl subLookup) of(t int32) int32 {
	e := sl.near[t>>(sl.shift&31)]
	if t >= e.next {
		return e.sub + 1
	}
	return e.sub
}

// numTasks is the number of tasks in the topology.
func (tp *topology) numTasks() int { return len(tp.idAt) - 1 }

// id returns task t's ID.
func (tp *topology) id(t int32) string { return tp.ids[tp.idAt[t]:tp.idAt[t+1]] }

// isStateful reports whether task t is stateful. When every task is of
// one kind it answers without reading a per-task array: the hot loops
// that ask (moves, hand-overs, standby placement) would otherwise touch
// memory per task, a cache miss each at a million tasks.
func (tp *topology) isStateful(t int32) bool {
	if tp.stateful == nil {
		return tp.stateless == 0
	}
	return tp.stateful[t]
}

// MaxTasks is the most tasks a topology may have: New refuses more with
// ErrInvalidTopology. It keeps task indices in int32, the width of the hot
// per-task arrays; callers that derive tasks from outside numbers (such as
// partition counts) check it before building the list.
const MaxTasks = 1 << 30

// taskIndex interns task IDs into dense indices (positions in the topology).
//
// Hashing is the dominant cost of interning a million IDs, so IDs of the
// Kafka Streams form "<subtopology>_<partition>" skip the map: both numbers
// are parsed and looked up in a per-subtopology table. Only canonical
// decimals (no sign, no leading zeros) take that path, so every ID has
// exactly one way in and the two paths never disagree.
type taskIndex struct {
	byName map[string]int32 // IDs not of the numeric form
	bySub  [][]int32        // [subtopology][partition] -> index, -1 for a hole
	// base[sub] is the index of partition 0 when the subtopology's
	// partitions are consecutive tasks (the usual layout), else -1: lookup
	// then computes the index and never touches the row, which at a
	// million tasks would be a cache miss per lookup.
	base []int32
	// room is how many more table slots (rows of bySub, entries of a row)
	// add may allocate. maxTablePartition alone bounds one row, not their
	// sum: a hundred tasks "<s>_4194303" made a hundred rows of 4 million
	// slots, gigabytes for a topology of a hundred tasks. A slot budget
	// proportional to the task count bounds the tables as the map is
	// bounded; Kafka Streams IDs (consecutive partitions from 0) take one
	// slot a task and a row a subtopology, so they all fit.
	room int
}

// maxTablePartition bounds the per-subtopology tables so that a topology
// with a few huge partition numbers cannot make New allocate gigabytes; such
// IDs take the map instead.
const maxTablePartition = 1 << 22

// newTaskIndex returns an index for a topology of n tasks.
func newTaskIndex(n int) taskIndex {
	// Unsized: numeric IDs never reach the map, so sizing it by the task
	// count would allocate for nothing in the common Kafka Streams case.
	return taskIndex{byName: make(map[string]int32), room: 2*n + 64}
}

// add interns id as index i. An ID whose table slots would exceed the
// budget (room) takes the map: rows only grow, so every later ID of its
// subtopology that fits the table has a smaller partition, and lookup,
// finding the ID past its row's end, asks the map.
func (x *taskIndex) add(id string, i int32) {
	sub, part, ok := parseSubtopologyID(id)
	grow := 0
	if ok {
		grow = max(sub+1-len(x.bySub), 0) + part + 1
		if sub < len(x.bySub) {
			grow = max(part+1-len(x.bySub[sub]), 0)
		}
	}
	if !ok || sub >= 1<<16 || part >= maxTablePartition || grow > x.room {
		x.byName[id] = i
		return
	}
	x.room -= grow
	for len(x.bySub) <= sub {
		x.bySub = append(x.bySub, nil)
	}
	row := x.bySub[sub]
	for len(row) <= part {
		row = append(row, none)
	}
	row[part] = i
	x.bySub[sub] = row
}

// seal records the consecutive subtopologies once every task is added.
func (x *taskIndex) seal() {
	x.base = make([]int32, len(x.bySub))
	for sub, row := range x.bySub {
		x.base[sub] = none
		if len(row) > 0 && row[0] >= 0 {
			x.base[sub] = row[0]
			for p, i := range row {
				if i != row[0]+int32(p) {
					x.base[sub] = none
					break
				}
			}
		}
	}
}

// lookup returns the index of the task with the given ID, or -1.
func (x *taskIndex) lookup(id string) int32 {
	if sub, part, ok := parseSubtopologyID(id); ok && sub < len(x.bySub) {
		if row := x.bySub[sub]; part < len(row) {
			if sub < len(x.base) && x.base[sub] >= 0 { // sealed and consecutive
				return x.base[sub] + int32(part)
			}
			if row[part] >= 0 {
				return row[part]
			}
		}
	}
	if i, ok := x.byName[id]; ok {
		return i
	}
	return -1
}

// subtopologies numbers the subtopologies densely (in numeric order) when
// every task ID has the form "<subtopology>_<partition>".
func subtopologies(tasks []Task) ([]int32, int) {
	sub := make([]int32, len(tasks))
	var seen []bool // by subtopology number, which parseSubtopologyID bounds
	for i, t := range tasks {
		s, _, ok := parseSubtopologyID(t.ID)
		if !ok || s >= 1<<16 {
			return nil, 0
		}
		for len(seen) <= s {
			seen = append(seen, false)
		}
		seen[s] = true
		sub[i] = int32(s)
	}
	dense := make([]int32, len(seen))
	n := 0
	for s, ok := range seen {
		if ok {
			dense[s] = int32(n)
			n++
		}
	}
	for i := range sub {
		sub[i] = dense[sub[i]]
	}
	return sub, n
}

// parseSubtopologyID parses "<subtopology>_<partition>" with both numbers in
// canonical decimal form: 1 to 9 digits, no leading zero but in "0". One
// pass over the ID, as it runs once per listed task.
func parseSubtopologyID(id string) (sub, part int, ok bool) {
	i := 0
	for i < len(id) && isDigit(id[i]) {
		sub = sub*10 + int(id[i]-'0')
		i++
	}
	if !canonicalDigits(id[:i]) || i == len(id) || id[i] != '_' {
		return 0, 0, false
	}
	digits := id[i+1:]
	for j := 0; j < len(digits); j++ {
		if !isDigit(digits[j]) {
			return 0, 0, false
		}
		part = part*10 + int(digits[j]-'0')
	}
	if !canonicalDigits(digits) {
		return 0, 0, false
	}
	return sub, part, true
}

// canonicalDigits reports whether the decimal digits s are canonical: 1
// to 9 of them (so the number fits an int32), without a leading zero
// unless s is "0".
func canonicalDigits(s string) bool {
	return len(s) > 0 && len(s) <= 9 && (s[0] != '0' || len(s) == 1)
}

// ValidID reports whether id is a well-formed member, task or rack ID:
// 1 to MaxIDLen bytes of letters, digits, '_', '-' and '.'.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	// The bytes an ID may hold as a bitmap of the ASCII range, in two
	// words: one test per byte instead of five range checks.
	const (
		low  = 0x3ff<<'0' | 1<<'-' | 1<<'.'                            // bytes 0-63
		high = 0x3ffffff<<('a'-64) | 0x3ffffff<<('A'-64) | 1<<('_'-64) // bytes 64-127
	)
	for i := 0; i < len(id); i++ {
		c := id[i]
		set := uint64(low)
		if c >= 64 {
			set = high
		}
		if c >= 128 || set>>(c&63)&1 == 0 {
			return false
		}
	}
	return true
}

// MaxIDLen is the length in bytes of the longest valid ID.
const MaxIDLen = 255
