package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/sim"
)

// inputName is how messages name the input, as gofmt does: the FILE as
// given, or "<standard input>".
func inputName(file string) string {
	if file == "" || file == "-" {
		return "<standard input>"
	}
	return file
}

// atLine places msg at a line of the input as the go command and gofmt
// do, "FILE:N: msg", so that editors and terminals can jump to it.
func atLine(input string, line int, msg string) string {
	return fmt.Sprintf("%s:%d: %s", input, line, msg)
}

// describe is err's text for standard error, an error of the input (a
// rebalance, a scenario script or a simulator's scenario): placed at its
// line when it has one, from the fields rather than the text, which
// carries the package prefix and "line N"; else after the input's name, as
// gofmt names a file it cannot parse, so that a run over many files still
// says which one lacks, say, a duration.
func describe(input string, err error) string {
	var se *learner.SyntaxError
	var le *learner.LineError
	var sle *sim.LineError
	switch {
	case errors.As(err, &se):
		return atLine(input, se.Line, se.Msg)
	case errors.As(err, &le):
		return atLine(input, le.Line, le.Msg)
	case errors.As(err, &sle):
		return atLine(input, sle.Line, sle.Msg)
	}
	return input + ": " + err.Error()
}

// readInput reads the named file, or stdin for "" and "-", up to limit
// bytes: a longer input is an error once limit+1 bytes are in, so that an
// endless one (/dev/zero) fails instead of filling memory.
func readInput(name string, stdin io.Reader, limit int64) ([]byte, error) {
	r, shown := stdin, inputName(name)
	if name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", shown, err)
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("%s is longer than %d bytes", shown, limit)
	}
	return b, nil
}
