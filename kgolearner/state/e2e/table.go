package e2e

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Table writes results as a Markdown table: a row per strategy and phase.
func Table(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "strategy\tphase\tdowntime (task-s)\tof moved tasks\tmax stall (s)\trestored\treplayed by actives\tcold restores\trebalances\trebalance mean (s)\ttook (s)\t")
	for _, r := range results {
		for _, p := range append(r.Phases, r.Total) {
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%.2f\t%.1f\t\n", r.Strategy.Name, p.Name, secs(p.Downtime), secs(p.MoveDowntime), secs(p.MaxDowntime),
				p.Restored, p.Replayed, p.ColdRestores, p.Rebalances, p.meanRebalance(), secs(p.Took))
		}
	}
	tw.Flush()
	for _, r := range results {
		exact := "exact"
		if !r.Exact {
			exact = fmt.Sprintf("WRONG (%v)", r.Diff)
		}
		fmt.Fprintf(w, "%s: %d input records, final counts %s, %d records processed twice during the script (%d during the start)\n",
			r.Strategy.Name, r.Records, exact, r.ProcessedTwice, r.ProcessedTwiceAtStart)
	}
	compare(w, results)
	for _, r := range results {
		if r.Restore.Restores > 0 {
			fmt.Fprintf(w, "%s: cold restores at %.0f records/s a task (%d restores, %d records in %.1f s)\n",
				r.Strategy.Name, r.Restore.PerSecond(), r.Restore.Restores, r.Restore.Records, secs(r.Restore.Took))
		}
	}
}

// compare writes what the targets read: each learner strategy's
// downtime as a share of cooperative-sticky's in the same run, and what a
// cold restore cost cooperative-sticky in the planned scaling (the state's
// size must make it several seconds).
func compare(w io.Writer, results []Result) {
	i := slices.IndexFunc(results, func(r Result) bool { return r.Strategy.Cooperative })
	if i < 0 {
		return
	}
	coop := results[i]
	for _, r := range results {
		if !r.Strategy.Cooperative && coop.Total.Downtime > 0 {
			fmt.Fprintf(w, "%s: downtime %.0f%% of %s's\n", r.Strategy.Name, 100*secs(r.Total.Downtime)/secs(coop.Total.Downtime), coop.Strategy.Name)
		}
	}
	var down time.Duration
	cold := 0
	for _, p := range coop.Phases[:min(2, len(coop.Phases))] {
		down += p.MoveDowntime
		cold += p.ColdRestores
	}
	if cold > 0 {
		fmt.Fprintf(w, "%s: a cold restore in the planned scaling cost a task %.1f s of downtime (%d cold restores, %.2f task-s)\n",
			coop.Strategy.Name, secs(down)/float64(cold), cold, secs(down))
	}
}

// meanRebalance returns the mean rebalance's duration in seconds, or 0.
func (p Phase) meanRebalance() float64 {
	if p.Rebalances == 0 {
		return 0
	}
	return secs(p.RebalanceTime) / float64(p.Rebalances)
}

func secs(d time.Duration) float64 { return d.Seconds() }
