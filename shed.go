package learner

import "slices"

// This file chooses which task a donor gives away while balancing.
//
// A giver's movable tasks are kept in segments, each in topology order:
// its stateless tasks first (they move for free), then its stateful tasks;
// with subtopology spread on, each kind is cut by subtopology, and each
// segment carries the giver's count of its subtopology.
// A cursor per segment only moves forward, so all picks of one Assign call
// cost time linear in the tasks plus the segments looked at per move.
// Givers with one task of each subtopology they hold need no segments in
// a scale-up (shed_oneeach.go).

// shedder is the part of a balancePlan that holds the movable tasks of the
// members that can give.
type shedder struct {
	*group
	spread   *spread   // the plan's: cuts segments by subtopology and scores them
	movable  []int32   // movable tasks, by giver and segment
	segs     []segment // member m's are segs[segStart[m]:segStart[m+1]]
	segStart []int32
	segMid   []int32 // member m's stateful segments start at segs[segMid[m]]
	// live is set for the givers whose counts live in their segments:
	// every giver until it first receives (settle).
	live []bool
	// filtered is set when the lists hold movable tasks only (dealt, see
	// newShedder); stale is then set for the givers that gave a task
	// outside their segments (one the receiver has local state for),
	// whose segments may hold tasks that moved. Picks check each
	// candidate of a giver whose lists are not filtered or are stale.
	filtered bool
	stale    []bool
	// countRuns is set when copyRows counts each member's runs of its
	// held row into the dense counts instead of countDense (see there).
	countRuns bool
	// countsInSegs is set when a giver's counts are in its segments
	// only, not in the sparse table too, until it settles (dealHeld).
	countsInSegs bool
	// oneEach is set for the givers whose movable tasks are their held
	// rows, without segments, and taken has a bit per held task, set once
	// it is taken (shed_oneeach.go); both nil when the group can have
	// none.
	oneEach []bool
	taken   []uint32
}

// segment is a run of one giver's movable tasks of one kind (segMid
// splits the kinds) and, with spread on, one subtopology: often a single
// task, so there can be one per movable task, and it is kept to 16 bytes.
//
// The task at its cursor is in the segment itself (head), the rest of its
// tasks in shedder.movable from next on, the last one marked with
// lastInSegment. A giver's segments are cold when it gives (donors take
// turns), and its tasks in a list apart were a second cache miss per move;
// in a large group a giver holds at most one task of most subtopologies,
// so that list is rarely read.
//
// With spread on, n is the giver's planned count of sub, kept here rather
// than in the spread table while the giver gives: the table's sparse
// counts take a binary search over cold memory, the segment is read
// anyway. A subtopology with tasks of both kinds has a segment of each;
// the stateless one keeps the count and the stateful one holds -1-(the
// stateless one's index).
type segment struct {
	sub  int32 // subtopology of the segment's tasks; none for "any"
	n    int32 // see above
	head int32 // the task at the cursor; none once every task is taken
	next int32 // where the rest follow in shedder.movable; none if head is the last
}

// lastInSegment marks the last task of a segment in shedder.movable. Task
// indices are below MaxTasks (2^30), so the bit is free.
const lastInSegment = 1 << 30

// newSegment returns the segment of the tasks movable[from:to] of
// subtopology sub with count n, marking its last task.
func newSegment(sub, n int32, movable []int32, from, to int32) segment {
	seg := segment{sub: sub, n: n, head: movable[from], next: none}
	if to-from > 1 {
		seg.next = from + 1
		movable[to-1] |= lastInSegment
	}
	return seg
}

// advance moves seg's cursor to its next task.
func (s *shedder) advance(seg *segment) {
	if seg.next == none {
		seg.head = none
		return
	}
	t := s.movable[seg.next]
	seg.head, seg.next = t&^lastInSegment, seg.next+1
	if t&lastInSegment != 0 {
		seg.next = none
	}
}

// sheddable reports whether o may give t away: it owns it, stays, nobody
// learns it, and it was not placed this round.
func (g *group) sheddable(t, o int32) bool {
	return o != none && !g.leaving[o] && g.learner[t] == none && !g.fixed[t] && g.owner[t] == o
}

