package coordinator

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
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
// acknowledgement and the owner's wait interval: 3 more intervals.
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

func historySeed(t *testing.T) uint64 {
	if s := os.Getenv("COORDINATOR_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "COORDINATOR_SEED")
		return n
	}
	return 1
}

// TestPropertyHistories runs random group histories (joins, leaves with and
// without deadline, crashes, capacity changes, coordinator failovers, lost,
// late and duplicate heartbeats and responses, malformed heartbeats) and
// checks at every step that no task is active on two members, that no live
// member is fenced, that a late heartbeat never takes back what a newer one
// reported and that no dead member the coordinator dropped is a member
// again; then, once the chaos stops, that every task gets an owner and the
// group reaches Assign's balanced fixed point within the bounds above.
// COORDINATOR_LONG=1 runs 20,000 histories; COORDINATOR_SEED=n replays the
// histories of a seed.
func TestPropertyHistories(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	if os.Getenv("COORDINATOR_LONG") != "" {
		n = 20000
	}
	seed := historySeed(t)
	var maxOwned, maxSettled int
	var total history
	for i := range n {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		h, res, err := runHistory(randChooser{r}, 200+r.IntN(200))
		if err != nil {
			t.Fatalf("seed %d history %d: %v\nlast events:\n%s", seed, i, err, h.trace())
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
	}
	t.Logf("%d histories: %d failovers, %d session timeouts, %d lost and %d late or duplicate heartbeats (%d late ones fenced), %d leaves, %d crashes (%d restarted at once), %d malformed heartbeats, %d topology changes",
		n, total.failovers, total.timeouts, total.lost, total.dups, total.fenced, total.leaves, total.crashes, total.restarts, total.garbage, total.topologies)
	t.Logf("%d Assign calls judged by learnertest.Check", total.assigns)
	t.Logf("after the chaos: every task owned within %v, settled within %v (at worst)", time.Duration(maxOwned)*step, time.Duration(maxSettled)*step)
	// The generator must keep producing every kind of trouble.
	for name, v := range map[string]int{"failovers": total.failovers, "timeouts": total.timeouts, "lost": total.lost, "dups": total.dups, "fenced": total.fenced, "leaves": total.leaves, "crashes": total.crashes, "restarts": total.restarts, "garbage": total.garbage, "topology changes": total.topologies} {
		require.Positive(t, v, "histories produced no %s", name)
	}
}

type historyResult struct{ owned, settled int } // steps after the chaos

// runHistory draws a group and runs it through chaosSteps steps of chaos,
// then quiet steps until it settles, checking every bound.
func runHistory(ch chooser, chaosSteps int) (*history, historyResult, error) {
	opts := learner.Options{Standbys: ch.intn(3)}
	if ch.intn(3) == 1 {
		opts.MaxLearners = 1 + ch.intn(3)
	}
	k := 1 + ch.intn(4)
	h, err := newHistory(ch, 1+ch.intn(24), 1+ch.intn(6), k, opts)
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
	for s := 0; s < convergeBound(k, opts)*perInterval && res.settled < 0; s++ {
		if err := h.step(); err != nil {
			return h, res, wrap("quiet step %d: %v", s, err)
		}
		if res.owned < 0 && len(h.unowned()) == 0 {
			res.owned = s
		}
		ok, err := h.settled()
		if err != nil {
			return h, res, wrap("%v", err)
		}
		if ok {
			res.settled = s
		}
	}
	if res.owned < 0 || res.owned > ownerBound()*perInterval {
		return h, res, wrap("tasks %v unowned %d steps after the chaos, want at most %d", h.unowned(), res.owned, ownerBound()*perInterval)
	}
	if res.settled < 0 {
		return h, res, wrap("group not at Assign's fixed point %d steps after the chaos; target %v", convergeBound(k, opts)*perInterval, h.c.Target())
	}
	return h, res, nil
}
