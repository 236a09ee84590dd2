package sim

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/learnerassignor/learner"
)

// WriteTable prints the scenario's shape and three tables with one row per
// result: its metrics; its cold hand-overs and downtime by cause; its warm
// hand-overs, their waits and the group protocol's messages.
func WriteTable(w io.Writer, sc *Scenario, rs []*Result) {
	stateless := 0
	for _, t := range sc.Tasks {
		if t.Size == 0 {
			stateless++
		}
	}
	fmt.Fprintf(w, "%d tasks (%d stateless), %d members at start, %d events, %v simulated, rebalance pause %v,\n%d standby(s), replay lag %v, learner hand-over %s\n\n",
		len(sc.Tasks), stateless, len(sc.Members), len(sc.Events), sc.Duration, sc.Pause, sc.Standbys, sc.ReplayLag, sc.Handover)
	ms := make([]Metrics, len(rs))
	names := make([]string, len(rs))
	for i, r := range rs {
		ms[i], names[i] = r.Metrics, r.Strategy.String()
	}
	writeMetrics(w, names, ms)
}

// writeMetrics prints two tables, one row per name: the metrics, then the
// cold hand-overs and the downtime by cause.
func writeMetrics(w io.Writer, names []string, ms []Metrics) {
	// Names are padded by hand: tabwriter aligns every column one way.
	name := func(s string) string { return fmt.Sprintf("%-21s", s) }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tdowntime\tstateful down\trebalances\tmoves\tduplicate\tunbalanced\tlongest\tpeak load\t\n", name("strategy"))
	fmt.Fprintf(tw, "%s\ttask-s\ttask-s\t\t\ttask-s\ts\ts\tactive/all\t\n", name(""))
	for i, m := range ms {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%d\t%d\t%.0f\t%.0f\t%.0f\t%d/%d\t\n", name(names[i]), m.Downtime.Seconds(), m.StatefulDown.Seconds(),
			m.Rebalances, m.Moves, m.Duplicate.Seconds(), m.Unbalanced.Seconds(), m.LongestUnbalanced.Seconds(), m.PeakActive, m.PeakBusy)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Cold hand-overs (all; in planned scaling; unavoidable: no live member had the state caught up)\nand downtime by cause, task-s:")
	fmt.Fprintln(w)
	fmt.Fprintf(tw, "%s\tcold\tplanned\tunavoidable\t", name("strategy"))
	for _, c := range Causes() {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw, "\t")
	for i, m := range ms {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t", name(names[i]), m.Cold, m.ColdPlanned, m.ColdUnavoidable)
		for _, c := range Causes() {
			fmt.Fprintf(tw, "\t%.0f", m.DowntimeBy[c].Seconds())
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Hand-overs to a caught-up learner or warm-up, the wait from caught up to taking over,\nand the group protocol's requests per member per minute:")
	fmt.Fprintln(w)
	fmt.Fprintf(tw, "%s\twarm hand-overs\twait mean s\twait max s\tmessages/member/min\t\n", name("strategy"))
	for i, m := range ms {
		mean := 0.0
		if m.WarmHandovers > 0 {
			mean = m.HandoverWait.Seconds() / float64(m.WarmHandovers)
		}
		rate := 0.0
		if m.MemberTime > 0 {
			rate = float64(m.Messages) / m.MemberTime.Minutes()
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.2f\t\n", name(names[i]), m.WarmHandovers, mean, m.HandoverWaitMax.Seconds(), rate)
	}
	tw.Flush()
}

// WriteLog prints one strategy's rebalances like the document's
// walkthroughs: why, the members' join status, the leader's assignment.
func WriteLog(w io.Writer, r *Result) {
	fmt.Fprintf(w, "== %s\n", r.Strategy)
	for i, rd := range r.Rounds {
		fmt.Fprintf(w, "\n#Rebalance %d at %v (%s), leader %s\n", i+1, rd.Start, strings.Join(rd.Reasons, "; "), rd.Leader)
		fmt.Fprintln(w, "Members join with status:")
		for _, j := range rd.Joins {
			fmt.Fprintf(w, "\t%s\n", learner.FormatMember(j))
		}
		if rd.Aborted {
			fmt.Fprintf(w, "The leader died at %v, before it assigned: the rebalance restarts.\n", rd.End)
			continue
		}
		fmt.Fprintf(w, "%s performs task assignments at %v:\n", rd.Leader, rd.End)
		for _, line := range strings.SplitAfter(learner.FormatAssignments(rd.Assignments), "\n") {
			if line != "" {
				fmt.Fprintf(w, "\t%s", line)
			}
		}
		if len(rd.Withheld) > 0 {
			fmt.Fprintf(w, "Withheld for the follow-up rebalance: %s\n", strings.Join(rd.Withheld, ", "))
		}
	}
	fmt.Fprintln(w)
}
