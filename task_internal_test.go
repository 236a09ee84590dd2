package learner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSubLookup checks subLookup.of against sub for every task of random
// topologies whose subtopologies follow topology order, with sizes from a
// single task (the shift is then 0) to a few hundred, and that a topology
// whose subtopologies do not follow it has no lookup.
func TestSubLookup(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	for round := range 300 {
		var tasks []Task
		smallest := 1 + r.IntN(300)
		for s := range 1 + r.IntN(20) {
			for p := range smallest + r.IntN(3*smallest) {
				tasks = append(tasks, Task{ID: fmt.Sprintf("%d_%d", s, p)})
			}
		}
		tp, err := newTopology(tasks)
		if err != nil {
			t.Fatal(err)
		}
		for task := range int32(len(tasks)) {
			if got, want := tp.subs.of(task), tp.sub[task]; got != want {
				t.Fatalf("round %d: subs.of(%d) = %d, want %d (shift %d)", round, task, got, want, tp.subs.shift)
			}
		}
		if len(tp.subs.near) > len(tasks) {
			t.Fatalf("round %d: %d tasks have a lookup table of %d entries", round, len(tasks), len(tp.subs.near))
		}
	}
	tp, err := newTopology([]Task{{ID: "1_0"}, {ID: "0_0"}})
	if err != nil {
		t.Fatal(err)
	}
	if tp.subs.near != nil || tp.subFrom != nil {
		t.Fatalf("subtopologies out of topology order have subFrom %v and a lookup of %d entries, want none", tp.subFrom, len(tp.subs.near))
	}
}

// TestTaskIndexTablesStayWithinTheTopology: a few tasks with large
// partition numbers (below maxTablePartition) in many subtopologies once
// made New allocate a table row of 4 million slots per subtopology,
// gigabytes for a topology of a hundred tasks. The tables must stay within
// a small multiple of the task count, and every ID must still be found.
func TestTaskIndexTablesStayWithinTheTopology(t *testing.T) {
	var tasks []Task
	for s := range 100 {
		tasks = append(tasks, Task{ID: fmt.Sprintf("%d_%d", s, maxTablePartition-1)}, Task{ID: fmt.Sprintf("%d_0", 1<<16-1-s)})
	}
	for p := range 50 { // an ordinary subtopology still takes the table
		tasks = append(tasks, Task{ID: fmt.Sprintf("100_%d", p)})
	}
	tp, err := newTopology(tasks)
	if err != nil {
		t.Fatal(err)
	}
	slots := len(tp.index.bySub) + len(tp.index.base)
	for _, row := range tp.index.bySub {
		slots += cap(row)
	}
	if limit := 8*len(tasks) + 1024; slots > limit {
		t.Fatalf("newTopology(%d tasks) built tables of %d slots, want at most %d", len(tasks), slots, limit)
	}
	for i, task := range tasks {
		if got := tp.index.lookup(task.ID); got != int32(i) {
			t.Fatalf("lookup(%q) = %d, want %d", task.ID, got, i)
		}
	}
	if got := tp.index.lookup("100_50"); got != none {
		t.Fatalf("lookup(%q) = %d, want %d", "100_50", got, none)
	}
	if len(tp.index.bySub) <= 100 || len(tp.index.bySub[100]) != 50 {
		t.Fatalf("subtopology 100's 50 consecutive partitions are not in the table")
	}
}
