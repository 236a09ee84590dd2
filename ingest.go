package learner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/learnerassignor/learner/internal/errtext"
)

// This file reads the members' self-reported tags (assigned, revoked,
// learning, ready, standby, leaving, lag) into the group's dense state,
// rejecting malformed reports with an error that names the member and the
// task, and resolves conflicting claims of ownership. Everything after it
// works on integers.

// ingest validates the members, orders them by ID and interns their reports.
func ingest(topo *topology, opts Options, in reports, s *scratch) (*group, error) {
	byRank, err := rankMembers(in, s)
	if err != nil {
		return nil, err
	}
	rd := newReader(newGroup(topo, opts, in, byRank, s))
	for r := range int32(in.len()) {
		if err := rd.read(r); err != nil {
			return nil, err
		}
	}
	if rd.classed { // claims to plain ranks
		for t, w := range rd.owner {
			if w != none {
				rd.owner[t] = w & (1<<claimShift - 1)
			}
		}
	}
	if rd.contested {
		rd.warmLosers()
	}
	rd.indexWarm()
	return rd.group, nil
}

// rankMembers checks the member IDs and returns the members' positions in
// natural ID order.
func rankMembers(in reports, s *scratch) ([]int32, error) {
	n := in.len()
	if n > MaxMembers {
		return nil, fmt.Errorf("learner: %d members, more than %d: %w", n, MaxMembers, ErrInvalidMember)
	}
	for i := range n {
		if !ValidID(in.id(i)) {
			return nil, memberErr(in.id(i), i, "malformed member ID (want 1-%d letters, digits, '_', '-', '.')", MaxIDLen)
		}
	}
	skip, key := sharedIDPrefix(in), make([]byte, 0, 2*MaxIDLen+1)
	heads := make([]keyHead, n)
	for i := range n {
		heads[i] = keyHead{head: naturalHead(key, in.id(i)[skip:]), pos: int32(i)}
	}
	slices.SortFunc(heads, func(x, y keyHead) int {
		if x.head != y.head {
			return cmp.Compare(x.head, y.head)
		}
		return compareIDs(in.id(int(x.pos)), in.id(int(y.pos)))
	})
	byRank := s.int32s.make(n)
	for r, h := range heads {
		byRank[r] = h.pos
	}
	for r := 1; r < n; r++ {
		if in.id(int(byRank[r])) == in.id(int(byRank[r-1])) {
			p := int(max(byRank[r], byRank[r-1]))
			return nil, &MemberError{Position: p, ID: in.id(p), Problem: "duplicate member ID", DuplicateOf: int(min(byRank[r], byRank[r-1]))}
		}
	}
	return byRank, nil
}

// keyHead is a member's place in the sort by natural ID order: the first
// eight bytes of the natural key of its ID past the prefix all IDs share
// (naturalHead). Kafka member IDs share a long prefix
// ("<client>-StreamThread-<n>-consumer-"), and most comparisons end at the
// heads, as one integer comparison in an array of heads instead of a walk
// over two IDs; equal heads fall back to compareIDs.
type keyHead struct {
	head uint64
	pos  int32 // position in the input
}

// naturalHead returns the first eight bytes of id's natural key
// (appendNaturalKey), packed big-endian with zeros past the key's end, so
// that heads order IDs as their keys' bytes do but for ties. It builds the
// key of a prefix of id that ends where a run of digits does, whose key
// starts the whole key's, and all of it only if that is shorter than
// eight bytes (runs of zeros shrink). key is scratch room for a whole key.
func naturalHead(key []byte, id string) uint64 {
	cut := min(len(id), 16)
	for cut < len(id) && isDigit(id[cut-1]) && isDigit(id[cut]) {
		cut++
	}
	k := appendNaturalKey(key[:0], id[:cut])
	if len(k) < 8 && cut < len(id) {
		k = appendNaturalKey(key[:0], id)
	}
	var h uint64
	for i := range 8 {
		h <<= 8
		if i < len(k) {
			h |= uint64(k[i])
		}
	}
	return h
}

// sharedIDPrefix returns the length of the prefix every member ID shares,
// backed up to the start of a run of digits so that no run straddles it:
// the natural keys of what follows it then order the members as the keys
// of their whole IDs do.
func sharedIDPrefix(in reports) int {
	if in.len() == 0 {
		return 0
	}
	first := in.id(0)
	n := len(first)
	for i := 1; i < in.len(); i++ {
		id := in.id(i)
		n = min(n, len(id))
		for j := range n {
			if id[j] != first[j] {
				n = j
				break
			}
		}
	}
	for n > 0 && isDigit(first[n-1]) {
		n--
	}
	return n
}

