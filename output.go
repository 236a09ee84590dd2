package learner

import "slices"

// The lists of an assignment, in the order output lays them out.
const (
	outAssigned = iota
	outRevoked
	outLearning
	outLearned
	outStandby
	outLists
)

// output turns the per-task decisions back into one Assignment per member,
// in rank order. Every list is a window of one shared backing array (one
// allocation for all the strings, whatever the group size), or the list
// the member reported when it comes back unchanged (reported); both are
// capped so that appending to one list cannot overwrite its neighbour.
func (g *group) output() []Assignment {
	l := g.layout(true)
	buf := make([]string, l.size)
	out := make([]Assignment, len(g.load))
	for m := range out {
		w := windows(buf, &l, m)
		out[m] = Assignment{MemberID: g.in.id(int(g.byRank[m])),
			Assigned: w[outAssigned], Revoked: w[outRevoked], Learning: w[outLearning], Learned: w[outLearned], Standby: w[outStandby]}
	}
	g.fill(&l, buf, nil)
	name := func(t int32) string { return g.id(t) }
	for m := range int32(len(out)) {
		in := &g.in.byID[g.byRank[m]]
		if l.asListed[m] {
			out[m].Assigned = mergeListed(out[m].Assigned, in.Assigned, g.held.row(m), l.gainedBy(m), name)
		}
		if g.standbysAsListed && g.sbCount[m] > 0 {
			out[m].Standby = reported(in.Standby)
		}
		if unknown := g.unknown[m]; len(unknown) > 0 { // after the topology's tasks fill put there
			i := int(m)*outLists + outRevoked
			copy(buf[l.next[i]:], sortedIDs(unknown))
		}
	}
	return out
}

// outputIndexed is output for AssignIndexed: the same lists, by task index,
// from the same layout and fill; the revoked tasks the topology lacks go
// to Stale instead of Revoked.
func (g *group) outputIndexed() []IndexedAssignment {
	l := g.layout(false)
	buf := make([]int32, l.size)
	out := make([]IndexedAssignment, len(g.load))
	for m := range out {
		w := windows(buf, &l, m)
		out[m] = IndexedAssignment{MemberID: g.in.id(int(g.byRank[m])),
			Assigned: w[outAssigned], Revoked: w[outRevoked], Learning: w[outLearning], Learned: w[outLearned], Standby: w[outStandby]}
		if unknown := g.unknown[int32(m)]; len(unknown) > 0 {
			out[m].Stale = sortedIDs(unknown)
		}
	}
	g.fill(&l, nil, buf)
	name := func(t int32) int32 { return t }
	for m := range int32(len(out)) {
		in := &g.in.byIndex[g.byRank[m]]
		if l.asListed[m] {
			out[m].Assigned = mergeListed(out[m].Assigned, in.Assigned, g.held.row(m), l.gainedBy(m), name)
		}
		if g.standbysAsListed && g.sbCount[m] > 0 {
			out[m].Standby = reported(in.Standby)
		}
	}
	return out
}

// mergeListed returns the Assigned list of a member that kept all it held
// (outLayout.asListed): in, the Assigned list it reported, whose tasks are
// row, merged in topology order with the tasks it gained this round, named
// by name, written into w; without any gained, in itself (reported), for
// which layout left w no room.
func mergeListed[T any](w, in []T, row, gained []int32, name func(int32) T) []T {
	if len(gained) == 0 {
		return reported(in)
	}
	i, j := 0, 0
	for k := range w {
		if j < len(gained) && (i == len(row) || gained[j] < row[i]) {
			w[k] = name(gained[j])
			j++
		} else {
			w[k] = in[i]
			i++
		}
	}
	return w
}

// reported returns a list a member reported as the same list of its
// assignment, capped so that appending to it copies it; nil when empty.
//
// Why not a copy: at a fixed point, the usual rebalance, every member's
// Assigned and Standby lists come back as reported, and copying them was
// the output's one large allocation (about 1.6 MB a call at 1,000 members
// and 100,000 tasks, by ID). Every byte allocated with pointers costs the
// garbage collector about as much again in marking; in interleaved runs
// of BenchmarkAssign at that size, returning the members' lists instead
// took a stable call from 5.7 to 4.1 ms (CPU time). The price is the
// aliasing Assign documents: editing one of these lists in place edits
// the caller's report too.
func reported[T any](list []T) []T {
	if len(list) == 0 {
		return nil
	}
	return list[:len(list):len(list)]
}

// sortedIDs returns a sorted copy of the revoked tasks the topology lacks.
func sortedIDs(ids []string) []string {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, compareIDs)
	return ids
}

