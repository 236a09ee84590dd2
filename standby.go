package learner

import (
	"cmp"
	"slices"
)

// placeStandbys gives each stateful task Options.Standbys standby replicas on
// staying members other than its owner and learner (rule 10), and keeps its
// caught-up copies while standbys move (rule 13).
//
// Each staying member has a quota of standbys: its share of all of them by
// capacity, rounded so that the quotas add up to the total (largest
// remainders first, then ID order). Placement runs in five steps:
//
//  1. keep every reported standby that is still valid (a stable group keeps
//     its warm copies); where more members report one task than it needs,
//     keep the copies that fit the quotas (keepReported, matchExcess);
//  2. fill the missing ones, each on a member below its quota that has the
//     task caught up (a promoted task's old owner), else on the lightest
//     member below its quota (total load per unit of capacity), preferring
//     racks without a copy of the task; when every member below its quota
//     holds the task, trade with a standby placed in this step rather than
//     make step 3 move one with a copy (tradeFresh);
//  3. move standbys from members above their quota to members below it,
//     those the giver has no copy of first;
//  4. move a standby that shares a rack with another copy of its task to a
//     member below its quota in a rack without one;
//  5. keep, as extra standbys, caught-up copies that steps 1-4 dropped while
//     their replacements replay (retainCaught, standby_warm.go).
//
// Steps 3 and 4 repeat until neither applies. Whether they apply depends
// only on the placement itself, so reporting the result back keeps
// everything (step 1), fills nothing and repairs nothing: a fixed point,
// with no standby churn between rebalances. Extra standbys go once the new
// copies report caught up.
func (g *group) placeStandbys() {
	if g.opts.Standbys == 0 || g.staying == 0 {
		return
	}
	p := g.newStandbyPlan(g.opts.Standbys) // and keeps the reported standbys
	p.findMoved()
	p.matchExcess()
	p.fill()
	for p.repairQuotas() || p.spreadRacks() {
	}
	p.retainCaught()
	g.standbysAsListed = p.asListed()
}

// asListed reports whether every member's standbys are its Standby list
// as reported: placement only kept reports (added, moved, matched and
// retained none), and each member with a standby kept all of its list,
// which it reported in topology order (group.sbListed). Kept reports of
// a member are in its list, so as many are all of them.
func (p *standbyPlan) asListed() bool {
	if p.placed || len(p.excess) > 0 || p.sbExtra.start != nil {
		return false
	}
	for m, c := range p.sbCount {
		if c > 0 && c != p.sbListed[m] {
			return false
		}
	}
	return true
}

// standbyPlan is the state of placeStandbys. Task t's standbys are
// sbItems[sbStart[t] : sbStart[t]+have[t]] (group fields, read by output).
type standbyPlan struct {
	*group
	want, have []int32 // per task
	quota      []int32 // per member
	rackOf     []int32 // per member: rack group (racks, then one for "no rack")
	groups     int
	reachable  int    // rack groups with a staying member
	staysIn    []bool // per rack group: it has a staying member
	used       []bool // per rack group, for the task at hand
	open       []bool // per rack group: no copy of the task swapForRack places
	uneven     []int32
	unevenOK   bool // uneven lists this spreadRacks pass's uneven tasks
	skipped    []int32
	// unkept lists, in topology order, the tasks keepReported did not
	// fill from reports (fewer valid reports than wanted, or more), the
	// only ones fill may have to fill: a stable group's standbys are all
	// kept, and fill then reads nothing per task. excess lists those with
	// more, for matchExcess.
	unkept, excess []int32
	// placed is set once a standby is added or moved (add, moveStandby).
	placed bool
	// Warm moves (standby_warm.go): tasks where placement may drop a
	// caught-up copy, and their old holders and ready learners.
	dirty      []bool
	dirtyList  []int32
	oldHolders map[int32][]int32
	readyOf    map[int32][]int32
}

