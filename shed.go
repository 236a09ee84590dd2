package learner

import "slices"

// This file chooses which task a donor gives away while balancing.
//
// A donor's movable tasks are kept in segments, each in topology order:
// its stateless tasks first (they move for free), then its stateful tasks;
// with subtopology spread on, each kind is cut by subtopology.
// A cursor per segment only moves forward, so all picks of one Assign call
// cost time linear in the tasks plus the segments looked at per move.

// shedder is the part of a balancePlan that holds the movable tasks of the
// members that can give.
type shedder struct {
	*group
	spread   *spread   // the plan's: cuts segments by subtopology and scores them
	movable  []int32   // movable tasks, by member and segment
	segs     []segment // member m's are segs[segStart[m]:segStart[m+1]]
	segStart []int32
	segMid   []int32 // member m's stateful segments start at segs[segMid[m]]
}

// segment is a run of one giver's movable tasks of one kind (segMid
// splits the kinds) and, with spread on, one subtopology: often a single
// task, so there can be one per held task, and it is kept to 12 bytes.
type segment struct {
	sub       int32 // subtopology of the segment's tasks; none for "any"
	next, end int32 // cursor and end in shedder.movable
}

// sheddable reports whether o may give t away: it owns it, stays, nobody
// learns it, and it was not placed this round.
func (g *group) sheddable(t, o int32) bool {
	return o != none && !g.leaving[o] && g.learner[t] == none && !g.fixed[t] && g.owner[t] == o
}

// heldSheddable is sheddable(t, h) for a task of giver h's own held row.
// Unless two members reported holding one task, such a task's owner is h
// until something places it (and marks it fixed), so the owner need not be
// read: one random read fewer per candidate.
func (g *group) heldSheddable(t, h int32) bool {
	return g.learner[t] == none && !g.fixed[t] && (!g.contested || g.owner[t] == h)
}

// newShedder lays out the movable tasks of the members for which gives is
// true. A movable task was never placed this round, so its owner is the
// member that reported it: it is in the owner's held row, which ingest left
// sorted in topology order. Each giver's list is therefore its held row,
// stateless tasks first (they move for free), then stateful ones, cut into
// a segment where the kind or, with spread on, the subtopology changes.
// Subtopologies usually follow topology order; a member whose tasks do not
// is sorted by subtopology.
//
// The lists keep tasks that are not movable (learned, placed this round,
// claimed by another member): pick skips them anyway, since tasks stop
// being movable while balancing runs, and filtering here would cost several
// random reads per held task, most of which are never looked at again.
// When the topology has one kind of task, a giver's list is a copy of its
// row and the only per-task read is its subtopology, to cut segments.
//
// The work is linear in the givers' held tasks: a member that cannot give
// (see balance) costs nothing, and no pass runs over the whole topology.
func newShedder(g *group, sp *spread, gives []bool) shedder {
	n := len(g.load)
	size, givers := 0, 0
	for m := range int32(n) {
		if gives[m] {
			size += len(g.held.row(m))
			givers++
		}
	}
	// Allocated once, at bounds: no more movable tasks than held ones, and
	// a segment holds at least one task (at most two per giver, one of each
	// kind, without spread).
	segs := 2 * givers
	if sp.on {
		segs = size
	}
	s := shedder{group: g, spread: sp, movable: g.scratch.int32s.room(size), segs: g.scratch.segments.room(segs),
		segStart: g.scratch.int32s.make(n + 1), segMid: g.scratch.int32s.make(n)}
	for m := range int32(n) {
		if gives[m] {
			row := g.held.row(m)
			from := int32(len(s.movable))
			switch g.stateless {
			case len(g.tasks): // every task stateless
				s.movable = append(s.movable, row...)
				s.cutSegments(from, int32(len(s.movable)))
				s.segMid[m] = int32(len(s.segs))
			case 0: // every task stateful
				s.movable = append(s.movable, row...)
				s.segMid[m] = int32(len(s.segs))
				s.cutSegments(from, int32(len(s.movable)))
			default:
				s.movable = s.appendKind(s.movable, row, false)
				mid := int32(len(s.movable))
				s.movable = s.appendKind(s.movable, row, true)
				s.cutSegments(from, mid)
				s.segMid[m] = int32(len(s.segs))
				s.cutSegments(mid, int32(len(s.movable)))
			}
		}
		s.segStart[m+1] = int32(len(s.segs))
	}
	return s
}

// appendKind appends the tasks of row whose statefulness is stateful.
func (s *shedder) appendKind(movable, row []int32, stateful bool) []int32 {
	for _, t := range row {
		if s.isStateful(t) == stateful {
			movable = append(movable, t)
		}
	}
	return movable
}

