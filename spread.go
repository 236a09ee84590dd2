package learner

import (
	"cmp"
	"slices"
)

// Per-subtopology spread. Kafka Streams names a task "<subtopology>_<partition>";
// tasks of one subtopology do the same work on different partitions, so a
// member holding many of one subtopology is a hot spot even when its task
// count is balanced. When every task ID has that form and there are several
// subtopologies, balancing moves each task from the subtopology where the
// donor holds the most more than the receiver. It never adds moves: it only
// chooses among the moves balancing makes anyway, so a balanced group stays put.

// placementOrder orders tasks that go to the least loaded members one by
// one (orphans, hand-overs) subtopology by subtopology, keeping topology
// order within each: consecutive tasks of one subtopology then land on
// different members, whereas topology order can line a subtopology up with
// the rotation of members (tasks 0_0 1_0 2_0 0_1 ... over three members
// would give one member every 0_*). A counting sort: linear, and stable.
func (g *group) placementOrder(tasks []int32) []int32 {
	if g.nSubs < 2 || len(tasks) < 2 {
		return tasks
	}
	start := g.scratch.int32s.make(g.nSubs + 1)
	for _, t := range tasks {
		start[g.sub[t]+1]++
	}
	for s := range g.nSubs {
		start[s+1] += start[s]
	}
	out := g.scratch.int32s.make(len(tasks))
	for _, t := range tasks {
		out[start[g.sub[t]]] = t
		start[g.sub[t]]++
	}
	return out
}

// spread holds each member's planned task count per subtopology, in one
// of two layouts chosen by size. When members x subtopologies is at most
// four times the task count, a dense table (dense[m*subs+sub]): no larger
// than four per-task arrays (a group holds a dozen), and one load per
// count. Above that, sparse counts: only
// the subtopologies a member holds, sorted, each member's in a window of
// one shared pool, found by a binary search over the few dozen a member
// holds. A dense table would cost 40 MB at 10,000 members and 1,000
// subtopologies, more than the tasks themselves, and a cache miss per task
// to fill; at 1,000 members and 100 subtopologies the binary searches and
// the pool cost a quarter more time than the table they save.
type spread struct {
	on    bool
	subs  int32
	dense []int32    // [m*subs+sub], when members*subs <= 4*tasks
	pool  []subCount // otherwise: member m's counts are pool[off[m] : off[m]+n[m]], sorted by sub, room[m] slots
	off   []int32
	n     []int32
	room  []int32
	max   []int32 // per member: an upper bound of its counts, to stop scans early
	last  []int32 // per member: the subtopology it received last, none at first
}

// subCount is a member's planned task count of one subtopology.
type subCount struct{ sub, n int32 }

// newSpread counts each member's planned tasks per subtopology: in the
// dense table directly, or for sparse counts by a counting sort of the
// planned tasks by member, then one run-length pass per member.
func (g *group) newSpread() spread {
	if g.nSubs < 2 {
		return spread{}
	}
	return g.countSpread(len(g.load)*g.nSubs <= 4*len(g.tasks))
}

