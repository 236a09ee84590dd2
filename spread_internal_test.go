package learner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSpreadLayoutsAgree checks that the sparse subtopology counts answer
// every count exactly as the dense table does, from the same group and
// after the same moves, and that each giver's segments start with its
// counts (also when the tasks dealt do not fit the windows their loads
// promise). Assign picks the layout by size, so the scenarios and
// properties, whose groups are small, see mostly the dense one; this
// drives both.
func TestSpreadLayoutsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	for round := range 200 {
		g, subs := subtopologyGroup(t, r, round, round%2 == 1, false)
		members := len(g.load)
		gives := make([]bool, members)
		for m := range gives {
			gives[m] = r.IntN(2) == 0
		}
		dense, sparse := g.layOutSpread(true), g.layOutSpread(false)
		newShedder(g, &dense, make([]bool, members))
		load := g.load
		if round%4 == 3 {
			// Windows too small for the tasks dealt: deal must count
			// them and deal again.
			g.load = make([]int32, members)
		}
		shed := newShedder(g, &sparse, gives)
		g.load = load
		for m := range int32(members) {
			for i := shed.segStart[m]; i < shed.segStart[m+1]; i++ {
				if n, want := *shed.count(i), dense.count(m, shed.segs[i].sub); n != want {
					t.Fatalf("round %d: member %d's segment of sub %d counts %d, want %d", round, m, shed.segs[i].sub, n, want)
				}
			}
		}
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
		for m := range int32(members) { // a giver's counts may be in its segments until then
			shed.settle(m)
		}
		check("counted")
		for move := range 50 {
			h, l, s := int32(r.IntN(members)), int32(r.IntN(members)), int32(r.IntN(subs))
			if h == l || dense.count(h, s) == 0 {
				continue
			}
			for _, sp := range []*spread{&dense, &sparse} {
				sp.set(h, s, sp.count(h, s)-1)
				sp.received(s, l)
			}
			check(fmt.Sprintf("move %d", move))
		}
	}
}

// subtopologyGroup ingests a random group of up to 12 members holding
// tasks "<sub>_<part>" of up to 7 subtopologies, some ownerless, some
// stateless unless round%3 > 0, in topology order or shuffled, with some
// members leaving if leaving is set, and resolves its learners (none). It
// returns the group and its number of subtopologies.
func subtopologyGroup(t *testing.T, r *rand.Rand, round int, shuffled, leaving bool) (*group, int) {
	t.Helper()
	subs, parts, members := 2+r.IntN(6), 1+r.IntN(8), 1+r.IntN(12)
	var tasks []Task
	for s := range subs {
		for p := range parts {
			tasks = append(tasks, Task{ID: fmt.Sprintf("%d_%d", s, p), Stateful: round%3 > 0 || r.IntN(2) == 0})
		}
	}
	if shuffled { // subtopologies not in topology order
		r.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	}
	a, err := New(tasks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := make([]MemberMetadata, members)
	for m := range in {
		in[m].ID = fmt.Sprintf("m%d", m)
		in[m].Leaving = leaving && r.IntN(8) == 0
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
	return g, subs
}
