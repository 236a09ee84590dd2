package learner

// Per-subtopology spread. Kafka Streams names a task "<subtopology>_<partition>";
// tasks of one subtopology do the same work on different partitions, so a
// member holding many of one subtopology is a hot spot even when its task
// count is balanced. When every task ID has that form and there are several
// subtopologies, balancing moves each task from the subtopology where the
// donor holds the most more than the receiver. It never adds moves: it only
// chooses among the moves balancing makes anyway, so a balanced group stays put.

// placementOrder orders tasks that go to the least loaded members one by
// one (orphans, hand-overs) subtopology by subtopology, keeping topology
// order within each: consecutive tasks of one subtopology then land on
// different members, whereas topology order can line a subtopology up with
// the rotation of members (tasks 0_0 1_0 2_0 0_1 ... over three members
// would give one member every 0_*). A counting sort: linear, and stable.
func (g *group) placementOrder(tasks []int32) []int32 {
	if g.nSubs < 2 || len(tasks) < 2 {
		return tasks
	}
	start := make([]int32, g.nSubs+1)
	for _, t := range tasks {
		start[g.sub[t]+1]++
	}
	for s := range g.nSubs {
		start[s+1] += start[s]
	}
	out := make([]int32, len(tasks))
	for _, t := range tasks {
		out[start[g.sub[t]]] = t
		start[g.sub[t]]++
	}
	return out
}

// maxSpreadCells bounds the member x subtopology count matrix; above it
// (say 10,000 members x 2,000 subtopologies) spread is off and balancing
// falls back to topology order, to keep memory linear in practice.
const maxSpreadCells = 1 << 24

type spread struct {
	on   bool
	subs int     // number of subtopologies
	cnt  []int32 // [member*subs + sub]: planned tasks of sub on member
	max  []int32 // per member: an upper bound of its counts, to stop scans early
	last []int32 // per member: the subtopology it received last, none at first
}

// newSpread counts each staying member's planned tasks per subtopology.
func (g *group) newSpread() spread {
	if g.nSubs < 2 || len(g.load)*g.nSubs > maxSpreadCells {
		return spread{}
	}
	sp := spread{on: true, subs: g.nSubs, cnt: make([]int32, len(g.load)*g.nSubs), max: make([]int32, len(g.load)),
		last: make([]int32, len(g.load))}
	for m := range sp.last {
		sp.last[m] = none
	}
	for t := range g.owner {
		if p := g.planned(int32(t)); p != none {
			i := int(p)*sp.subs + int(g.sub[t])
			sp.cnt[i]++
			sp.max[p] = max(sp.max[p], sp.cnt[i])
		}
	}
	return sp
}

func (sp *spread) count(m, sub int32) int32 { return sp.cnt[int(m)*sp.subs+int(sub)] }

// moved records that a task of sub moved from h to l.
func (sp *spread) moved(sub, h, l int32) {
	sp.cnt[int(h)*sp.subs+int(sub)]--
	i := int(l)*sp.subs + int(sub)
	sp.cnt[i]++
	sp.max[l] = max(sp.max[l], sp.cnt[i])
	sp.last[l] = sub
}
