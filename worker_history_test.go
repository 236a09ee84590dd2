package learner_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// workerGroup drives real Workers through a group history: a rebalance
// happens only when a member joins, crashes, shuts down or changes its
// metadata, or when some Worker says ShouldRejoin, as in a real group.
type workerGroup struct {
	t      testing.TB
	r      *rand.Rand
	tasks  []Task
	opts   Options
	a      *Assignor
	now    time.Time
	next   int
	ms     []*wmember
	log    []string
	dirty  bool // a membership or metadata change: the next tick rebalances
	last   []Assignment
	lastIn []MemberMetadata
	rounds int
	rests  int
	size   int  // the group size it tends to
	lags   bool // members report the lags of their learners and standbys
}

type wmember struct {
	w        *Worker
	capacity int
	rack     string
	restore  map[string]int   // learner task -> ticks until Restored
	sbLag    map[string]int64 // standby task -> lag it reports (lags on)
	applied  []Assignment     // every assignment it applied
}

func (g *workerGroup) logf(format string, args ...any) {
	g.log = append(g.log, fmt.Sprintf(format, args...))
	if len(g.log) > 40 {
		g.log = g.log[len(g.log)-40:]
	}
}

func (g *workerGroup) fail(format string, args ...any) {
	g.t.Helper()
	g.t.Fatalf("%s\nhistory (last entries):\n%s", fmt.Sprintf(format, args...), strings.Join(g.log, "\n"))
}

func (g *workerGroup) add(w *Worker) *wmember {
	m := &wmember{w: w, capacity: 1, restore: map[string]int{}}
	if g.r.IntN(3) == 0 {
		m.capacity = 1 + g.r.IntN(3)
	}
	if g.r.IntN(2) == 0 {
		m.rack = "r" + strconv.Itoa(g.r.IntN(3))
	}
	g.ms = append(g.ms, m)
	g.dirty = true
	return m
}

func (g *workerGroup) newID() string {
	g.next++
	return "S" + strconv.Itoa(g.next)
}

// rebalance runs one rebalance: every member joins, Assign, Check, Apply.
func (g *workerGroup) rebalance() {
	g.t.Helper()
	g.rounds++
	g.dirty = false
	in := make([]MemberMetadata, len(g.ms))
	for i, m := range g.ms {
		in[i] = m.w.Join()
		in[i].Capacity = m.capacity
		in[i].Rack = m.rack
	}
	out, err := g.a.Assign(in)
	if err != nil {
		g.fail("round %d: Assign: %v\ninput:\n%s", g.rounds, err, Rebalance{Tasks: g.tasks, Options: g.opts, Members: in})
	}
	g.logf("round %d input:\n%sround %d output:\n%s", g.rounds, Rebalance{Tasks: g.tasks, Options: g.opts, Members: in}, g.rounds, FormatAssignments(out))
	if vs := learnertest.Check(g.tasks, g.opts, in, out); len(vs) > 0 {
		g.fail("round %d breaks rules:\n%s", g.rounds, learnertest.FormatViolations(vs))
	}
	byID := map[string]Assignment{}
	for _, a := range out {
		byID[a.MemberID] = a
	}
	missed := -1
	if g.r.IntN(20) == 0 && len(g.ms) > 1 {
		missed = g.r.IntN(len(g.ms))
	}
	for i, m := range g.ms {
		a := byID[m.w.ID()]
		if i == missed {
			// Its SyncGroup failed: it keeps its state and rejoins.
			g.logf("%s misses its assignment", m.w.ID())
			g.dirty = true
			continue
		}
		if _, err := m.w.Apply(a); err != nil {
			g.fail("round %d: %s Apply: %v", g.rounds, m.w.ID(), err)
		}
		m.applied = append(m.applied, a)
		for t := range m.restore {
			if !slices.Contains(a.Learning, t) {
				delete(m.restore, t)
			}
		}
		for _, t := range a.Learning {
			if _, ok := m.restore[t]; !ok {
				m.restore[t] = 1 + g.r.IntN(10)
			}
		}
		if g.lags {
			sb := map[string]int64{}
			for _, t := range a.Standby {
				l, ok := m.sbLag[t]
				if !ok {
					l = int64(g.r.IntN(400))
				}
				sb[t] = l
			}
			m.sbLag = sb
		}
	}
	g.last, g.lastIn = out, in
	// Changes.Shutdown members leave the group at once (the next tick
	// notices them through ShouldShutdown).
}

