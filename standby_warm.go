package learner

import "slices"

// This file keeps standby moves warm (rule 13): placement may move a
// standby to a member that has no copy yet (members join, quotas change,
// racks are spread) or leave a promoted task's old owner without a role.
// Dropping the caught-up copy at once would leave the task with fewer warm
// copies until the new one has replayed, exactly when a crash costs most.
// So a caught-up copy that placement drops stays, as an extra standby on
// its member, until enough new copies report caught up: the learner idea
// applied to standbys. The leader keeps no history: which copies are
// caught up is read from the reports, and the extra goes by itself once
// the new copy reports a lag within Options.AcceptableLag.
//
// Only tasks where placement can have dropped a copy are looked at (the
// dirty ones: a new owner, a ready learner, more standby reports than
// Standbys, a standby moved), so a stable group pays one scan of the
// reports and nothing per task.

// caughtUp reports whether a reported lag counts as caught up (rule 13):
// within Options.AcceptableLag, or not reported at all (a member that
// reports no lag is taken at its word). reportedLag.rank holds the rule,
// which ranking copies by warmth shares.
func (g *group) caughtUp(lag reportedLag) bool {
	return lag.caughtUp(g.opts.AcceptableLag)
}

// markDirty records that placement may drop a caught-up copy of t.
func (p *standbyPlan) markDirty(t int32) {
	if !p.dirty[t] {
		p.dirty[t] = true
		p.dirtyList = append(p.dirtyList, t)
	}
}

// findMoved marks the stateful tasks whose caught-up copies the active
// placement may have left without a role: tasks a staying member reported
// running or revoked and no longer owns (its old holders are recorded for
// fill to prefer), and tasks with a ready learner.
func (p *standbyPlan) findMoved() {
	kept := p.keptHeld()
	for m := range int32(len(p.load)) {
		if p.leaving[m] {
			continue
		}
		row := p.held.row(m)
		if kept != nil && p.keepsHeld(m, kept[m]) {
			row = nil // m still owns every task it held
		}
		for _, t := range row {
			if p.isStateful(t) && p.owner[t] != m {
				p.markDirty(t)
				if p.oldHolders == nil {
					p.oldHolders = map[int32][]int32{}
				}
				p.oldHolders[t] = append(p.oldHolders[t], m)
			}
		}
		p.readyLearners(m, func(t, m int32) {
			p.markDirty(t)
			if p.readyOf == nil {
				p.readyOf = map[int32][]int32{}
			}
			p.readyOf[t] = append(p.readyOf[t], m)
		})
	}
}

// keptHeld returns, per member, how many tasks it owns that were not
// placed this round (owned minus fixed: keepsHeld's kept), or nil when two
// members reported holding one task. The counts take one pass over the
// per-task arrays in order, where reading the owner of every held task,
// member by member, was a random read per task at a million tasks.
func (g *group) keptHeld() []int32 {
	if g.contested {
		return nil
	}
	kept := g.scratch.int32s.make(len(g.load))
	for t, o := range g.owner {
		if o != none && !g.fixed[t] {
			kept[o]++
		}
	}
	return kept
}

// readyLearners calls f for each stateful task member m reported as a ready
// learner: listed in Ready, or with a lag within Options.AcceptableLag.
// Ingest keeps only the winning learner of each task, so it also records
// every member's ready learner tasks (readyBy).
func (p *standbyPlan) readyLearners(m int32, f func(t, m int32)) {
	if p.readyBy.start == nil {
		return // nobody learns
	}
	for _, t := range p.readyBy.row(m) {
		if p.isStateful(t) {
			f(t, m)
		}
	}
}

// pickCaught returns the lightest member below its quota that reported t
// running or revoked and no longer owns it (a promoted task's old owner,
// whose copy is caught up) and may hold its standby, in a rack without a
// copy of t when there are racks; none if there is no such member.
func (p *standbyPlan) pickCaught(t int32) int32 {
	best := int32(none)
	if len(p.oldHolders[t]) == 0 {
		return best
	}
	p.markUsed(t, none)
	for _, m := range p.oldHolders[t] {
		if p.sbCount[m] >= p.quota[m] || !p.canHold(t, m) || p.nRacks > 0 && p.used[p.rackOf[m]] {
			continue
		}
		if best == none || p.lighterTotal(m, best) {
			best = m
		}
	}
	return best
}

// caught returns, in rank order, the staying members with a caught-up copy
// of dirty task t: its owner if the owner reported it (running, revoked or
// as a ready learner), its other old holders, its ready learners and its
// caught-up reported standbys.
func (p *standbyPlan) caught(t int32, buf []int32) []int32 {
	buf = append(buf[:0], p.oldHolders[t]...)
	buf = append(buf, p.readyOf[t]...)
	if o := p.owner[t]; o != none && !p.leaving[o] {
		if _, held := slices.BinarySearch(p.held.row(o), t); held {
			buf = append(buf, o)
		}
	}
	for i := p.warm.start[t]; i < p.warm.start[t+1]; i++ {
		if m := p.warm.items[i]; p.warmIsSb[i] && !p.leaving[m] && p.caughtUp(p.warmLagAt(i)) {
			buf = append(buf, m)
		}
	}
	slices.Sort(buf)
	return slices.Compact(buf)
}

// retainCaught keeps each dirty task's caught-up copies: when placement
// left t fewer than min(caught-up copies reported, Standbys+1), caught-up
// copies it dropped stay as extra standbys, first reporters by ID first.
func (p *standbyPlan) retainCaught() {
	slices.Sort(p.dirtyList)
	var extra []int32 // pairs (t, m), in task order
	var row []int32
	bound := int32(p.opts.Standbys) + 1
	for _, t := range p.dirtyList {
		if !p.isStateful(t) {
			continue // stateless tasks have no standbys (dirty from stale reports)
		}
		row = p.caught(t, row)
		need := min(int32(len(row)), bound)
		for _, m := range row {
			if p.holdsAfter(t, m) {
				need--
			}
		}
		for _, m := range row {
			if need <= 0 {
				break
			}
			if !p.holdsAfter(t, m) && p.canHold(t, m) {
				extra = append(extra, t, m)
				need--
			}
		}
	}
	if len(extra) == 0 {
		return
	}
	nt := int32(p.numTasks())
	p.sbExtra = csr{start: p.scratch.int32s.make(int(nt) + 1), items: p.scratch.int32s.room(len(extra) / 2)}
	for i := 0; i < len(extra); i += 2 {
		p.sbExtra.start[extra[i]+1]++
		p.sbExtra.items = append(p.sbExtra.items, extra[i+1])
	}
	for t := range nt {
		p.sbExtra.start[t+1] += p.sbExtra.start[t]
	}
}

// holdsAfter reports whether member m holds t in the plan: as its owner,
// its learner or one of its standbys.
func (p *standbyPlan) holdsAfter(t, m int32) bool {
	return p.owner[t] == m || p.learner[t] == m || slices.Contains(p.standbysOf(t), m)
}

// extraStandbys returns the caught-up copies of t kept beyond Standbys
// while new copies replay.
func (g *group) extraStandbys(t int32) []int32 {
	if g.sbExtra.start == nil {
		return nil
	}
	return g.sbExtra.row(t)
}