// Claim classes, best first: a running active beats a revoked-at-join copy,
// and a staying member beats a leaving one. While members are read, a
// claimed task's owner word holds its class above the owner's rank
// (class<<claimShift | rank, positive as ranks fit 27 bits), so a claim
// touches one per-task word instead of an owner and a class array, and the
// lower word wins. The best class is 0, so its words are plain ranks:
// ingest turns the others into plain ranks once every member is read, in
// a pass over every task, only if some member claimed with another class
// (reader.classed). In a group where nobody leaves and nothing is revoked
// the pass, a read and write of every task's word, is skipped.
const (
	claimActiveStaying uint8 = iota
	claimActiveLeaving
	claimRevokedStaying
	claimRevokedLeaving
	claimShift = 32 - kindBits // the class's place in a claim word: above every rank (MaxMembers)
)

// List kinds recorded in the per-task stamp while one member is validated.
// Stale (IndexedMember.Stale) is recorded only by ID: its tasks have no
// index.
const (
	kindAssigned uint8 = 1 + iota
	kindRevoked
	kindLearning
	kindStandby
	kindStale
	kindMask  = 7
	kindReady = 8
	kindLag   = 16
	kindBits  = 5 // the bits the kinds take in reader.stamp
	kindAll   = 1<<kindBits - 1
)

var kindNames = [...]string{kindAssigned: "assigned", kindRevoked: "revoked", kindLearning: "learning", kindStandby: "standby",
	kindStale: "stale", kindReady: "ready", kindLag: "lag"}

// warmEntry is one of a member's warm entries, gathered only to sort a
// member's entries in the rare report whose entries arrive out of order.
type warmEntry struct {
	task    int32
	lag     reportedLag
	standby bool
}

// reader is ingest's scratch state, sized once and reused from member to
// member so that reading costs no allocation per member.
type reader struct {
	*group
	// stamp[t] is rank+1 of the member that last listed t, shifted left by
	// kindBits, or'ed with the lists (kind*) it listed t in, so each member
	// is validated in time linear in its report. One word per task instead
	// of a rank array and a kind array: validation touches one cache line
	// per listed task instead of two. Nil until a member needs stamps
	// (needStamps): members whose lists rise are validated without them
	// (stampless).
	stamp []uint32
	racks map[string]int32 // interned racks, nil until a member has one
	// The warm entries, each recording that a member has local state for
	// a task (a standby, or state it reported a lag for), every member's in
	// rank order: their tasks are warmBy.items, and beside them whether
	// each is a standby and, once a member has reported a lag, its lag
	// (nil before). Parallel arrays, not a record per entry, because most
	// groups report no lags: an entry then takes 5 bytes, not 24, and there
	// is one per standby, a hundred thousand in a large group.
	warmSb  []bool
	warmLag []reportedLag

	// The member being read.
	m            report
	pos          int              // its position in the input
	rank         int32            // its rank
	unknownKinds map[string]uint8 // lists (kind*) of its tasks the topology lacks
	standby      []int32
	learning     []int32
	ready        []int32 // only while read without stamps, which then know no kindReady
	merge        []int32 // scratch for sortHeld
	classed      bool    // some member claimed a task with a class other than the best
	unstamped    bool    // its lists are read without stamps (see stampless)
	// Its held row, held.items[heldFrom:], is Assigned's tasks, then from
	// revokedFrom on Revoked's, until sortHeld merges the two.
	heldFrom, revokedFrom int
}

// report is the member being read, by ID or by index: its profile and
// its lists. Both entry points share every rule below: a listed task is
// read as its index (taskList.at) and, on the slow path of errors and
// tasks the topology lacks, with the ID it was given by ("" from a report
// by index); only what one form can get wrong (an ID the topology lacks,
// an index outside the topology) differs.
type report struct {
	id                                          string
	leaving                                     bool
	capacity                                    int
	rack                                        string
	assigned, revoked, learning, ready, standby taskList
	byID                                        *MemberMetadata // nil for a report by index
	byIndex                                     *IndexedMember  // nil for a report by ID
}

// taskList is one list of the member being read: task IDs (a report by
// ID) or task indices (by index); the other is nil.
//
// Why not turn the IDs into indices first and read one form: that pass,
// a buffer written and read back per member, added about a sixth to
// Assign's CPU time (profile of BenchmarkAssign at 10,000 x 1,000,000,
// stable); a branch per task that always goes the same way costs next to
// nothing.
type taskList struct {
	ids []string
	idx []int32
}

func (l *taskList) len() int { return len(l.ids) + len(l.idx) }

// at returns the index of the i-th task of l: none for an ID the topology
// lacks; an index from a report by index as given, in range or not.
func (l *taskList) at(x *taskIndex, i int) int32 {
	if l.ids != nil {
		return x.lookup(l.ids[i])
	}
	return l.idx[i]
}

// id returns the ID the i-th task of l was given by, "" in a report by
// index.
func (l *taskList) id(i int) string {
	if l.ids != nil {
		return l.ids[i]
	}
	return ""
}

