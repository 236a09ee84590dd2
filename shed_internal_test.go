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
// otherwise calls countDense. The groups here have nothing learned,
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
		layouts := map[string]func(*shedder){"dealPlanned": (*shedder).dealPlanned, "copyRows": (*shedder).copyRows,
			"dealHeld": func(s *shedder) {
				if !s.dealHeld() {
					t.Fatalf("round %d: dealHeld declined a group with nothing learned, placed or contested", round)
				}
			}}
		var want []string
		for _, name := range []string{"dealHeld", "dealPlanned", "copyRows"} {
			sp := g.layOutSpread(name != "dealPlanned")
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
// ones start. The counts are read once every giver settled: until then a
// giver's may be in its segments only (countsInSegs).
func shedLayout(s *shedder) []string {
	out := make([]string, len(s.load))
	for m := range int32(len(s.load)) {
		if !s.live[m] {
			continue
		}
		var b strings.Builder
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
