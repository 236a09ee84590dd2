package coordinator

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/testseed"
	"github.com/stretchr/testify/require"
)

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// Bounds of the quiet phase that follows the chaos, in heartbeat intervals.
//
// Ownership: a member that died in the chaos is dropped a session timeout
// after its last heartbeat, and a coordinator that failed over grants nothing
// for a session timeout; the two overlap at worst end to end (2 sessions).
// Then the new owner's next heartbeat (an interval), the previous owner's
// next one, whose response drops the task (it acknowledges at once), and the
// owner's wait interval: 3 more intervals.
//
// Convergence: from there, learners are ready within k heartbeats and Assign
// settles a group after arbitrary changes within 2k+2 rounds of learners
// (learnertest.ConvergenceBound); each round here costs a heartbeat
// for the learner to report, one for the owner to stop and one for the
// learner to take over: 3 intervals a round.
func ownerBound() int { return int(2*session/interval) + 3 }

func convergeBound(k int, opts learner.Options) int {
	rounds := 2*k + 2
	if opts.MaxLearners > 0 {
		rounds *= 3 // learners are placed a few at a time
	}
	return ownerBound() + 3*rounds
}

// TestPropertyHistories runs random group histories (joins, leaves with and
// without deadline, crashes, capacity changes, coordinator failovers, lost,
// late and duplicate heartbeats and responses, malformed heartbeats) and
// checks at every step that no task is active on two members, that no live
// member is fenced, that a late heartbeat never takes back what a newer one
// reported and that no dead member the coordinator dropped is a member
// again; then, once the chaos stops, that every task gets an owner and the
// group reaches Assign's balanced fixed point within the bounds above.
// LEARNER_LONG=1 runs 20,000 histories; LEARNER_SEED=n replays the
// histories of a seed.
func TestPropertyHistories(t *testing.T) { playHistories(t, false) }

// TestPropertyHistoriesPerturbed runs the same histories, seed for seed,
// perturbed (see history): heartbeats delayed while their members wait,
// late ones delivered between the step's others, members that send Seq 0,
// and a coordinator clock that steps back. Each history is the unperturbed
// one until its first perturbation.
func TestPropertyHistoriesPerturbed(t *testing.T) { playHistories(t, true) }

// playHistories plays 1,000 histories (100 with -short, 20,000 with
// LEARNER_LONG=1) from LEARNER_SEED or a random seed, which it logs.
// History i draws from stream i of the seed, and its perturbations, if
// perturbed, from stream i+2^63, which no history draws from.
func playHistories(t *testing.T, perturbed bool) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	if testseed.Long() {
		n = 20000
	}
	seed, _ := testseed.Seed(t)
	t.Logf("LEARNER_SEED=%d", seed)
	var maxOwned, maxSettled int
	var total history
	for i := range n {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		var pert chooser
		if perturbed {
			pert = randChooser{rand.New(rand.NewPCG(seed, uint64(i)|1<<63))}
		}
		h, res, err := runHistory(randChooser{r}, pert, 200+r.IntN(200))
		if err != nil {
			t.Fatalf("LEARNER_SEED=%d history %d: %v\nlast events:\n%s", seed, i, err, h.trace())
		}
		maxOwned, maxSettled = max(maxOwned, res.owned), max(maxSettled, res.settled)
		total.failovers += h.failovers
		total.timeouts += h.timeouts
		total.lost += h.lost
		total.dups += h.dups
		total.fenced += h.fenced
		total.leaves += h.leaves
		total.crashes += h.crashes
		total.restarts += h.restarts
		total.assigns += h.assigns
		total.garbage += h.garbage
		total.topologies += h.topologies
		total.delays += h.delays
		total.interleaved += h.interleaved
		total.unnumbered += h.unnumbered
		total.clockSteps += h.clockSteps
	}
	t.Logf("%d histories: %d failovers, %d session timeouts, %d lost and %d late or duplicate heartbeats (%d late ones fenced), %d leaves, %d crashes (%d restarted at once), %d malformed heartbeats, %d topology changes",
		n, total.failovers, total.timeouts, total.lost, total.dups, total.fenced, total.leaves, total.crashes, total.restarts, total.garbage, total.topologies)
	t.Logf("%d Assign calls judged by learnertest.Check", total.assigns)
	t.Logf("after the chaos: every task owned within %v, settled within %v (at worst)", time.Duration(maxOwned)*step, time.Duration(maxSettled)*step)
	// The generator must keep producing every kind of trouble.
	trouble := map[string]int{"failovers": total.failovers, "timeouts": total.timeouts, "lost": total.lost, "dups": total.dups, "fenced": total.fenced, "leaves": total.leaves, "crashes": total.crashes, "restarts": total.restarts, "garbage": total.garbage, "topology changes": total.topologies}
	if perturbed {
		t.Logf("perturbations: %d delayed heartbeats, %d late ones delivered between others, %d members sending Seq 0, %d clock steps back",
			total.delays, total.interleaved, total.unnumbered, total.clockSteps)
		maps.Copy(trouble, map[string]int{"delays": total.delays, "interleaved": total.interleaved, "unnumbered": total.unnumbered, "clock steps": total.clockSteps})
	}
	for name, v := range trouble {
		require.Positive(t, v, "histories produced no %s", name)
	}
}