func newReader(g *group) reader {
	var heldN, revokedN, warmN, learningN, standbyMax, learningMax, readyMax int
	note := func(assigned, revoked, learning, ready, standby, lag int) {
		heldN += assigned + revoked
		revokedN += revoked
		warmN += standby + lag
		learningN += learning
		standbyMax, learningMax, readyMax = max(standbyMax, standby), max(learningMax, learning), max(readyMax, ready)
	}
	for i := range g.in.byID {
		m := &g.in.byID[i]
		note(len(m.Assigned), len(m.Revoked), len(m.Learning), len(m.Ready), len(m.Standby), len(m.Lag))
	}
	for i := range g.in.byIndex {
		m := &g.in.byIndex[i]
		note(len(m.Assigned), len(m.Revoked), len(m.Learning), len(m.Ready), len(m.Standby), len(m.Lag))
	}
	n, nt, s := g.in.len(), g.numTasks(), g.scratch
	if learningN > 0 { // else nobody learns, and resolveLearners skips its pass
		g.keyAt, g.learnerKeys = s.int32s.make(nt), make([]learnerKey, 0, learningN)
		g.readyBy = csr{start: s.int32s.make(n + 1), items: s.int32s.room(learningN)}
	}
	g.held = csr{start: s.int32s.make(n + 1), items: s.int32s.room(heldN)}
	g.warmBy = csr{start: s.int32s.make(n + 1), items: s.int32s.room(warmN)}
	g.assignedAsListed = s.bools.make(n)
	g.revokedHeld = csr{start: s.int32s.make(n + 1), items: s.int32s.room(revokedN)}
	g.sbListed = s.int32s.make(n)
	return reader{group: g, warmSb: s.bools.room(warmN),
		standby: s.int32s.room(standbyMax), learning: s.int32s.room(learningMax), ready: s.int32s.room(readyMax)}
}

// load makes the member at position pos the one being read.
func (rd *reader) load(pos int) {
	if rd.in.byID == nil {
		m := &rd.in.byIndex[pos]
		rd.m = report{id: m.ID, leaving: m.Leaving, capacity: m.Capacity, rack: m.Rack,
			assigned: taskList{idx: m.Assigned}, revoked: taskList{idx: m.Revoked}, learning: taskList{idx: m.Learning},
			ready: taskList{idx: m.Ready}, standby: taskList{idx: m.Standby}, byIndex: m}
		return
	}
	m := &rd.in.byID[pos]
	rd.m = report{id: m.ID, leaving: m.Leaving, capacity: m.Capacity, rack: m.Rack,
		assigned: taskList{ids: m.Assigned}, revoked: taskList{ids: m.Revoked}, learning: taskList{ids: m.Learning},
		ready: taskList{ids: m.Ready}, standby: taskList{ids: m.Standby}, byID: m}
}

// known reports whether t is a task of the topology.
func (rd *reader) known(t int32) bool { return uint32(t) < uint32(rd.numTasks()) }

// needStamps returns the stamps, allocating them (all zero) on first use.
func (rd *reader) needStamps() []uint32 {
	if rd.stamp == nil {
		rd.stamp = rd.scratch.uint32s.make(rd.numTasks())
	}
	return rd.stamp
}

// stampless reports whether the member being read may have its lists
// read without stamps: it reports no lags (readLag looks its tasks up in
// the stamps).
//
// Stamps exist to catch a task listed twice by one member. A list that
// rises (each task's index above the one before) repeats none, two rising
// lists share a task only where a merge of the two meets one (cursor),
// and a rising Ready is in a rising Learning where a merge says so: so a
// member whose lists rise, as reports that list tasks in topology order
// do, is validated without stamps, by merges that read the lists in
// order. That saves a random read and write of a stamp per listed task.
// The first task that breaks the rule (out of order, unknown, in two
// lists, ready but not learning) stamps what the member listed so far
// (stampRead), and the member is read on with stamps, which find the
// error, or accept the order, as they would have from the start.
func (rd *reader) stampless() bool {
	if rd.m.byID != nil {
		return len(rd.m.byID.Lag) == 0
	}
	return len(rd.m.byIndex.Lag) == 0
}

// cursor walks a rising list alongside a rising read of tasks, to tell
// whether each task read is in the list: a merge, linear in both.
type cursor struct {
	list []int32
	i    int
}

// has reports whether t is in the list; t must be above the task asked
// about before.
func (c *cursor) has(t int32) bool {
	for c.i < len(c.list) && c.list[c.i] < t {
		c.i++
	}
	return c.i < len(c.list) && c.list[c.i] == t
}

// stampRead stamps what the member being read listed before the task that
// made it need stamps (stampless), in list k: the lists before k, in the
// order read reads them, and read, the tasks k listed so far. From then on
// the member is read with stamps.
func (rd *reader) stampRead(k uint8, read []int32) {
	stamp, me := rd.needStamps(), uint32(rd.rank+1)<<kindBits
	set := func(ts []int32, k uint8) {
		for _, t := range ts {
			stamp[t] = me | uint32(k)
		}
	}
	held := rd.held.items
	switch k {
	case kindReady:
		set(rd.learning, kindLearning)
		fallthrough
	case kindLearning:
		set(rd.standby, kindStandby)
		fallthrough
	case kindStandby:
		set(held[rd.revokedFrom:], kindRevoked)
		fallthrough
	case kindRevoked:
		set(held[rd.heldFrom:rd.revokedFrom], kindAssigned)
	}
	if k == kindReady {
		for _, t := range read {
			stamp[t] |= uint32(kindReady)
		}
	} else {
		set(read, k)
	}
	rd.unstamped = false
}

