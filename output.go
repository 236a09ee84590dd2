package learner

import "slices"

// output turns the per-task decisions back into one Assignment per member,
// in rank order. Every list is a window of one shared backing array (one
// allocation for all the strings, whatever the group size); windows are
// capped so that appending to one list cannot overwrite its neighbour.
func (g *group) output() []Assignment {
	n := len(g.load)
	const (
		assigned = iota
		revoked
		learning
		learned
		standby
		lists
	)
	count := g.scratch.int32s.make(n * lists)
	gained := g.scratch.int32s.make(n) // per member: tasks it owns and did not report holding
	for t, o := range g.owner {
		if o == none {
			continue
		}
		count[int(o)*lists+assigned]++
		if g.fixed[t] {
			gained[o]++
		}
		if l := g.learner[t]; l != none {
			count[int(o)*lists+learned]++
			count[int(l)*lists+learning]++
		}
	}
	for t := range g.sbHave {
		for _, m := range g.standbysOf(int32(t)) {
			count[int(m)*lists+standby]++
		}
		for _, m := range g.extraStandbys(int32(t)) {
			count[int(m)*lists+standby]++
		}
	}
	// A member's revoked tasks are the held ones it no longer owns. Unless
	// two members reported holding one task, each held task's owner was its
	// holder until something placed it this round (setOwner marks it
	// fixed), and nothing places a task with the member that held it; so a
	// member keeps owned-minus-gained of its held tasks, and one that keeps
	// them all has none revoked and its held row is not read. That skips a
	// random read per held task in every group where nothing is revoked.
	var lost []int32 // the revoked held tasks, member by member
	for m := range int32(n) {
		row := g.held.row(m)
		if g.contested || int32(len(row)) != count[int(m)*lists+assigned]-gained[m] {
			from := len(lost)
			for _, t := range row {
				if g.owner[t] != m {
					lost = append(lost, t)
				}
			}
			count[int(m)*lists+revoked] = int32(len(lost) - from)
		}
		count[int(m)*lists+revoked] += int32(len(g.unknown[m]))
	}

	next := g.scratch.int32s.make(n * lists) // write offset of each list in buf
	var size int32
	for i, c := range count {
		next[i] = size
		size += c
	}
	buf := make([]string, size)
	out := make([]Assignment, n)
	window := func(m, list int) []string {
		from := next[m*lists+list]
		to := from + count[m*lists+list]
		if from == to {
			return nil
		}
		return buf[from:to:to]
	}
	for m := range out {
		out[m] = Assignment{
			MemberID: g.in[g.byRank[m]].ID,
			Assigned: window(m, assigned),
			Revoked:  window(m, revoked),
			Learning: window(m, learning),
			Learned:  window(m, learned),
			Standby:  window(m, standby),
		}
	}
	put := func(m int32, list int, id string) {
		i := int(m)*lists + list
		buf[next[i]] = id
		next[i]++
	}
	for t, o := range g.owner {
		if o == none {
			continue
		}
		id := g.tasks[t].ID
		put(o, assigned, id)
		if l := g.learner[t]; l != none {
			put(o, learned, id)
			put(l, learning, id)
		}
	}
	for t := range g.sbHave {
		for _, m := range g.standbysOf(int32(t)) {
			put(m, standby, g.tasks[t].ID)
		}
		for _, m := range g.extraStandbys(int32(t)) {
			put(m, standby, g.tasks[t].ID)
		}
	}
	for m := range int32(n) {
		if g.unknown == nil && count[int(m)*lists+revoked] == 0 {
			continue
		}
		k := count[int(m)*lists+revoked] - int32(len(g.unknown[m]))
		for _, t := range lost[:k] {
			put(m, revoked, g.tasks[t].ID)
		}
		lost = lost[k:]
		unknown := slices.Clone(g.unknown[m])
		slices.SortFunc(unknown, compareIDs)
		for _, id := range unknown {
			put(m, revoked, id)
		}
	}
	return out
}