func (g *group) newStandbyPlan(k int) *standbyPlan {
	nt, n, s := g.numTasks(), len(g.load), g.scratch
	p := &standbyPlan{group: g, want: s.int32s.make(nt), have: s.int32s.make(nt), quota: s.int32s.make(n),
		rackOf: s.int32s.make(n), groups: g.nRacks + 1}
	p.used = make([]bool, p.groups)
	p.open = make([]bool, p.groups)
	p.staysIn = make([]bool, p.groups)
	g.sbCount = s.int32s.make(n)
	g.sbStart = s.int32s.make(nt + 1)
	p.dirty = s.bools.make(nt)
	g.sbHave = p.have
	total := p.keepReported(k)
	for m := range int32(n) {
		p.rackOf[m] = g.rack[m]
		if p.rackOf[m] == none {
			p.rackOf[m] = int32(g.nRacks) // the group of members without a rack
		}
		if !g.leaving[m] && !p.staysIn[p.rackOf[m]] {
			p.staysIn[p.rackOf[m]] = true
			p.reachable++
		}
	}
	p.setQuotas(total)
	return p
}

// setQuotas splits total standbys over the staying members by capacity:
// floor(total·cap/capTotal) each, and one more for the members with the
// largest remainders, so the quotas add up to total. Among equal
// remainders the member with the least active load per capacity comes
// first (lighter, then ID order): balancing breaks its ties in ID order
// too, and a member last in ID order lost both, ending with no task at all
// where every other member had one of each kind.
func (p *standbyPlan) setQuotas(total int64) {
	var staying []int32
	rem := make([]int64, len(p.quota))
	left := total
	for m := range int32(len(p.quota)) {
		if p.leaving[m] {
			continue
		}
		share := total * p.capacity[m]
		p.quota[m] = int32(share / p.capTotal)
		rem[m] = share % p.capTotal
		left -= int64(p.quota[m])
		staying = append(staying, m)
	}
	slices.SortFunc(staying, func(a, b int32) int {
		if c := cmp.Compare(rem[b], rem[a]); c != 0 {
			return c
		}
		switch {
		case p.lighter(a, b):
			return -1
		case p.lighter(b, a):
			return 1
		}
		return 0 // a == b: lighter breaks ties by ID
	})
	for _, m := range staying[:left] {
		p.quota[m]++
	}
}

// keepReported sets the number of standbys each task wants (Standbys k,
// fewer when members are few) and keeps its valid reported ones, up to
// that number, and returns how many are wanted in all. When more members
// report one task (a warm move whose old copy was kept, or stale
// reports), it keeps none of them and lists the task for matchExcess.
//
// One pass over the tasks does both, with the arrays it reads in locals,
// where a pass for each read every task's owner, learner and slots twice
// and the fields through p at every task (writes to the slots might alias
// them): the two passes cost 1.5 times as much as this one (cachegrind,
// instructions plus weighted cache misses, standbys=1 at 1,000 members
// and 100,000 tasks). So standbys are laid out before
// their number is known, in slots allocated at a bound: a task wants at
// most min(k, staying) and at least two fewer (its owner and learner), so
// the bound exceeds what is used by at most two slots a task, and only
// where members are fewer than Standbys+2.
func (p *standbyPlan) keepReported(k int) (total int64) {
	g := p.group
	stateful, staying := g.numTasks()-g.stateless, g.staying
	g.sbItems = g.scratch.int32s.make(int(min(int64(k), int64(staying)) * int64(stateful)))
	owner, learner, leaving := g.owner, g.learner, g.leaving
	warmStart, warmItems, warmIsSb := g.warm.start, g.warm.items, g.warmIsSb
	want, have, start, items, count := p.want, p.have, g.sbStart, g.sbItems, g.sbCount
	for t := range int32(g.numTasks()) {
		o, l := owner[t], learner[t]
		w := int32(0)
		if g.isStateful(t) {
			avail := staying
			if o != none && !leaving[o] {
				avail--
			}
			if l != none {
				avail--
			}
			w = int32(min(k, max(avail, 0)))
		}
		want[t] = w
		total += int64(w)
		at := start[t]
		start[t+1] = at + w
		// A member reports a task's standby once, so keeping one report
		// never changes whether another is valid: canHold's test before
		// any is kept.
		n := int32(0)
		for i := warmStart[t]; i < warmStart[t+1]; i++ {
			if m := warmItems[i]; warmIsSb[i] && !leaving[m] && m != o && m != l {
				if n < w {
					items[at+n] = m
					count[m]++
				}
				n++
			}
		}
		have[t] = min(n, w)
		if n != w {
			p.unkept = append(p.unkept, t)
		}
		if n > w { // undo the keeps (rare)
			for _, m := range p.standbysOf(t) {
				count[m]--
			}
			have[t] = 0
			p.excess = append(p.excess, t)
			p.markDirty(t)
		}
	}
	g.sbItems = g.sbItems[:start[g.numTasks()]]
	return total
}