// tick advances time: learners replay, finished ones are Restored, members
// past their deadline or handed over shut down. It reports whether the
// group needs a rebalance.
func (g *workerGroup) tick() bool {
	g.now = g.now.Add(time.Second)
	kept := g.ms[:0]
	for _, m := range g.ms {
		if m.w.ShouldShutdown(g.now) {
			g.logf("%s shuts down", m.w.ID())
			// It leaves the group, which rebalances.
			g.dirty = true
			continue
		}
		kept = append(kept, m)
	}
	g.ms = kept
	for _, m := range g.ms {
		if g.lags {
			for _, t := range sortedKeys(m.restore) {
				if m.restore[t] > 0 {
					require.NoError(g.t, m.w.SetLag(t, int64(m.restore[t]-1)*60))
				}
			}
			for t, l := range m.sbLag {
				m.sbLag[t] = max(l-100, 0)
				require.NoError(g.t, m.w.SetLag(t, m.sbLag[t]))
			}
		}
		for _, t := range sortedKeys(m.restore) {
			if m.restore[t]--; m.restore[t] == 0 {
				m.w.Restored(t)
				if g.opts.AcceptableLag > 0 {
					require.NoError(g.t, m.w.SetLag(t, 0))
				}
			}
		}
	}
	if g.dirty {
		return true
	}
	for _, m := range g.ms {
		if m.w.ShouldRejoin(g.now) {
			return true
		}
	}
	return false
}

