package learner

import (
	"cmp"
	"math"
	"slices"
)

// Level queues: with equal capacities, load orders members by a plain
// count, and the placement loops move loads one task at a time, so the
// lightest (or heaviest) member can be found level by level instead of by
// re-sifting a heap after every task. A level is the members at one load,
// in tie-break order, consumed front to back. Each move then costs a
// cursor step instead of two or three O(log members) sifts, which were a
// fifth of a scale-up's time at 1,000 members.

// memberQueue yields the member that receives next. Its owner changes
// loads and then calls fix (a heap re-sifts; a level queue reads loads
// lazily and does nothing).
type memberQueue interface {
	top() int32 // none when empty
	fix(m int32)
}

// donorQueue yields the member that gives next; remove takes a member out
// for good.
type donorQueue interface {
	memberQueue
	remove(m int32)
}

// risingQueue yields the least loaded of its members, the first in rank
// order on ties: the order of group.lighter with equal capacities. It
// relies on what every loop that uses it guarantees: no member's load
// drops to the lowest level or below while it is in use (loads rise; a
// donor that gives stays above the receiver it gives to). Members that rise
// out of the lowest level are skipped when reached. A new level is found by
// one pass over the members, at most once per load value the minimum
// passes through, so the passes cost O(members · tasks/members) = O(tasks)
// over a whole loop.
//
// Most of those passes are not needed: when the members at a level have
// all risen and no other member is at the next level, the next level's
// members are those same members, in the same order (a scale-up's new
// members rise together from zero, far below everyone else). above, a
// lower bound of the loads of the members outside cur, says when: collect
// sets it, and fix lowers it for any member that is not the one top
// returned, which covers a donor whose load fell (the caller fixes it)
// and a member given a task out of turn. In cachegrind of a scale-up at
// 1,000 members and 100,000 tasks the passes were 4% of the call.
type risingQueue struct {
	load    []int32
	members []int32 // in rank order
	level   int32   // the lowest load
	cur     []int32 // members at level, in rank order; cur[:at] have risen
	at      int
	above   int32
	lifted  bool // level was reached without collect, and nobody found at it yet
}

func newRisingQueue(load, members []int32) *risingQueue {
	q := &risingQueue{load: load, members: members}
	q.collect()
	return q
}

// collect makes the lowest load among the members the current level. It
// passes over every member once per level, so it works in locals: through
// q, the level and the list's header were stored back at every member.
func (q *risingQueue) collect() {
	load, cur, level, above := q.load, q.cur[:0], int32(0), int32(math.MaxInt32)
	for _, m := range q.members {
		switch l := load[m]; {
		case len(cur) == 0 || l < level:
			if len(cur) > 0 {
				above = level // the members collected so far
			}
			level, cur = l, append(cur[:0], m)
		case l == level:
			cur = append(cur, m)
		default:
			above = min(above, l)
		}
	}
	q.cur, q.at, q.level, q.above, q.lifted = cur, 0, level, above, false
}

func (q *risingQueue) top() int32 {
	if len(q.members) == 0 {
		return none
	}
	for {
		for ; q.at < len(q.cur); q.at++ {
			if m := q.cur[q.at]; q.load[m] == q.level {
				q.lifted = false
				return m
			}
		}
		if q.above > q.level+1 && !q.lifted {
			// Every member of cur is above level, the rest above
			// level+1: level+1 holds those of cur at it, in order.
			// (Once: a level found empty that way is collected.)
			q.level, q.at, q.lifted = q.level+1, 0, true
			continue
		}
		q.collect()
	}
}

func (q *risingQueue) fix(m int32) {
	if q.at == len(q.cur) || q.cur[q.at] != m {
		q.above = min(q.above, q.load[m])
	}
}

// fallingQueue yields the most loaded of its members, the first in a
// given order (place) on ties: balancing's donors with equal capacities.
// A member's load only falls, one task per turn, and only while it is the
// top (it gives); otherwise it is removed. So when the members at the top
// level are used up, the next level is the ones of them that gave (now one
// lower) merged with the members that start at that load: O(members +
// moves) over the whole loop, whatever the loads.
type fallingQueue struct {
	load   []int32
	place  []int32 // tie-break order per member
	byLoad []int32 // every member: highest load first, then place
	next   int     // byLoad[next:] have not reached the top level yet
	gone   []bool  // removed
	level  int32
	cur    []int32 // members at level, by place; cur[:at] gave or left
	at     int
	gave   []int32 // members of cur[:at] that gave, by place
}

// newFallingQueue returns a queue of members (their loads in load, their
// tie-break order in place), all distinct; gone is its zeroed scratch, one
// flag per member rank.
func newFallingQueue(load, place, members []int32, gone []bool) *fallingQueue {
	q := &fallingQueue{load: load, place: place, byLoad: members, gone: gone}
	slices.SortFunc(q.byLoad, func(a, b int32) int {
		if load[a] != load[b] {
			return cmp.Compare(load[b], load[a])
		}
		return cmp.Compare(place[a], place[b])
	})
	return q
}

func (q *fallingQueue) top() int32 {
	for {
		for ; q.at < len(q.cur); q.at++ {
			m := q.cur[q.at]
			if q.gone[m] {
				continue
			}
			if q.load[m] == q.level {
				return m
			}
			q.gave = append(q.gave, m) // it gave one and is one level lower
		}
		if !q.descend() {
			return none
		}
	}
}

// descend makes the next level down current, reporting false when no
// member is left.
func (q *fallingQueue) descend() bool {
	gave := q.gave[:0]
	for _, m := range q.gave {
		if !q.gone[m] {
			gave = append(gave, m)
		}
	}
	level := q.level - 1
	if len(gave) == 0 {
		for q.next < len(q.byLoad) && q.gone[q.byLoad[q.next]] {
			q.next++
		}
		if q.next == len(q.byLoad) {
			return false
		}
		level = q.load[q.byLoad[q.next]]
	}
	// Merge the members that gave with those starting at level, by place.
	from := q.next
	for q.next < len(q.byLoad) && q.load[q.byLoad[q.next]] == level {
		q.next++
	}
	starting := q.byLoad[from:q.next]
	// gave and cur never share storage: the merge reads one and writes
	// the other, then they trade buffers.
	cur := q.cur[:0]
	i, j := 0, 0
	for i < len(gave) || j < len(starting) {
		if j == len(starting) || i < len(gave) && q.place[gave[i]] < q.place[starting[j]] {
			cur = append(cur, gave[i])
			i++
		} else {
			cur = append(cur, starting[j])
			j++
		}
	}
	q.cur, q.gave, q.at, q.level = cur, gave[:0], 0, level
	return true
}

func (q *fallingQueue) fix(int32) {}

func (q *fallingQueue) remove(m int32) { q.gone[m] = true }