// matchExcess keeps the copies of the tasks with more reported standbys
// than they want that fit the members' quotas: the old copy of a warm
// move is the one its member holds beyond its quota, so the new copy
// stays where the last placement put it and no standby moves twice.
// Whether the old copy is still needed is retainCaught's call.
//
// It chooses want[t] of the reported holders of each excess task so that
// no member holds more than its room (its quota less the standbys
// already kept): a bipartite b-matching found by augmenting paths (Kuhn's
// algorithm), so one member's room goes to whichever of its tasks has no
// other holder with room. Tasks it cannot fill within the rooms take their
// first other reporters by ID; repairQuotas then moves what is above quota.
//
// Excess tasks exist only while standbys move or after stale reports, so
// the matching is small; its worst case, quadratic in the excess tasks,
// never meets a stable group.
func (p *standbyPlan) matchExcess() {
	excess := p.excess
	if len(excess) == 0 {
		return
	}
	room := make([]int32, len(p.quota))
	for m := range room {
		room[m] = p.quota[m] - p.sbCount[m]
	}
	holders := make(map[int32][]int32, len(excess))
	for _, t := range excess {
		for i := p.warm.start[t]; i < p.warm.start[t+1]; i++ {
			if m := p.warm.items[i]; p.warmIsSb[i] && p.canHold(t, m) {
				holders[t] = append(holders[t], m)
			}
		}
	}
	chosen := make(map[int32][]int32, len(excess)) // task -> members
	uses := map[int32][]int32{}                    // member -> tasks
	var visited map[int32]bool
	var augment func(t int32) bool
	augment = func(t int32) bool {
		for _, m := range holders[t] {
			if visited[m] || slices.Contains(chosen[t], m) {
				continue
			}
			visited[m] = true
			if int32(len(uses[m])) < room[m] {
				chosen[t], uses[m] = append(chosen[t], m), append(uses[m], t)
				return true
			}
			for i, t2 := range uses[m] {
				if t2 != t && augment(t2) { // t2 found another holder: m's use moves to t
					chosen[t2] = slices.DeleteFunc(chosen[t2], func(x int32) bool { return x == m })
					uses[m][i] = t
					chosen[t] = append(chosen[t], m)
					return true
				}
			}
		}
		return false
	}
	for _, t := range excess {
		for int32(len(chosen[t])) < p.want[t] {
			visited = map[int32]bool{}
			if !augment(t) {
				break
			}
		}
	}
	for _, t := range excess {
		keep := chosen[t]
		for _, m := range holders[t] {
			if int32(len(keep)) >= p.want[t] {
				break
			}
			if !slices.Contains(keep, m) {
				keep = append(keep, m)
			}
		}
		slices.Sort(keep) // rank order, as for every other task
		for _, m := range keep {
			p.add(t, m)
		}
	}
}

// fill places the missing standbys, lightest member below its quota first,
// in a rack without a copy of the task where one has such a member.
func (p *standbyPlan) fill() {
	if len(p.unkept) == 0 {
		return
	}
	heaps := p.underQuota()
	for i, t := range p.unkept {
		for p.have[t] < p.want[t] {
			m := p.pickCaught(t)
			if m == none {
				m = p.pick(heaps, t)
				if m != none && p.sbCount[m] >= p.quota[m] && p.exposesCopy(heaps, m, p.unkept[:i]) &&
					p.tradeFresh(heaps, t, p.unkept[:i]) {
					continue
				}
			}
			if m == none {
				break // every staying member owns, learns or stands by t
			}
			p.add(t, m)
			if r := p.rackOf[m]; p.sbCount[m] >= p.quota[m] {
				heaps[r].remove(m)
			} else {
				heaps[r].fix(m)
			}
		}
	}
}

// When every member below its quota owns, learns or stands by t, pick
// falls back to a member m at its quota, and repairQuotas then hands one
// of m's standbys to a member below its quota. If m has no standby that
// such a member may take but the ones it has a copy of, repairQuotas
// moves a caught-up copy (rule 13 keeps it as an extra while the new one
// replays): churn that a trade of standbys fill placed avoids, since
// quotas end the same. Fill's placements are the only standbys without a
// copy on their member (reports kept, matchExcess's and pickCaught's all
// have one), so they are found among the standbys of the tasks filled
// before t (done), newest first. exposesCopy and tradeFresh run only on
// that fall-back, where the members below their quota all hold t, so they
// are at most Standbys+2: each costs a scan of m's reports or of done's
// standbys, times that.

