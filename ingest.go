package learner

import (
	"cmp"
	"fmt"
	"slices"
)

// This file reads the members' self-reported tags (assigned, revoked,
// learning, ready, standby, leaving, lag) into the group's dense state,
// rejecting malformed reports with an error that names the member and the
// task, and resolves conflicting claims of ownership. Everything after it
// works on integers.

// ingest validates the members, orders them by ID and interns their reports.
func ingest(topo *topology, opts Options, in []MemberMetadata) (*group, error) {
	byRank, err := rankMembers(in)
	if err != nil {
		return nil, err
	}
	rd := newReader(newGroup(topo, opts, in, byRank))
	for r := range int32(len(in)) {
		if err := rd.read(r); err != nil {
			return nil, err
		}
	}
	rd.indexWarm()
	return rd.group, nil
}

// rankMembers checks the member IDs and returns the members' positions in
// natural ID order.
func rankMembers(in []MemberMetadata) ([]int32, error) {
	if len(in) > maxMembers {
		return nil, fmt.Errorf("learner: %d members, more than %d: %w", len(in), maxMembers, ErrInvalidMember)
	}
	for i := range in {
		if !validID(in[i].ID) {
			return nil, memberErr(&in[i], i, "malformed member ID (want 1-%d letters, digits, '_', '-', '.')", maxIDLen)
		}
	}
	byRank := make([]int32, len(in))
	for i := range byRank {
		byRank[i] = int32(i)
	}
	slices.SortFunc(byRank, func(x, y int32) int { return compareIDs(in[x].ID, in[y].ID) })
	for r := 1; r < len(in); r++ {
		if in[byRank[r]].ID == in[byRank[r-1]].ID {
			p := int(max(byRank[r], byRank[r-1]))
			return nil, memberErr(&in[p], p, "duplicate member ID (also at position %d)", min(byRank[r], byRank[r-1]))
		}
	}
	return byRank, nil
}

func memberErr(m *MemberMetadata, pos int, format string, args ...any) error {
	return fmt.Errorf("learner: member %q (position %d): %s: %w", m.ID, pos, fmt.Sprintf(format, args...), ErrInvalidMember)
}

// Claim classes, best first: a running active beats a revoked-at-join copy,
// and a staying member beats a leaving one.
const (
	claimNone uint8 = iota
	claimRevokedLeaving
	claimRevokedStaying
	claimActiveLeaving
	claimActiveStaying
)

// claim records that member rank reports task t in Assigned (active claim
// classes) or Revoked (revoked classes). The best class wins; members are
// offered in rank order, so the first-ranked member wins ties.
func (g *group) claim(t, rank int32, ifStaying, ifLeaving uint8) {
	c := ifStaying
	if g.leaving[rank] {
		c = ifLeaving
	}
	if c > g.ownerClass[t] {
		g.owner[t], g.ownerClass[t] = rank, c
	}
}

// List kinds recorded in the per-task stamp while one member is validated.
const (
	kindAssigned uint8 = 1 + iota
	kindRevoked
	kindLearning
	kindStandby
	kindMask  = 7
	kindReady = 8
	kindLag   = 16
	kindBits  = 5 // the bits the kinds take in reader.stamp
)

// maxMembers keeps rank+1 within reader.stamp's 32-kindBits bits.
const maxMembers = 1<<(32-kindBits) - 1

var kindNames = [...]string{kindAssigned: "assigned", kindRevoked: "revoked", kindLearning: "learning", kindStandby: "standby"}

// noLag stands for a lag nobody reported.
const noLag = int64(1<<63 - 1)

// warmEntry records that a member has local state for a task: a standby, or
// state it reported a lag for.
type warmEntry struct {
	task, member int32
	lag          int64
	standby      bool
}

// reader is ingest's scratch state, sized once and reused from member to
// member so that reading costs no allocation per member.
type reader struct {
	*group
	// stamp[t] is rank+1 of the member that last listed t, shifted left by
	// kindBits, or'ed with the lists (kind*) it listed t in, so each member
	// is validated in time linear in its report. One word per task instead
	// of a rank array and a kind array: validation touches one cache line
	// per listed task instead of two.
	stamp []uint32
	racks map[string]int32 // interned racks, nil until a member has one
	warm  []warmEntry      // every member's, in rank order

	// The member being read.
	m            *MemberMetadata
	pos          int              // its position in the input
	rank         int32            // its rank
	unknownKinds map[string]uint8 // lists of its tasks the topology lacks
	standby      []int32
	learning     []int32
}

func newReader(g *group) reader {
	var heldN, warmN, standbyMax, learningMax int
	for i := range g.in {
		m := &g.in[i]
		heldN += len(m.Assigned) + len(m.Revoked)
		warmN += len(m.Standby) + len(m.Lag)
		standbyMax, learningMax = max(standbyMax, len(m.Standby)), max(learningMax, len(m.Learning))
	}
	n, nt := len(g.in), len(g.tasks)
	g.held = csr{start: make([]int32, n+1), items: make([]int32, 0, heldN)}
	g.warmBy = csr{start: make([]int32, n+1)}
	return reader{group: g, stamp: make([]uint32, nt),
		warm: make([]warmEntry, 0, warmN), standby: make([]int32, 0, standbyMax), learning: make([]int32, 0, learningMax)}
}

