package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// A round pasted from the design document (Scale Up Running Application,
// fourth rebalance), with the ready flag its text describes.
const pastedRound = `tasks: T1 T2 T3 T4 T5
	S1(assigned: [T2], revoked: [], learning: [])
	S2(assigned: [T4], revoked: [T3], learning: []) // T3 revoked because it's "being learned"
	S3(assigned: [T5], revoked: [], learning: [])
	S4(assigned: [T1], revoked: [], learning: [])
	S5(assigned: [], revoked: [], learning: [T3], ready: [T3])
`

const pastedOutput = `S1(assigned: [T2], revoked: [], learning: [])
S2(assigned: [T4], revoked: [T3], learning: [])
S3(assigned: [T5], revoked: [], learning: [])
S4(assigned: [T1], revoked: [], learning: [])
S5(assigned: [T3], revoked: [], learning: [])
`

func TestAssignFromStdin(t *testing.T) {
	code, out, errOut := runCLI(t, pastedRound, "assign")
	assert.Zero(t, code, "learner assign: exit code")
	assert.Equal(t, pastedOutput, out, "learner assign: stdout")
	assert.Empty(t, errOut, "learner assign: stderr")
}

func TestAssignFromFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "round.txt")
	require.NoError(t, os.WriteFile(file, []byte(pastedRound), 0o644))
	code, out, errOut := runCLI(t, "", "assign", file)
	assert.Zero(t, code, "learner assign FILE: exit code")
	assert.Equal(t, pastedOutput, out, "learner assign FILE: stdout")
	assert.Empty(t, errOut, "learner assign FILE: stderr")
}

func TestAssignErrors(t *testing.T) {
	for _, tc := range []struct {
		name, stdin string
		args        []string
		code        int
		stderr      string
	}{
		{"malformed notation", "tasks: T1\nS1(assigned: [T1]\n", []string{"assign"}, 2, "line 2: member S1: want ',' or ')'"},
		{"missing tasks", "S1()\n", []string{"assign"}, 2, "line 1: missing the tasks: line"},
		{"invalid group", "tasks: T1\nS1()\nS1()\n", []string{"assign"}, 1, `invalid group: learner: member "S1" (position 1): duplicate member ID`},
		{"ready not learning", "tasks: T1\nS1(ready: [T1])\n", []string{"assign"}, 1, `ready task "T1" is not in learning`},
		{"missing file", "", []string{"assign", "/nonexistent/round.txt"}, 2, "no such file"},
		{"two files", "", []string{"assign", "a", "b"}, 2, "usage: learner assign [FILE]"},
		{"no command", "", nil, 2, "usage:"},
		{"unknown command", "", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, tc.args...)
			assert.Equal(t, tc.code, code, "learner %v: exit code", tc.args)
			assert.Empty(t, out, "learner %v: stdout", tc.args)
			assert.Contains(t, errOut, tc.stderr, "learner %v: stderr", tc.args)
		})
	}
}
