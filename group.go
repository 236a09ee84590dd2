package learner

// group is the working state of one Assign call: the members' reports read
// into dense integers, members by rank (their position in natural ID order)
// and tasks by index. Per-member slices are indexed by rank, per-task slices
// by task index. They are allocated once per call, from the call's scratch
// (zeroed, so nothing carries over from an earlier call). Balancing and
// standby placement keep their own working state (balancePlan,
// standbyPlan) and write their decisions back here.
type group struct {
	*topology
	opts    Options
	scratch *scratch // where the group's arrays come from
	in      reports
	byRank  []int32 // rank -> position in in

	// Per member.
	leaving  []bool
	capacity []int64
	rack     []int32 // interned rack, none without one
	nRacks   int
	load     []int32 // planned active tasks: owned and not learned away, plus learning
	held     csr     // tasks reported in Assigned or Revoked, sorted
	warmBy   csr     // per member: tasks it has local state for (standby, lag, or a claim that lost: warmLosers), warmest lag first (reportedLag.compare)
	readyBy  csr     // per member: its learner tasks ready by Options.LearnerReady's rule; nil start when nobody learns
	unknown  map[int32][]string
	// contested is set when two members reported holding one task (in
	// Assigned or Revoked): the loser's held row then has a task it never
	// owned this round (see output).
	contested bool
	staying   int // members not leaving
	capTotal  int64

	// assignedAsListed[m] reports that m's Assigned list as reported is,
	// task for task, the Assigned part of its held row (in topology order,
	// no task the topology lacks); the rest of the row, the tasks of its
	// Revoked list, is then revokedHeld.row(m), in topology order. Output
	// returns that list (or merges into it what m gained) where m keeps it
	// and loses no more than the row's Revoked part.
	assignedAsListed []bool
	revokedHeld      csr
	// sbListed[m] is the length of m's Standby list when that list, as
	// reported, is its standbys in topology order (none the topology
	// lacks), else -1: output then returns that list where m keeps it
	// (standbysAsListed).
	sbListed []int32

	// Per task.
	owner   []int32 // rank of the active owner
	learner []int32 // rank of the learner
	// The keys of the learners ingest kept: task t's is
	// learnerKeys[keyAt[t]]. An index per task and a key per learner, not
	// a 16-byte key per task: few tasks have a learner, and at a million
	// tasks a key per task was 16 MB per call.
	keyAt       []int32
	learnerKeys []learnerKey
	fixed       []bool // placed this round: not to be moved again (but see takePlaced)
	// owned counts the tasks ingest found a holder for, and placed
	// records whether setOwner ever ran: two passes over every task
	// (placeOrphans' search for ownerless tasks, heldIsPlanned's for a
	// fixed one) are skipped when they cannot find anything, as in every
	// group where each task has an owner and no learner is ready.
	owned    int
	placed   bool
	warm     csr           // members with local state for the task (warmBy by task); nil start when none has and no standbys are placed
	warmLag  []reportedLag // nil when no member reported a lag (see warmLagAt)
	warmIsSb []bool

	learnersInFlight int // learners kept or placed, for Options.MaxLearners

	// Standbys: task t's are sbItems[sbStart[t]:sbStart[t]+sbHave[t]].
	sbStart, sbItems, sbHave []int32
	sbCount                  []int32 // per member
	sbExtra                  csr     // per task: caught-up copies kept while new ones replay (standby_warm.go)
	// standbysAsListed reports that placement kept every member's
	// standbys as it reported them (sbListed) and placed none: output
	// returns each Standby list that keeps a standby (sbCount) as
	// reported instead of writing the standbys task by task. That is a
	// stable group's standby placement, its fixed point.
	standbysAsListed bool
}

// newGroup allocates the per-member and per-task state of a group whose
// members, in rank order, are in[byRank[0]], in[byRank[1]], ...; nobody owns
// or learns anything yet.
func newGroup(topo *topology, opts Options, in reports, byRank []int32, s *scratch) *group {
	n, nt := in.len(), topo.numTasks()
	g := &group{topology: topo, opts: opts, scratch: s, in: in, byRank: byRank}
	g.leaving = s.bools.make(n)
	g.capacity = make([]int64, n)
	g.rack = s.int32s.make(n)
	g.load = s.int32s.make(n)
	g.owner = s.int32s.make(nt)
	g.learner = s.int32s.make(nt)
	g.fixed = s.bools.make(nt)
	fillNone(g.owner)
	fillNone(g.learner)
	return g
}

