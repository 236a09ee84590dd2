package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/learnerassignor/learner/sim"
)

const simulateUsage = `usage: learner simulate [flags]

Simulates a group under scaling and compares rebalancing strategies on the
same event script: this library's learners (stable and eager rejoin),
stop-the-world eager rebalancing, cooperative sticky without learners, and
warm-up replicas with probing rebalances (KIP-441). Without -scenario it runs
the default scenario, shaped by -members, -tasks, -stateless, -size, -rate
and -seed; -print-scenario shows it in the scenario format.

flags:
`

// simulateMain runs `learner simulate`: it prints a table of each strategy's
// metrics, with -v a log of every rebalance in the document's notation, and
// with -svg a timeline picture. Bad flags or a bad scenario exit 2.
func simulateMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, simulateUsage)
		fs.PrintDefaults()
	}
	var (
		scenario = fs.String("scenario", "", "read the scenario from `FILE` (- for stdin) instead of the default")
		print    = fs.Bool("print-scenario", false, "print the scenario in the scenario format (without the overrides) and exit")
		verbose  = fs.Bool("v", false, "log every rebalance: members' join status and the assignment")
		svg      = fs.String("svg", "", "write a timeline picture to `FILE`")

		p = sim.Defaults

		duration  = fs.Duration("duration", 0, "override the simulated time")
		pause     = fs.Duration("pause", 0, "override the cost of one rebalance")
		session   = fs.Duration("session-timeout", 0, "override the time until a crash is noticed")
		probing   = fs.Duration("probing-interval", 0, "override the warm-up strategy's probing interval")
		warmups   = fs.Int("max-warmups", 0, "override the warm-up strategy's warm-up replicas at once")
		deadline  = fs.Duration("leave-deadline", 0, "override the learner strategies' leave deadline (0: none)")
		sizeRange = fs.String("size", fmt.Sprintf("%g-%g", sim.Defaults.MinSize, sim.Defaults.MaxSize), "default scenario: state size range of stateful tasks, `MIN-MAX` MB")
	)
	fs.IntVar(&p.Members, "members", p.Members, "default scenario: peak group size (it starts with two thirds)")
	fs.IntVar(&p.Tasks, "tasks", p.Tasks, "default scenario: number of tasks")
	fs.IntVar(&p.Stateless, "stateless", p.Stateless, "default scenario: how many tasks are stateless")
	fs.Float64Var(&p.Rate, "rate", p.Rate, "default scenario: restore rate of every member, MB/s")
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "default scenario: seed of the state sizes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "learner simulate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	shaping := map[string]bool{"members": true, "tasks": true, "stateless": true, "size": true, "rate": true, "seed": true}
	var text string
	if *scenario != "" {
		bad := ""
		fs.Visit(func(f *flag.Flag) {
			if shaping[f.Name] {
				bad = f.Name
			}
		})
		if bad != "" {
			fmt.Fprintf(stderr, "learner simulate: -%s shapes the default scenario; it cannot be used with -scenario\n", bad)
			return 2
		}
		src, err := readInput(*scenario, os.Stdin)
		if err != nil {
			fmt.Fprintf(stderr, "learner simulate: %v\n", err)
			return 2
		}
		text = string(src)
	} else {
		lo, hi, ok := strings.Cut(*sizeRange, "-")
		var errLo, errHi error
		p.MinSize, errLo = strconv.ParseFloat(lo, 64)
		p.MaxSize, errHi = strconv.ParseFloat(hi, 64)
		if !ok || errLo != nil || errHi != nil {
			fmt.Fprintf(stderr, "learner simulate: -size: want MIN-MAX in MB, got %q\n", *sizeRange)
			return 2
		}
		var err error
		if text, err = sim.DefaultText(p); err != nil {
			fmt.Fprintf(stderr, "learner simulate: %v\n", err)
			return 2
		}
	}
	sc, err := sim.Parse(text)
	if err != nil {
		fmt.Fprintf(stderr, "learner simulate: %v\n", err)
		return 2
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "duration":
			sc.Duration = *duration
		case "pause":
			sc.Pause = *pause
		case "session-timeout":
			sc.SessionTimeout = *session
		case "probing-interval":
			sc.ProbingInterval = *probing
		case "max-warmups":
			sc.MaxWarmups = *warmups
		case "leave-deadline":
			sc.LeaveDeadline = *deadline
		}
	})
	if sc.Duration <= 0 || sc.Pause < 0 || sc.SessionTimeout < 0 || sc.ProbingInterval <= 0 || sc.MaxWarmups < 1 || sc.LeaveDeadline < 0 {
		fmt.Fprintln(stderr, "learner simulate: -duration and -probing-interval must be positive, -max-warmups at least 1, the others not negative")
		return 2
	}
	if *print {
		fmt.Fprint(stdout, text)
		return 0
	}

	rs, err := sim.RunAll(sc)
	if err != nil {
		fmt.Fprintf(stderr, "learner simulate: %v\n", err)
		return 1
	}
	if *verbose {
		for _, r := range rs {
			sim.WriteLog(stdout, r)
		}
	}
	sim.WriteTable(stdout, sc, rs)
	if *svg != "" {
		f, err := os.Create(*svg)
		if err == nil {
			err = sim.WriteSVG(f, rs)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "learner simulate: %v\n", err)
			return 1
		}
	}
	return 0
}
