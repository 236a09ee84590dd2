package learner

import "slices"

// placeStandbys gives each stateful task Options.Standbys standby replicas on
// staying members other than its owner and learner (rule 10).
//
// Existing standbys are kept first, so a stable group keeps its warm copies,
// but each member keeps at most its share of all standbys (by capacity):
// a member that joined then receives its share instead of starting empty.
// The missing replicas go to the member with the smallest total load
// (planned active plus standby, per unit of capacity) that is still below
// its share. Because fills respect the same share that keeping does, a group
// whose standbys were just placed keeps them all at the next rebalance: the
// placement is a fixed point.
func (g *group) placeStandbys() {
	k := g.opts.Standbys
	nt := len(g.tasks)
	if k == 0 || g.staying == 0 {
		return
	}
	g.sbCount = make([]int32, len(g.load))
	g.sbStart = make([]int32, nt+1)
	want := make([]int32, nt)
	var total int64
	for t := range nt {
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
		want[t] = int32(min(k, max(avail, 0)))
		total += int64(want[t])
		g.sbStart[t+1] = want[t]
	}
	for t := range nt {
		g.sbStart[t+1] += g.sbStart[t]
	}
	g.sbItems = make([]int32, g.sbStart[nt])
	have := make([]int32, nt)
	share := make([]int32, len(g.load))
	for m := range share {
		if !g.leaving[m] {
			// ceil(total · cap / capTotal)
			share[m] = int32((total*g.capacity[m] + g.capTotal - 1) / g.capTotal)
		}
	}

	// Keep the reported standbys that are still valid, within each share.
	for t := range nt {
		for i := g.warm.start[t]; i < g.warm.start[t+1]; i++ {
			m := g.warm.items[i]
			if g.warmIsSb[i] && have[t] < want[t] && g.canHoldStandby(int32(t), m, have[t]) && g.sbCount[m] < share[m] {
				g.addStandby(int32(t), m, have)
			}
		}
	}

	// Fill the rest, lightest member first.
	lighter := func(a, b int32) bool {
		x := (2*int64(g.load[a]+g.sbCount[a]) + 1) * g.capacity[b]
		y := (2*int64(g.load[b]+g.sbCount[b]) + 1) * g.capacity[a]
		if x != y {
			return x < y
		}
		return a < b
	}
	h := newMemberHeap(len(g.load), lighter)
	for m := range g.load {
		if !g.leaving[m] && g.sbCount[m] < share[m] {
			h.push(int32(m))
		}
	}
	var skipped []int32
	for t := range nt {
		for have[t] < want[t] {
			m := int32(none)
			for h.len() > 0 {
				c := h.top()
				h.remove(c)
				if g.canHoldStandby(int32(t), c, have[t]) {
					m = c
					break
				}
				skipped = append(skipped, c)
			}
			for _, c := range skipped {
				h.push(c)
			}
			skipped = skipped[:0]
			if m == none {
				// Every member under its share is excluded for t: take
				// the lightest eligible member regardless of share.
				m = g.lightestHolder(int32(t), have[t], lighter)
				if m == none {
					break
				}
			}
			g.addStandby(int32(t), m, have)
			if g.sbCount[m] < share[m] {
				h.push(m)
			}
		}
	}
	g.sbHave = have
	g.repairStandbys(share)
}

// repairStandbys undoes the rare overshoot of the fill: when the only
// members below their share were excluded for the last tasks (they own
// them), the fallback put those standbys above someone's share. Each such
// member hands standbys to members below their share that may hold them.
func (g *group) repairStandbys(share []int32) {
	held := map[int32][]int32{} // over-share member -> tasks it stands by
	for m, c := range g.sbCount {
		if c > share[m] {
			held[int32(m)] = nil
		}
	}
	if len(held) == 0 {
		return
	}
	for t := range g.sbHave {
		for _, m := range g.sbItems[g.sbStart[t] : g.sbStart[t]+g.sbHave[t]] {
			if _, over := held[m]; over {
				held[m] = append(held[m], int32(t))
			}
		}
	}
	for d := range int32(len(g.sbCount)) {
		tasks, over := held[d]
		if !over {
			continue
		}
		for _, t := range tasks {
			if g.sbCount[d] <= share[d] {
				break
			}
			for u := range int32(len(g.sbCount)) {
				if g.sbCount[u] < share[u] && g.canHoldStandby(t, u, g.sbHave[t]) {
					slot := slices.Index(g.sbItems[g.sbStart[t]:g.sbStart[t]+g.sbHave[t]], d)
					g.sbItems[g.sbStart[t]+int32(slot)] = u
					g.sbCount[d]--
					g.sbCount[u]++
					break
				}
			}
		}
	}
}

// canHoldStandby reports whether staying member m may hold a standby of t,
// given the first n standbys placed for t so far.
func (g *group) canHoldStandby(t, m int32, n int32) bool {
	if g.leaving[m] || m == g.owner[t] || m == g.learner[t] {
		return false
	}
	for _, s := range g.sbItems[g.sbStart[t] : g.sbStart[t]+n] {
		if s == m {
			return false
		}
	}
	return true
}

func (g *group) addStandby(t, m int32, have []int32) {
	g.sbItems[g.sbStart[t]+have[t]] = m
	have[t]++
	g.sbCount[m]++
}

// lightestHolder scans every member for the lightest one that may hold a
// standby of t. It is the rare fallback when the heap has no candidate.
func (g *group) lightestHolder(t, n int32, lighter func(a, b int32) bool) int32 {
	best := int32(none)
	for m := range int32(len(g.load)) {
		if g.canHoldStandby(t, m, n) && (best == none || lighter(m, best)) {
			best = m
		}
	}
	return best
}
