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
//
// newSpread only lays the counts out; newShedder fills them, member by
// member, from its pass over each member's planned tasks. While balancing
// runs, a giver's own counts live in its segments (shed.go), and the table
// keeps the ones it started with (none, when laid out from the held rows:
// countsInSegs) until the giver first receives (settle).
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

// newSpread lays out the counts in the layout the group's size calls for,
// or returns spread off when the tasks have fewer than two subtopologies.
func (g *group) newSpread() spread {
	if g.nSubs < 2 {
		return spread{}
	}
	return g.layOutSpread(len(g.load)*g.nSubs <= 4*g.numTasks())
}

// layOutSpread allocates zero counts: the dense table, or an empty pool
// that put fills member by member. Receivers that gain a subtopology
// outgrow their window and move to the end of the pool (see add), so the
// pool gets half as much again as headroom for them: a scale-up by a tenth
// of the members at 10,000 x 1,000,000 takes a quarter. Without it each
// append past the capacity copied the whole pool, 8 MB there.
func (g *group) layOutSpread(dense bool) spread {
	members := len(g.load)
	s := g.scratch
	sp := spread{on: true, subs: int32(g.nSubs), max: s.int32s.make(members), last: s.int32s.make(members)}
	fillNone(sp.last)
	if dense {
		sp.dense = s.int32s.make(members * g.nSubs)
		return sp
	}
	sp.off, sp.n, sp.room = s.int32s.make(members), s.int32s.make(members), s.int32s.make(members)
	planned := 0 // at most one count per planned task
	for _, load := range g.load {
		planned += int(load)
	}
	sp.pool = s.subCounts.room(planned + planned/2)
	return sp
}

// countDense counts every planned task in sp's dense table.
func (g *group) countDense(sp *spread) {
	for t := range g.owner {
		if p := g.planned(int32(t)); p != none {
			i := p*sp.subs + g.sub[t]
			sp.dense[i]++
			sp.max[p] = max(sp.max[p], sp.dense[i])
		}
	}
}

// putAll records m's counts, m having none yet, the largest being most:
// in the dense table the caller wrote them already; with sparse counts
// pool is sp.pool with them appended, in increasing order of subtopology,
// and members must come one after another.
func (sp *spread) putAll(m int32, pool []subCount, most int32) {
	sp.max[m] = max(sp.max[m], most)
	if sp.dense != nil {
		return
	}
	sp.off[m], sp.n[m], sp.room[m] = int32(len(sp.pool)), int32(len(pool)-len(sp.pool)), int32(len(pool)-len(sp.pool))
	sp.pool = pool
}

// putDense sets m's count of sub to n in the dense table.
func (sp *spread) putDense(m, sub, n int32) {
	sp.dense[m*sp.subs+sub] = n
	sp.max[m] = max(sp.max[m], n)
}

// find returns the position in the pool of m's count of sub, or where it
// would go, and whether m has one.
//
// It looks past m's last count first: a receiver collects subtopologies
// in increasing order (pickFrom starts after the one it received last),
// so most of its lookups while balancing are of a subtopology above all
// it holds. In cachegrind of a scale-up at 10,000 members and 1,000,000
// tasks the binary searches were a twentieth of the call.
func (sp *spread) find(m, sub int32) (int, bool) {
	off, n := sp.off[m], sp.n[m]
	if n == 0 || sp.pool[off+n-1].sub < sub {
		return int(off + n), false
	}
	counts := sp.pool[off : off+n]
	i, ok := slices.BinarySearchFunc(counts, sub, func(c subCount, s int32) int { return cmp.Compare(c.sub, s) })
	return int(off) + i, ok
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

// set sets m's count of sub, a subtopology m was counted for, to n.
func (sp *spread) set(m, sub, n int32) {
	if sp.dense != nil {
		sp.dense[m*sp.subs+sub] = n
		return
	}
	if i, ok := sp.find(m, sub); ok { // always: m held a task of sub
		sp.pool[i].n = n // a count of zero stays; count reads it the same
	}
}

// received records that l received a task of sub.
func (sp *spread) received(sub, l int32) {
	sp.last[l] = sub
	if sp.dense != nil {
		i := l*sp.subs + sub
		sp.dense[i]++
		sp.max[l] = max(sp.max[l], sp.dense[i])
		return
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
