package learner

import (
	"cmp"
	"slices"
)

// This file places tasks by load: orphans, leaving members' tasks, and the
// heavy-to-light balancing of staying members.
//
// Load is the planned active load: tasks a member owns and nobody learns,
// plus tasks it learns. Balance evens out load per unit of capacity by
// minimising the sum over members of load²/capacity. Moving one task from h
// to l lowers that sum exactly when (2·load(h)−1)/cap(h) > (2·load(l)+1)/cap(l),
// so the greedy always moves from the member with the largest left side to
// the one with the smallest right side and stops when no move helps. With
// equal capacities this is "move from the most to the least loaded member
// until loads differ by at most one". Ties go to the member first in ID order.

// lighter reports whether a is the better receiver of one more task.
func (g *group) lighter(a, b int32) bool { return g.receivesFirst(a, g.load[a], b, g.load[b]) }

// receivesFirst reports whether member a, with load la, should receive one
// more task before member b with load lb: adding it costs less, that is
// (2·la+1)/cap(a) < (2·lb+1)/cap(b). Ties go to the first in ID order.
func (g *group) receivesFirst(a, la, b, lb int32) bool {
	x := (2*int64(la) + 1) * g.capacity[b]
	y := (2*int64(lb) + 1) * g.capacity[a]
	if x != y {
		return x < y
	}
	return a < b
}

// eligible reports whether m may receive tasks: staying members only, unless
// every member is leaving (then orphans must still get an owner).
func (g *group) eligible(m int32) bool { return !g.leaving[m] || g.staying == 0 }

// receivers returns a queue of the members that may receive tasks,
// lightest first: a level queue when they all have the same capacity (the
// callers only add load), else a heap.
func (g *group) receivers() memberQueue {
	var eligible []int32
	for m := range int32(len(g.load)) {
		if g.eligible(m) {
			eligible = append(eligible, m)
		}
	}
	if g.sameCapacity(eligible) {
		return newRisingQueue(g.load, eligible)
	}
	h := newMemberHeap(len(g.load), g.lighter)
	for _, m := range eligible {
		h.push(m)
	}
	return h
}

// bestWarm returns the eligible member with local state for t that should
// take it (warmBetter), none when no eligible member has state for t.
func (g *group) bestWarm(t int32) int32 {
	if i := g.warmestEntry(t); i != none {
		return g.warm.items[i]
	}
	return none
}

// warmestEntry returns the warm-index entry of bestWarm(t), or none.
func (g *group) warmestEntry(t int32) int32 {
	if g.warm.start == nil {
		return none // nobody has local state for any task
	}
	best := int32(none)
	for i := g.warm.start[t]; i < g.warm.start[t+1]; i++ {
		m := g.warm.items[i]
		if !g.eligible(m) || m == g.owner[t] || m == g.learner[t] {
			continue
		}
		if best == none || g.warmBetter(i, best) {
			best = i
		}
	}
	return best
}

// warmth is how caught up one member's copy of a task is, as that member
// reported it, and what kind of copy it is.
type warmth struct {
	lag  reportedLag
	kind uint8 // copyLearner, copyStandby or copyOnDisk
}

// Kinds of local copy, the one to prefer on equal lag first: a learner is
// replaying to take the task over anyway, a standby keeps up by design,
// state left on disk is whatever a former owner left.
const (
	copyLearner uint8 = iota
	copyStandby
	copyOnDisk
)

// compare orders copies warmest first, given Options.AcceptableLag: the
// smallest reported lag, a copy reporting none ranking as one at
// acceptable, after those (reportedLag.rank: caught up at its word, as
// rule 13 counts it), then by kind. Every choice of where a task's state
// is warmest goes through it: ownerless tasks (rule 5), learners of a
// leaving member's tasks (rule 6), balancing (rule 8).
func (w warmth) compare(o warmth, acceptable int64) int {
	if c := w.lag.compare(o.lag, acceptable); c != 0 {
		return c
	}
	return int(w.kind) - int(o.kind)
}

// warmthAt returns the warmth of warm-index entry i.
func (g *group) warmthAt(i int32) warmth {
	if g.warmIsSb[i] {
		return warmth{g.warmLagAt(i), copyStandby}
	}
	return warmth{g.warmLagAt(i), copyOnDisk}
}