func (g *workerGroup) stateful(id string) bool {
	return slices.ContainsFunc(g.tasks, func(t Task) bool { return t.ID == id && t.Stateful })
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// pending reports whether some learner is still replaying.
func (g *workerGroup) pending() bool {
	for _, m := range g.ms {
		for _, n := range m.restore {
			if n > 0 {
				return true
			}
		}
	}
	return false
}

// checkRest checks the group at rest: nobody will rejoin and no learner
// is replaying, so the last assignment is the group's for good. It must
// have no learner (a learner whose member never rejoins is never
// promoted), leave no task on a leaving member while one stays, and be
// balanced by capacity.
func (g *workerGroup) checkRest() {
	g.t.Helper()
	if g.last == nil {
		return
	}
	g.rests++
	leaving, caps := map[string]bool{}, map[string]int64{}
	staying := false
	for _, m := range g.lastIn {
		leaving[m.ID] = m.Leaving
		caps[m.ID] = int64(max(m.Capacity, 1))
		staying = staying || !m.Leaving
	}
	alive := map[string]bool{}
	for _, m := range g.ms {
		alive[m.w.ID()] = true
	}
	for _, a := range g.last {
		if !alive[a.MemberID] {
			continue
		}
		if len(a.Learning) > 0 {
			g.fail("at rest after round %d: %s still learns %v and will never rejoin", g.rounds, a.MemberID, a.Learning)
		}
		if staying && leaving[a.MemberID] && len(a.Assigned) > 0 {
			g.fail("at rest after round %d: leaving %s still runs %v", g.rounds, a.MemberID, a.Assigned)
		}
	}
	for _, h := range g.last {
		for _, l := range g.last {
			if leaving[h.MemberID] || leaving[l.MemberID] || !alive[h.MemberID] || !alive[l.MemberID] {
				continue
			}
			lh, ll := int64(len(h.Assigned)), int64(len(l.Assigned))
			ch, cl := caps[h.MemberID], caps[l.MemberID]
			if (2*lh-1)*cl > (2*ll+1)*ch {
				g.fail("at rest after round %d: unbalanced: %s runs %d (capacity %d), %s runs %d (capacity %d)",
					g.rounds, h.MemberID, lh, ch, l.MemberID, ll, cl)
			}
		}
	}
}

// event applies one random change to the group.
func (g *workerGroup) event() {
	if len(g.ms) == 0 {
		m := g.add(NewWorker(g.newID(), RejoinPolicy(g.r.IntN(2))))
		g.logf("%s joins", m.w.ID())
		return
	}
	i := g.r.IntN(len(g.ms))
	m := g.ms[i]
	id := m.w.ID()
	x := g.r.IntN(12)
	if len(g.ms) < g.size && g.r.IntN(2) == 0 {
		x = 0
	}
	switch x {
	case 0, 1:
		n := g.add(NewWorker(g.newID(), RejoinPolicy(g.r.IntN(2))))
		g.logf("%s joins", n.w.ID())
	case 2:
		// Crash a learner while it learns, if there is one.
		for j, o := range g.ms {
			if len(o.restore) > 0 {
				i, m, id = j, o, o.w.ID()
				break
			}
		}
		g.ms = slices.Delete(g.ms, i, i+1)
		g.dirty = true
		g.logf("%s crashes", id)
	case 3:
		// Crash an owner whose task is being learned, if there is one.
		for j, o := range g.ms {
			if a := o.applied; len(a) > 0 && len(a[len(a)-1].Learned) > 0 {
				i, m, id = j, o, o.w.ID()
				break
			}
		}
		g.ms = slices.Delete(g.ms, i, i+1)
		g.dirty = true
		g.logf("%s crashes", id)
	case 4, 5:
		// Leave, with or without a deadline; sometimes a second one too.
		var dl time.Time
		if g.r.IntN(3) == 0 {
			dl = g.now.Add(time.Duration(1+g.r.IntN(6)) * time.Second)
		}
		m.w.Leave(dl)
		g.logf("%s leaves (deadline %v)", id, !dl.IsZero())
		if g.r.IntN(2) == 0 {
			o := g.ms[g.r.IntN(len(g.ms))]
			o.w.Leave(time.Time{})
			g.logf("%s leaves too", o.w.ID())
		}
	case 6:
		// Restart under the same ID from an old assignment (stale state).
		if len(m.applied) == 0 {
			return
		}
		old := m.applied[g.r.IntN(len(m.applied))]
		w := NewWorker(id, RejoinPolicy(g.r.IntN(2)))
		w.Join()
		if _, err := w.Apply(old); err != nil {
			g.fail("stale restart: %v", err)
		}
		m.w, m.restore, m.sbLag = w, map[string]int{}, nil
		for _, t := range old.Learning {
			m.restore[t] = 1 + g.r.IntN(10)
		}
		m.applied = m.applied[:0]
		g.dirty = true
		g.logf("%s restarts with the stale state %s", id, FormatAssignments([]Assignment{old}))
	case 7:
		// Restart under a new ID with state on disk.
		w := NewWorker(g.newID(), RejoinPolicy(g.r.IntN(2)))
		for _, t := range slices.Concat(m.w.Active(), m.w.Join().Learning) {
			if !g.stateful(t) {
				continue // no state on disk
			}
			require.NoError(g.t, w.SetLag(t, int64(g.r.IntN(300))))
		}
		m.w.Join() // (discarded: the old process is gone)
		g.ms = slices.Delete(g.ms, i, i+1)
		n := g.add(w)
		g.logf("%s crashes and restarts as %s with state on disk", id, n.w.ID())
	case 8:
		m.capacity = 1 + g.r.IntN(4)
		rejoins := g.r.IntN(2) == 0
		g.dirty = g.dirty || rejoins
		g.logf("%s now has capacity %d (rejoins: %v)", id, m.capacity, rejoins)
	case 9:
		m.rack = "r" + strconv.Itoa(g.r.IntN(3))
		rejoins := g.r.IntN(2) == 0
		g.dirty = g.dirty || rejoins
		g.logf("%s now in rack %s (rejoins: %v)", id, m.rack, rejoins)
	case 10:
		// A learner loses its state again.
		for _, t := range sortedKeys(m.restore) {
			if m.restore[t] <= 0 {
				m.w.Unready(t)
				m.restore[t] = 1 + g.r.IntN(3)
				g.logf("%s: learner %s unready again", id, t)
				break
			}
		}
	default:
		g.ms = slices.Delete(g.ms, i, i+1)
		g.dirty = true
		g.logf("%s crashes", id)
	}
}

func newWorkerGroup(t testing.TB, r *rand.Rand) *workerGroup {
	nt := 1 + r.IntN(maxTasks)
	pStateless := []float64{0, 0.3, 1}[r.IntN(3)]
	var tasks []Task
	subs := r.IntN(4)
	for i := range nt {
		id := "T" + strconv.Itoa(i+1)
		if subs > 0 {
			id = strconv.Itoa(i%subs) + "_" + strconv.Itoa(i/subs)
		}
		tasks = append(tasks, Task{ID: id, Stateful: r.Float64() >= pStateless})
	}
	opts := Options{Standbys: r.IntN(4)}
	if r.IntN(2) == 0 {
		opts.AcceptableLag = 100
	}
	if r.IntN(3) == 0 {
		opts.MaxLearners = 1 + r.IntN(3)
	}
	a, err := New(tasks, opts)
	require.NoError(t, err)
	return &workerGroup{t: t, r: r, tasks: tasks, opts: opts, a: a, now: t0, size: 1 + r.IntN(maxSize), lags: r.IntN(2) == 0}
}

// TestWorkerHistories drives real Workers through random histories with
// the events the learnertest.History generator rarely or never makes:
// learners crashing while learning, owners of learned tasks crashing,
// two members leaving at once, stale restarts under the same ID, capacity
// and rack changes mid-learning, learners losing their state again, a
// member missing an assignment. Every rebalance must keep
// learnertest.Check's rules, and every time the group comes to rest
// (nobody rejoins, no learner replays) its last assignment must be
// learner-free, balanced and leave nothing on a leaving member.
//
//	go test -run WorkerHistories                   # 150 histories
//	LEARNER_LONG=1 go test -run WorkerHistories    # 20,000 (73-94 s on 2 cores)
//	LEARNER_SEED=123 go test -run WorkerHistories  # replay a printed seed
func TestWorkerHistories(t *testing.T) {
	seed := baseSeed(t)
	n := runs(150, 20000)
	t.Logf("seed %d, %d histories", seed, n)
	rests, rounds := 0, 0
	defer func() { t.Logf("%d rebalances, %d rests checked", rounds, rests) }()
	for i := range n {
		r := rand.New(rand.NewPCG(seed+uint64(i), 11))
		g := newWorkerGroup(t, r)
		g.logf("history %d: tasks %v, options %+v", i, g.tasks, g.opts)
		for step := 0; step < 120; step++ {
			if r.IntN(2) == 0 {
				for range 1 + r.IntN(2) {
					g.event()
				}
			}
			quiet := 0
			for g.tick() {
				g.rebalance()
				if quiet++; quiet > 50 {
					g.fail("history %d: the group keeps rebalancing", i)
				}
			}
			if !g.pending() && len(g.ms) > 0 && !g.dirty {
				g.checkRest()
			}
		}
		rests, rounds = rests+g.rests, rounds+g.rounds
	}
}

// The largest topology and the largest group size a history tends to.
var maxTasks, maxSize = 24, 6