// outLayout is where every member's lists go in the output's one backing
// array: list i (member*outLists + list) is buf[start:start+count[i]],
// with next[i] the slot fill writes next (start until fill runs).
type outLayout struct {
	count, next []int32
	size        int32
	// lost are the revoked tasks of the topology, member by member; the
	// first lostN[m] of what remains are member m's.
	lost, lostN []int32
	// asListed[m] reports that m's Assigned is the Assigned list it
	// reported (group.assignedAsListed: all of it kept, none of the rest
	// of its held row) with the tasks it gained this round merged in:
	// output returns that list itself when m gained nothing (reported;
	// layout leaves it no room), and otherwise merges it with
	// gained[gainedFrom[m]:gainedFrom[m+1]] (mergeListed), instead of
	// fill writing it task by task. In a stable group that is every
	// member, with nothing gained; after a crash, all but the crashed
	// member's, a few gaining a task each; after a promotion, also the
	// owners that revoked the promoted tasks. The merge reads and writes
	// in order where fill's writes scatter over every member's list. By
	// index that is the cheaper write; by ID, whenever the garbage
	// collector marks (often, at the benchmarks' allocation rates) every
	// string written costs a write barrier either way, and profiles of
	// BenchmarkAssign at 1,000 x 100,000 measured about 11 ns a copied
	// string against 14 a put. The Assigned strings of Assign's output are
	// then mostly the caller's own (equal to the topology's: a lookup
	// matches an ID exactly), which they keep reachable while the output
	// is.
	asListed   []bool
	gained     []int32 // filled by fill, gainedNext[m] its next slot for m
	gainedFrom []int32
	gainedNext []int32
	// byOwner reports that fill must go by every task's owner: some
	// member is not asListed or gained a task. learners reports that
	// some task has a learner. Without either, fill has no task to write
	// (a stable group), and without byOwner only the learned tasks, which
	// it finds by reading the learners alone (a scale-up, every promotion
	// of a learner that is not ready): that saves reading two of three
	// per-task arrays.
	byOwner, learners bool
}

// gainedBy returns the tasks asListed member m gained, as fill found them.
func (l *outLayout) gainedBy(m int32) []int32 {
	return l.gained[l.gainedFrom[m]:l.gainedFrom[m+1]]
}

// layout counts every member's lists. withUnknown leaves room in Revoked
// for the tasks the topology lacks (Assign); without, they go elsewhere
// (AssignIndexed's Stale).
func (g *group) layout(withUnknown bool) outLayout {
	n := len(g.load)
	count := g.scratch.int32s.make(n * outLists)
	gained := g.scratch.int32s.make(n) // per member: tasks it owns and did not report holding
	if g.contested || g.placed {
		for t, o := range g.owner {
			if o == none {
				continue
			}
			count[int(o)*outLists+outAssigned]++
			if g.fixed[t] {
				gained[o]++
			}
			if l := g.learner[t]; l != none {
				count[int(o)*outLists+outLearned]++
				count[int(l)*outLists+outLearning]++
			}
		}
	} else {
		// Every task's owner is the one member that reported holding it
		// (keepsHeld says why), so each member owns its held row and
		// gained nothing; only the learned tasks need counting, found by
		// reading the learners alone (as fill does).
		for m := range int32(n) {
			count[int(m)*outLists+outAssigned] = int32(len(g.held.row(m)))
		}
		for t, l := range g.learner {
			if l == none {
				continue
			}
			if o := g.owner[t]; o != none {
				count[int(o)*outLists+outLearned]++
				count[int(l)*outLists+outLearning]++
			}
		}
	}
	if !g.standbysAsListed { // else output returns the reported lists
		for t := range g.sbHave {
			for _, m := range g.standbysOf(int32(t)) {
				count[int(m)*outLists+outStandby]++
			}
			for _, m := range g.extraStandbys(int32(t)) {
				count[int(m)*outLists+outStandby]++
			}
		}
	}
	// A member's revoked tasks are the held ones it no longer owns; one
	// that keeps them all (keepsHeld) has none revoked and its held row is
	// not read. That skips a random read per held task in every group
	// where nothing is revoked. gained[m] is read before lostN[m]
	// overwrites it.
	l := outLayout{count: count, lostN: gained, asListed: g.scratch.bools.make(n), gainedFrom: g.scratch.int32s.make(n + 1)}
	gainedN := int32(0)
	for m := range int32(n) {
		row, revoked := g.held.row(m), g.revokedHeld.row(m)
		kept := count[int(m)*outLists+outAssigned] - gained[m]
		// Only held rows give a member tasks not placed this round, so
		// those m kept are among its row. When its row's Assigned part is
		// its reported list, it owns none of the row's Revoked part and
		// kept as many tasks as the list has, it kept the list and lost
		// the Revoked part: what every owner reports and gets whose task's
		// learner was ready. That reads the owners of its revoked tasks
		// only, not of its whole row.
		onlyRevoked := g.assignedAsListed[m] && int(kept) == len(row)-len(revoked) && !g.ownsAny(m, revoked)
		var lost []int32
		switch {
		case onlyRevoked:
			lost = revoked
			l.lost = append(l.lost, lost...)
		case !g.keepsHeld(m, kept):
			from := len(l.lost)
			for _, t := range row {
				if g.owner[t] != m {
					l.lost = append(l.lost, t)
				}
			}
			lost = l.lost[from:]
		}
		lostN := int32(len(lost))
		// Its Assigned is then that list, with what it gained merged in
		// (mergeListed merges into the row, which is the list only when
		// nothing was revoked).
		l.asListed[m] = onlyRevoked && (len(revoked) == 0 || gained[m] == 0)
		if l.asListed[m] && gained[m] == 0 {
			count[int(m)*outLists+outAssigned] = 0 // reported: no room needed
		}
		l.gainedFrom[m] = gainedN
		if l.asListed[m] {
			gainedN += gained[m]
		}
		l.byOwner = l.byOwner || !l.asListed[m]
		l.learners = l.learners || count[int(m)*outLists+outLearned] > 0
		l.lostN[m] = lostN
		count[int(m)*outLists+outRevoked] = lostN
		if withUnknown {
			count[int(m)*outLists+outRevoked] += int32(len(g.unknown[m]))
		}
	}
	l.gainedFrom[n] = gainedN
	l.byOwner = l.byOwner || gainedN > 0
	l.gained = g.scratch.int32s.make(int(gainedN))
	l.gainedNext = append(g.scratch.int32s.room(n), l.gainedFrom[:n]...)
	l.next = g.scratch.int32s.make(n * outLists)
	for i, c := range count {
		l.next[i] = l.size
		l.size += c
	}
	return l
}

