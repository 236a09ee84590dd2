package sim

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// MaxSuite bounds the number of scenarios of a suite: 200 of them, about
// 75 million entries of Work together, take half a minute of CPU, within
// MaxWork (10,000 would take twenty minutes or more: 100 take 14 s).
const MaxSuite = 200

// SuiteText returns scenario i of the suite drawn from seed: a random group
// (3 to 10 members, 8 to 48 tasks, up to a quarter stateless, state sizes
// up to 500, 2,000 or 8,000 MB, restore rates 25 to 100 MB/s) through 3 to
// 8 random events over two hours: members join, leave with and without a
// deadline, crash and restart. The events never leave fewer than two
// members running, so every scenario exercises rebalancing, not an empty
// group. Like Kafka's refiner fuzz test, it tries many shapes rather than
// one story.
func SuiteText(seed uint64, i int) string {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	between := func(lo, hi int) int { return lo + r.IntN(hi-lo+1) }
	var b strings.Builder
	nm, nt := between(3, 10), between(8, 48)
	maxSize := []int{500, 2000, 8000}[r.IntN(3)]
	fmt.Fprintf(&b, "# suite seed %d, scenario %d\nduration 2h\nstandbys 1\nreplay-lag 1s\n", seed, i)
	fmt.Fprintf(&b, "tasks T1-T%d size %d-%d seed %d\n", nt, maxSize/20, maxSize, r.Uint64()>>1)
	if k := r.IntN(nt/4 + 1); k > 0 {
		fmt.Fprint(&b, "stateless")
		for _, t := range r.Perm(nt)[:k] {
			fmt.Fprintf(&b, " T%d", t+1)
		}
		fmt.Fprintln(&b)
	}
	running := []string{} // members that run and have not announced a leave
	next := 1
	member := func() string {
		id := fmt.Sprintf("S%d", next)
		next++
		return id
	}
	rate := func() int { return between(25, 100) }
	for range nm {
		id := member()
		running = append(running, id)
		fmt.Fprintf(&b, "members %s rate %d\n", id, rate())
	}
	at := 0 // seconds
	for range between(3, 8) {
		at += between(60, 840) // at most 1h52m: every event within the duration
		kind := r.IntN(5)
		if len(running) <= 2 {
			kind = 0 // keep two members running: join
		}
		pick := func() string {
			k := r.IntN(len(running))
			id := running[k]
			running = append(running[:k], running[k+1:]...)
			return id
		}
		switch kind {
		case 0:
			var ids []string
			for range between(1, 3) {
				ids = append(ids, member())
			}
			running = append(running, ids...)
			fmt.Fprintf(&b, "at %ds join %s rate %d\n", at, strings.Join(ids, " "), rate())
		case 1:
			fmt.Fprintf(&b, "at %ds leave %s deadline none\n", at, pick())
		case 2:
			fmt.Fprintf(&b, "at %ds leave %s deadline %dm\n", at, pick(), between(2, 10))
		case 3:
			fmt.Fprintf(&b, "at %ds crash %s\n", at, pick())
		case 4:
			k := r.IntN(len(running))
			fmt.Fprintf(&b, "at %ds restart %s after %ds\n", at, running[k], between(10, 120))
		}
	}
	return b.String()
}

// RunSuite plays n scenarios of the suite drawn from seed under every
// strategy; adjust may change each scenario before it runs (the command
// line's overrides). It returns each strategy's metrics summed over the
// suite (peaks are maxima), in Strategies order. Before running any, it
// refuses, wrapping ErrScenario, a scenario that Check refuses or a suite
// whose scenarios' Work totals sum to more than MaxWork.
func RunSuite(n int, seed uint64, adjust func(*Scenario) error) ([]Metrics, error) {
	if n < 1 || n > MaxSuite {
		return nil, fmt.Errorf("sim: suite of %d scenarios: want 1 to %d", n, MaxSuite)
	}
	// Every scenario is drawn and checked before any runs: their work
	// together is bounded too.
	scs := make([]*Scenario, n)
	var work int64
	for i := range n {
		sc, err := Parse(SuiteText(seed, i))
		if err != nil {
			return nil, fmt.Errorf("sim: suite scenario %d: %w", i, err)
		}
		if adjust != nil {
			if err := adjust(sc); err != nil {
				return nil, err
			}
		}
		if err := sc.Check(); err != nil {
			return nil, fmt.Errorf("sim: suite seed %d scenario %d: %w", seed, i, err)
		}
		work += sc.Work().Total // each at most MaxWork (Check): no overflow
		scs[i] = sc
	}
	if err := checkSuiteWork(n, work); err != nil {
		return nil, err
	}
	totals := make([]Metrics, len(strategies))
	for i, sc := range scs {
		for _, s := range Strategies() {
			r, err := Run(sc, s)
			if err != nil {
				return nil, fmt.Errorf("sim: suite seed %d scenario %d: %w", seed, i, err)
			}
			totals[s].add(r.Metrics)
		}
	}
	return totals, nil
}

// checkSuiteWork reports a suite of n scenarios whose Work totals, summed
// (work), are more than MaxWork: each scenario's is bounded, and so are
// they together, one run after the other.
func checkSuiteWork(n int, work int64) error {
	if work > MaxWork {
		return fmt.Errorf("sim: suite of %d scenarios: %d entries of work together, more than %d (a few minutes); want fewer scenarios, a shorter duration, or a longer session timeout if under 9s: %w",
			n, work, int64(MaxWork), ErrScenario)
	}
	return nil
}

// add sums o into m; peaks take the maximum.
func (m *Metrics) add(o Metrics) {
	m.Downtime += o.Downtime
	for c := range m.DowntimeBy {
		m.DowntimeBy[c] += o.DowntimeBy[c]
	}
	m.StatefulDown += o.StatefulDown
	m.Cold += o.Cold
	m.ColdPlanned += o.ColdPlanned
	m.ColdUnavoidable += o.ColdUnavoidable
	m.Processed += o.Processed
	m.Rebalances += o.Rebalances
	m.Moves += o.Moves
	m.Duplicate += o.Duplicate
	m.Unbalanced += o.Unbalanced
	m.LongestUnbalanced = max(m.LongestUnbalanced, o.LongestUnbalanced)
	m.PeakActive = max(m.PeakActive, o.PeakActive)
	m.PeakBusy = max(m.PeakBusy, o.PeakBusy)
	m.WarmHandovers += o.WarmHandovers
	m.HandoverWait += o.HandoverWait
	m.HandoverWaitMax = max(m.HandoverWaitMax, o.HandoverWaitMax)
	m.Messages += o.Messages
	m.MemberTime += o.MemberTime
}

// WriteSuiteTable prints the suite's totals in WriteTable's three tables,
// one row per strategy; totals are in Strategies order, as RunSuite returns
// them.
func WriteSuiteTable(w io.Writer, n int, seed uint64, totals []Metrics) {
	fmt.Fprintf(w, "suite of %d random scenarios, seed %d: totals per strategy\n\n", n, seed)
	names := make([]string, len(totals))
	for i := range totals {
		names[i] = Strategy(i).String()
	}
	writeMetrics(w, names, totals)
}