// warmBetter reports whether warm-index entry i beats entry j of the same
// task: warmer, then the lighter member.
func (g *group) warmBetter(i, j int32) bool {
	if c := g.warmthAt(i).compare(g.warmthAt(j), g.opts.AcceptableLag); c != 0 {
		return c < 0
	}
	return g.lighter(g.warm.items[i], g.warm.items[j])
}

// placeOrphans gives every task without an owner one at once, without a
// learning stage (rule 5): the warmest copy of it (its learner on ties),
// then the least loaded member. (Ready learners of orphans, and learners
// of stateless ones, were placed by resolveLearners.)
func (g *group) placeOrphans() {
	if len(g.load) == 0 || g.owned == g.numTasks() {
		return // nobody to place with, or no task without an owner
	}
	var rest []int32
	for t, o := range g.owner {
		if o != none {
			continue
		}
		if l := g.learner[t]; l != none {
			m := g.orphanOwner(int32(t), l)
			g.learner[t] = none
			g.setOwner(int32(t), m)
			continue
		}
		if m := g.bestWarm(int32(t)); m != none {
			g.setOwner(int32(t), m)
			g.load[m]++
			continue
		}
		rest = append(rest, int32(t))
	}
	if len(rest) == 0 {
		return
	}
	h := g.receivers()
	for _, t := range g.placementOrder(rest) {
		m := h.top()
		g.setOwner(t, m)
		g.load[m]++
		h.fix(m)
	}
}

// orphanOwner returns who takes ownerless stateful task t from its
// not-ready learner l: l, unless another member reports a warmer copy
// (a smaller lag). A learner that has replayed half the state would leave
// the task down while it replays the rest, although a caught-up standby
// could process at once; so the warmest copy takes it, by the same order
// as every other warm choice, and the learner keeps it on ties (it is
// often the only copy: the design's leader transfer). The outrun learner
// is dropped rather than kept beside the new owner: keeping it would move
// the task a second time, from a warm owner to a learner no warmer, for
// balance alone, and balancing below already moves tasks where load says.
// It moves l's planned load to the new owner.
func (g *group) orphanOwner(t, l int32) int32 {
	i := g.warmestEntry(t)
	if i == none || g.warmthAt(i).compare(warmth{g.learnerKey(t).lag(), copyLearner}, g.opts.AcceptableLag) >= 0 {
		return l
	}
	m := g.warm.items[i]
	g.load[l]--
	g.load[m]++
	return m
}

// handOverLeaving starts moving every task of a leaving member to a staying
// one (rule 6): stateful tasks get a learner, preferably a member with local
// state for them; stateless tasks move at once. The leaving member keeps
// running its tasks until their learners are ready.
func (g *group) handOverLeaving() {
	if g.staying == 0 || g.staying == len(g.load) {
		return
	}
	var handed []int32
	for t, o := range g.owner {
		if o != none && g.leaving[o] && g.learner[t] == none {
			handed = append(handed, int32(t))
		}
	}
	h := g.receivers()
	for _, t := range g.placementOrder(handed) {
		if g.isStateful(t) && !g.canLearn() {
			continue
		}
		m := g.bestWarm(t)
		if m == none {
			m = h.top()
		}
		g.move(t, g.owner[t], m)
		h.fix(m)
	}
}

// move starts moving t from its owner, from, to m: through a learner if t
// is stateful, at once if not. It updates the planned loads. The caller
// names the owner because it knows it (balancing gives a donor's own
// tasks): reading it here was a cache miss per move at a million tasks.
func (g *group) move(t, from, m int32) {
	if g.isStateful(t) {
		g.learner[t] = m
		g.learnersInFlight++
	} else {
		g.setOwner(t, m)
	}
	g.load[from]--
	g.load[m]++
}

// balancePlan is the state of balance, kept out of the group because
// nothing after balance reads it.
type balancePlan struct {
	*group
	spread spread  // per-subtopology counts; off (zero) until the group needs balancing
	shed   shedder // each donor's movable tasks
	donors donorQueue
	recv   memberQueue
	// placedBy lists, by owner, the stateful tasks placed this round that
	// nobody learns (takePlaced); placedNext[m] is m's next one to look
	// at. Nil until a donor first runs out of other tasks.
	placedBy   csr
	placedNext []int32
}