// heldSheddable is sheddable(t, h) for a task of giver h's lists, all of
// which h held. Unless two members reported holding one task, such a
// task's owner is h until something places it (and marks it fixed), so
// the owner need not be read: one random read fewer per candidate.
func (g *group) heldSheddable(t, h int32) bool {
	return g.learner[t] == none && !g.fixed[t] && (!g.contested || g.owner[t] == h)
}

// newShedder lays out the movable tasks of the members for which gives is
// true (and keeps gives as its live flags), and fills the spread counts
// sp, laid out by newSpread. Two ways, by size: with sparse counts (large
// groups) it deals the tasks (deal); otherwise each giver's list is its
// held row (copyRows).
func newShedder(g *group, sp *spread, gives []bool) shedder {
	s := shedder{group: g, spread: sp, live: gives, segStart: g.scratch.int32s.make(len(g.load) + 1), segMid: g.scratch.int32s.make(len(g.load))}
	s.allowOneEach()
	if sp.on && sp.dense == nil {
		s.deal()
	} else {
		s.copyRows()
	}
	return s
}

// deal lays out the givers' movable tasks and fills the sparse spread
// counts.
//
// A movable task is one its owner may give (sheddable): the owner stays,
// nobody learns the task, and it was not placed this round. Balancing
// changes that only for the tasks it moves, so the lists are filtered once
// here and picks need not read a task's state again (see stale).
//
// Two passes. The first reads the per-task arrays front to back, in
// subtopology order (topology order when subtopologies follow it, the
// usual layout), and deals each planned task, with its subtopology and
// whether it is movable, into its member's window: one write per task, the
// only out-of-order access. The second goes member by member through its
// window, now sorted by subtopology, counting its runs into the spread
// and, for a giver, appending its movable tasks and segments, each count
// beside its segment. In a scale-up the held rows take the first pass's
// place (dealHeld).
//
// The trade-off, against copyRows with sparse counts: there each held task's
// subtopology was read out of topology order, and the counts took a
// counting sort of all tasks by member and a random read of each one's
// subtopology, a cache miss per task each at a million tasks. In CPU
// profiles of a scale-up at 10,000 members and 1,000,000 tasks the two
// passes cost about what those did (25 ms a call, in profiles of either
// under the same load), and the lists come filtered, which saves each
// move the reads of its candidate's state, two cache misses there. In
// groups whose arrays fit the caches (the dense counts) dealing cost more
// passes than it saved: balancing alone took 1.2-1.4x as long at 1,000
// members and 100,000 tasks.
func (s *shedder) deal() {
	if !s.dealHeld() {
		s.dealPlanned()
	}
}

// dealPlanned is deal's general way: it deals every planned task, from
// the per-task arrays, to its member (dealTasks), and lays them out.
func (s *shedder) dealPlanned() {
	g := s.group
	n := len(g.load)
	sc := g.scratch
	// Member m's window is as long as its load: the number of tasks it
	// plans (resolveLearners counted them, and every placement since moved
	// one planned task and one unit of load). Should that ever not hold,
	// the tasks are counted and dealt again rather than written over the
	// next member's window.
	deal, at, movable := s.dealTasks(g.load)
	if deal == nil {
		planned := sc.int32s.make(n)
		for t := range g.owner {
			if p := g.planned(int32(t)); p != none {
				planned[p]++
			}
		}
		deal, at, movable = s.dealTasks(planned)
	}
	s.layOutDealt(movable, func(m int32) []dealtTask { return deal[at[2*m]:at[2*m+1]] })
}

// layOutDealt lays out the givers' movable tasks, movable in all, and
// fills the spread counts from the planned tasks dealt to each member m,
// dealtTo(m) (called once per member, in rank order).
func (s *shedder) layOutDealt(movable int, dealtTo func(m int32) []dealtTask) {
	g := s.group
	n := len(g.load)
	sc := g.scratch
	s.filtered, s.stale = true, sc.bools.make(n)
	s.movable, s.segs = sc.int32s.room(movable), sc.segments.room(movable)
	for m := range int32(n) {
		dealt := dealtTo(m)
		// One pass per kind a giver has, stateless first; the first also
		// counts. A member that does not give only counts.
		kinds := 0
		if s.live[m] {
			kinds = 2
			if g.stateless == 0 || g.stateless == g.numTasks() {
				kinds = 1
			}
		}
		start := int32(len(s.segs))
		if kinds == 0 {
			s.layOut(m, dealt, true, false, 0, start)
		}
		count := !s.countsInSegs
		if kinds == 2 || kinds == 1 && g.stateless > 0 {
			s.layOut(m, dealt, count, true, 0, start)
		}
		s.segMid[m] = int32(len(s.segs))
		if kinds == 2 || kinds == 1 && g.stateless == 0 {
			s.layOut(m, dealt, count && kinds == 1, true, dealStateful, start)
		}
		s.segStart[m+1] = int32(len(s.segs))
	}
}

