package learner

import "slices"

// placeStandbys gives each stateful task Options.Standbys standby replicas on
// staying members other than its owner and learner (rule 10).
//
// Existing standbys are kept first, so a stable group keeps its warm copies,
// but each member keeps at most its share of all standbys (by capacity): a
// member that joined then receives its share instead of starting empty.
// The missing replicas go to the member with the smallest total load
// (planned active plus standby, per unit of capacity) that is still below
// its share, preferring racks that hold no copy of the task yet. Because
// fills respect the same share that keeping does, a group whose standbys
// were just placed keeps them all at the next rebalance: a fixed point.
//
// With racks, the copies of a task (its planned owner and its standbys) are
// spread over as many racks as members allow: a kept standby in the rack of
// the planned owner or of another copy is given up when a rack without a
// copy has a member with room. The planned owner is the learner when there
// is one, so promoting a learner never leaves all copies in one rack.
func (g *group) placeStandbys() {
	k := g.opts.Standbys
	if k == 0 || g.staying == 0 {
		return
	}
	p := g.newStandbyPlan(k)
	nt := int32(len(g.tasks))
	for t := range nt {
		for i := g.warm.start[t]; i < g.warm.start[t+1]; i++ {
			if m := g.warm.items[i]; g.warmIsSb[i] && p.have[t] < p.want[t] && p.canKeep(t, m) {
				p.add(t, m)
			}
		}
	}
	for t := range nt {
		for p.have[t] < p.want[t] {
			m := p.pick(t)
			if m == none {
				break
			}
			p.add(t, m)
		}
	}
	p.repair()
}

// standbyPlan is the state of placeStandbys.
type standbyPlan struct {
	*group
	want, have []int32 // per task
	share      []int32 // per member: its share of all standbys
	rackOf     []int32 // per member: rack group (racks, then one for "no rack")
	heaps      []*memberHeap
	room       []int32 // per rack group: members below their share
	used       []bool  // per rack group, for the task being placed
	skipped    []int32
}

func (g *group) newStandbyPlan(k int) *standbyPlan {
	nt, n := len(g.tasks), len(g.load)
	p := &standbyPlan{group: g, want: make([]int32, nt), have: make([]int32, nt), share: make([]int32, n),
		rackOf: make([]int32, n)}
	g.sbCount = make([]int32, n)
	g.sbStart = make([]int32, nt+1)
	var total int64
	for t := range nt {
		g.sbStart[t+1] = g.sbStart[t]
		if !g.tasks[t].Stateful {
			continue
		}
		avail := g.staying
		if o := g.owner[t]; o != none && !g.leaving[o] {
			avail--
		}
		if g.learner[t] != none {
			avail--
		}
		p.want[t] = int32(min(k, max(avail, 0)))
		total += int64(p.want[t])
		g.sbStart[t+1] += p.want[t]
	}
	g.sbItems = make([]int32, g.sbStart[nt])
	g.sbHave = p.have

	groups := g.nRacks + 1 // the last group holds members without a rack
	p.heaps = make([]*memberHeap, groups)
	p.room = make([]int32, groups)
	p.used = make([]bool, groups)
	for r := range p.heaps {
		p.heaps[r] = newMemberHeap(n, g.lighterTotal)
	}
	for m := range int32(n) {
		p.rackOf[m] = g.rack[m]
		if p.rackOf[m] == none {
			p.rackOf[m] = int32(g.nRacks)
		}
		if g.leaving[m] {
			continue
		}
		// ceil(total · cap / capTotal)
		p.share[m] = int32((total*g.capacity[m] + g.capTotal - 1) / g.capTotal)
		if p.share[m] > 0 {
			p.heaps[p.rackOf[m]].push(m)
			p.room[p.rackOf[m]]++
		}
	}
	return p
}

// lighterTotal orders members by total load (planned active plus standby)
// per unit of capacity, lightest first.
func (g *group) lighterTotal(a, b int32) bool {
	x := (2*int64(g.load[a]+g.sbCount[a]) + 1) * g.capacity[b]
	y := (2*int64(g.load[b]+g.sbCount[b]) + 1) * g.capacity[a]
	if x != y {
		return x < y
	}
	return a < b
}

// markUsed records in p.used the rack groups that hold a copy of t.
func (p *standbyPlan) markUsed(t int32) {
	clear(p.used)
	if o := p.planned(t); o != none {
		p.used[p.rackOf[o]] = true
	}
	for _, s := range p.standbysOf(t) {
		p.used[p.rackOf[s]] = true
	}
}

func (g *group) standbysOf(t int32) []int32 {
	return g.sbItems[g.sbStart[t] : g.sbStart[t]+g.sbHave[t]]
}

// canHold reports whether staying member m may hold a standby of t.
func (p *standbyPlan) canHold(t, m int32) bool {
	if p.leaving[m] || m == p.owner[t] || m == p.learner[t] {
		return false
	}
	return !slices.Contains(p.sbItems[p.sbStart[t]:p.sbStart[t]+p.have[t]], m)
}

