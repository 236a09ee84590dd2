package main

import (
	"bytes"
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
same event script: this library's learners (stable and eager rejoin, and
coordinator mode without rebalances), stop-the-world eager rebalancing,
cooperative sticky without learners, and warm-up replicas with probing
rebalances (KIP-441), each with the scenario's standby replicas. Without
-scenario it runs the default scenario, shaped by -members, -tasks,
-stateless, -size, -rate and -seed; -print-scenario shows it in the scenario
format. With -suite N it plays N random scenarios drawn from -seed and
prints each strategy's totals.

Each setting is bounded, and so is their product: a run's work, (members +
task copies) x (heartbeats + 600 x events + 40 x probing rebalances), is at
most %d entries (a few minutes, a gigabyte), a suite's summed over
its scenarios. A larger one is refused before it runs, with its factors:
shorten -duration, lengthen -probing-interval or a -session-timeout under 9s
(members heartbeat every third of it, at most every 3s), or take fewer
-members, -tasks, -standbys or events.

Exit status: 0 when simulated, 1 for an error while simulating, 2 for bad
flags or a bad scenario, refused before anything runs. Errors in a
-scenario FILE name its line as FILE:N (<standard input>:N for -scenario -).

flags:
`

// simulateMain runs `learner simulate`: it prints a table of each strategy's
// metrics, with -v a log of every rebalance in the document's notation, and
// with -svg a timeline picture. Bad flags or a bad scenario exit 2 before
// anything runs; an error while simulating exits 1.
func simulateMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	// The flag package writes the usage, and a bad flag's error before it,
	// to one output; what to print is known only once Parse has returned:
	// help asked for goes to stdout, as learner help's and learner assign
	// -h's do, and a bad flag is one line on stderr, as for learner assign,
	// rather than its error above 60 lines of usage.
	var usageText bytes.Buffer
	fs.SetOutput(&usageText)
	fs.Usage = func() {
		fmt.Fprintf(&usageText, simulateUsage, sim.MaxWork)
		fs.PrintDefaults()
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "learner simulate: "+format+"\n", args...)
		return 2
	}
	var (
		scenario = fs.String("scenario", "", "read the scenario from `FILE` (- for stdin) instead of the default")
		print    = fs.Bool("print-scenario", false, "print the scenario in the scenario format (without the overrides) and exit")
		verbose  = fs.Bool("v", false, "log every rebalance: members' join status and the assignment")
		svg      = fs.String("svg", "", "write a timeline picture to `FILE`")
		suite    = fs.Int("suite", 0, fmt.Sprintf("play `N` random scenarios drawn from -seed (1 to %d) and print each strategy's totals", sim.MaxSuite))

		p = sim.Defaults

		duration  = fs.Duration("duration", 0, "override the simulated time")
		pause     = fs.Duration("pause", 0, "override the cost of one rebalance")
		session   = fs.Duration("session-timeout", 0, "override the time until a crash is noticed")
		probing   = fs.Duration("probing-interval", 0, "override the warm-up strategy's probing interval")
		warmups   = fs.Int("max-warmups", 0, "override the warm-up strategy's warm-up replicas at once")
		deadline  = fs.Duration("leave-deadline", 0, "override the learner strategies' leave deadline (0: none)")
		standbys  = fs.Int("standbys", 0, fmt.Sprintf("override the standby replicas of each stateful task, every strategy (0 to %d; 0: the figures without standbys)", sim.MaxStandbys))
		replayLag = fs.Duration("replay-lag", 0, "override how far a caught-up replica trails its active")
		handover  = fs.String("handover", "", "override the learner strategies' hand-over: "+sim.HandoverChoices()+" (default: "+sim.DefaultHandover.String()+", what kgolearner does)")
		sizeRange = fs.String("size", fmt.Sprintf("%g-%g", sim.Defaults.MinSize, sim.Defaults.MaxSize), "default scenario: state size range of stateful tasks, `MIN-MAX` MB")
	)
	fs.IntVar(&p.Members, "members", p.Members, "default scenario: peak group size (it starts with two thirds)")
	fs.IntVar(&p.Tasks, "tasks", p.Tasks, "default scenario: number of tasks")
	fs.IntVar(&p.Stateless, "stateless", p.Stateless, "default scenario: how many tasks are stateless")
	fs.Float64Var(&p.Rate, "rate", p.Rate, "default scenario: restore rate of every member, MB/s")
	fs.Uint64Var(&p.Seed, "seed", p.Seed, "default scenario: seed of the state sizes; with -suite: seed of the suite")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			stdout.Write(usageText.Bytes())
			return 0
		}
		fmt.Fprintf(stderr, "learner simulate: %v (run learner simulate -h for usage)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	shaping := []string{"members", "tasks", "stateless", "size", "rate", "seed"}
	for _, name := range shaping {
		switch {
		case set[name] && set["scenario"]:
			return fail("-%s shapes the default scenario; it cannot be used with -scenario", name)
		case set[name] && set["suite"] && name != "seed":
			return fail("-%s shapes the default scenario; it cannot be used with -suite", name)
		}
	}
	for _, name := range []string{"scenario", "svg", "v", "print-scenario"} {
		if set[name] && set["suite"] {
			return fail("-%s works on one scenario; it cannot be used with -suite", name)
		}
	}

	// An empty name would read standard input (-scenario) or draw nothing
	// (-svg) without a word.
	switch {
	case set["scenario"] && *scenario == "":
		return fail("-scenario: empty FILE name (- for standard input)")
	case set["svg"] && *svg == "":
		return fail("-svg: empty FILE name")
	}

	// overrides sets a scenario's setting from its flag, when given.
	overrides := map[string]func(sc *sim.Scenario) error{
		"duration":         func(sc *sim.Scenario) error { sc.Duration = *duration; return nil },
		"pause":            func(sc *sim.Scenario) error { sc.Pause = *pause; return nil },
		"session-timeout":  func(sc *sim.Scenario) error { sc.SessionTimeout = *session; return nil },
		"probing-interval": func(sc *sim.Scenario) error { sc.ProbingInterval = *probing; return nil },
		"max-warmups":      func(sc *sim.Scenario) error { sc.MaxWarmups = *warmups; return nil },
		"leave-deadline":   func(sc *sim.Scenario) error { sc.LeaveDeadline = *deadline; return nil },
		"standbys":         func(sc *sim.Scenario) error { sc.Standbys = *standbys; return nil },
		"replay-lag":       func(sc *sim.Scenario) error { sc.ReplayLag = *replayLag; return nil },
		"handover": func(sc *sim.Scenario) (err error) {
			sc.Handover, err = sim.ParseHandover(*handover)
			return err
		},
	}
	// adjust applies the overriding flags to a scenario and checks it.
	adjust := func(sc *sim.Scenario) error {
		for name, apply := range overrides {
			if !set[name] {
				continue
			}
			if err := apply(sc); err != nil {
				return err // only -handover can fail here: map order does not matter
			}
		}
		return sc.Check()
	}
	// input names a scenario read with -scenario, as assign names its
	// input; it stays "" for a scenario the command made (the default, a
	// suite's), which has no file to point at.
	input := ""
	// scenarioError is the text of an error of the scenario: at FILE:N when
	// it is at a line of a file, after FILE when at none (see describe).
	scenarioError := func(err error) string {
		if input == "" {
			return err.Error()
		}
		return describe(input, err)
	}
	// tooLarge adds to a scenario's error the flags given that make its
	// work (sim.Scenario.Work) what it is, if any.
	tooLarge := func(err error) int {
		var given []string
		for _, name := range []string{"members", "tasks", "stateless", "standbys", "duration", "session-timeout", "probing-interval"} {
			if set[name] {
				given = append(given, "-"+name+" "+fs.Lookup(name).Value.String())
			}
		}
		if len(given) == 0 {
			return fail("%s", scenarioError(err))
		}
		return fail("%s (given %s)", scenarioError(err), strings.Join(given, ", "))
	}
	// flagError names the flag behind a setting out of range; where names
	// the place, in a scenario the command made, of an event at a line that
	// -duration cuts off.
	flagError := func(err error, where func(line int) string) int {
		var re *sim.RangeError
		var late *sim.LateEventError
		var work *sim.WorkError
		switch {
		case errors.As(err, &re) && set[re.Name]:
			return fail("-%s %s: want %s", re.Name, re.Got, re.Want)
		case errors.As(err, &late) && set["duration"] && input != "":
			ev := late.Event
			return fail("%s", atLine(input, ev.Line, fmt.Sprintf("%s event at %v is after -duration %v", ev.Kind, ev.At, *duration)))
		case errors.As(err, &late) && set["duration"]:
			return fail("-duration %v: want at least %v (%s has a %s event then)", *duration, late.Event.At, where(late.Event.Line), late.Event.Kind)
		case errors.As(err, &work):
			return tooLarge(err)
		}
		return fail("%s", scenarioError(err))
	}

	if set["suite"] {
		if *suite < 1 || *suite > sim.MaxSuite {
			return fail("-suite %d: want 1 to %d", *suite, sim.MaxSuite)
		}
		// Check the overrides on every scenario before the run: a
		// -duration one scenario fits may cut another's events off.
		for i := range *suite {
			sc, err := sim.Parse(sim.SuiteText(p.Seed, i))
			if err == nil {
				err = adjust(sc)
			}
			if err != nil {
				// No line: a suite's scenarios are not printed.
				return flagError(err, func(int) string { return fmt.Sprintf("suite scenario %d of seed %d", i, p.Seed) })
			}
		}
		totals, err := sim.RunSuite(*suite, p.Seed, adjust)
		if errors.Is(err, sim.ErrScenario) {
			// Each scenario passed above, so RunSuite refused their work
			// together, before running any.
			return tooLarge(err)
		}
		if err != nil {
			fmt.Fprintf(stderr, "learner simulate: %v\n", err)
			return 1
		}
		sim.WriteSuiteTable(stdout, *suite, p.Seed, totals)
		return 0
	}

	var text string
	if set["scenario"] {
		src, err := readInput(*scenario, stdin, sim.MaxScenarioSize)
		if err != nil {
			return fail("-scenario: %v", err)
		}
		text, input = string(src), inputName(*scenario)
	} else {
		lo, hi, ok := strings.Cut(*sizeRange, "-")
		var errLo, errHi error
		p.MinSize, errLo = strconv.ParseFloat(lo, 64)
		p.MaxSize, errHi = strconv.ParseFloat(hi, 64)
		if !ok || errLo != nil || errHi != nil {
			return fail("-size %s: want MIN-MAX in MB", *sizeRange)
		}
		var err error
		if text, err = sim.DefaultText(p); err != nil {
			var re *sim.RangeError
			switch {
			case errors.As(err, &re) && !set[re.Name]:
				return fail("-%s %s (its default): want %s", re.Name, re.Got, re.Want)
			case errors.As(err, &re):
				return fail("-%s %s: want %s", re.Name, re.Got, re.Want)
			}
			return fail("%v", err)
		}
	}
	sc, err := sim.Parse(text)
	if err != nil {
		return fail("%s", scenarioError(err))
	}
	if err := adjust(sc); err != nil {
		return flagError(err, func(line int) string { return fmt.Sprintf("line %d of the default scenario", line) })
	}
	if *print {
		fmt.Fprint(stdout, text)
		return 0
	}
	// Open the picture's file before the run, so a bad path fails at once,
	// but truncate it only once the picture is drawn: a failed run leaves an
	// existing file as it was and removes one it created.
	var out *os.File
	created, drawn := false, false
	if *svg != "" {
		// O_EXCL tells, in the same step as the open, whether this run
		// created the file: a separate Stat could see no file that
		// another process then creates, and a failed run would remove it.
		out, err = os.OpenFile(*svg, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		created = err == nil
		if errors.Is(err, os.ErrExist) {
			out, err = os.OpenFile(*svg, os.O_WRONLY, 0)
		}
		if err != nil {
			return fail("-svg: %v", err)
		}
		defer func() {
			out.Close() // a second Close after a drawn picture's fails harmlessly
			if created && !drawn {
				os.Remove(*svg)
			}
		}()
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
	if out != nil {
		// Only a regular file has an old picture to cut: a device or a
		// pipe (/dev/stdout, /dev/null) refuses the truncation, which
		// os.Create's O_TRUNC let them ignore.
		var err error
		if fi, serr := out.Stat(); serr != nil || fi.Mode().IsRegular() {
			err = out.Truncate(0)
		}
		if err == nil {
			err = sim.WriteSVG(out, rs)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		drawn = err == nil
		if err != nil {
			fmt.Fprintf(stderr, "learner simulate: %v\n", err)
			return 1
		}
	}
	return 0
}