// dealTasks deals every planned task to its member, member m's into a
// window of size[m] entries, and returns the dealt tasks, where each
// member's are (deal[at[2m]:at[2m+1]]) and how many are movable; or nil if
// some member has more tasks than its window.
func (s *shedder) dealTasks(size []int32) (deal []dealtTask, at []int32, movable int) {
	g, gives := s.group, s.live
	n := len(size)
	// at[2m] starts m's window and at[2m+1] is where its next task goes,
	// below at[2m+2], where the next window starts (at[2n]: the end).
	at = g.scratch.int32s.make(2*n + 1)
	total := int32(0)
	for m, k := range size {
		at[2*m], at[2*m+1] = total, total
		total += k
	}
	at[2*n] = total
	deal = g.scratch.dealt.make(int(total))
	order := g.subtopologyOrder()
	// The per-task arrays in locals: the compiler would reload each
	// field of g at every task (the writes to deal might alias them).
	owner, learner, fixed, subOf := g.owner, g.learner, g.fixed, g.sub
	for i := range int32(len(owner)) {
		t := i
		if order != nil {
			t = order[i]
		}
		p, l := owner[t], learner[t]
		if l != none {
			p = l
		}
		if p == none {
			continue
		}
		word := uint32(subOf[t]) << dealShift
		if l == none && gives[p] && !fixed[t] { // p owns t
			word |= dealMovable
			movable++
		}
		if g.isStateful(t) {
			word |= dealStateful
		}
		k := at[2*p+1]
		if k == at[2*p+2] {
			return nil, nil, 0
		}
		at[2*p+1]++
		deal[k] = dealtTask{uint32(t), word}
	}
	return deal, at, movable
}

// dealHeld lays out the movable tasks and fills the spread counts as
// deal does, from the members' held rows, when those are their planned
// tasks in subtopology order: no task was contested, learned or placed
// this round (a scale-up), and subtopologies follow topology order, in
// which ingest sorted the rows. It reports false, doing nothing, otherwise.
//
// Why: dealTasks writes each task into its member's window, a scattered
// write per task, and reads every task's owner, learner and fixed flag;
// this reads the rows in order and deals a member at a time into a buffer
// that layOut reads at once, reading only each task's subtopology out of
// order. In cachegrind of a scale-up at 10,000 members and 1,000,000
// tasks it costs half of what dealTasks did (instructions plus weighted
// cache misses). A scale-up is the event that balances the most, and with
// nothing learned or placed its rows are exactly the planned tasks, which
// heldIsPlanned establishes. (With dense counts it measured the same as
// copyRows, at 1,000 members and 100,000 tasks, so copyRows keeps that
// case.)
func (s *shedder) dealHeld() bool {
	g, gives := s.group, s.live
	if !g.heldIsPlanned() {
		return false
	}
	movable, longest := 0, 0
	for m := range int32(len(g.load)) {
		k := len(g.held.row(m))
		if gives[m] {
			movable += k
		}
		longest = max(longest, k)
	}
	// One member's tasks at a time, in a buffer the layout reads at once,
	// while it is in the cache. Each of a giver's tasks is movable, so
	// its segments hold every count it has, and the table gets them when
	// it settles (in a scale-up no giver does): at 10,000 members and
	// 1,000,000 tasks a million counts are not written twice, 8 MB of the
	// 24 the layout wrote (cachegrind: 1.7% fewer instructions a call;
	// 10 interleaved rounds: 0.96 of the time, paired).
	s.countsInSegs = true
	buf, subOf := g.scratch.dealt.room(longest), g.sub
	s.layOutDealt(movable, func(m int32) []dealtTask {
		var flags uint32
		if gives[m] {
			if s.layOutOneEach(m) {
				return nil
			}
			flags = dealMovable
		}
		buf = buf[:0]
		for _, t := range g.held.row(m) {
			word := uint32(subOf[t])<<dealShift | flags
			if g.isStateful(t) {
				word |= dealStateful
			}
			buf = append(buf, dealtTask{uint32(t), word})
		}
		return buf
	})
	return true
}