type historyResult struct{ owned, settled int } // steps after the chaos

// runHistory draws a group and runs it through chaosSteps steps of chaos,
// perturbed by pert's draws if it is not nil, then quiet steps until it
// settles, checking every bound.
func runHistory(ch, pert chooser, chaosSteps int) (*history, historyResult, error) {
	opts := learner.Options{Standbys: ch.intn(3)}
	if ch.intn(3) == 1 {
		opts.MaxLearners = 1 + ch.intn(3)
	}
	k := 1 + ch.intn(4)
	h, err := newHistory(ch, pert, 1+ch.intn(24), 1+ch.intn(6), k, opts)
	if err != nil {
		return nil, historyResult{}, err
	}
	wrap := func(format string, args ...any) error {
		return fmt.Errorf("(k=%d, %+v): %s", k, opts, fmt.Sprintf(format, args...))
	}
	for range chaosSteps {
		if err := h.step(); err != nil {
			return h, historyResult{}, wrap("%v", err)
		}
	}
	h.faults = false
	res := historyResult{owned: -1, settled: -1}
	perInterval := int(interval / step)
	// The bounds are in the coordinator's time. Its clock, which steps
	// back in a perturbed history, has stood still for at most clockBack
	// in all, so its timers (sessions, the recovery window) end at most
	// that much later.
	stall := int(h.clockBack / step)
	ownerSteps, convergeSteps := ownerBound()*perInterval+stall, convergeBound(k, opts)*perInterval+stall
	// down counts, by task, the quiet steps in a row it has had no live
	// owner. A hand-over leaves a task down from when its owner stops it,
	// and acknowledges at once, until the new owner's next heartbeat: a
	// heartbeat interval at most. Tasks handed over
	// one by one (under a learner budget) can keep one task or another
	// down at the end of most steps for many intervals, so ownership is
	// reached at the first step after which no task is down longer than
	// a hand-over.
	handover := perInterval
	down := map[string]int{}
	lastDown := -1 // the last step a task had been down longer
	for s := 0; s < convergeSteps && res.settled < 0; s++ {
		if err := h.step(); err != nil {
			return h, res, wrap("quiet step %d: %v", s, err)
		}
		unowned := h.unowned()
		maps.DeleteFunc(down, func(t string, _ int) bool { return !slices.Contains(unowned, t) })
		for _, t := range unowned {
			if down[t]++; down[t] > handover {
				lastDown = s
			}
		}
		res.owned = lastDown + 1
		ok, err := h.settled()
		if err != nil {
			return h, res, wrap("%v", err)
		}
		if ok {
			res.settled = s
		}
	}
	if res.owned > ownerSteps {
		return h, res, wrap("a task without an owner for longer than a hand-over %d steps after the chaos, want at most %d (tasks down now %v; the coordinator's clock behind by %v)", res.owned, ownerSteps, h.unowned(), h.clockBack)
	}
	if res.settled < 0 {
		return h, res, wrap("group not at Assign's fixed point %d steps after the chaos (the coordinator's clock behind by %v); target %v", convergeSteps, h.clockBack, h.c.Target())
	}
	return h, res, nil
}
