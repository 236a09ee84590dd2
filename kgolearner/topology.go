package kgolearner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/learnerassignor/learner"
)

// Subtopology is a group of co-partitioned input topics, processed together
// the way Kafka Streams processes a subtopology: partition p of every topic
// in the group belongs to one task.
//
// The tasks of subtopology i (its index in Config.Subtopologies) are
// "<i>_<p>" for p from 0 to Partitions-1, Kafka Streams' task IDs, in that
// order; the topology is every subtopology's tasks in turn. Every member of
// a group must declare the same subtopologies: task IDs travel as indices
// into this list, and a member that declares another list is detected and
// treated as owning the tasks of the partitions it owns and nothing else.
type Subtopology struct {
	// Topics are the input topics, at least one. A topic belongs to one
	// subtopology only.
	Topics []string
	// Partitions is the number of partitions of each topic. The leader
	// checks it against the cluster's metadata: on a difference the
	// subtopology's tasks stay with the members that have them, nothing of
	// it moves and Round.Err says why, rather than assign tasks the topics
	// no longer match.
	Partitions int32
	// Stateful subtopologies keep local state backed by a changelog: their
	// tasks move through learners. Stateless tasks move at once.
	Stateful bool
}

// topology maps tasks to partitions and back. Tasks are dense indices in
// the order of learner.Assignor's task list; topics are dense too (their
// position in topics), and so are partitions (see partBase), so that the
// leader keeps per-partition state in slices.
type topology struct {
	subs    []Subtopology
	first   []int          // first[i] is the index of task "<i>_0"
	taskSub []int32        // per task: its subtopology
	byTopic map[string]int // topic -> its position in topics
	tasks   []learner.Task // the learner topology
	// index returns a task's index from its ID, -1 for none: the
	// Assignor's (New sets it), which parses "<i>_<p>" without a map of
	// every ID for the garbage collector to scan.
	index    func(id string) int
	topics   []string // every input topic, in subtopology order
	topicSub []int    // per topic position: its subtopology
	subTopic []int    // subTopic[i] is the position of subtopology i's first topic; the others follow
	// topicRank is, per topic position, the topic's position in byName:
	// Kafka's assignments list topics by name.
	topicRank []int
	byName    []string // every input topic, in name order
	// partBase is, per topic position, the dense index of its partition 0:
	// partition p of the topic at position i is partBase[i]+p, from 0 to
	// nParts-1.
	partBase []int
	nParts   int
}

func newTopology(subs []Subtopology) (*topology, error) {
	t := &topology{subs: subs, byTopic: map[string]int{}}
	// int64, not int: on a 32-bit platform a sum or a product of counts
	// near 2^31 wraps to a negative total that passes the bound.
	var tasks, parts int64
	for i, s := range subs {
		if len(s.Topics) == 0 {
			return nil, fmt.Errorf("kgolearner: subtopology %d has no topics: %w", i, ErrInvalidConfig)
		}
		if s.Partitions <= 0 {
			return nil, fmt.Errorf("kgolearner: subtopology %d: %d partitions, want at least 1: %w", i, s.Partitions, ErrInvalidConfig)
		}
		// Each partition number is a task, and the leader keeps a slot per
		// input partition: bound both totals before building anything, so
		// that a mistyped count is an error, not an exhausted memory.
		// No overflow: both totals are at most MaxTasks (2^30) before the
		// sums, a count is under 2^31, and so is the number of topics
		// counted (more topics than MaxTasks exceed the bound at one
		// partition each), so the product is under 2^62.
		topics := int64(min(len(s.Topics), learner.MaxTasks+1))
		tasks += int64(s.Partitions)
		parts += topics * int64(s.Partitions)
		if tasks > learner.MaxTasks || parts > learner.MaxTasks {
			return nil, fmt.Errorf("kgolearner: subtopology %d brings the tasks to %d and the input partitions to %d, more than %d: %w: %w",
				i, tasks, parts, learner.MaxTasks, ErrInvalidConfig, learner.ErrInvalidTopology)
		}
	}
	for i, s := range subs {
		t.subTopic = append(t.subTopic, len(t.topics))
		for _, topic := range s.Topics {
			if j, dup := t.byTopic[topic]; dup {
				return nil, fmt.Errorf("kgolearner: topic %q is in subtopologies %d and %d: %w", topic, t.topicSub[j], i, ErrInvalidConfig)
			}
			t.byTopic[topic] = len(t.topics)
			t.topics = append(t.topics, topic)
			t.topicSub = append(t.topicSub, i)
			t.partBase = append(t.partBase, t.nParts)
			t.nParts += int(s.Partitions)
		}
		t.first = append(t.first, len(t.tasks))
		for p := range s.Partitions {
			id := strconv.Itoa(i) + "_" + strconv.Itoa(int(p))
			t.taskSub = append(t.taskSub, int32(i))
			t.tasks = append(t.tasks, learner.Task{ID: id, Stateful: s.Stateful})
		}
	}
	t.byName = slices.Sorted(slices.Values(t.topics))
	t.topicRank = make([]int, len(t.topics))
	for pos, topic := range t.topics {
		t.topicRank[pos], _ = slices.BinarySearch(t.byName, topic)
	}
	return t, nil
}