// ownsAny reports whether member m owns any of tasks.
func (g *group) ownsAny(m int32, tasks []int32) bool {
	for _, t := range tasks {
		if g.owner[t] == m {
			return true
		}
	}
	return false
}

// windows returns member m's lists in buf as laid out by l, each nil
// when empty.
func windows[T any](buf []T, l *outLayout, m int) (w [outLists][]T) {
	for list := range w {
		i := m*outLists + list
		if from, to := l.next[i], l.next[i]+l.count[i]; from < to {
			w[list] = buf[from:to:to]
		}
	}
	return w
}

// fill writes every member's lists of the topology's tasks, as laid out
// by l, into ids as task IDs (Assign) or into idx as task indices
// (AssignIndexed); the other is nil. Each list comes out in topology
// order. One function for both outputs, with a branch per task that always
// goes the same way: a generic fill calling a function per task for the
// ID or the index took 1.7x as long (profile of BenchmarkAssign at 10,000
// x 1,000,000, stable).
func (g *group) fill(l *outLayout, ids []string, idx []int32) {
	next, names, at := l.next, g.ids, g.idAt // locals, not loads through l and g at every task
	put := func(m int32, list int, t int32) {
		i := int(m)*outLists + list
		if ids != nil {
			ids[next[i]] = names[at[t]:at[t+1]]
		} else {
			idx[next[i]] = t
		}
		next[i]++
	}
	if !l.byOwner && l.learners {
		for t, lr := range g.learner {
			if lr == none {
				continue
			}
			if o := g.owner[t]; o != none {
				put(o, outLearned, int32(t))
				put(lr, outLearning, int32(t))
			}
		}
	}
	if l.byOwner {
		asListed, gained, gainedNext := l.asListed, l.gained, l.gainedNext
		for t, o := range g.owner {
			if o == none {
				continue
			}
			if !asListed[o] {
				put(o, outAssigned, int32(t))
			} else if g.fixed[t] { // gained: merged in by mergeListed
				gained[gainedNext[o]] = int32(t)
				gainedNext[o]++
			}
			if lr := g.learner[t]; lr != none {
				put(o, outLearned, int32(t))
				put(lr, outLearning, int32(t))
			}
		}
	}
	if !g.standbysAsListed { // else output returns the reported lists
		for t := range g.sbHave {
			for _, m := range g.standbysOf(int32(t)) {
				put(m, outStandby, int32(t))
			}
			for _, m := range g.extraStandbys(int32(t)) {
				put(m, outStandby, int32(t))
			}
		}
	}
	lost := l.lost
	for m, k := range l.lostN {
		for _, t := range lost[:k] {
			put(int32(m), outRevoked, t)
		}
		lost = lost[k:]
	}
}
