package sim_test

import (
	"fmt"

	"github.com/learnerassignor/learner/sim"
)

// A group of three members gains a fourth, then loses one to a crash, under
// every strategy. The learner strategies hand the newcomer its three tasks
// warm; the classic ones restore them cold, 40 s a task (2,000 MB at 50 MB/s).
// The crash costs every strategy at least its session timeout. learner
// simulate -scenario prints the full tables of such a script.
func Example() {
	sc, err := sim.Parse(`
duration 20m
standbys 1
tasks T1-T12 size 2000   # MB; members restore 50 MB/s by default
members S1-S3
at 1m join S4
at 10m crash S2
`)
	if err != nil {
		panic(err)
	}
	rs, err := sim.RunAll(sc)
	if err != nil {
		panic(err)
	}
	for _, r := range rs {
		m := r.Metrics
		fmt.Printf("%-21s downtime %3.0f task-s, cold hand-overs %d (%d planned), rebalances %d\n",
			r.Strategy, m.Downtime.Seconds(), m.Cold, m.ColdPlanned, m.Rebalances)
	}
	// Output:
	// learner (stable)      downtime  42 task-s, cold hand-overs 0 (0 planned), rebalances 4
	// learner (eager)       downtime  42 task-s, cold hand-overs 0 (0 planned), rebalances 4
	// stop-the-world        downtime 256 task-s, cold hand-overs 4 (3 planned), rebalances 2
	// cooperative           downtime 202 task-s, cold hand-overs 4 (3 planned), rebalances 3
	// warm-up+probing       downtime  44 task-s, cold hand-overs 0 (0 planned), rebalances 2
	// learner (coordinator) downtime  30 task-s, cold hand-overs 0 (0 planned), rebalances 0
}