// exposesCopy reports whether repairQuotas, handing one of m's standbys to
// a member below its quota, would move a copy m has (a reported standby,
// or a promoted task's old owner's): m holds such a standby that one of
// them may take, and no standby without a copy that one may take, which
// repairQuotas would give first. When m has nothing to give, the trade
// would only replace one placement with two and is not made.
func (p *standbyPlan) exposesCopy(heaps []*memberHeap, m int32, done []int32) bool {
	exposed := false
scan:
	for _, row := range [2][]int32{p.warmBy.row(m), p.held.row(m)} {
		for _, t := range row {
			if slices.Contains(p.standbysOf(t), m) && p.takerOf(heaps, t, m) != none {
				exposed = true
				break scan
			}
		}
	}
	if !exposed {
		return false
	}
	for _, t := range done {
		if slices.Contains(p.standbysOf(t), m) && !p.hasCopy(t, m) && p.takerOf(heaps, t, m) != none {
			return false
		}
	}
	return true
}

// takerOf returns a member below its quota that may take t's standby from
// d without losing t a rack, or none.
func (p *standbyPlan) takerOf(heaps []*memberHeap, t, d int32) int32 {
	for _, h := range heaps {
		for _, u := range h.items {
			if p.canHold(t, u) && p.keepsRacks(t, d, u) {
				return u
			}
		}
	}
	return none
}

// tradeFresh places t's standby by a trade, and reports whether it found
// one: a standby that fill placed, of a task in done, goes from its member
// x to a member u below its quota that may take it, and t's goes to x in
// its place. The newest placements are tried first.
func (p *standbyPlan) tradeFresh(heaps []*memberHeap, t int32, done []int32) bool {
	for i := len(done) - 1; i >= 0; i-- {
		t2 := done[i]
		for _, x := range p.standbysOf(t2) {
			if !p.canHold(t, x) || p.hasCopy(t2, x) {
				continue
			}
			u := p.takerOf(heaps, t2, x)
			if u == none {
				continue
			}
			p.moveStandby(t2, x, u)
			p.add(t, x)
			h := heaps[p.rackOf[u]]
			if p.sbCount[u] >= p.quota[u] {
				h.remove(u)
			} else {
				h.fix(u)
			}
			return true
		}
	}
	return false
}

// hasCopy reports whether member m has local state of t: it reported a
// standby of it or a lag for it, or held it before this round.
func (p *standbyPlan) hasCopy(t, m int32) bool {
	for i := p.warm.start[t]; i < p.warm.start[t+1]; i++ {
		if p.warm.items[i] == m {
			return true
		}
	}
	return slices.Contains(p.oldHolders[t], m)
}

// underQuota returns, per rack group, a heap of the staying members below
// their quota, lightest first.
func (p *standbyPlan) underQuota() []*memberHeap {
	heaps := make([]*memberHeap, p.groups)
	for r := range heaps {
		heaps[r] = newMemberHeap(len(p.load), p.lighterTotal)
	}
	for m := range int32(len(p.load)) {
		if !p.leaving[m] && p.sbCount[m] < p.quota[m] {
			heaps[p.rackOf[m]].push(m)
		}
	}
	return heaps
}

// lighterTotal orders members by total load (planned active plus standby)
// per unit of capacity, lightest first.
func (g *group) lighterTotal(a, b int32) bool {
	return g.receivesFirst(a, g.load[a]+g.sbCount[a], b, g.load[b]+g.sbCount[b])
}

// pick chooses the member for t's next standby: the lightest member below
// its quota in a rack without a copy of t, else the lightest below its
// quota anywhere, else (rarely: everyone with room owns, learns or stands
// by t) the lightest member that may hold t at all.
func (p *standbyPlan) pick(heaps []*memberHeap, t int32) int32 {
	p.markUsed(t, none)
	best := int32(none)
	for pass := range 2 {
		for r, h := range heaps {
			if pass == 0 && p.used[r] {
				continue
			}
			if m := p.topHolder(h, t); m != none && (best == none || p.lighterTotal(m, best)) {
				best = m
			}
		}
		if best != none {
			return best
		}
	}
	for m := range int32(len(p.load)) {
		if p.canHold(t, m) && (best == none || p.lighterTotal(m, best)) {
			best = m
		}
	}
	return best
}