// quoted names a listed task for an error: by the ID it was given by or
// its task's, or by its index when that is outside the topology.
func (rd *reader) quoted(t int32, id string) string {
	switch {
	case rd.m.byID != nil:
		return errtext.Quote(id)
	case rd.known(t):
		return errtext.Quote(rd.id(t))
	}
	return fmt.Sprintf("index %d", t)
}

// resolve checks a task listed in list k as t (its index, none for an ID
// the topology lacks) and id (the ID it was given by, "" by index): it
// returns t, or none and the ID of a task the topology lacks; it fails
// for a malformed ID or an index outside the topology.
func (rd *reader) resolve(t int32, id string, k uint8) (int32, string, error) {
	switch {
	case rd.known(t):
		return t, "", nil
	case rd.m.byID == nil:
		return none, "", rd.fail("task %s in %s is outside the topology's %d tasks", rd.quoted(t, id), kindNames[k], rd.numTasks())
	case !ValidID(id):
		return none, "", rd.fail("malformed task ID %s in %s", errtext.Quote(id), kindNames[k])
	}
	return none, id, nil
}

// fail reports a problem with the member being read.
func (rd *reader) fail(format string, args ...any) error {
	return memberErr(rd.m.id, rd.pos, format, args...)
}

// listed returns the lists (kind*) the member being read has listed task t
// in so far; for a task the topology lacks (t is none), by its ID. Known and
// unknown tasks obey the same rules, so both go through here.
func (rd *reader) listed(t int32, id string) uint8 {
	if t == none {
		return rd.unknownKinds[id]
	}
	if st := rd.stamp[t]; st>>kindBits == uint32(rd.rank+1) {
		return uint8(st)
	}
	return 0
}

// list records that the member being read lists task t (by ID when t is
// none) in k.
func (rd *reader) list(t int32, id string, k uint8) {
	if t == none {
		if rd.unknownKinds == nil {
			rd.unknownKinds = map[string]uint8{} // rare, so a map
		}
		rd.unknownKinds[id] |= k
		return
	}
	if st := rd.stamp[t]; st>>kindBits == uint32(rd.rank+1) {
		rd.stamp[t] = st | uint32(k)
	} else {
		rd.stamp[t] = uint32(rd.rank+1)<<kindBits | uint32(k)
	}
}

// read reads the report of the member of rank r.
func (rd *reader) read(r int32) error {
	rd.pos = int(rd.byRank[r])
	rd.rank, rd.unknownKinds = r, nil
	rd.load(rd.pos)
	if rd.unstamped = rd.stampless(); !rd.unstamped {
		rd.needStamps()
	}
	if err := rd.readProfile(); err != nil {
		return err
	}
	if err := rd.readLists(); err != nil {
		return err
	}
	if err := rd.readReady(); err != nil {
		return err
	}
	rd.sortHeld()
	rd.held.start[r+1] = int32(len(rd.held.items))
	lags, err := rd.readLag()
	if err != nil {
		return err
	}
	for _, t := range rd.standby {
		rd.addWarm(t, lagOf(lags, t), true)
	}
	// This member's warm entries, warmest lag first, then topology order.
	// Reports usually list tasks in topology order and no lags, so the
	// entries usually arrive sorted: checking costs one comparison per
	// entry, sorting several. Without lags they are its standbys, in
	// Standby's order, and checking that list is cheaper still.
	rising := rd.unstamped || slices.IsSorted(rd.standby) // read rising, or checked; no repeats: a repeat is an error
	rd.sbListed[r] = -1
	if rising && len(rd.standby) == rd.m.standby.len() {
		rd.sbListed[r] = int32(len(rd.standby))
	}
	if sorted := lags == nil && rising; !sorted {
		rd.sortWarm(int(rd.warmBy.start[r]))
	}
	rd.warmBy.start[r+1] = int32(len(rd.warmBy.items))
	readyRead := cursor{list: rd.ready}
	for _, t := range rd.learning {
		lag := lagOf(lags, t)
		var reported bool // listed in Ready
		if rd.unstamped {
			reported = readyRead.has(t)
		} else {
			reported = rd.listed(t, "")&kindReady != 0
		}
		ready := rd.opts.learnerReady(reported, lag.within(rd.opts.AcceptableLag))
		if ready {
			rd.readyBy.items = append(rd.readyBy.items, t)
		}
		rd.offerLearner(t, r, learnerKey{records: lag.records, lagReported: lag.reported, staying: !rd.m.leaving, ready: ready})
	}
	if rd.readyBy.start != nil {
		rd.readyBy.start[r+1] = int32(len(rd.readyBy.items))
	}
	return nil
}