// heldIsPlanned reports whether each member's held row is its planned
// tasks in subtopology order: no task was contested, learned or placed
// this round (a scale-up), and subtopologies follow topology order, in
// which ingest sorted the rows. resolveLearners, placeOrphans and
// handOverLeaving leave a learner only where they count one in
// learnersInFlight, and every placement goes through setOwner (placed).
func (g *group) heldIsPlanned() bool {
	return !g.contested && g.learnersInFlight == 0 && g.subsInOrder && !g.placed
}

// dealtTask is a task dealt to the member that plans it: the task, and
// its subtopology (shifted by dealShift) or'ed with dealMovable and
// dealStateful.
type dealtTask struct{ task, word uint32 }

// The flags of a dealt task's word, below its subtopology.
const (
	dealMovable  = 1
	dealStateful = 2
	dealShift    = 2
)

// layOut goes through member m's dealt tasks, which are in subtopology
// order, run by run of one subtopology: with count set it puts each run's
// length in the spread counts; with give set it appends the run's movable
// tasks of one kind (kind is dealStateful or 0) and a segment for them.
// Segments get their counts from countField, with twins from s.segs[twin]
// on (m's stateless segments, when appending its stateful ones).
//
// It runs once per dealt task, so the lists and m's counts are appended
// to in locals: appending to s's fields stored their headers back at
// every task, and counting through put stored three of m's fields.
func (s *shedder) layOut(m int32, dealt []dealtTask, count, give bool, kind uint32, twin int32) {
	sp := s.spread
	movable, segs, counts, most := s.movable, s.segs, sp.pool, int32(0)
	twinEnd := int32(len(segs))
	for i := 0; i < len(dealt); {
		sub := dealt[i].word >> dealShift
		j := i + 1
		for j < len(dealt) && dealt[j].word>>dealShift == sub {
			j++
		}
		n := int32(j - i)
		most = max(most, n)
		if count {
			if sp.dense != nil {
				sp.dense[m*sp.subs+int32(sub)] = n
			} else {
				counts = append(counts, subCount{sub: int32(sub), n: n})
			}
		}
		if give {
			if d := dealt[i]; j == i+1 && d.word&dealMovable != 0 && d.word&dealStateful == kind {
				// A run of one task, the usual one in a large group:
				// its segment holds it, no need to list it.
				segs = append(segs, segment{sub: int32(sub), n: s.countField(int32(sub), n, &twin, twinEnd), head: int32(d.task), next: none})
				i = j
				continue
			}
			first := int32(len(movable))
			for _, d := range dealt[i:j] {
				if d.word&dealMovable != 0 && d.word&dealStateful == kind {
					movable = append(movable, int32(d.task))
				}
			}
			if end := int32(len(movable)); end > first {
				segs = append(segs, newSegment(int32(sub), s.countField(int32(sub), n, &twin, twinEnd), movable, first, end))
			}
		}
		i = j
	}
	s.movable, s.segs = movable, segs
	if count {
		sp.putAll(m, counts, most)
	} else {
		sp.max[m] = max(sp.max[m], most)
	}
}

// countField returns the n of a giver's segment of sub being laid out:
// its count, or a pointer to its twin, the giver's stateless segment of
// sub, looked for from s.segs[*twin] on, below twinEnd, in increasing
// order of subtopology as the calls come.
func (s *shedder) countField(sub, count int32, twin *int32, twinEnd int32) int32 {
	for *twin < twinEnd && s.segs[*twin].sub < sub {
		*twin++
	}
	if *twin < twinEnd && s.segs[*twin].sub == sub {
		return -1 - *twin
	}
	return count
}