// topHolder returns the lightest member of h that may hold t, leaving h as
// it was. Only members that own or learn t or already stand by it are
// skipped, so it looks at most Standbys+2 members past the top.
func (p *standbyPlan) topHolder(h *memberHeap, t int32) int32 {
	m := int32(none)
	for h.len() > 0 {
		c := h.top()
		if p.canHold(t, c) {
			m = c
			break
		}
		h.remove(c)
		p.skipped = append(p.skipped, c)
	}
	for _, c := range p.skipped {
		h.push(c)
	}
	p.skipped = p.skipped[:0]
	return m
}

// repairQuotas moves standbys from members above their quota to members
// below it that may hold them, without losing a rack, and reports whether
// it moved any. Keeping every reported standby leaves the old members of a
// group above their quota when members join; this hands the newcomers their
// share. Each giver's standbys are listed once and consumed in order, so the
// work is linear in the standbys plus the moves.
func (p *standbyPlan) repairQuotas() bool {
	var givers []int32
	for m := range int32(len(p.load)) {
		if p.sbCount[m] > p.quota[m] {
			givers = append(givers, m)
		}
	}
	if len(givers) == 0 {
		return false
	}
	// giver -> its standbys, those without a copy of their own first (fill
	// placed them: moving one drops no caught-up copy), each part in
	// topology order; moved ones become none.
	lists, copies := make(map[int32][]int32, len(givers)), map[int32][]int32{}
	for t := range int32(p.numTasks()) {
		for _, d := range p.standbysOf(t) {
			switch {
			case p.sbCount[d] <= p.quota[d]:
			case p.hasCopy(t, d):
				copies[d] = append(copies[d], t)
			default:
				lists[d] = append(lists[d], t)
			}
		}
	}
	for d, ts := range copies {
		lists[d] = append(lists[d], ts...)
	}
	moved := false
	for u := range int32(len(p.load)) {
		for _, d := range givers {
			if p.leaving[u] || p.sbCount[u] >= p.quota[u] {
				break
			}
			list := lists[d]
			for i := 0; i < len(list) && p.sbCount[d] > p.quota[d] && p.sbCount[u] < p.quota[u]; i++ {
				if t := list[i]; t != none && p.canHold(t, u) && p.keepsRacks(t, d, u) {
					p.moveStandby(t, d, u)
					list[i] = none
					moved = true
				}
			}
			lists[d] = slices.DeleteFunc(list, func(t int32) bool { return t == none })
		}
	}
	return moved
}

// spreadRacks moves each standby that shares a rack with another copy of
// its task to the lightest member below its quota in a rack without a copy,
// and reports whether it moved any.
//
// A task with more copies (Standbys+1) than the group has racks always
// shares one, and moving or trading its standby cannot help once every rack
// with a staying member holds another copy of it: both need a staying
// member (below its quota, or holding a standby to trade) in a rack without
// one. Such standbys are skipped after counting the task's racks,
// O(Standbys), so the outputs are the same as trying them, and a pass costs
// O(tasks·Standbys²) when copies outnumber racks. Without that count each
// of them scanned every standby of the group in swapForRack, which made a
// pass quadratic in the standbys (seconds for 400 tasks with 10 standbys
// over 3 racks). What is left is swapForRack's search where a rack does
// lack a copy; see there.
func (p *standbyPlan) spreadRacks() bool {
	if p.nRacks == 0 {
		return false
	}
	heaps := p.underQuota()
	p.unevenOK = false
	moved := false
	for t := range int32(p.numTasks()) {
		for slot := int32(0); slot < p.have[t]; slot++ {
			d := p.sbItems[p.sbStart[t]+slot]
			if covered := p.markUsed(t, d); !p.used[p.rackOf[d]] || covered == p.reachable {
				continue // d's rack has no other copy, or every rack with a staying member has one
			}
			p.markUsed(t, none)
			u := int32(none)
			for r, h := range heaps {
				if m := p.topHolder(h, t); !p.used[r] && m != none && (u == none || p.lighterTotal(m, u)) {
					u = m
				}
			}
			if u == none {
				// Nobody in another rack has room: trade with a standby
				// there that d may hold instead.
				moved = p.swapForRack(t, d) || moved
				continue
			}
			p.moveStandby(t, d, u)
			moved = true
			for _, m := range [2]int32{d, u} {
				h := heaps[p.rackOf[m]]
				h.remove(m)
				if p.sbCount[m] < p.quota[m] {
					h.push(m)
				}
			}
		}
	}
	return moved
}

