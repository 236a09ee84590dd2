package learner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSpreadLayoutsAgree checks that the sparse subtopology counts answer
// every count exactly as the dense table does, from the same group and
// after the same moves. Assign picks the layout by size, so the
// scenarios and properties, whose groups are small, see mostly the dense
// one; this drives both.
func TestSpreadLayoutsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	for round := range 200 {
		subs, parts, members := 2+r.IntN(6), 1+r.IntN(8), 1+r.IntN(12)
		var tasks []Task
		for s := range subs {
			for p := range parts {
				tasks = append(tasks, Task{ID: fmt.Sprintf("%d_%d", s, p), Stateful: true})
			}
		}
		if round%2 == 1 { // subtopologies not in topology order
			r.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
		}
		a, err := New(tasks, Options{})
		if err != nil {
			t.Fatal(err)
		}
		in := make([]MemberMetadata, members)
		for m := range in {
			in[m].ID = fmt.Sprintf("m%d", m)
		}
		for _, task := range tasks {
			if m := r.IntN(members + 1); m < members { // some tasks ownerless
				in[m].Assigned = append(in[m].Assigned, task.ID)
			}
		}
		g, err := ingest(&a.topology, a.opts, reports{byID: in}, new(scratch))
		if err != nil {
			t.Fatal(err)
		}
		g.resolveLearners()
		dense, sparse := g.countSpread(true), g.countSpread(false)
		check := func(step string) {
			t.Helper()
			for m := range int32(members) {
				for s := range int32(subs) {
					if d, sp := dense.count(m, s), sparse.count(m, s); d != sp {
						t.Fatalf("round %d, %s: count(member %d, sub %d) = %d sparse, %d dense", round, step, m, s, sp, d)
					}
				}
				if dense.max[m] != sparse.max[m] || dense.last[m] != sparse.last[m] {
					t.Fatalf("round %d, %s: member %d max/last = %d/%d sparse, %d/%d dense", round, step, m,
						sparse.max[m], sparse.last[m], dense.max[m], dense.last[m])
				}
			}
		}
		check("counted")
		for move := range 50 {
			h, l, s := int32(r.IntN(members)), int32(r.IntN(members)), int32(r.IntN(subs))
			if h == l || dense.count(h, s) == 0 {
				continue
			}
			dense.moved(s, h, l)
			sparse.moved(s, h, l)
			check(fmt.Sprintf("move %d", move))
		}
	}
}