// copyRows lays out the givers' movable tasks from their held rows, and
// fills a dense spread table if spread is on. A movable task was never
// placed this round, so its owner is the member that reported it: it is in
// the owner's held row, which ingest left sorted in topology order. Each
// giver's list is therefore its held row, stateless tasks first (they move
// for free), then stateful ones, cut into a segment where the kind or,
// with spread on, the subtopology changes. Subtopologies usually follow
// topology order; a member whose tasks do not is sorted by subtopology.
//
// The lists keep tasks that are not movable (learned, placed this round,
// claimed by another member): pick skips them anyway, since tasks stop
// being movable while balancing runs, and filtering here would cost several
// random reads per held task, most of which are never looked at again.
// When the topology has one kind of task, a giver's list is a copy of its
// row and the only per-task read is its subtopology, to cut segments.
func (s *shedder) copyRows() {
	g, gives := s.group, s.live
	// In a scale-up of a topology with one kind of task, a giver's row is
	// its planned tasks and each run of one subtopology in it, which
	// cutSegments reads anyway, is its whole count: counting runs, and
	// the few other members' rows apart, replaces countDense's pass over
	// every task and its scattered increments (cachegrind of a scale-up at
	// 1,000 members and 100,000 tasks: balancing 13% cheaper).
	s.countRuns = s.spread.on && (g.stateless == 0 || g.stateless == g.numTasks()) && g.heldIsPlanned()
	if s.spread.on && !s.countRuns {
		g.countDense(s.spread)
	}
	n := len(g.load)
	size, givers := 0, 0
	for m := range int32(n) {
		if gives[m] {
			size += len(g.held.row(m))
			givers++
		}
	}
	// Allocated once, at bounds: no more movable tasks than held ones, and
	// a segment holds at least one task (at most two per giver, one of each
	// kind, without spread).
	segs := 2 * givers
	if s.spread.on {
		segs = size
	}
	s.movable, s.segs = g.scratch.int32s.room(size), g.scratch.segments.room(segs)
	for m := range int32(n) {
		if gives[m] && s.layOutOneEach(m) {
			s.segMid[m] = int32(len(s.segs))
		} else if gives[m] {
			row := g.held.row(m)
			from, first := int32(len(s.movable)), int32(len(s.segs))
			switch g.stateless {
			case g.numTasks(): // every task stateless
				s.movable = append(s.movable, row...)
				s.cutSegments(m, from, int32(len(s.movable)), first)
				s.segMid[m] = int32(len(s.segs))
			case 0: // every task stateful
				s.movable = append(s.movable, row...)
				s.segMid[m] = int32(len(s.segs))
				s.cutSegments(m, from, int32(len(s.movable)), first)
			default:
				s.movable = s.appendKind(s.movable, row, false)
				mid := int32(len(s.movable))
				s.movable = s.appendKind(s.movable, row, true)
				s.cutSegments(m, from, mid, first)
				s.segMid[m] = int32(len(s.segs))
				s.cutSegments(m, mid, int32(len(s.movable)), first)
			}
		} else if s.countRuns {
			s.countRow(m)
		}
		s.segStart[m+1] = int32(len(s.segs))
	}
}

// appendKind appends the tasks of row whose statefulness is stateful.
func (s *shedder) appendKind(movable, row []int32, stateful bool) []int32 {
	for _, t := range row {
		if s.isStateful(t) == stateful {
			movable = append(movable, t)
		}
	}
	return movable
}

// cutSegments appends the segments of giver m's movable[from:to], tasks
// of one kind, whose earlier segments start at s.segs[first]. With spread
// on it cuts runs of one subtopology, reading each task's subtopology
// once, and gives each segment its count (countField); tasks whose
// subtopologies do not follow topology order are first sorted by
// subtopology (stably).
func (s *shedder) cutSegments(m, from, to, first int32) {
	if from == to {
		return
	}
	if !s.spread.on {
		s.segs = append(s.segs, newSegment(none, 0, s.movable, from, to))
		return
	}
	if tasks := s.movable[from:to]; !s.subsInOrder && !slices.IsSortedFunc(tasks, s.bySub) {
		slices.SortStableFunc(tasks, s.bySub)
	}
	// The loop runs once per movable task, so it keeps the lists, m's
	// row of the dense table and its largest count in locals: through s,
	// every append stored the list's header back and every count m's
	// bound (cachegrind of a scale-up at 1,000 members and 100,000 tasks:
	// 90 instructions a task that way, 72 this way). countField reads m's
	// earlier segments through s.segs, whose backing array the appends
	// share: it was allocated at its bound (copyRows).
	movable, segs, subOf, sp := s.movable, s.segs, s.sub, s.spread
	counts, most := sp.dense[m*sp.subs:(m+1)*sp.subs], int32(0)
	twin, twinEnd := first, int32(len(segs))
	// Each task's subtopology is read once: the read that ends a run
	// starts the next.
	for i, sub := from, subOf[movable[from]]; i < to; {
		j, next := i+1, int32(none)
		for ; j < to; j++ {
			if next = subOf[movable[j]]; next != sub {
				break
			}
		}
		var n int32
		if s.countRuns {
			n = j - i
			counts[sub] = n
			most = max(most, n)
		} else {
			n = s.countField(sub, counts[sub], &twin, twinEnd)
		}
		segs = append(segs, newSegment(sub, n, movable, i, j))
		i, sub = j, next
	}
	s.segs = segs
	sp.max[m] = max(sp.max[m], most)
}