// checkTopics compares the topology with the cluster's partition counts by
// topic (the leader's view of the metadata). It returns, per subtopology,
// whether one of its topics is missing or has another count (nil when
// every topic matches), and an error naming the first such topic, in
// topology order.
func (t *topology) checkTopics(counts map[string]int32) (differs []bool, err error) {
	for i, s := range t.subs {
		for _, topic := range s.Topics {
			var e error
			if n, ok := counts[topic]; !ok {
				e = fmt.Errorf("kgolearner: topic %q of subtopology %d is not in the cluster's metadata: %w", topic, i, ErrTopicsMismatch)
			} else if n != s.Partitions {
				e = fmt.Errorf("kgolearner: topic %q of subtopology %d has %d partitions in the cluster, the topology declares %d: %w",
					topic, i, n, s.Partitions, ErrTopicsMismatch)
			}
			if e != nil {
				if differs == nil {
					differs, err = make([]bool, len(t.subs)), e
				}
				differs[i] = true
				break
			}
		}
	}
	return differs, err
}

// ErrTopicsMismatch is wrapped by Round.Err when the cluster's topics do not
// match the topology: a topic is missing or has another number of
// partitions than its subtopology declares.
var ErrTopicsMismatch = errors.New("the cluster's topics do not match the topology")

// taskOf returns the task of a partition, or -1 if the partition belongs to
// no task.
func (t *topology) taskOf(topic string, partition int32) int {
	pos, ok := t.byTopic[topic]
	if !ok {
		return -1
	}
	i := t.topicSub[pos]
	if partition < 0 || partition >= t.subs[i].Partitions {
		return -1
	}
	return t.first[i] + int(partition)
}

// partitions calls fn for every partition of task (by index).
func (t *topology) partitions(task int, fn func(topic string, partition int32)) {
	i := t.subOf(task)
	for _, topic := range t.subs[i].Topics {
		fn(topic, int32(task-t.first[i]))
	}
}

// subOf returns the subtopology of task (by index).
func (t *topology) subOf(task int) int { return int(t.taskSub[task]) }

// tasksOf returns, in topology order, the tasks all of whose partitions are
// in owned (topic -> partitions).
func (t *topology) tasksOf(owned map[string][]int32) []string {
	count := map[int]int{}
	for topic, ps := range owned {
		for _, p := range slices.Compact(slices.Sorted(slices.Values(ps))) {
			if task := t.taskOf(topic, p); task >= 0 {
				count[task]++
			}
		}
	}
	var whole []int
	for task, n := range count {
		if n == len(t.subs[t.subOf(task)].Topics) {
			whole = append(whole, task)
		}
	}
	slices.Sort(whole) // map order must not reach the output
	out := make([]string, len(whole))
	for i, task := range whole {
		out[i] = t.tasks[task].ID
	}
	return out
}

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// partitionSet returns the partitions of tasks (by ID; unknown IDs have
// none).
func (t *topology) partitionSet(tasks []string) map[topicPartition]bool {
	set := map[topicPartition]bool{}
	for _, id := range tasks {
		if i := t.index(id); i >= 0 {
			t.partitions(i, func(topic string, p int32) { set[topicPartition{topic, p}] = true })
		}
	}
	return set
}

// partitionMap returns the partitions of tasks as kgo takes them (topic ->
// partitions).
func (t *topology) partitionMap(tasks []string) map[string][]int32 {
	m := map[string][]int32{}
	for tp := range t.partitionSet(tasks) {
		m[tp.topic] = append(m[tp.topic], tp.partition)
	}
	return m
}

// touches reports whether any partition of task (by ID) is in ps (topic ->
// partitions).
func (t *topology) touches(task string, ps map[string][]int32) bool {
	found := false
	if i := t.index(task); i >= 0 {
		t.partitions(i, func(topic string, p int32) { found = found || slices.Contains(ps[topic], p) })
	}
	return found
}