// addWarm appends a warm entry of the member being read.
func (rd *reader) addWarm(t int32, lag reportedLag, standby bool) {
	rd.warmBy.items = append(rd.warmBy.items, t)
	rd.warmSb = append(rd.warmSb, standby)
	if rd.warmLag != nil {
		rd.warmLag = append(rd.warmLag, lag)
	}
}

// warmEntryAt gathers warm entry i.
func (rd *reader) warmEntryAt(i int) warmEntry {
	e := warmEntry{task: rd.warmBy.items[i], standby: rd.warmSb[i]}
	if rd.warmLag != nil {
		e.lag = rd.warmLag[i]
	}
	return e
}

// sortWarm sorts the warm entries from position from on (the member's
// being read) by compareWarm, unless they are sorted already.
func (rd *reader) sortWarm(from int) {
	to := len(rd.warmBy.items)
	sorted := true
	for i := from + 1; i < to && sorted; i++ {
		sorted = rd.compareWarm(rd.warmEntryAt(i-1), rd.warmEntryAt(i)) <= 0
	}
	if sorted {
		return
	}
	es := make([]warmEntry, 0, to-from)
	for i := from; i < to; i++ {
		es = append(es, rd.warmEntryAt(i))
	}
	slices.SortFunc(es, rd.compareWarm)
	for i, e := range es {
		rd.warmBy.items[from+i], rd.warmSb[from+i] = e.task, e.standby
		if rd.warmLag != nil {
			rd.warmLag[from+i] = e.lag
		}
	}
}

// compareWarm orders one member's warm entries: warmest lag first
// (reportedLag.compare), then topology order.
func (rd *reader) compareWarm(x, y warmEntry) int {
	if c := x.lag.compare(y.lag, rd.opts.AcceptableLag); c != 0 {
		return c
	}
	return cmp.Compare(x.task, y.task)
}

// readProfile reads the member's leaving flag, capacity and rack.
func (rd *reader) readProfile() error {
	r := rd.rank
	rd.leaving[r] = rd.m.leaving
	if !rd.m.leaving {
		rd.staying++
	}
	switch {
	case rd.m.capacity < 0 || rd.m.capacity > MaxCapacity:
		return rd.fail("capacity %d is out of range (0 to %d)", rd.m.capacity, MaxCapacity)
	case rd.m.capacity == 0:
		rd.capacity[r] = 1
	default:
		rd.capacity[r] = int64(rd.m.capacity)
	}
	if !rd.m.leaving {
		rd.capTotal += rd.capacity[r]
	}
	rd.rack[r] = none
	if rd.m.rack != "" {
		if !ValidID(rd.m.rack) {
			return rd.fail("malformed rack %s", errtext.Quote(rd.m.rack))
		}
		if rd.racks == nil {
			rd.racks = map[string]int32{}
		}
		id, ok := rd.racks[rd.m.rack]
		if !ok {
			id = int32(len(rd.racks))
			rd.racks[rd.m.rack] = id
		}
		rd.rack[r] = id
		rd.nRacks = len(rd.racks)
	}
	return nil
}

// readLists reads the lists that name tasks: Assigned and Revoked (the
// tasks the member holds, which claim ownership), Stale, Standby and
// Learning. A task may be in at most one of them, once; the error names the
// two lists in this order.
//
// One loop per kind of list instead of one over a table of lists: the hot
// loop then keeps its slice and claim class in registers, and ingest is
// most of Assign's time for a group with little to move.
func (rd *reader) readLists() error {
	rd.heldFrom, rd.revokedFrom = len(rd.held.items), len(rd.held.items)
	if err := rd.readHeld(rd.m.assigned, kindAssigned, claimActiveStaying, claimActiveLeaving); err != nil {
		return err
	}
	rd.revokedFrom = len(rd.held.items)
	if err := rd.readHeld(rd.m.revoked, kindRevoked, claimRevokedStaying, claimRevokedLeaving); err != nil {
		return err
	}
	if err := rd.readStale(); err != nil {
		return err
	}
	var err error
	if rd.standby, err = rd.readRole(rd.m.standby, kindStandby, rd.standby[:0]); err != nil {
		return err
	}
	rd.learning, err = rd.readRole(rd.m.learning, kindLearning, rd.learning[:0])
	return err
}

