package learner

import "slices"

// This file keeps the movable tasks of the givers that hold one task of
// each subtopology they hold, in a scale-up, without segments.
//
// In a large group a member holds at most one task of most subtopologies
// (the spread rule sees to it once a subtopology has fewer partitions than
// the group has members), so segments are one task each: at 10,000 members
// and 1,000,000 tasks the layout wrote a million of them, 16 MB, for some
// 91,000 moves, and each move then read its giver's cold segments. When
// nothing was learned, placed or contested this round (a scale-up) and the
// topology has one kind of task, such a giver's movable tasks are its held
// row as ingest left it, in topology order and hence subtopology order,
// each subtopology's count is 1 until its task is taken, and a bit per
// held task says which were taken. The picks are the segments' picks, in
// the same order (TestOneEachPicksAgree).

// allowOneEach readies s for one-each givers when the group can have
// them (see above): the flags and the taken bits, one per held task.
func (s *shedder) allowOneEach() {
	g := s.group
	if !s.spread.on || !g.heldIsPlanned() || g.subFrom == nil || (g.stateless != 0 && g.stateless != g.numTasks()) {
		return
	}
	s.oneEach = g.scratch.bools.make(len(g.load))
	s.taken = g.scratch.uint32s.make(len(g.held.items)/32 + 1)
}

// layOutOneEach makes giver m a one-each giver, if one-each givers are
// allowed and its held row holds one task of each of its subtopologies,
// and reports whether it did: m then has no segments, and its counts are
// in the taken bits until it settles.
func (s *shedder) layOutOneEach(m int32) bool {
	if s.oneEach == nil {
		return false
	}
	row, subs := s.held.row(m), s.subs
	prev := int32(none)
	for _, t := range row {
		sub := subs.of(t)
		if sub == prev {
			return false
		}
		prev = sub
	}
	s.oneEach[m] = true
	s.spread.max[m] = max(s.spread.max[m], min(int32(len(row)), 1))
	return true
}

// isTaken reports whether the held task at position i of the held rows was
// taken; markTaken records that it is.
func (s *shedder) isTaken(i int32) bool { return s.taken[i>>5]&(1<<(i&31)) != 0 }
func (s *shedder) markTaken(i int32)    { s.taken[i>>5] |= 1 << (i & 31) }

// takeOneEach is take's pick for a one-each giver h (see pickFrom): from
// the first subtopology after the one l received last, wrapping around,
// the first task whose subtopology l holds least of, stopping at one l
// holds none of.
func (s *shedder) takeOneEach(h, l int32, learnOK bool) (t, sub int32) {
	if !learnOK && s.stateless == 0 {
		return none, none
	}
	from := s.held.start[h]
	row := s.held.items[from:s.held.start[h+1]]
	sp := s.spread
	n := int32(len(row))
	i := s.firstOf(row, s.subFrom[sp.last[l]+1])
	best, bestSub, bestScore := int32(none), int32(none), int32(0)
	for range n {
		if i == n {
			i = 0
		}
		if !s.isTaken(from + i) {
			sub := s.subs.of(row[i])
			if score := 1 - sp.count(l, sub); best == none || score > bestScore {
				best, bestSub, bestScore = i, sub, score
				if score >= sp.max[h] {
					break // no subtopology can score more
				}
			}
		}
		i++
	}
	if best == none {
		return none, none
	}
	s.markTaken(from + best)
	return row[best], bestSub
}

// firstOf returns the index of the first of row's tasks, which are in
// topology order, at or after task x (len(row) if none is), searching as
// firstAfter does from where x would be if the tasks were spread evenly.
func (s *shedder) firstOf(row []int32, x int32) int32 {
	n := len(row)
	if n == 0 {
		return 0
	}
	guess := int(min(int64(x)*int64(n)/int64(max(s.numTasks(), 1)), int64(n-1)))
	return int32(gallop(n, guess, func(i int) bool { return row[i] >= x }))
}

// takeWarmOneEach records that one-each giver h gives its task t.
func (s *shedder) takeWarmOneEach(h, t int32) {
	row := s.held.row(h)
	i, _ := slices.BinarySearch(row, t) // t is movable: it is in h's row
	s.markTaken(s.held.start[h] + int32(i))
}

// putOneEachCounts puts one-each giver m's counts, a 1 for each of its
// tasks not taken, into the spread table when it settles.
func (s *shedder) putOneEachCounts(m int32) {
	sp := s.spread
	pool, from := sp.pool, s.held.start[m]
	for i, t := range s.held.row(m) {
		if s.isTaken(from + int32(i)) {
			continue
		}
		if sub := s.subs.of(t); sp.dense != nil {
			sp.dense[m*sp.subs+sub] = 1
		} else {
			pool = append(pool, subCount{sub: sub, n: 1})
		}
	}
	sp.putAll(m, pool, 0)
}