// fillNone sets every element of s to none by doubling copies: memmove
// writes many bytes per instruction where a loop writes one int32, which
// matters for the two per-task arrays every call fills.
func fillNone(s []int32) {
	if len(s) == 0 {
		return
	}
	s[0] = none
	for i := 1; i < len(s); i *= 2 {
		copy(s[i:], s[:i])
	}
}

// learnerKey is what ranks a member among the learners of one task
// (learnerKey.better holds the rule). The lag is kept unpacked, its flag
// beside the others, so that a key takes 16 bytes, not 24: there is one
// per learner.
type learnerKey struct {
	records                     int64
	lagReported, staying, ready bool
}

// lag returns the lag the learner reported.
func (k learnerKey) lag() reportedLag { return reportedLag{k.records, k.lagReported} }

// reportedLag is the changelog lag a member reported for its local state of
// one task, or the fact that it reported none: a flag, not a value, since
// every int64 from 0 up is a lag a member may report.
type reportedLag struct {
	records  int64
	reported bool
}

// rank returns the number of records l ranks by when copies are compared:
// the lag reported, or, with none reported, acceptable
// (Options.AcceptableLag). A standby that reports no lag is taken at its
// word as caught up (rule 13 keeps it as a warm copy), so it must rank
// with the caught-up copies, before every copy reporting a lag beyond
// acceptable: ranked after every reported lag, an orphan would go to a
// copy rule 13 counts behind while one it counts caught up is at hand
// (rule 5). It ranks after the copies reporting a lag within acceptable
// (compare): a lag is absent where it is not known, because the
// application reports none (SetLag is optional) or has not measured it
// yet (the state runtime and the coordinator report a copy not yet
// measured with the largest lag instead), and a measured lag is better
// evidence than a member's word. The
// rank is the same for every kind of copy: a not-ready learner that
// reports no lag ranks there too, before a standby of equal rank (the
// design's learner first), which the coordinator relies on where it cannot
// tell Assign that a standby has not started (AcceptableLag MaxInt64).
// Ranking and caughtUp read lags through this one function.
func (l reportedLag) rank(acceptable int64) int64 {
	if l.reported {
		return l.records
	}
	return acceptable
}

// caughtUp reports whether l counts as caught up: its rank within
// acceptable, that is, a lag within it or none reported.
func (l reportedLag) caughtUp(acceptable int64) bool { return l.rank(acceptable) <= acceptable }

// compare orders lags for choosing a member by, warmest first: the smaller
// rank, then a reported lag before none (see rank). Two reported lags, or
// two absent ones (every lag in a group that reports none), compare by
// records alone: the common cases skip rank, and compare stays inlined.
func (l reportedLag) compare(o reportedLag, acceptable int64) int {
	a, b := l.records, o.records // both 0 when absent
	if l.reported != o.reported {
		a, b = l.rank(acceptable), o.rank(acceptable)
		if a == b {
			if l.reported {
				return -1
			}
			return 1
		}
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// within reports whether l is a reported lag of at most limit.
func (l reportedLag) within(limit int64) bool { return l.reported && l.records <= limit }

// csr holds one sorted int32 list per row in one backing array (compressed
// sparse rows): one allocation instead of one per member or task.
type csr struct {
	start []int32 // row r is items[start[r]:start[r+1]]
	items []int32
}

func (c *csr) row(r int32) []int32 { return c.items[c.start[r]:c.start[r+1]] }

// warmLagAt returns the lag of warm-index entry i.
func (g *group) warmLagAt(i int32) reportedLag {
	if g.warmLag == nil {
		return reportedLag{} // nobody reported one
	}
	return g.warmLag[i]
}

// setOwner makes m the active owner of t for the rest of this call.
func (g *group) setOwner(t, m int32) {
	g.owner[t] = m
	g.fixed[t] = true
	g.placed = true
}

// keepsHeld reports whether member m still owns every task of its held
// row, given kept, how many tasks it owns that were not placed this round
// (owned minus fixed). Unless two members reported holding one task, each
// held task's owner is its holder until something places it (setOwner
// marks it fixed), and nothing places a task with the member that held
// it; so m owns kept of its held tasks, all of them when its row is that
// long. Counting kept is a pass over the per-task arrays in order; reading
// the owner of each held task was a random read per task.
func (g *group) keepsHeld(m, kept int32) bool {
	return !g.contested && int32(len(g.held.row(m))) == kept
}

// planned is the member that will own t once its learner (if any) is ready.
func (g *group) planned(t int32) int32 {
	if l := g.learner[t]; l != none {
		return l
	}
	return g.owner[t]
}
