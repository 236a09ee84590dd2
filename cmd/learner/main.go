// Command learner runs the learner assignor from the command line.
//
//	learner assign [FILE]     one rebalance in the design document's notation,
//	                          or a scenario script of testdata/scenarios replayed
//	learner simulate [flags]  a simulated group under scaling, strategy by strategy
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/learnerassignor/learner/internal/errtext"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  learner assign [FILE]      assign one rebalance written in the notation (-h for more)
  learner simulate [flags]   simulate a group under scaling and compare strategies (-h for flags)
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "assign":
		return assignMain(args[1:], stdin, stdout, stderr)
	case "simulate":
		return simulateMain(args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "learner: unknown command %s (run learner help for usage)\n", errtext.Quote(args[0]))
		return 2
	}
}
