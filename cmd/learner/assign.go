package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/errtext"
	"github.com/learnerassignor/learner/internal/scenario"
)

const assignUsage = `usage: learner assign [FILE]

Reads one rebalance in the design document's notation from FILE (standard
input when FILE is - or missing) and prints every member's assignment, one
line each. Tasks a member lists that the tasks: line lacks are warned about
on standard error: the assignor treats them as tasks the topology no longer
has.

Exit status: 0 when assigned, 1 when the assignor rejects the group, 2 for
malformed notation or an unreadable file. Errors and warnings name the
input's line as FILE:N (<standard input>:N for standard input).

A scenario script (as in testdata/scenarios: blocks of "assign", a
rebalance, "----" and its output) is replayed instead: every block is run
and the script printed back with the outputs it gives now, so that
"learner assign FILE | diff FILE -" shows what changed. Rejected input is
output there ("error: ..."), not an exit status.
`

// assignMain runs `learner assign`.
func assignMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	file, help, err := assignArgs(args)
	switch {
	case help:
		fmt.Fprint(stdout, assignUsage)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "learner assign: %v (run learner assign -h for usage)\n", err)
		return 2
	}
	src, err := readInput(file, stdin, maxAssignInput)
	if err != nil {
		fmt.Fprintf(stderr, "learner assign: %v\n", err)
		return 2
	}
	input := inputName(file)
	text := strings.TrimPrefix(string(src), "\uFEFF") // a byte-order mark
	if scenario.IsScript(text) {
		return replay(text, input, stdout, stderr)
	}
	r, err := learner.ParseRebalance(text)
	if err != nil {
		fmt.Fprintf(stderr, "learner assign: %s\n", describe(input, err))
		return 2
	}
	for _, w := range r.Warnings() {
		fmt.Fprintf(stderr, "learner assign: %s\n", atLine(input, w.Line, "warning: "+w.Msg))
	}
	a, err := learner.New(r.Tasks, r.Options)
	if err != nil {
		fmt.Fprintf(stderr, "learner assign: %v\n", err)
		return 2
	}
	out, err := a.Assign(r.Members)
	if err != nil {
		fmt.Fprintf(stderr, "learner assign: %s\n", describe(input, r.Locate(err)))
		return 1
	}
	fmt.Fprint(stdout, learner.FormatAssignments(out))
	return 0
}

// replay runs every block of a scenario script and prints the script with
// the outputs they give; input names the script in errors.
func replay(src, input string, stdout, stderr io.Writer) int {
	s, err := scenario.Parse(src)
	if err != nil {
		fmt.Fprintf(stderr, "learner assign: %s\n", describe(input, err))
		return 2
	}
	s.Rewrite(func(b scenario.Block) string { return scenario.Run(b).Output() })
	fmt.Fprint(stdout, s.String())
	return 0
}

// assignArgs reads assign's arguments: a help flag, or at most one FILE
// ("-" for stdin; after "--" even a name starting with "-").
func assignArgs(args []string) (file string, help bool, err error) {
	var files []string
	for i, arg := range args {
		if arg == "--" {
			files = append(files, args[i+1:]...)
			break
		}
		switch {
		case arg == "-h" || arg == "-help" || arg == "--help":
			return "", true, nil
		case arg != "-" && strings.HasPrefix(arg, "-"):
			return "", false, fmt.Errorf("unknown flag %s", errtext.Quote(arg))
		}
		files = append(files, arg)
	}
	if len(files) > 1 {
		return "", false, fmt.Errorf("want at most one FILE, got %d", len(files))
	}
	// "" stands for no FILE below: an empty name (an unset "$FILE") would
	// read standard input, waiting on a terminal.
	if len(files) == 1 && files[0] == "" {
		return "", false, errors.New("empty FILE name (- for standard input)")
	}
	files = append(files, "")
	return files[0], false, nil
}

// maxAssignInput bounds what learner assign reads, 64 MiB: four times the
// notation of 10,000 members and a million tasks (16 MB, assigned in
// seconds), so that a mistaken file or /dev/zero fails there in a moment
// rather than once memory runs out (1 GiB took 20 s and 2 GB to refuse).
// It bounds memory only loosely: a 59 MB file of one task and 5.5 million
// empty members assigned in 19 s at a peak RSS of 4.7 GB (/usr/bin/time -v,
// 2026-12-02).
const maxAssignInput = 64 << 20
