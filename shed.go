package learner

// This file chooses which task a donor gives away while balancing.
//
// A donor's movable tasks are kept in segments, each in topology order:
// its stateless tasks first (they move for free), then its stateful tasks
// grouped by subtopology when subtopology spread is on (else one group).
// A cursor per segment only moves forward, so all picks of one Assign call
// cost time linear in the tasks plus the segments looked at per move.

type segment struct {
	sub       int32 // subtopology of the segment's tasks; none for "any"
	next, end int32 // cursor and end in shed
	stateless bool
}

// sheddable reports whether o may give t away: it owns it, stays, nobody
// learns it, and it was not placed this round.
func (g *group) sheddable(t, o int32) bool {
	return o != none && !g.leaving[o] && g.learner[t] == none && !g.fixed[t] && g.owner[t] == o
}

// buildSheddable lays out every staying member's movable tasks in segments.
func (g *group) buildSheddable() {
	n, keys := len(g.load), 1
	if g.spread.on {
		keys = g.spread.subs
	}
	// Count tasks per (member, key): key 0 is stateless, key 1+k stateful
	// subtopology k (or all stateful tasks when spread is off).
	width := keys + 1
	count := make([]int32, n*width)
	for t, o := range g.owner {
		if g.sheddable(int32(t), o) {
			count[int(o)*width+g.shedKey(int32(t))]++
		}
	}
	g.segStart = make([]int32, n+1)
	var total int32
	next := make([]int32, n*width) // write position per (member, key)
	for m := range n {
		for k := range width {
			c := count[m*width+k]
			next[m*width+k] = total
			if c > 0 {
				sub := int32(k - 1)
				if !g.spread.on || k == 0 {
					sub = none
				}
				g.segs = append(g.segs, segment{sub: sub, next: total, end: total + c, stateless: k == 0})
			}
			total += c
		}
		g.segStart[m+1] = int32(len(g.segs))
	}
	g.shed = make([]int32, total)
	for t, o := range g.owner {
		if g.sheddable(int32(t), o) {
			i := int(o)*width + g.shedKey(int32(t))
			g.shed[next[i]] = int32(t)
			next[i]++
		}
	}
}

func (g *group) shedKey(t int32) int {
	switch {
	case !g.tasks[t].Stateful:
		return 0
	case g.spread.on:
		return int(g.sub[t]) + 1
	default:
		return 1
	}
}

// pickShed returns the task h should give to l, or none if h has nothing it
// may give (everything it runs is pinned, or the learner budget is spent and
// only stateful tasks are left). In order: a task l has local state for
// (smallest lag first, rule 8), a stateless task, and then a stateful task
// from the subtopology where h holds the most more than l (spread on), or
// h's first stateful task in topology order.
func (g *group) pickShed(h, l int32) int32 {
	learnOK := g.canLearn()
	if learnOK {
		for _, t := range g.warmBy.row(l) {
			if g.sheddable(t, h) && g.tasks[t].Stateful {
				return t
			}
		}
	}
	best, bestScore := -1, int32(0)
	for i := g.segStart[h]; i < g.segStart[h+1]; i++ {
		s := &g.segs[i]
		if !s.stateless && !learnOK {
			break
		}
		for s.next < s.end && !g.sheddable(g.shed[s.next], h) {
			s.next++
		}
		if s.next == s.end {
			continue
		}
		if s.stateless || !g.spread.on {
			return g.shed[s.next]
		}
		if score := g.spread.count(h, s.sub) - g.spread.count(l, s.sub); best < 0 || score > bestScore {
			best, bestScore = int(i), score
		}
	}
	if best < 0 {
		return none
	}
	return g.shed[g.segs[best].next]
}