// swapForRack looks for a standby (t2, e) with e in a rack without a copy of
// t, such that d may hold t2 and t2 keeps its racks, and swaps the two
// holders: quotas stay met and one shared rack fewer remains. The first
// such standby in topology order wins.
//
// Only uneven tasks can be t2 (see unevenTasks), so it scans those: when
// copies fit the racks, placement leaves few of them, and a search that
// fails (a rack whose members filled their quotas with even tasks' copies)
// costs O(uneven·Standbys), not a scan of every standby of the group. Such
// a failure repeats at every rebalance of a stable group, once per standby
// left sharing a rack, which is why the scan must stay short.
func (p *standbyPlan) swapForRack(t, d int32) bool {
	p.markUsed(t, d)
	for r, used := range p.used { // keepsRacks below reuses p.used
		p.open[r] = !used
	}
	for _, t2 := range p.unevenTasks() {
		if t2 == t {
			continue
		}
		for _, e := range p.standbysOf(t2) {
			if !p.open[p.rackOf[e]] || !p.canHold(t, e) || !p.canHold(t2, d) || !p.keepsRacks(t2, e, d) {
				continue
			}
			p.moveStandby(t, d, e)
			p.moveStandby(t2, e, d)
			return true
		}
	}
	return false
}

// unevenTasks returns, in topology order, the tasks that have two copies
// in one rack group or none in a rack group with a staying member. Only
// those can give a standby to swapForRack: an even task has exactly one
// copy in each such group, so its copy in e's rack is the only one there
// while d's rack has another, and handing the copy from e to d would lose
// a rack. The list is built once per spreadRacks pass, at its first swap,
// in O(tasks·Standbys); it stays complete through the pass because the
// pass moves only standbys of uneven tasks (a task whose standby shares a
// rack, and the t2 of a swap), so an even task stays even.
func (p *standbyPlan) unevenTasks() []int32 {
	if p.unevenOK {
		return p.uneven
	}
	p.uneven = p.uneven[:0]
	for t := range int32(p.numTasks()) {
		copies := int(p.have[t])
		if p.planned(t) != none {
			copies++
		}
		covered, racks := p.markUsed(t, none), 0
		for _, used := range p.used {
			if used {
				racks++
			}
		}
		if racks < copies || covered < p.reachable {
			p.uneven = append(p.uneven, t)
		}
	}
	p.unevenOK = true
	return p.uneven
}

// markUsed records in p.used the rack groups holding a copy of t (its
// planned owner and its standbys), leaving out member skip, and returns how
// many of them have a staying member (a leaving planned owner's group may
// have none).
func (p *standbyPlan) markUsed(t, skip int32) int {
	clear(p.used)
	n := 0
	mark := func(m int32) {
		if m != none && m != skip && !p.used[p.rackOf[m]] {
			p.used[p.rackOf[m]] = true
			if p.staysIn[p.rackOf[m]] {
				n++
			}
		}
	}
	mark(p.planned(t))
	for _, s := range p.standbysOf(t) {
		mark(s)
	}
	return n
}

// keepsRacks reports whether moving t's standby from d to u keeps t's
// copies in as many racks.
func (p *standbyPlan) keepsRacks(t, d, u int32) bool {
	if p.nRacks == 0 || p.rackOf[d] == p.rackOf[u] {
		return true
	}
	p.markUsed(t, d)
	return p.used[p.rackOf[d]] || !p.used[p.rackOf[u]]
}

func (g *group) standbysOf(t int32) []int32 {
	return g.sbItems[g.sbStart[t] : g.sbStart[t]+g.sbHave[t]]
}

// canHold reports whether staying member m may hold a standby of t.
func (p *standbyPlan) canHold(t, m int32) bool {
	if p.leaving[m] || m == p.owner[t] || m == p.learner[t] {
		return false
	}
	return !slices.Contains(p.standbysOf(t), m)
}

func (p *standbyPlan) add(t, m int32) {
	p.placed = true
	p.sbItems[p.sbStart[t]+p.have[t]] = m
	p.have[t]++
	p.sbCount[m]++
}

// moveStandby moves t's standby from member d to member u.
func (p *standbyPlan) moveStandby(t, d, u int32) {
	p.placed = true
	p.markDirty(t)
	slot := slices.Index(p.standbysOf(t), d)
	p.sbItems[p.sbStart[t]+int32(slot)] = u
	p.sbCount[d]--
	p.sbCount[u]++
}