// readHeld reads the entries of Assigned or Revoked (kind k): each known
// task goes to the member's held row and claims ownership with the list's
// class when the member stays or leaves; an unknown one comes back in its
// Revoked. Read without stamps (stampless), Revoked is merged with
// Assigned.
func (rd *reader) readHeld(l taskList, k, ifStaying, ifLeaving uint8) error {
	class := ifStaying
	if rd.m.leaving {
		class = ifLeaving
	}
	mine := int32(class)<<claimShift | rd.rank
	rd.classed = rd.classed || class != claimActiveStaying && l.len() > 0
	me := uint32(rd.rank+1) << kindBits
	// The loop keeps what it reads at every task in locals: fields read
	// through rd would be loaded again after every write to memory.
	stamp, index, owner, held := rd.stamp, &rd.index, rd.owner, rd.held.items
	from, last, unstamped := len(held), int32(none), rd.unstamped
	assigned := cursor{list: held[rd.heldFrom:rd.revokedFrom]} // empty while Assigned is read
	for i := range l.len() {
		t := l.at(index, i)
		if unstamped && uint32(t) < uint32(len(owner)) && t > last && !assigned.has(t) {
			last = t
		} else {
			if unstamped { // out of order, unknown or in Assigned: stamps from here on
				rd.stampRead(k, held[from:])
				unstamped, stamp = false, rd.stamp
			}
			if uint32(t) >= uint32(len(stamp)) || stamp[t]&^kindAll == me { // unknown, or a repeat: mark says which error
				var id string
				var err error
				if t, id, err = rd.mark(t, l.id(i), k); err != nil {
					return err
				}
				if t == none {
					rd.addUnknown(id)
					continue
				}
			} else {
				stamp[t] = me | uint32(k)
			}
		}
		held = append(held, t)
	}
	rd.held.items = held
	// The claims, in a loop of their own. At a million tasks nearly every
	// owner word is a cache miss; in the loop above, a lookup's worth of
	// instructions apart, the processor could overlap few of them.
	claimed := 0
	for _, t := range held[from:] {
		if w := owner[t]; w == none {
			owner[t] = mine
			claimed++
		} else {
			rd.contested = true
			if mine < w { // the best class wins; members come in rank order, so the first wins ties
				owner[t] = mine
			}
		}
	}
	rd.owned += claimed
	return nil
}

// addUnknown records a task the member holds that the topology lacks: it
// comes back in the member's Revoked (or Stale).
func (rd *reader) addUnknown(id string) {
	if rd.unknown == nil {
		rd.unknown = map[int32][]string{}
	}
	rd.unknown[rd.rank] = append(rd.unknown[rd.rank], id)
}

// readStale reads IndexedMember.Stale: held tasks the topology lacks, by
// ID, each valid, once and really not in the topology (else its index was
// due).
func (rd *reader) readStale() error {
	if rd.m.byIndex == nil {
		return nil
	}
	for _, id := range rd.m.byIndex.Stale {
		if !ValidID(id) {
			return rd.fail("malformed task ID %s in %s", errtext.Quote(id), kindNames[kindStale])
		}
		if t := rd.index.lookup(id); t != none {
			return rd.fail("task %s in %s is in the topology (index %d)", errtext.Quote(id), kindNames[kindStale], t)
		}
		if rd.listed(none, id)&kindMask != 0 {
			return rd.fail("task %s listed twice in %s", errtext.Quote(id), kindNames[kindStale])
		}
		rd.list(none, id, kindStale)
		rd.addUnknown(id)
	}
	return nil
}

// readRole reads the entries of Standby or Learning (kind k), appending
// its known tasks to into; unknown ones are dropped. Read without stamps
// (stampless), each is merged with the lists read before it.
func (rd *reader) readRole(l taskList, k uint8, into []int32) ([]int32, error) {
	me := uint32(rd.rank+1) << kindBits
	held := rd.held.items
	before := [...]cursor{{list: held[rd.heldFrom:rd.revokedFrom]}, {list: held[rd.revokedFrom:]}, {}}
	if k == kindLearning {
		before[2].list = rd.standby
	}
	from, last, unstamped, nt := len(into), int32(none), rd.unstamped, uint32(rd.numTasks())
	for i := range l.len() {
		t := l.at(&rd.index, i)
		if unstamped {
			if uint32(t) < nt && t > last && !before[0].has(t) && !before[1].has(t) && !before[2].has(t) {
				last = t
				into = append(into, t)
				continue
			}
			rd.stampRead(k, into[from:])
			unstamped = false
		}
		if !rd.known(t) || rd.stamp[t]&^kindAll == me { // unknown, or a repeat: mark says which error
			var err error
			if t, _, err = rd.mark(t, l.id(i), k); err != nil {
				return into, err
			}
			if t == none {
				continue // dropped
			}
		} else {
			rd.stamp[t] = me | uint32(k)
		}
		into = append(into, t)
	}
	return into, nil
}

// mark checks a task listed in k (as resolve takes it) that is not in the
// topology or was listed before: that it names a task (the topology's, or
// a well-formed ID it lacks) and that no list of the member had it before.
// It records the task and returns it, or none and the ID of one the
// topology lacks.
func (rd *reader) mark(t int32, id string, k uint8) (int32, string, error) {
	t, name, err := rd.resolve(t, id, k)
	if err != nil {
		return none, "", err
	}
	if was := rd.listed(t, name) & kindMask; was == k {
		return none, "", rd.fail("task %s listed twice in %s", rd.quoted(t, id), kindNames[k])
	} else if was != 0 {
		return none, "", rd.fail("task %s listed in both %s and %s", rd.quoted(t, id), kindNames[was], kindNames[k])
	}
	rd.list(t, name, k)
	return t, name, nil
}

