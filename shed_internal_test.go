package learner

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFirstAfter checks firstAfter against a linear scan on segments with
// subtopologies spread evenly, in clusters and with big gaps, where its
// interpolated first guess is far off.
func TestFirstAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var segs []segment
		sub := int32(r.IntN(5))
		for range r.IntN(40) {
			segs = append(segs, segment{sub: sub})
			if r.IntN(4) == 0 {
				sub += 1 + int32(r.IntN(1000)) // a gap
			} else {
				sub += 1 + int32(r.IntN(3))
			}
		}
		q := min(int32(r.IntN(int(sub)+10))-3, sub) // -1 (none) up to the bound
		want := 0
		for want < len(segs) && segs[want].sub <= q {
			want++
		}
		if got := firstAfter(segs, q, sub+1); got != want {
			t.Fatalf("firstAfter(%v, %d) = %d, want %d", segs, q, got, want)
		}
	}
}

// TestShedLayoutsAgree checks that the ways newShedder lays out the
// givers' movable tasks give every member the same spread counts and each
// giver the same segments (the same subtopologies, counts and tasks in the
// same order, the kinds split at the same place): dealHeld from the held
// rows, dealPlanned from the per-task arrays, and copyRows, which counts
// the rows' runs in a topology of one kind of task (countRuns) and
// otherwise calls countDense; dealHeld and copyRows also with one-each
// givers allowed (shed_oneeach.go). The groups here have nothing learned,
// placed or contested, so Assign would take dealHeld or counted runs;
// each way is driven directly.
func TestShedLayoutsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 16))
	for round := range 300 {
		g, _ := subtopologyGroup(t, r, round, false, true)
		members := len(g.load)
		gives := make([]bool, members)
		for m := range gives {
			gives[m] = !g.leaving[m] && r.IntN(3) > 0
		}
		dealHeld := func(s *shedder) {
			if !s.dealHeld() {
				t.Fatalf("round %d: dealHeld declined a group with nothing learned, placed or contested", round)
			}
		}
		oneEach := func(layOut func(*shedder)) func(*shedder) {
			return func(s *shedder) {
				s.allowOneEach()
				layOut(s)
			}
		}
		layouts := map[string]func(*shedder){"dealPlanned": (*shedder).dealPlanned, "copyRows": (*shedder).copyRows, "dealHeld": dealHeld,
			"dealHeld with one-each givers": oneEach(dealHeld), "copyRows with one-each givers": oneEach((*shedder).copyRows)}
		var want []string
		for _, name := range []string{"dealHeld", "dealPlanned", "copyRows", "dealHeld with one-each givers", "copyRows with one-each givers"} {
			sp := g.layOutSpread(name != "dealPlanned" && name != "dealHeld with one-each givers")
			s := shedder{group: g, spread: &sp, live: append([]bool(nil), gives...),
				segStart: make([]int32, members+1), segMid: make([]int32, members)}
			layouts[name](&s)
			got := shedLayout(&s)
			if want == nil {
				want = got
				continue
			}
			for m := range want {
				if got[m] != want[m] {
					t.Fatalf("round %d: member %d's segments by %s:\n%s\nby dealHeld:\n%s", round, m, name, got[m], want[m])
				}
			}
		}
	}
}

