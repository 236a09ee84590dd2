package learner

import (
	"fmt"
	"slices"
)

// This file reads the members' self-reported tags (assigned, revoked,
// learning, ready, standby, leaving, lag) into dense per-task state and
// resolves conflicting claims. Everything after it works on integers:
// members by rank (their position in natural ID order) and tasks by index.

const none = -1

// group is the working state of one Assign call. Per-member slices are
// indexed by rank, per-task slices by task index. They are allocated once per
// call; nothing is shared between calls.
type group struct {
	*Assignor
	in     []MemberMetadata
	byRank []int32 // rank -> position in in

	// Per member.
	leaving  []bool
	capacity []int64
	rack     []int32 // interned rack, none without one
	nRacks   int
	load     []int32 // planned active tasks: owned and not learned away, plus learning
	held     csr     // tasks reported in Assigned or Revoked, sorted
	warmBy   csr     // per member: tasks it has local state for (standby or lag), smallest lag first
	unknown  map[int32][]string
	staying  int // members not leaving
	capTotal int64

	// Per task.
	owner      []int32 // rank of the active owner
	ownerClass []uint8 // how the owner claimed it (claim*), for conflicts
	learner    []int32 // rank of the learner
	learnerKey []learnerKey
	fixed      []bool // placed this round: not to be moved again
	warm       csr    // members with local state for the task (standby or lag)
	warmLag    []int64
	warmIsSb   []bool

	learnersInFlight int // learners kept or placed, for Options.MaxLearners

	// Balancing.
	shed     []int32   // movable tasks, by member and segment (shed.go)
	segs     []segment // member m's are segs[segStart[m]:segStart[m+1]]
	segStart []int32
	spread   spread

	// Standbys: task t's are sbItems[sbStart[t]:sbStart[t]+sbHave[t]].
	sbStart, sbItems, sbHave []int32
	sbCount                  []int32 // per member
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

// learnerKey ranks competing learners of one task: staying first, then
// ready, then the smallest lag; the first-ranked member wins remaining ties.
type learnerKey struct {
	staying, ready bool
	lag            int64
}

func (k learnerKey) better(o learnerKey) bool {
	if k.staying != o.staying {
		return k.staying
	}
	if k.ready != o.ready {
		return k.ready
	}
	return k.lag < o.lag
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// noLag stands for a lag nobody reported.
const noLag = int64(1<<63 - 1)

// csr holds one sorted int32 list per row in one backing array (compressed
// sparse rows): one allocation instead of one per member or task.
type csr struct {
	start []int32 // row r is items[start[r]:start[r+1]]
	items []int32
}

func (c *csr) row(r int32) []int32 { return c.items[c.start[r]:c.start[r+1]] }

// List kinds recorded in the per-task stamp while one member is validated.
const (
	kindAssigned uint8 = 1 + iota
	kindRevoked
	kindLearning
	kindStandby
	kindMask  = 7
	kindReady = 8
	kindLag   = 16
)

var kindNames = [...]string{kindAssigned: "assigned", kindRevoked: "revoked", kindLearning: "learning", kindStandby: "standby"}

func memberErr(m *MemberMetadata, pos int, format string, args ...any) error {
	return fmt.Errorf("learner: member %q (position %d): %s: %w", m.ID, pos, fmt.Sprintf(format, args...), ErrInvalidMember)
}

// ingest validates the members, orders them by ID and interns their reports.
func (a *Assignor) ingest(in []MemberMetadata) (*group, error) {
	n, nt := len(in), len(a.tasks)
	g := &group{Assignor: a, in: in}
	for i := range in {
		if !validID(in[i].ID) {
			return nil, memberErr(&in[i], i, "malformed member ID (want 1-%d letters, digits, '_', '-', '.')", maxIDLen)
		}
	}
	g.byRank = make([]int32, n)
	for i := range g.byRank {
		g.byRank[i] = int32(i)
	}
	slices.SortFunc(g.byRank, func(x, y int32) int { return compareIDs(in[x].ID, in[y].ID) })
	for r := 1; r < n; r++ {
		if in[g.byRank[r]].ID == in[g.byRank[r-1]].ID {
			p := int(max(g.byRank[r], g.byRank[r-1]))
			return nil, memberErr(&in[p], p, "duplicate member ID (also at position %d)", min(g.byRank[r], g.byRank[r-1]))
		}
	}

	g.leaving = make([]bool, n)
	g.capacity = make([]int64, n)
	g.rack = make([]int32, n)
	g.load = make([]int32, n)
	g.owner = make([]int32, nt)
	g.ownerClass = make([]uint8, nt)
	g.learner = make([]int32, nt)
	g.fixed = make([]bool, nt)
	for t := range g.owner {
		g.owner[t], g.learner[t] = none, none
	}

	// The stamp marks which member last listed a task and in which list,
	// so each member is validated in time linear in its report.
	stamp := make([]int32, nt)
	kind := make([]uint8, nt)
	racks := map[string]int32{}
	var heldN, warmN int
	for r := range n {
		m := &in[g.byRank[r]]
		heldN += len(m.Assigned) + len(m.Revoked)
		warmN += len(m.Standby) + len(m.Lag)
	}
	g.held = csr{start: make([]int32, n+1), items: make([]int32, 0, heldN)}
	g.warmBy = csr{start: make([]int32, n+1)}
	type warmEntry struct {
		task, member int32
		lag          int64
		standby      bool
	}
	warm := make([]warmEntry, 0, warmN)

	var standby, learning []int32 // one member's, reused: no allocation per member
	for r := range n {
		pos := int(g.byRank[r])
		m := &in[pos]
		rank := int32(r)
		g.leaving[r] = m.Leaving
		if !m.Leaving {
			g.staying++
		}
		switch {
		case m.Capacity < 0:
			return nil, memberErr(m, pos, "capacity %d is negative", m.Capacity)
		case m.Capacity == 0:
			g.capacity[r] = 1
		default:
			g.capacity[r] = int64(m.Capacity)
		}
		if !m.Leaving {
			g.capTotal += g.capacity[r]
		}
		g.rack[r] = none
		if m.Rack != "" {
			if !validID(m.Rack) {
				return nil, memberErr(m, pos, "malformed rack %q", m.Rack)
			}
			id, ok := racks[m.Rack]
			if !ok {
				id = int32(len(racks))
				racks[m.Rack] = id
			}
			g.rack[r] = id
		}

		var unknownKinds map[string]uint8 // tasks the topology lacks: rare, so a map
		mark := func(id string, k uint8) (int32, error) {
			t := g.index.lookup(id)
			if t == none {
				if !validID(id) {
					return none, memberErr(m, pos, "malformed task ID %q in %s", id, kindNames[k])
				}
				if unknownKinds == nil {
					unknownKinds = map[string]uint8{}
				}
				if prev, dup := unknownKinds[id]; dup {
					return none, memberErr(m, pos, "task %q listed in both %s and %s", id, kindNames[prev], kindNames[k])
				}
				unknownKinds[id] = k
				if k == kindAssigned || k == kindRevoked {
					if g.unknown == nil {
						g.unknown = map[int32][]string{}
					}
					g.unknown[rank] = append(g.unknown[rank], id)
				}
				return none, nil
			}
			if stamp[t] == rank+1 && kind[t]&kindMask != 0 {
				return none, memberErr(m, pos, "task %q listed in both %s and %s", id, kindNames[kind[t]&kindMask], kindNames[k])
			}
			if stamp[t] != rank+1 {
				stamp[t], kind[t] = rank+1, 0
			}
			kind[t] |= k
			return t, nil
		}

		heldFrom := len(g.held.items)
		for _, id := range m.Assigned {
			t, err := mark(id, kindAssigned)
			if err != nil {
				return nil, err
			}
			if t != none {
				g.held.items = append(g.held.items, t)
				g.claim(t, rank, claimActiveStaying, claimActiveLeaving)
			}
		}
		for _, id := range m.Revoked {
			t, err := mark(id, kindRevoked)
			if err != nil {
				return nil, err
			}
			if t != none {
				g.held.items = append(g.held.items, t)
				g.claim(t, rank, claimRevokedStaying, claimRevokedLeaving)
			}
		}
		slices.Sort(g.held.items[heldFrom:])
		g.held.start[r+1] = int32(len(g.held.items))

		standby = standby[:0]
		for _, id := range m.Standby {
			t, err := mark(id, kindStandby)
			if err != nil {
				return nil, err
			}
			if t != none {
				standby = append(standby, t)
			}
		}

		learning = learning[:0]
		for _, id := range m.Learning {
			t, err := mark(id, kindLearning)
			if err != nil {
				return nil, err
			}
			if t != none {
				learning = append(learning, t)
			}
		}
		for _, id := range m.Ready {
			t := g.index.lookup(id)
			if t == none {
				if unknownKinds[id] != kindLearning {
					return nil, memberErr(m, pos, "ready task %q is not in learning", id)
				}
				continue
			}
			if stamp[t] != rank+1 || kind[t]&kindMask != kindLearning {
				return nil, memberErr(m, pos, "ready task %q is not in learning", id)
			}
			if kind[t]&kindReady != 0 {
				return nil, memberErr(m, pos, "ready task %q listed twice", id)
			}
			kind[t] |= kindReady
		}

		// Lag may be reported for any task with local state: learners,
		// standbys, and state left on disk from earlier ownership.
		lagOf := func(t int32) int64 { return noLag }
		if len(m.Lag) > 0 {
			lags := make(map[int32]int64, len(m.Lag))
			for _, l := range m.Lag {
				if l.Lag < 0 {
					return nil, memberErr(m, pos, "lag %d of task %q is negative", l.Lag, l.Task)
				}
				t := g.index.lookup(l.Task)
				if t == none {
					if !validID(l.Task) {
						return nil, memberErr(m, pos, "malformed task ID %q in lag", l.Task)
					}
					continue
				}
				if stamp[t] == rank+1 && kind[t]&kindLag != 0 {
					return nil, memberErr(m, pos, "lag of task %q reported twice", l.Task)
				}
				if stamp[t] != rank+1 {
					stamp[t], kind[t] = rank+1, 0
				}
				kind[t] |= kindLag
				lags[t] = l.Lag
				if k := kind[t] & kindMask; k == 0 {
					warm = append(warm, warmEntry{task: t, member: rank, lag: l.Lag})
				}
			}
			lagOf = func(t int32) int64 {
				if l, ok := lags[t]; ok {
					return l
				}
				return noLag
			}
		}
		for _, t := range standby {
			warm = append(warm, warmEntry{task: t, member: rank, lag: lagOf(t), standby: true})
		}
		// This member's warm entries, smallest lag first, then topology order.
		row := warm[g.warmBy.start[r]:]
		slices.SortFunc(row, func(x, y warmEntry) int {
			if x.lag != y.lag {
				return cmpInt64(x.lag, y.lag)
			}
			return int(x.task - y.task)
		})
		g.warmBy.start[r+1] = int32(len(warm))
		for _, t := range learning {
			lag := lagOf(t)
			ready := kind[t]&kindReady != 0 || (a.opts.AcceptableLag > 0 && lag <= a.opts.AcceptableLag)
			g.offerLearner(t, rank, learnerKey{staying: !m.Leaving, ready: ready, lag: lag})
		}
	}

	g.warmBy.items = make([]int32, len(warm))
	for i, w := range warm {
		g.warmBy.items[i] = w.task
	}

	// Warm candidates by task (a counting sort: entries were appended in
	// rank order, so each task's candidates stay in rank order).
	g.warm = csr{start: make([]int32, nt+1), items: make([]int32, len(warm))}
	g.warmLag = make([]int64, len(warm))
	g.warmIsSb = make([]bool, len(warm))
	for _, w := range warm {
		g.warm.start[w.task+1]++
	}
	for t := range nt {
		g.warm.start[t+1] += g.warm.start[t]
	}
	next := slices.Clone(g.warm.start[:nt])
	for _, w := range warm {
		i := next[w.task]
		next[w.task]++
		g.warm.items[i], g.warmLag[i], g.warmIsSb[i] = w.member, w.lag, w.standby
	}
	g.nRacks = len(racks)
	return g, nil
}

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

// offerLearner records member rank as a learner of task t if it beats the
// learner seen so far.
func (g *group) offerLearner(t, rank int32, k learnerKey) {
	if g.learnerKey == nil {
		g.learnerKey = make([]learnerKey, len(g.tasks)) // only once someone learns
	}
	if g.learner[t] == none || k.better(g.learnerKey[t]) {
		g.learner[t], g.learnerKey[t] = rank, k
	}
}

// resolveLearners applies the learner rules to the winning learner of each
// task: a learner of an ownerless task takes it at once (rule 5), a ready
// learner or one of a stateless task is promoted (rules 3 and 9), and any
// other learner keeps running beside the owner (rules 2 and 4). Leaving
// members learn nothing; their learners matter only when no member stays.
func (g *group) resolveLearners() {
	for t, l := range g.learner {
		if l == none {
			continue
		}
		k := g.learnerKey[t]
		switch {
		case !k.staying:
			g.learner[t] = none
			if g.owner[t] == none && g.staying == 0 {
				g.setOwner(int32(t), l)
			}
		case g.owner[t] == none || k.ready || !g.tasks[t].Stateful:
			g.learner[t] = none
			g.setOwner(int32(t), l)
		default:
			g.learnersInFlight++
		}
	}
	for t := range g.owner {
		if p := g.planned(int32(t)); p != none {
			g.load[p]++
		}
	}
}

// setOwner makes m the active owner of t for the rest of this call.
func (g *group) setOwner(t, m int32) {
	g.owner[t] = m
	g.fixed[t] = true
}

// planned is the member that will own t once its learner (if any) is ready.
func (g *group) planned(t int32) int32 {
	if l := g.learner[t]; l != none {
		return l
	}
	return g.owner[t]
}

// canLearn reports whether the learner budget allows one more learner.
func (g *group) canLearn() bool {
	return g.opts.MaxLearners == 0 || g.learnersInFlight < g.opts.MaxLearners
}