// balance moves tasks from heavy to light staying members until no move
// lowers the imbalance (rule 7). A donor gives, in order: a task the
// receiver has local state for, warmest lag first (reportedLag.compare),
// then standbys (rule 8); a stateless task (it moves for free); its first
// task in topology order; last, a stateful task it was given this round,
// which it now runs (takePlaced), at once to a receiver that reported it
// ready.
// Learners, and tasks that already move this round, never move again: no
// half-way bounce.
func (g *group) balance() {
	if g.staying < 2 {
		return
	}
	p := balancePlan{group: g}
	heaviest, lightest := int32(none), int32(none)
	for m := range int32(len(g.load)) {
		if !g.leaving[m] {
			if heaviest == none || p.heavier(m, heaviest) {
				heaviest = m
			}
			if lightest == none || g.lighter(m, lightest) {
				lightest = m
			}
		}
	}
	if !g.worthMoving(heaviest, lightest) {
		return // balanced already: skip the per-task work below
	}
	// Only members worth moving from to today's lightest can ever give:
	// the lightest receiver only gets heavier (a move makes the receiver
	// heavier and leaves the donor above the old lightest), and a member
	// that received stops at the lightest's level, so it never gives. Only
	// they get movable lists and a place in the donor queue; the queue's top
	// is the same as with every member in it whenever a move is worth it.
	gives := g.scratch.bools.make(len(g.load))
	var givers []int32
	for m := range int32(len(g.load)) {
		if gives[m] = !g.leaving[m] && g.worthMoving(m, lightest); gives[m] {
			givers = append(givers, m)
		}
	}
	p.spread = g.newSpread()
	p.shed = newShedder(g, &p.spread, gives)
	var staying []int32
	for m := range int32(len(g.load)) {
		if !g.leaving[m] {
			staying = append(staying, m)
		}
	}
	if g.sameCapacity(staying) {
		// Level queues (levels.go) in the orders of lighter and heavier:
		// receivers by (load, rank); donors by load, then spread bound,
		// then rank. A giver's spread bound only changes when it
		// receives, and then it leaves the donor queue (see run), so its
		// place among equally loaded givers is fixed.
		place := g.scratch.int32s.make(len(g.load))
		slices.SortFunc(givers, func(a, b int32) int {
			if p.spread.on && p.spread.max[a] != p.spread.max[b] {
				return cmp.Compare(p.spread.max[b], p.spread.max[a])
			}
			return cmp.Compare(a, b)
		})
		for i, m := range givers {
			place[m] = int32(i)
		}
		p.recv = newRisingQueue(g.load, staying)
		p.donors = newFallingQueue(g.load, place, givers, g.scratch.bools.make(len(g.load)))
	} else {
		recv, donors := newMemberHeap(len(g.load), g.lighter), newMemberHeap(len(g.load), p.heavier)
		for _, m := range staying {
			recv.push(m)
		}
		for _, m := range givers {
			donors.push(m)
		}
		p.recv, p.donors = recv, donors
	}
	p.run()
}

// sameCapacity reports whether the members all have the same capacity.
func (g *group) sameCapacity(members []int32) bool {
	for _, m := range members {
		if g.capacity[m] != g.capacity[members[0]] {
			return false
		}
	}
	return true
}

// heavier reports whether a is the better donor: taking a task from it saves more.
func (p *balancePlan) heavier(a, b int32) bool {
	x := (2*int64(p.load[a]) - 1) * p.capacity[b]
	y := (2*int64(p.load[b]) - 1) * p.capacity[a]
	if x != y {
		return x > y
	}
	if p.spread.on && p.spread.max[a] != p.spread.max[b] {
		// Equally heavy: the one holding more of one subtopology gives
		// first, so spread also decides which donor gives, not only what.
		return p.spread.max[a] > p.spread.max[b]
	}
	return a < b
}