// shedLayout describes each member's spread counts and, for a giver, its
// segments: subtopology, count and tasks, with "|" where its stateful
// ones start; a one-each giver's tasks not taken are described as the
// segments of one task each it would have. The counts are read once every
// giver settled: until then a giver's may be in its segments only
// (countsInSegs, one-each givers).
func shedLayout(s *shedder) []string {
	out := make([]string, len(s.load))
	for m := range int32(len(s.load)) {
		if !s.live[m] {
			continue
		}
		var b strings.Builder
		if s.oneEach != nil && s.oneEach[m] {
			var segs strings.Builder
			for i, t := range s.held.row(m) {
				if !s.isTaken(s.held.start[m] + int32(i)) {
					fmt.Fprintf(&segs, "%d:1[ %d ] ", s.sub[t], t)
				}
			}
			if s.stateless == 0 && segs.Len() > 0 {
				b.WriteString("| ")
			}
			b.WriteString(segs.String())
			if s.stateless != 0 || segs.Len() == 0 {
				b.WriteString("|")
			}
			out[m] = b.String()
			continue
		}
		for i := s.segStart[m]; i < s.segStart[m+1]; i++ {
			if i == s.segMid[m] {
				b.WriteString("| ")
			}
			seg := s.segs[i]
			fmt.Fprintf(&b, "%d:%d[", seg.sub, *s.count(i))
			for seg.head != none {
				fmt.Fprintf(&b, " %d", seg.head)
				s.advance(&seg)
			}
			b.WriteString(" ] ")
		}
		if s.segMid[m] == s.segStart[m+1] {
			b.WriteString("|")
		}
		out[m] = b.String()
	}
	for m := range int32(len(s.load)) {
		s.settle(m)
		var b strings.Builder
		fmt.Fprintf(&b, "max %d counts", s.spread.max[m])
		for sub := range s.spread.subs {
			fmt.Fprintf(&b, " %d", s.spread.count(m, sub))
		}
		out[m] = b.String() + ": " + out[m]
	}
	return out
}

// TestOneEachPicksAgree checks that one-each givers (shed_oneeach.go) give
// the tasks, in the order, that their segments would: the same group is
// laid out with one-each givers allowed and without, and both shedders
// answer the same random sequence of takes, each followed by its move, in
// both layouts of the counts, with receivers that have local state for
// some tasks (given first, out of the segments' order).
func TestOneEachPicksAgree(t *testing.T) {
	oneEachGivers := 0
	for round := range 400 {
		seed := uint64(round)
		var groups [2]*group
		var sheds [2]shedder
		var spreads [2]spread
		for i := range groups {
			r := rand.New(rand.NewPCG(seed, 17))
			g, _ := subtopologyGroup(t, r, round, false, false)
			groups[i] = g
			// Local state here and there, which take gives first.
			g.warmBy = csr{start: make([]int32, len(g.load)+1)}
			for m := range len(g.load) {
				for task := range int32(g.numTasks()) {
					if r.IntN(8) == 0 {
						g.warmBy.items = append(g.warmBy.items, task)
					}
				}
				g.warmBy.start[m+1] = int32(len(g.warmBy.items))
			}
			gives := make([]bool, len(g.load))
			for m := range gives {
				gives[m] = r.IntN(4) > 0
			}
			// copyRows with dense counts, as newShedder calls it;
			// dealHeld with either.
			spreads[i] = g.layOutSpread(round%3 != 1)
			sheds[i] = shedder{group: g, spread: &spreads[i], live: gives,
				segStart: make([]int32, len(g.load)+1), segMid: make([]int32, len(g.load))}
			if i == 0 {
				sheds[i].allowOneEach()
			}
			if round%3 == 0 {
				sheds[i].copyRows()
			} else if !sheds[i].dealHeld() {
				t.Fatalf("round %d: dealHeld declined a group with nothing learned, placed or contested", round)
			}
		}
		for _, one := range sheds[0].oneEach {
			if one {
				oneEachGivers++
			}
		}
		r := rand.New(rand.NewPCG(seed, 18))
		members := len(groups[0].load)
		for step := range 60 {
			h, l := int32(r.IntN(members)), int32(r.IntN(members))
			if h == l || !sheds[0].live[h] {
				continue
			}
			var took [2][2]int32
			for i := range sheds {
				sheds[i].settle(l)
				t, sub := sheds[i].take(h, l)
				took[i] = [2]int32{t, sub}
				if t != none {
					groups[i].move(t, h, l)
					spreads[i].received(sub, l)
				}
			}
			if took[0] != took[1] {
				t.Fatalf("round %d, step %d: take(%d, %d) = %v with one-each givers, %v without", round, step, h, l, took[0], took[1])
			}
		}
	}
	if oneEachGivers == 0 {
		t.Fatal("no round had a one-each giver")
	}
}
