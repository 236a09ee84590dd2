package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/learnerassignor/learner"
)

// assignMain reads one rebalance in the notation from FILE (stdin without
// one) and prints every member's assignment. Malformed notation exits 2 with
// "line N: ..."; a group the assignor rejects exits 1.
func assignMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: learner assign [FILE]")
		return 2
	}
	src, err := readInput(args, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "learner assign: %v\n", err)
		return 2
	}
	r, err := learner.ParseRebalance(string(src))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	a, err := learner.New(r.Tasks, r.Options)
	if err == nil {
		var out []learner.Assignment
		if out, err = a.Assign(r.Members); err == nil {
			fmt.Fprint(stdout, learner.FormatAssignments(out))
			return 0
		}
	}
	fmt.Fprintf(stderr, "invalid group: %v\n", err)
	if errors.Is(err, learner.ErrInvalidOptions) || errors.Is(err, learner.ErrInvalidTopology) {
		return 2
	}
	return 1
}

func readInput(args []string, stdin io.Reader) ([]byte, error) {
	if len(args) == 1 {
		return os.ReadFile(args[0])
	}
	return io.ReadAll(stdin)
}
