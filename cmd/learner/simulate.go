package main

import (
	"fmt"
	"io"
)

// simulateMain is replaced by the simulator (issue 5).
func simulateMain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "learner simulate: not built yet")
	return 1
}