// anyPartition reports whether any partition of task (by index) is in set.
func (t *topology) anyPartition(task int, set map[topicPartition]bool) bool {
	found := false
	t.partitions(task, func(topic string, p int32) { found = found || set[topicPartition{topic, p}] })
	return found
}

// allPartitions reports whether every partition of the task is in set.
func (t *topology) allPartitions(task int, set map[topicPartition]bool) bool {
	all := true
	t.partitions(task, func(topic string, p int32) { all = all && set[topicPartition{topic, p}] })
	return all
}

// assignmentWriter writes members' kmsg.ConsumerMemberAssignment, reusing
// its scratch space from one member to the next. Writing the bytes straight
// from the tasks spares the per-member kmsg structs, which took a fifth of
// the leader's time.
type assignmentWriter struct {
	t    *topology
	keys []uint64  // per topic of a run: its rank in name order<<32 | run
	runs []taskRun // the runs of tasks of one subtopology
	// byRank is, per topic rank, the run of its partitions plus one (0 for
	// none), zero between members.
	byRank []int32
}

// taskRun is tasks[from:to] of one subtopology, whose partitions are the
// tasks minus first.
type taskRun struct{ from, to, first int }

// append appends to b the assignment that gives a member tasks (indices,
// sorted, no repeats) with userData, as kmsg's AppendTo encodes version 0
// (what kgo's balancers send): the topics in name order, each with its
// partitions ascending, then the user data (nil is null).
//
// A subtopology's tasks are consecutive indices, so in sorted tasks each
// subtopology is one run of ascending partitions, shared by its topics;
// only the runs' topics need ordering, by their precomputed rank. A member
// with tasks of many of the topics (the usual member of an application
// with many topics) walks every rank instead of sorting its own: the sort
// took 30% of append (BenchmarkLeaderRebalance). One with a few sorts them.
func (w *assignmentWriter) append(b []byte, tasks []int32, userData []byte) []byte {
	t := w.t
	// The lists grow in locals: an append to a field of w writes a slice
	// through a pointer, a write barrier while the collector runs.
	keys, runs := w.keys[:0], w.runs[:0]
	size := 2 + 4 + 4 + len(userData)
	for i := 0; i < len(tasks); {
		sub := t.subOf(int(tasks[i]))
		r := taskRun{from: i, first: t.first[sub]}
		for end := r.first + int(t.subs[sub].Partitions); i < len(tasks) && int(tasks[i]) < end; i++ {
		}
		r.to = i
		for pos := t.subTopic[sub]; pos < t.subTopic[sub]+len(t.subs[sub].Topics); pos++ {
			keys = append(keys, uint64(t.topicRank[pos])<<32|uint64(len(runs)))
			size += 2 + len(t.topics[pos]) + 4 + 4*(r.to-r.from)
		}
		runs = append(runs, r)
	}
	w.keys, w.runs = keys, runs
	b = slices.Grow(b, size)
	b = binary.BigEndian.AppendUint16(b, 0) // version
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	if len(keys)*walkRanks < len(t.byName) {
		slices.Sort(keys)
		for _, k := range keys {
			b = appendTopic(b, t.byName[k>>32], tasks, runs[uint32(k)])
		}
	} else {
		if w.byRank == nil {
			w.byRank = make([]int32, len(t.byName))
		}
		for _, k := range keys {
			w.byRank[k>>32] = int32(uint32(k)) + 1
		}
		for rank, r := range w.byRank {
			if r > 0 {
				b = appendTopic(b, t.byName[rank], tasks, runs[r-1])
				w.byRank[rank] = 0
			}
		}
	}
	if userData == nil {
		return binary.BigEndian.AppendUint32(b, math.MaxUint32) // null
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(userData)))
	return append(b, userData...)
}

// assignmentWriter.append walks every topic rank for a member whose topics
// number at least 1/walkRanks of the topology's, and sorts them otherwise:
// sorting k topics costs a few comparisons each, the walk one step per
// topic of the topology.
const walkRanks = 8

// appendTopic appends topic with the partitions of run's tasks; b has room
// for them.
func appendTopic(b []byte, topic string, tasks []int32, r taskRun) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
	b = append(b, topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(r.to-r.from))
	at := len(b)
	b = b[:at+4*(r.to-r.from)]
	for _, task := range tasks[r.from:r.to] {
		binary.BigEndian.PutUint32(b[at:], uint32(int(task)-r.first))
		at += 4
	}
	return b
}