// countSpread counts in the dense table or in sparse counts.
func (g *group) countSpread(dense bool) spread {
	members := len(g.load)
	s := g.scratch
	sp := spread{on: true, subs: int32(g.nSubs), max: s.int32s.make(members), last: s.int32s.make(members)}
	for m := range sp.last {
		sp.last[m] = none
	}
	if dense {
		sp.dense = s.int32s.make(members * g.nSubs)
		for t := range g.owner {
			if p := g.planned(int32(t)); p != none {
				i := p*sp.subs + g.sub[t]
				sp.dense[i]++
				sp.max[p] = max(sp.max[p], sp.dense[i])
			}
		}
		return sp
	}
	sp.off, sp.n, sp.room = s.int32s.make(members), s.int32s.make(members), s.int32s.make(members)
	start := s.int32s.make(members + 1)
	for t := range g.owner {
		if p := g.planned(int32(t)); p != none {
			start[p+1]++
		}
	}
	for m := range members {
		start[m+1] += start[m]
	}
	byMember := s.int32s.make(int(start[members]))
	next := sp.off // scratch until the pool is laid out below
	copy(next, start)
	for t := range g.owner {
		if p := g.planned(int32(t)); p != none {
			byMember[next[p]] = int32(t)
			next[p]++
		}
	}
	// At most one count per task; receivers that gain a subtopology
	// outgrow their window and move to the end of the pool (see add), so
	// the pool gets half as much again as headroom for them: a scale-up by
	// a tenth of the members at 10,000 x 1,000,000 takes a quarter. Without
	// it each append past the capacity copied the whole pool, 8 MB there.
	sp.pool = s.subCounts.room(len(byMember) + len(byMember)/2)
	for m := range members {
		tasks := byMember[start[m]:start[m+1]]
		if !g.subsInOrder && !slices.IsSortedFunc(tasks, g.bySub) { // tasks are in topology order
			slices.SortFunc(tasks, g.bySub)
		}
		sp.off[m] = int32(len(sp.pool))
		for i := 0; i < len(tasks); {
			j := i + 1
			for j < len(tasks) && g.sub[tasks[j]] == g.sub[tasks[i]] {
				j++
			}
			sp.pool = append(sp.pool, subCount{sub: g.sub[tasks[i]], n: int32(j - i)})
			sp.max[m] = max(sp.max[m], int32(j-i))
			i = j
		}
		sp.n[m] = int32(len(sp.pool)) - sp.off[m]
		sp.room[m] = sp.n[m]
	}
	return sp
}

// find returns the position in the pool of m's count of sub, or where it
// would go, and whether m has one.
func (sp *spread) find(m, sub int32) (int, bool) {
	counts := sp.pool[sp.off[m] : sp.off[m]+sp.n[m]]
	i, ok := slices.BinarySearchFunc(counts, sub, func(c subCount, s int32) int { return cmp.Compare(c.sub, s) })
	return int(sp.off[m]) + i, ok
}

func (sp *spread) count(m, sub int32) int32 {
	if sp.dense != nil {
		return sp.dense[m*sp.subs+sub]
	}
	if i, ok := sp.find(m, sub); ok {
		return sp.pool[i].n
	}
	return 0
}

// moved records that a task of sub moved from h to l.
func (sp *spread) moved(sub, h, l int32) {
	sp.last[l] = sub
	if sp.dense != nil {
		sp.dense[h*sp.subs+sub]--
		i := l*sp.subs + sub
		sp.dense[i]++
		sp.max[l] = max(sp.max[l], sp.dense[i])
		return
	}
	if i, ok := sp.find(h, sub); ok { // always: h planned the task
		sp.pool[i].n-- // a count of zero stays; count reads it the same
	}
	i, ok := sp.find(l, sub)
	if !ok {
		i = sp.add(l, i, sub)
	}
	sp.pool[i].n++
	sp.max[l] = max(sp.max[l], sp.pool[i].n)
}

// add inserts a zero count of sub for m at pool position at (from find)
// and returns its position. A full window moves to the end of the pool with
// twice the room, so a receiver's insertions cost amortized constant
// copying plus the shift within its window.
func (sp *spread) add(m int32, at int, sub int32) int {
	if sp.n[m] == sp.room[m] {
		from, newOff := sp.off[m], int32(len(sp.pool))
		room := 2*sp.n[m] + 4
		sp.pool = append(sp.pool, sp.pool[from:from+sp.n[m]]...)
		sp.pool = append(sp.pool, make([]subCount, room-sp.n[m])...)
		at += int(newOff - from)
		sp.off[m], sp.room[m] = newOff, room
	}
	end := int(sp.off[m] + sp.n[m])
	copy(sp.pool[at+1:end+1], sp.pool[at:end])
	sp.pool[at] = subCount{sub: sub}
	sp.n[m]++
	return at
}
