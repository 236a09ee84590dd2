package learner

import (
	"slices"
	"sort"
)

// This file chooses which task a donor gives away while balancing.
//
// A donor's movable tasks are kept in segments, each in topology order:
// its stateless tasks first (they move for free), then its stateful tasks;
// with subtopology spread on, each kind is cut by subtopology.
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

// buildSheddable lays out every staying member's movable tasks in segments,
// in time linear in tasks plus members: a counting sort by member (stateless
// tasks first, each kind in topology order), then one scan per member that
// cuts a segment where the kind or, with spread on, the subtopology
// changes. Subtopologies usually follow topology order; a member whose
// tasks do not is sorted by subtopology.
func (g *group) buildSheddable() {
	n := len(g.load)
	start := make([]int32, n+1)
	for t, o := range g.owner {
		if g.sheddable(int32(t), o) {
			start[o+1]++
		}
	}
	for m := range n {
		start[m+1] += start[m]
	}
	g.shed = make([]int32, start[n])
	next := append([]int32(nil), start[:n]...)
	for pass := range 2 {
		wantStateful := pass == 1
		for t, o := range g.owner {
			if g.sheddable(int32(t), o) && g.tasks[t].Stateful == wantStateful {
				g.shed[next[o]] = int32(t)
				next[o]++
			}
		}
	}
	g.segStart = make([]int32, n+1)
	g.segs = make([]segment, 0, g.countSegments(start))
	for m := range n {
		tasks := g.shed[start[m]:start[m+1]]
		mid := start[m] + int32(slices.IndexFunc(tasks, func(t int32) bool { return g.tasks[t].Stateful }))
		if mid < start[m] {
			mid = start[m+1] // no stateful task
		}
		g.cutSegments(start[m], mid, true)
		g.cutSegments(mid, start[m+1], false)
		g.segStart[m+1] = int32(len(g.segs))
	}
}

// countSegments returns an upper bound of the segments buildSheddable
// cuts (exact when subtopologies follow topology order), so that they are
// allocated once.
func (g *group) countSegments(start []int32) int {
	segs := 0
	for m := range len(start) - 1 {
		for i := start[m]; i < start[m+1]; i++ {
			t := g.shed[i]
			if i == start[m] || g.tasks[t].Stateful != g.tasks[g.shed[i-1]].Stateful ||
				g.spread.on && g.sub[t] != g.sub[g.shed[i-1]] {
				segs++
			}
		}
	}
	return segs + 2*(len(start)-1)
}

// cutSegments appends the segments of shed[from:to], tasks of one kind.
func (g *group) cutSegments(from, to int32, stateless bool) {
	if !g.spread.on {
		if from < to {
			g.segs = append(g.segs, segment{sub: none, next: from, end: to, stateless: stateless})
		}
		return
	}
	if tasks := g.shed[from:to]; !slices.IsSortedFunc(tasks, g.bySub) {
		slices.SortStableFunc(tasks, g.bySub)
	}
	for i := from; i < to; {
		j := i + 1
		for j < to && g.sub[g.shed[j]] == g.sub[g.shed[i]] {
			j++
		}
		g.segs = append(g.segs, segment{sub: g.sub[g.shed[i]], next: i, end: j, stateless: stateless})
		i = j
	}
}

func (g *group) bySub(a, b int32) int { return int(g.sub[a] - g.sub[b]) }

// pickShed returns the task h should give to l, or none if h has nothing it
// may give (everything it runs is pinned, or the learner budget is spent and
// only stateful tasks are left). In order: a task l has local state for
// (smallest lag first, rule 8), a stateless task, a stateful task; within a
// kind, from the subtopology where h holds the most more than l (spread
// on), or h's first in topology order.
func (g *group) pickShed(h, l int32) int32 {
	learnOK := g.canLearn()
	if learnOK {
		for _, t := range g.warmBy.row(l) {
			if g.sheddable(t, h) && g.tasks[t].Stateful {
				return t
			}
		}
	}
	segs := g.segs[g.segStart[h]:g.segStart[h+1]]
	stateful := sort.Search(len(segs), func(i int) bool { return !segs[i].stateless })
	if t := g.pickFrom(segs[:stateful], h, l); t != none || !learnOK {
		return t
	}
	return g.pickFrom(segs[stateful:], h, l)
}

// pickFrom returns h's best movable task among segs (of one kind), or none.
// With spread on, the scan starts after the subtopology l received last and
// wraps around: a receiver then collects subtopologies in turn, so the first
// candidate usually scores the most h can offer and ends the scan at once.
func (g *group) pickFrom(segs []segment, h, l int32) int32 {
	start := 0
	if g.spread.on {
		start = sort.Search(len(segs), func(i int) bool { return segs[i].sub > g.spread.last[l] })
	}
	best, bestScore := -1, int32(0)
	for k := range len(segs) {
		i := (start + k) % len(segs)
		s := &segs[i]
		for s.next < s.end && !g.sheddable(g.shed[s.next], h) {
			s.next++
		}
		if s.next == s.end {
			continue
		}
		if !g.spread.on {
			return g.shed[s.next]
		}
		if score := g.spread.count(h, s.sub) - g.spread.count(l, s.sub); best < 0 || score > bestScore {
			best, bestScore = i, score
			if score >= g.spread.max[h] {
				break // no subtopology can score more
			}
		}
	}
	if best < 0 {
		return none
	}
	return g.shed[segs[best].next]
}