// listed returns the lists (kind*) the member being read has listed t in so far.
func (rd *reader) listed(t int32) uint8 {
	if st := rd.stamp[t]; st>>kindBits == uint32(rd.rank+1) {
		return uint8(st)
	}
	return 0
}

// list records that the member being read lists t in k.
func (rd *reader) list(t int32, k uint8) {
	if st := rd.stamp[t]; st>>kindBits == uint32(rd.rank+1) {
		rd.stamp[t] = st | uint32(k)
	} else {
		rd.stamp[t] = uint32(rd.rank+1)<<kindBits | uint32(k)
	}
}

// read reads the report of the member of rank r.
func (rd *reader) read(r int32) error {
	rd.pos = int(rd.byRank[r])
	rd.m, rd.rank, rd.unknownKinds = &rd.in[rd.pos], r, nil
	if err := rd.readProfile(); err != nil {
		return err
	}
	if err := rd.readLists(); err != nil {
		return err
	}
	if err := rd.readReady(); err != nil {
		return err
	}
	lags, err := rd.readLag()
	if err != nil {
		return err
	}
	for _, t := range rd.standby {
		rd.warm = append(rd.warm, warmEntry{task: t, member: r, lag: lagOf(lags, t), standby: true})
	}
	// This member's warm entries, smallest lag first, then topology order.
	// Reports usually list tasks in topology order and no lags, so the
	// entries usually arrive sorted: checking costs one comparison per
	// entry, sorting several.
	if mine := rd.warm[rd.warmBy.start[r]:]; !slices.IsSortedFunc(mine, compareWarm) {
		slices.SortFunc(mine, compareWarm)
	}
	rd.warmBy.start[r+1] = int32(len(rd.warm))
	for _, t := range rd.learning {
		lag := lagOf(lags, t)
		ready := rd.listed(t)&kindReady != 0 || (rd.opts.AcceptableLag > 0 && lag <= rd.opts.AcceptableLag)
		rd.offerLearner(t, r, learnerKey{staying: !rd.m.Leaving, ready: ready, lag: lag})
	}
	return nil
}

// compareWarm orders one member's warm entries: smallest lag first, then
// topology order.
func compareWarm(x, y warmEntry) int {
	if x.lag != y.lag {
		return cmp.Compare(x.lag, y.lag)
	}
	return cmp.Compare(x.task, y.task)
}

// readProfile reads the member's leaving flag, capacity and rack.
func (rd *reader) readProfile() error {
	m, r := rd.m, rd.rank
	rd.leaving[r] = m.Leaving
	if !m.Leaving {
		rd.staying++
	}
	switch {
	case m.Capacity < 0:
		return memberErr(m, rd.pos, "capacity %d is negative", m.Capacity)
	case m.Capacity == 0:
		rd.capacity[r] = 1
	default:
		rd.capacity[r] = int64(m.Capacity)
	}
	if !m.Leaving {
		rd.capTotal += rd.capacity[r]
	}
	rd.rack[r] = none
	if m.Rack != "" {
		if !validID(m.Rack) {
			return memberErr(m, rd.pos, "malformed rack %q", m.Rack)
		}
		if rd.racks == nil {
			rd.racks = map[string]int32{}
		}
		id, ok := rd.racks[m.Rack]
		if !ok {
			id = int32(len(rd.racks))
			rd.racks[m.Rack] = id
		}
		rd.rack[r] = id
		rd.nRacks = len(rd.racks)
	}
	return nil
}

// readLists reads the lists that name tasks: Assigned and Revoked (the
// tasks the member holds, which claim ownership), Standby and Learning. A
// task may be in at most one of them; the error names the two lists in
// this order.
func (rd *reader) readLists() error {
	m := rd.m
	heldFrom := len(rd.held.items)
	rd.standby, rd.learning = rd.standby[:0], rd.learning[:0]
	lists := [...]struct {
		kind  uint8
		ids   []string
		into  *[]int32
		claim [2]uint8 // claim classes of a held task when staying, when leaving
	}{
		{kindAssigned, m.Assigned, &rd.held.items, [2]uint8{claimActiveStaying, claimActiveLeaving}},
		{kindRevoked, m.Revoked, &rd.held.items, [2]uint8{claimRevokedStaying, claimRevokedLeaving}},
		{kindStandby, m.Standby, &rd.standby, [2]uint8{claimNone, claimNone}},
		{kindLearning, m.Learning, &rd.learning, [2]uint8{claimNone, claimNone}},
	}
	for i := range lists {
		l := &lists[i]
		held := l.claim[0] != claimNone
		for _, id := range l.ids {
			t := rd.index.lookup(id)
			if t == none {
				if err := rd.unknownTask(id, l.kind, held); err != nil {
					return err
				}
				continue
			}
			if k := rd.listed(t) & kindMask; k != 0 {
				return memberErr(m, rd.pos, "task %q listed in both %s and %s", id, kindNames[k], kindNames[l.kind])
			}
			rd.list(t, l.kind)
			*l.into = append(*l.into, t)
			if held {
				rd.claim(t, rd.rank, l.claim[0], l.claim[1])
			}
		}
	}
	if held := rd.held.items[heldFrom:]; !slices.IsSorted(held) { // as above: usually sorted already
		slices.Sort(held)
	}
	rd.held.start[rd.rank+1] = int32(len(rd.held.items))
	return nil
}

