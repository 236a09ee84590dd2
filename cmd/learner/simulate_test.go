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

func simulate(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"simulate"}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestSimulateDefault(t *testing.T) {
	out, errs, code := simulate(t)
	require.Zero(t, code, "learner simulate: exit code; stderr %q", errs)
	require.Empty(t, errs, "learner simulate: stderr")
	for _, want := range []string{"96 tasks (16 stateless), 8 members at start", "downtime", "learner (stable)", "learner (eager)", "stop-the-world", "cooperative", "warm-up+probing"} {
		assert.Contains(t, out, want, "learner simulate: stdout")
	}
}

// TestSimulatePrintedScenario checks that -print-scenario writes the
// default in the scenario format: read back with -scenario, it gives the
// same table.
func TestSimulatePrintedScenario(t *testing.T) {
	text, _, code := simulate(t, "-print-scenario", "-members", "6", "-tasks", "20", "-stateless", "4")
	require.Zero(t, code, "-print-scenario: exit code")
	file := filepath.Join(t.TempDir(), "scenario.txt")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	want, _, _ := simulate(t, "-members", "6", "-tasks", "20", "-stateless", "4")
	got, errs, code := simulate(t, "-scenario", file)
	assert.Zero(t, code, "-scenario of the printed default: exit code; stderr %q", errs)
	assert.Equal(t, want, got, "-scenario of the printed default: output, want the default's")
}

func TestSimulateVerboseAndSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	out, errs, code := simulate(t, "-members", "4", "-tasks", "6", "-stateless", "1", "-v", "-svg", svg)
	require.Zero(t, code, "learner simulate -v -svg: exit code; stderr %q", errs)
	for _, want := range []string{
		"== learner (stable)\n",
		"\n#Rebalance 1 at 1m0s (S3 joins), leader S1\n",
		"\tS1(assigned: [T1, T2, T3], revoked: [], learning: [])\n",
		"S1 performs task assignments at 1m3s:\n",
		"Withheld for the follow-up rebalance: ",
	} {
		assert.Contains(t, out, want, "-v output")
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("<svg ")) && bytes.HasSuffix(b, []byte("</svg>\n")) && bytes.Contains(b, []byte(">S4</text>")),
		"-svg wrote no complete picture with a row for S4:\n%.300s", b)
}

func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("duration 1h\ntasks T1 size 5\nmembers S1\nat 1m fly S1\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", bad}, `line 4: unknown event "fly"`},
		{[]string{"-scenario", bad, "-members", "5"}, "-members shapes the default scenario"},
		{[]string{"-scenario", filepath.Join(dir, "missing.txt")}, "missing.txt"},
		{[]string{"-members", "2"}, "at least 4 members"},
		{[]string{"-size", "big"}, "-size: want MIN-MAX"},
		{[]string{"-max-warmups", "0"}, "-max-warmups at least 1"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		out, errs, code := simulate(t, tc.args...)
		assert.Equal(t, 2, code, "learner simulate %v: exit code", tc.args)
		assert.Empty(t, out, "learner simulate %v: stdout", tc.args)
		assert.Contains(t, errs, tc.want, "learner simulate %v: stderr", tc.args)
	}
}