// countRow counts the runs of one subtopology in member m's held row into
// the dense counts (see countRuns).
func (s *shedder) countRow(m int32) {
	row := s.held.row(m)
	for i := 0; i < len(row); {
		sub := s.sub[row[i]]
		j := i + 1
		for j < len(row) && s.sub[row[j]] == sub {
			j++
		}
		s.spread.putDense(m, sub, int32(j-i))
		i = j
	}
}

func (g *group) bySub(a, b int32) int { return int(g.sub[a] - g.sub[b]) }

// subtopologyOrder returns the tasks sorted by subtopology, stably, or nil
// when topology order is that order already (or spread is off).
func (g *group) subtopologyOrder() []int32 {
	if g.nSubs < 2 || g.subsInOrder {
		return nil
	}
	all := g.scratch.int32s.make(g.numTasks())
	for t := range all {
		all[t] = int32(t)
	}
	return g.placementOrder(all)
}

// count returns where segment i's subtopology count is kept.
func (s *shedder) count(i int32) *int32 {
	if n := s.segs[i].n; n < 0 {
		return &s.segs[-1-n].n
	}
	return &s.segs[i].n
}

// settle ends giver m's giving before it first receives (balance's run
// says why it never gives again): its counts go back to the spread table,
// which its receiving reads and updates.
func (s *shedder) settle(m int32) {
	if !s.live[m] {
		return
	}
	s.live[m] = false
	if !s.spread.on {
		return
	}
	if s.oneEach != nil && s.oneEach[m] {
		s.putOneEachCounts(m)
		return
	}
	if s.countsInSegs {
		s.putSegmentCounts(m)
		return
	}
	for _, seg := range s.segs[s.segStart[m]:s.segStart[m+1]] {
		if seg.n >= 0 {
			s.spread.set(m, seg.sub, seg.n)
		}
	}
}

// putSegmentCounts puts giver m's counts, which only its segments hold
// (countsInSegs), into the sparse table: its stateless and its stateful
// segments, each in increasing order of subtopology, merged, without the
// stateful twins, whose counts their stateless segments hold.
func (s *shedder) putSegmentCounts(m int32) {
	sp := s.spread
	pool := sp.pool
	a, b := s.segs[s.segStart[m]:s.segMid[m]], s.segs[s.segMid[m]:s.segStart[m+1]]
	for len(a) > 0 || len(b) > 0 {
		var seg segment
		if len(b) == 0 || len(a) > 0 && a[0].sub < b[0].sub {
			seg, a = a[0], a[1:]
		} else {
			seg, b = b[0], b[1:]
		}
		switch {
		case seg.n < 0: // a twin
		case sp.dense != nil:
			sp.dense[m*sp.subs+seg.sub] = seg.n
		default:
			pool = append(pool, subCount{sub: seg.sub, n: seg.n})
		}
	}
	sp.putAll(m, pool, 0)
}