// unknownTask checks a task the topology lacks, listed in list k. Such
// tasks are allowed, once; those the member held come back in its Revoked.
func (rd *reader) unknownTask(id string, k uint8, held bool) error {
	if !validID(id) {
		return memberErr(rd.m, rd.pos, "malformed task ID %q in %s", id, kindNames[k])
	}
	if rd.unknownKinds == nil {
		rd.unknownKinds = map[string]uint8{} // rare, so a map
	}
	if prev, dup := rd.unknownKinds[id]; dup {
		return memberErr(rd.m, rd.pos, "task %q listed in both %s and %s", id, kindNames[prev], kindNames[k])
	}
	rd.unknownKinds[id] = k
	if held {
		if rd.unknown == nil {
			rd.unknown = map[int32][]string{}
		}
		rd.unknown[rd.rank] = append(rd.unknown[rd.rank], id)
	}
	return nil
}

// readReady checks that Ready is a subset of Learning, without repeats.
func (rd *reader) readReady() error {
	for _, id := range rd.m.Ready {
		t := rd.index.lookup(id)
		if t == none {
			if rd.unknownKinds[id] != kindLearning {
				return memberErr(rd.m, rd.pos, "ready task %q is not in learning", id)
			}
			continue
		}
		k := rd.listed(t)
		if k&kindMask != kindLearning {
			return memberErr(rd.m, rd.pos, "ready task %q is not in learning", id)
		}
		if k&kindReady != 0 {
			return memberErr(rd.m, rd.pos, "ready task %q listed twice", id)
		}
		rd.list(t, kindReady)
	}
	return nil
}

// readLag reads the member's lags by task, nil when it reports none. Lag may
// be reported for any task with local state: learners, standbys, and state
// left on disk from earlier ownership; the last are warm entries of their own.
func (rd *reader) readLag() (map[int32]int64, error) {
	if len(rd.m.Lag) == 0 {
		return nil, nil
	}
	lags := make(map[int32]int64, len(rd.m.Lag))
	for _, l := range rd.m.Lag {
		if l.Lag < 0 {
			return nil, memberErr(rd.m, rd.pos, "lag %d of task %q is negative", l.Lag, l.Task)
		}
		t := rd.index.lookup(l.Task)
		if t == none {
			if !validID(l.Task) {
				return nil, memberErr(rd.m, rd.pos, "malformed task ID %q in lag", l.Task)
			}
			continue
		}
		k := rd.listed(t)
		if k&kindLag != 0 {
			return nil, memberErr(rd.m, rd.pos, "lag of task %q reported twice", l.Task)
		}
		rd.list(t, kindLag)
		lags[t] = l.Lag
		if k&kindMask == 0 {
			rd.warm = append(rd.warm, warmEntry{task: t, member: rd.rank, lag: l.Lag})
		}
	}
	return lags, nil
}

// lagOf returns the lag reported for t, noLag if none.
func lagOf(lags map[int32]int64, t int32) int64 {
	if l, ok := lags[t]; ok {
		return l
	}
	return noLag
}

// indexWarm lays out the warm entries by member and by task once every
// member is read. With none (no standbys and no lags reported, the common
// case without standbys) it allocates nothing: the per-task index alone
// would be as large as the task list.
func (rd *reader) indexWarm() {
	if len(rd.warm) == 0 {
		return
	}
	g, nt := rd.group, int32(len(rd.tasks))
	g.warmBy.items = make([]int32, len(rd.warm))
	for i, w := range rd.warm {
		g.warmBy.items[i] = w.task
	}
	// By task, a counting sort placing entries from the last: start[t]
	// counts down from the end of t's range to its beginning, so no cursor
	// array is needed, and each task's candidates stay in rank order (the
	// order entries were appended in).
	g.warm = csr{start: make([]int32, nt+1), items: make([]int32, len(rd.warm))}
	g.warmLag = make([]int64, len(rd.warm))
	g.warmIsSb = make([]bool, len(rd.warm))
	for _, w := range rd.warm {
		g.warm.start[w.task]++
	}
	sum := int32(0)
	for t := range nt + 1 {
		sum += g.warm.start[t]
		g.warm.start[t] = sum // the end of t's range
	}
	for i := len(rd.warm) - 1; i >= 0; i-- {
		w := &rd.warm[i]
		g.warm.start[w.task]--
		j := g.warm.start[w.task]
		g.warm.items[j], g.warmLag[j], g.warmIsSb[j] = w.member, w.lag, w.standby
	}
}