// sortHeld sorts the member's held row, of which the tasks before
// revokedFrom came from Assigned and the rest from Revoked. Reports
// usually list each in topology order, so the row is usually sorted
// already (one comparison per task) or two sorted runs, merged in linear
// time through a scratch buffer; only other rows pay for a sort. It notes
// whether the row's Assigned part is the member's Assigned list as
// reported, and if so keeps its Revoked part (group.assignedAsListed).
func (rd *reader) sortHeld() {
	row := rd.held.items[rd.heldFrom:]
	a, b := row[:rd.revokedFrom-rd.heldFrom], row[rd.revokedFrom-rd.heldFrom:]
	var sorted, runs bool
	if rd.unstamped { // each list was read rising: no need to check
		sorted = len(a) == 0 || len(b) == 0 || a[len(a)-1] < b[0]
		runs = !sorted
	} else {
		sorted = slices.IsSorted(row)
		runs = !sorted && slices.IsSorted(a) && slices.IsSorted(b)
	}
	if (sorted || runs) && len(a) == rd.m.assigned.len() { // none of Assigned unknown
		rd.assignedAsListed[rd.rank] = true
		rd.revokedHeld.items = append(rd.revokedHeld.items, b...) // before the merge overwrites b
	}
	rd.revokedHeld.start[rd.rank+1] = int32(len(rd.revokedHeld.items))
	switch {
	case sorted:
	case runs:
		rd.merge = append(rd.merge[:0], a...)
		a = rd.merge
		i, j := 0, 0
		for k := range row {
			if j == len(b) || i < len(a) && a[i] < b[j] {
				row[k] = a[i]
				i++
			} else {
				row[k] = b[j]
				j++
			}
		}
	default:
		slices.Sort(row)
	}
}

// readReady checks that Ready is a subset of Learning, without repeats.
func (rd *reader) readReady() error {
	l := &rd.m.ready
	learning, last := cursor{list: rd.learning}, int32(none)
	rd.ready = rd.ready[:0]
	for i := range l.len() {
		t, id := l.at(&rd.index, i), l.id(i)
		if rd.unstamped {
			if rd.known(t) && t > last && learning.has(t) {
				last = t
				rd.ready = append(rd.ready, t)
				continue
			}
			rd.stampRead(kindReady, rd.ready)
		}
		if !rd.known(t) {
			if rd.m.byID == nil {
				_, _, err := rd.resolve(t, id, kindReady) // an index outside the topology
				return err
			}
			t = none // an ID the topology lacks: its kinds are kept by ID
		}
		k := rd.listed(t, id)
		if k&kindMask != kindLearning {
			return rd.fail("ready task %s is not in learning", rd.quoted(t, id))
		}
		if k&kindReady != 0 {
			return rd.fail("ready task %s listed twice", rd.quoted(t, id))
		}
		rd.list(t, id, kindReady)
	}
	return nil
}

// readLag reads the member's lags by task, nil when it reports none. Lag may
// be reported for any task with local state: learners, standbys, and state
// left on disk from earlier ownership; the last are warm entries of their own.
// Lags only ever enter comparisons, so every non-negative int64 is allowed.
func (rd *reader) readLag() (map[int32]int64, error) {
	n := rd.lagCount()
	if n == 0 {
		return nil, nil
	}
	if rd.warmLag == nil { // the first lag: the entries so far reported none
		rd.warmLag = make([]reportedLag, len(rd.warmBy.items), cap(rd.warmBy.items))
	}
	lags := make(map[int32]int64, n)
	for i := range n {
		t, id, lag := rd.lagAt(i)
		if lag < 0 {
			return nil, rd.fail("lag %d of task %s is negative", lag, rd.quoted(t, id))
		}
		t, name, err := rd.resolve(t, id, kindLag)
		if err != nil {
			return nil, err
		}
		k := rd.listed(t, name)
		if k&kindLag != 0 {
			return nil, rd.fail("lag of task %s reported twice", rd.quoted(t, id))
		}
		rd.list(t, name, kindLag)
		if t == none {
			continue
		}
		lags[t] = lag
		if k&kindMask == 0 {
			rd.addWarm(t, reportedLag{lag, true}, false)
		}
	}
	return lags, nil
}

// lagCount returns how many lags the member reported.
func (rd *reader) lagCount() int {
	if rd.m.byID != nil {
		return len(rd.m.byID.Lag)
	}
	return len(rd.m.byIndex.Lag)
}

// lagAt returns the member's i-th lag: its task as resolve takes it, and
// the lag.
func (rd *reader) lagAt(i int) (int32, string, int64) {
	if rd.m.byIndex != nil {
		l := rd.m.byIndex.Lag[i]
		return l.Task, "", l.Lag
	}
	l := rd.m.byID.Lag[i]
	return rd.index.lookup(l.Task), l.Task, l.Lag
}

// lagOf returns the lag reported for t, if any.
func lagOf(lags map[int32]int64, t int32) reportedLag {
	l, ok := lags[t]
	return reportedLag{l, ok}
}