// take takes the task h should give to l out of h's lists and returns it
// with its subtopology, or none if h has nothing it may give (everything it
// runs is pinned, or the learner budget is spent and only stateful tasks
// are left). In order: a task l has local state for (warmest lag first,
// rule 8), a stateless task, a stateful task; within a kind, from the
// subtopology where h holds the most more than l (spread on), or h's first
// in topology order. The caller moves it.
func (s *shedder) take(h, l int32) (t, sub int32) {
	learnOK := s.canLearn()
	if learnOK {
		for _, t := range s.warmBy.row(l) {
			if s.sheddable(t, h) && s.isStateful(t) {
				return t, s.takeWarm(h, t)
			}
		}
	}
	if s.oneEach != nil && s.oneEach[h] {
		return s.takeOneEach(h, l, learnOK)
	}
	i := s.pickFrom(s.segStart[h], s.segMid[h], h, l)
	if i == none && learnOK {
		i = s.pickFrom(s.segMid[h], s.segStart[h+1], h, l)
	}
	if i == none {
		return none, none
	}
	seg := &s.segs[i]
	t = seg.head
	s.advance(seg)
	if s.spread.on {
		*s.count(i)--
	}
	return t, seg.sub
}

// takeWarm records that h gives its stateful task t outside the segment
// order, and returns t's subtopology.
func (s *shedder) takeWarm(h, t int32) int32 {
	if s.filtered {
		s.stale[h] = true
	}
	if !s.spread.on {
		return none
	}
	if s.oneEach != nil && s.oneEach[h] {
		s.takeWarmOneEach(h, t)
		return s.sub[t]
	}
	sub := s.sub[t]
	from := s.segMid[h]
	// t is movable, so h has a stateful segment of sub.
	i := from + int32(firstAfter(s.segs[from:s.segStart[h+1]], sub, s.spread.subs)) - 1
	*s.count(i)--
	return sub
}

// firstAfter returns the index of the first of segs, which are in
// increasing order of subtopology, all below subs, whose subtopology is
// above sub (len(segs) if none is).
//
// A giver's segments are cold when it gives (donors take turns), and a
// binary search touched a new cache line at almost every step: it was a
// twentieth of a scale-up. So the search starts where sub would be if the
// segments' subtopologies were spread evenly over [0, subs), usually a line
// or two from the answer, and gallops from there (gallop). (Interpolating
// between the first and last segments' subtopologies read two more cold
// lines.)
func firstAfter(segs []segment, sub, subs int32) int {
	n := len(segs)
	if n == 0 {
		return 0
	}
	guess := int(min(max(int64(sub)+1, 0)*int64(n)/int64(max(subs, 1)), int64(n-1)))
	return gallop(n, guess, func(i int) bool { return segs[i].sub > sub })
}

// gallop returns the first i in [0, n) for which above(i) holds, n if
// none does, where above is false and then true over [0, n); it looks at
// guess, in [0, n), first and gallops from there, which keeps O(log n)
// steps however far off the guess is.
func gallop(n, guess int, above func(i int) bool) int {
	// Gallop to lo < hi with !above(lo) and above(hi), where above(-1)
	// is false and above(n) true.
	lo, hi := guess-1, guess
	if !above(guess) {
		lo, hi = guess, guess+1
		for step := 1; hi < n && !above(hi); step *= 2 {
			lo, hi = hi, min(hi+step, n)
		}
	} else {
		for step := 1; lo >= 0 && above(lo); step *= 2 {
			lo, hi = max(lo-step, -1), lo
		}
	}
	for hi-lo > 1 {
		if mid := int(uint(lo+hi) >> 1); above(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// pickFrom returns the segment of h's best movable task among
// segs[from:to] (of one kind), or none. With spread on, the scan starts
// after the subtopology l received last and wraps around: a receiver then
// collects subtopologies in turn, so the first candidate usually scores
// the most h can offer and ends the scan at once.
func (s *shedder) pickFrom(from, to, h, l int32) int32 {
	segs := s.segs[from:to]
	sp := s.spread
	start := 0
	if sp.on {
		start = firstAfter(segs, sp.last[l], sp.subs)
	}
	check := !s.filtered || s.stale[h]
	best, bestScore := int32(none), int32(0)
	for k := range len(segs) {
		i := (start + k) % len(segs)
		seg := &segs[i]
		for check && seg.head != none && !s.heldSheddable(seg.head, h) {
			s.advance(seg)
		}
		if seg.head == none {
			continue
		}
		if !sp.on {
			return from + int32(i)
		}
		if score := *s.count(from + int32(i)) - sp.count(l, seg.sub); best == none || score > bestScore {
			best, bestScore = from+int32(i), score
			if score >= sp.max[h] {
				break // no subtopology can score more
			}
		}
	}
	return best
}