// canKeep reports whether m's reported standby of t stays: m may hold it,
// is below its share, and does not double up a rack while a rack without a
// copy of t has room.
func (p *standbyPlan) canKeep(t, m int32) bool {
	if !p.canHold(t, m) || p.sbCount[m] >= p.share[m] {
		return false
	}
	if p.nRacks == 0 {
		return true
	}
	p.markUsed(t)
	if !p.used[p.rackOf[m]] {
		return true
	}
	for r, used := range p.used {
		if !used && p.room[r] > 0 {
			return false
		}
	}
	return true
}

func (p *standbyPlan) add(t, m int32) {
	p.sbItems[p.sbStart[t]+p.have[t]] = m
	p.have[t]++
	p.sbCount[m]++
	r := p.rackOf[m]
	if p.sbCount[m] == p.share[m] {
		p.heaps[r].remove(m)
		p.room[r]--
	} else {
		p.heaps[r].fix(m)
	}
}

// pick chooses the member for t's next standby: the lightest member below
// its share in a rack without a copy of t, else the lightest below its
// share anywhere, else (rarely: everyone with room owns or learns t) the
// lightest member that may hold it at all.
func (p *standbyPlan) pick(t int32) int32 {
	p.markUsed(t)
	best := int32(none)
	for pass := range 2 {
		for r, h := range p.heaps {
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
	// Last resort. Members that already hold t's state come first, so the
	// next rebalance, whose keep pass refuses this overshoot, falls back to
	// the same member: the placement stays a fixed point.
	for i := p.warm.start[t]; i < p.warm.start[t+1]; i++ {
		if m := p.warm.items[i]; p.warmIsSb[i] && p.canHold(t, m) && (best == none || p.lighterTotal(m, best)) {
			best = m
		}
	}
	if best != none {
		return best
	}
	for m := range int32(len(p.load)) {
		if p.canHold(t, m) && (best == none || p.lighterTotal(m, best)) {
			best = m
		}
	}
	return best
}

// topHolder returns the lightest member of h that may hold t, leaving h as
// it was. Only members that own or learn t (or already stand by it) are
// skipped, so this looks at most Standbys+2 members past the top.
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

// repair fixes the two ways the greedy passes can miss their bounds, both
// rare and both by a few standbys, so it scans plainly:
//   - pick's last resort put a member above its share: it hands standbys to
//     members below their share that may hold them;
//   - a member that owns the tasks everyone else keeps standbys of ends
//     below half its expected total: it takes standbys from the heaviest
//     members holding ones it may hold.
func (p *standbyPlan) repair() {
	for d := range int32(len(p.sbCount)) {
		for t := range int32(len(p.tasks)) {
			if p.sbCount[d] <= p.share[d] {
				break
			}
			if slices.Contains(p.standbysOf(t), d) {
				for u := range int32(len(p.sbCount)) {
					if p.sbCount[u] < p.share[u] && p.canHold(t, u) {
						p.moveStandby(t, d, u)
						break
					}
				}
			}
		}
	}
	var total int64 // all planned active and standby load of staying members
	for m := range p.load {
		if !p.leaving[m] {
			total += int64(p.load[m] + p.sbCount[m])
		}
	}
	for u := range int32(len(p.load)) {
		for !p.leaving[u] && 2*int64(p.load[u]+p.sbCount[u])*p.capTotal < total*p.capacity[u] {
			bt, bd := int32(none), int32(none)
			for t := range int32(len(p.tasks)) {
				if !p.canHold(t, u) {
					continue
				}
				for _, d := range p.standbysOf(t) {
					if (bd == none || p.lighterTotal(bd, d)) && p.keepsRacks(t, d, u) {
						bt, bd = t, d
					}
				}
			}
			if bd == none || !p.worthMovingTotal(bd, u) {
				break
			}
			p.moveStandby(bt, bd, u)
		}
	}
}

// worthMovingTotal reports whether moving one standby from d to u narrows
// the gap between their totals (the balance criterion of balance.go).
func (p *standbyPlan) worthMovingTotal(d, u int32) bool {
	return (2*int64(p.load[d]+p.sbCount[d])-1)*p.capacity[u] > (2*int64(p.load[u]+p.sbCount[u])+1)*p.capacity[d]
}

// keepsRacks reports whether moving t's standby from d to u keeps t's
// copies in as many racks: rack spread comes before the load band.
func (p *standbyPlan) keepsRacks(t, d, u int32) bool {
	if p.nRacks == 0 || p.rackOf[d] == p.rackOf[u] {
		return true
	}
	dShared, uUsed := false, false
	copies := append([]int32{p.planned(t)}, p.standbysOf(t)...)
	for _, c := range copies {
		if c == d || c == none {
			continue
		}
		dShared = dShared || p.rackOf[c] == p.rackOf[d]
		uUsed = uUsed || p.rackOf[c] == p.rackOf[u]
	}
	return dShared || !uUsed
}

// moveStandby moves t's standby from member d to member u.
func (p *standbyPlan) moveStandby(t, d, u int32) {
	slot := slices.Index(p.standbysOf(t), d)
	p.sbItems[p.sbStart[t]+int32(slot)] = u
	p.sbCount[d]--
	p.sbCount[u]++
}