// cutSegments appends the segments of movable[from:to], tasks of one kind.
// With spread on it cuts runs of one subtopology in one pass, reading each
// task's subtopology once; a range whose subtopologies turn out not to be
// in order is sorted by subtopology (stably) and cut again.
func (s *shedder) cutSegments(from, to int32) {
	if !s.spread.on {
		if from < to {
			s.segs = append(s.segs, segment{sub: none, next: from, end: to})
		}
		return
	}
	first := len(s.segs)
	for i := from; i < to; {
		sub := s.sub[s.movable[i]]
		if len(s.segs) > first && sub < s.segs[len(s.segs)-1].sub {
			s.segs = s.segs[:first]
			slices.SortStableFunc(s.movable[from:to], s.bySub)
			s.cutSegments(from, to)
			return
		}
		j := i + 1
		for j < to && s.sub[s.movable[j]] == sub {
			j++
		}
		s.segs = append(s.segs, segment{sub: sub, next: i, end: j})
		i = j
	}
}

func (g *group) bySub(a, b int32) int { return int(g.sub[a] - g.sub[b]) }

// pick returns the task h should give to l, or none if h has nothing it
// may give (everything it runs is pinned, or the learner budget is spent and
// only stateful tasks are left). In order: a task l has local state for
// (smallest lag first, rule 8), a stateless task, a stateful task; within a
// kind, from the subtopology where h holds the most more than l (spread
// on), or h's first in topology order.
func (s *shedder) pick(h, l int32) int32 {
	learnOK := s.canLearn()
	if learnOK {
		for _, t := range s.warmBy.row(l) {
			if s.sheddable(t, h) && s.isStateful(t) {
				return t
			}
		}
	}
	if t := s.pickFrom(s.segs[s.segStart[h]:s.segMid[h]], h, l); t != none || !learnOK {
		return t
	}
	return s.pickFrom(s.segs[s.segMid[h]:s.segStart[h+1]], h, l)
}

// firstAfter returns the index of the first of segs, which are in
// increasing order of subtopology, whose subtopology is above sub
// (len(segs) if none is).
//
// A giver's segments are cold when it gives (donors take turns), and a
// binary search touched a new cache line at almost every step: it was a
// twentieth of a scale-up. So the search starts where sub would be if the
// segments' subtopologies were evenly spread, usually a line or two from
// the answer, and gallops from there, which keeps O(log n) steps however
// they are spread.
func firstAfter(segs []segment, sub int32) int {
	n := len(segs)
	if n == 0 || segs[0].sub > sub {
		return 0
	}
	if segs[n-1].sub <= sub {
		return n
	}
	// Now segs[0].sub <= sub < segs[n-1].sub: the answer is in [1, n-1].
	first, last := int64(segs[0].sub), int64(segs[n-1].sub)
	guess := int((int64(sub) - first + 1) * int64(n-1) / (last - first))
	// Gallop to lo < hi with segs[lo].sub <= sub < segs[hi].sub.
	lo, hi := guess, guess
	if segs[guess].sub <= sub {
		for step := 1; segs[hi].sub <= sub; step *= 2 {
			lo, hi = hi, min(hi+step, n-1)
		}
	} else {
		for step := 1; segs[lo].sub > sub; step *= 2 {
			lo, hi = max(lo-step, 0), lo
		}
	}
	for hi-lo > 1 {
		if mid := int(uint(lo+hi) >> 1); segs[mid].sub > sub {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// pickFrom returns h's best movable task among segs (of one kind), or none.
// With spread on, the scan starts after the subtopology l received last and
// wraps around: a receiver then collects subtopologies in turn, so the first
// candidate usually scores the most h can offer and ends the scan at once.
func (s *shedder) pickFrom(segs []segment, h, l int32) int32 {
	sp := s.spread
	start := 0
	if sp.on {
		start = firstAfter(segs, sp.last[l])
	}
	best, bestScore := -1, int32(0)
	for k := range len(segs) {
		i := (start + k) % len(segs)
		seg := &segs[i]
		for seg.next < seg.end && !s.heldSheddable(s.movable[seg.next], h) {
			seg.next++
		}
		if seg.next == seg.end {
			continue
		}
		if !sp.on {
			return s.movable[seg.next]
		}
		if score := sp.count(h, seg.sub) - sp.count(l, seg.sub); best < 0 || score > bestScore {
			best, bestScore = i, score
			if score >= sp.max[h] {
				break // no subtopology can score more
			}
		}
	}
	if best < 0 {
		return none
	}
	return s.movable[segs[best].next]
}