// run moves one task at a time from the heaviest donor to the lightest
// receiver while that lowers the imbalance.
func (p *balancePlan) run() {
	for {
		h, l := p.donors.top(), p.recv.top()
		if h == none || h == l || !p.worthMoving(h, l) {
			return
		}
		// From here on l never gives: its donor key (2·load−1)/cap is
		// below its receiver key, the least of all now, and the least
		// receiver key only grows (a receiver's grows, and a donor that
		// gives stays above the receiver it gave to). Nor does receiving
		// change that: l's donor key becomes its old receiver key. So l
		// leaves the donors now, which keeps their tie-break order fixed,
		// and its counts go back to the spread table its receiving reads.
		p.donors.remove(l)
		p.shed.settle(l)
		t, sub := p.shed.take(h, l)
		placed := t == none
		if placed {
			t, sub = p.takePlaced(h)
		}
		if t == none {
			p.donors.remove(h)
			continue
		}
		// A heap restores one changed key at a time, and a move changes two:
		// re-sift h while l still has its old key, then l. (The spread
		// counts change l's key only: h's upper bound stays.) Level queues
		// read loads when asked, so their fix does nothing.
		if placed && p.reportedReady(l, t) {
			// l learned t too and is ready, but h won t (two members
			// reported learning it): l takes it at once. As its learner
			// it would never be promoted: l reported it ready at this
			// join, and a Worker rejoins only for learners ready since.
			p.setOwner(t, l)
			p.load[h]--
			p.load[l]++
		} else {
			p.move(t, h, l) // h owns t: take gives only h's own tasks
		}
		p.load[l]--
		p.donors.fix(h)
		p.recv.fix(h)
		p.load[l]++
		if p.spread.on {
			p.spread.received(sub, l)
		}
		p.recv.fix(l)
	}
}

// takePlaced returns, with its subtopology, a stateful task h was given
// this round that nobody learns (an orphan its warm copy took, a task its
// learner was promoted to), for h to give through a learner when it has
// nothing else to give; none if it has none or the learner budget is
// spent. The task stays active on h until its new learner is ready, so it
// is not a half-way bounce. Without it, a warm member that took many
// orphans or promotions at once kept them all: an assignment without a
// learner, unbalanced, and with Workers nobody rejoins to balance it.
func (p *balancePlan) takePlaced(h int32) (t, sub int32) {
	if !p.placed || !p.canLearn() {
		return none, none
	}
	if p.placedNext == nil {
		p.listPlaced()
	}
	row := p.placedBy.row(h)
	for i := p.placedNext[h]; int(i) < len(row); i++ {
		if t := row[i]; p.learner[t] == none {
			p.placedNext[h] = i + 1
			sub = none
			if p.spread.on {
				sub = p.sub[t]
			}
			return t, sub
		}
	}
	p.placedNext[h] = int32(len(row))
	return none, none
}

// reportedReady reports whether member m reported a learner of t that is
// ready (readyBy).
func (g *group) reportedReady(m, t int32) bool {
	return g.readyBy.start != nil && slices.Contains(g.readyBy.row(m), t)
}

// listPlaced lists, by owner, the stateful tasks placed this round (fixed)
// that have an owner and nobody learns, in topology order.
func (p *balancePlan) listPlaced() {
	n, s := len(p.load), p.scratch
	p.placedNext = s.int32s.make(n)
	start := s.int32s.make(n + 1)
	listed := func(t int, o int32) bool {
		return o != none && p.fixed[t] && p.learner[t] == none && p.isStateful(int32(t))
	}
	for t, o := range p.owner {
		if listed(t, o) {
			start[o+1]++
		}
	}
	for m := range n {
		start[m+1] += start[m]
	}
	items := s.int32s.make(int(start[n]))
	for t, o := range p.owner {
		if listed(t, o) {
			items[start[o]+p.placedNext[o]] = int32(t)
			p.placedNext[o]++
		}
	}
	clear(p.placedNext) // from counts back to cursors
	p.placedBy = csr{start: start, items: items}
}

// worthMoving reports whether moving one task from h to l lowers the imbalance.
func (g *group) worthMoving(h, l int32) bool {
	return (2*int64(g.load[h])-1)*g.capacity[l] > (2*int64(g.load[l])+1)*g.capacity[h]
}