// indexWarm lays out the warm entries by member and by task once every
// member is read. With none, and no standbys to place (standby placement
// reads the per-task index), it allocates nothing: the common case without
// standbys, where the per-task index alone would be as large as the task
// list.
func (rd *reader) indexWarm() {
	entries := rd.warmBy.items // by member
	if len(entries) == 0 && rd.opts.Standbys == 0 {
		return
	}
	g, nt, s := rd.group, int32(rd.numTasks()), rd.scratch
	// By task, a counting sort placing entries from the last: start[t]
	// counts down from the end of t's range to its beginning, so no cursor
	// array is needed, and each task's candidates stay in rank order (the
	// order entries were appended in).
	g.warm = csr{start: s.int32s.make(int(nt) + 1), items: s.int32s.make(len(entries))}
	// Lags only when someone reported one: without, every entry's lag is
	// "none reported", and the 16 bytes an entry would take are a
	// quarter of what standbys=1 allocates.
	if rd.warmLag != nil {
		g.warmLag = make([]reportedLag, len(entries))
	}
	g.warmIsSb = s.bools.make(len(entries))
	for _, t := range entries {
		g.warm.start[t]++
	}
	sum := int32(0)
	for t := range nt + 1 {
		sum += g.warm.start[t]
		g.warm.start[t] = sum // the end of t's range
	}
	for m := int32(len(g.load)) - 1; m >= 0; m-- {
		for i := g.warmBy.start[m+1] - 1; i >= g.warmBy.start[m]; i-- {
			t := entries[i]
			g.warm.start[t]--
			j := g.warm.start[t]
			g.warm.items[j], g.warmIsSb[j] = m, rd.warmSb[i]
			if g.warmLag != nil {
				g.warmLag[j] = rd.warmLag[i]
			}
		}
	}
}

// warmLosers gives each member whose claim to a stateful task lost (it
// holds the task, another member owns it) a warm entry for it, with the
// lag it reported for it if any. The loser ran the task or revoked it at
// this join, so it has the task's state; ownership went to the winning
// claim, but choosing a learner for a leaving owner's task (rule 6) or a
// task to balance onto the loser (rule 8) should rank it as any member
// with local state, not as one without. The entry gives the loser no
// claim: it is never an owner by it, only a candidate learner.
//
// It runs only when claims collided (group.contested), in stale or
// conflicting reports, once the claims are resolved: it reads the owner of
// every held task, as output does then too, and rebuilds the warm rows.
// Finding the losers here, not where readHeld resolves the claims, leaves
// that loop, which every call runs over every held task, as it was.
func (rd *reader) warmLosers() {
	old, n := rd.warmBy, len(rd.warmBy.start)-1
	by := csr{start: make([]int32, n+1), items: make([]int32, 0, len(old.items))}
	sb := make([]bool, 0, len(old.items))
	var lag []reportedLag // nil while nobody reported a lag, as warmLag
	if rd.warmLag != nil {
		lag = make([]reportedLag, 0, len(old.items))
	}
	var es []warmEntry
	for m := range int32(n) {
		from, to := old.start[m], old.start[m+1]
		es = es[:0]
		var lags map[int32]int64
		row := rd.held.row(m)
		for _, t := range row {
			if rd.owner[t] == m || !rd.isStateful(t) {
				continue
			}
			if len(es) == 0 { // the first loss: room for them all, and m's entries
				lags, es = rd.lagsOf(m), slices.Grow(es, len(row)+int(to-from))
			}
			es = append(es, warmEntry{task: t, lag: lagOf(lags, t)})
		}
		if len(es) == 0 {
			by.items = append(by.items, old.items[from:to]...)
			sb = append(sb, rd.warmSb[from:to]...)
			if lag != nil {
				lag = append(lag, rd.warmLag[from:to]...)
			}
			by.start[m+1] = int32(len(by.items))
			continue
		}
		for i := from; i < to; i++ {
			es = append(es, rd.warmEntryAt(int(i)))
		}
		slices.SortFunc(es, rd.compareWarm)
		by.items, sb = slices.Grow(by.items, len(es)), slices.Grow(sb, len(es))
		if lag != nil {
			lag = slices.Grow(lag, len(es))
		}
		for _, e := range es {
			by.items = append(by.items, e.task)
			sb = append(sb, e.standby)
			if lag != nil {
				lag = append(lag, e.lag)
			}
		}
		by.start[m+1] = int32(len(by.items))
	}
	rd.warmBy, rd.warmSb, rd.warmLag = by, sb, lag
}

// lagsOf returns the lags member m reported, by task, nil when it reported
// none. It makes m the member being read again: its report was read
// (readLag), so it is valid.
func (rd *reader) lagsOf(m int32) map[int32]int64 {
	rd.load(int(rd.byRank[m]))
	n := rd.lagCount()
	if n == 0 {
		return nil
	}
	lags := make(map[int32]int64, n)
	for i := range n {
		if t, _, lag := rd.lagAt(i); t != none {
			lags[t] = lag
		}
	}
	return lags
}
