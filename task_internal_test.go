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
