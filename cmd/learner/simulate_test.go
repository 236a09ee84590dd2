package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/learnerassignor/learner/sim"
)

func simulate(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"simulate"}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestSimulateDefault(t *testing.T) {
	out, errs, code := simulate(t)
	require.Equal(t, 0, code, "learner simulate: stderr %q", errs)
	assert.Empty(t, errs)
	for _, want := range []string{"96 tasks (16 stateless), 8 members at start", "1 standby(s)", "downtime", "cold", "unavoidable", "stateful down",
		"learner (stable)", "learner (eager)", "stop-the-world", "cooperative", "warm-up+probing", "downtime by cause", "crash"} {
		assert.Contains(t, out, want)
	}
}

// TestSimulatePrintedScenario checks that -print-scenario writes the
// default in the scenario format: read back with -scenario, it gives the
// same table.
func TestSimulatePrintedScenario(t *testing.T) {
	text, _, code := simulate(t, "-print-scenario", "-members", "6", "-tasks", "20", "-stateless", "4")
	require.Equal(t, 0, code)
	file := filepath.Join(t.TempDir(), "scenario.txt")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o644))
	want, _, _ := simulate(t, "-members", "6", "-tasks", "20", "-stateless", "4")
	got, errs, code := simulate(t, "-scenario", file)
	assert.Equal(t, 0, code, "stderr %q", errs)
	assert.Equal(t, want, got, "-scenario of the printed default")
}

func TestSimulateVerboseAndSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	out, errs, code := simulate(t, "-members", "4", "-tasks", "6", "-stateless", "1", "-v", "-svg", svg)
	require.Equal(t, 0, code, "stderr %q", errs)
	for _, want := range []string{
		"== learner (stable)\n",
		"\n#Rebalance 1 at 1m0s (S3 joins), leader S1\n",
		"\tS1(assigned: [T1, T2, T3], revoked: [], learning: [], standby: [T4, T5], lag: [T4=0, T5=0])\n",
		"S1 performs task assignments at 1m3s:\n",
		"Withheld for the follow-up rebalance: ",
	} {
		assert.Contains(t, out, want, "-v output")
	}
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("<svg ")) && bytes.HasSuffix(b, []byte("</svg>\n")), "-svg wrote no complete picture")
	assert.Contains(t, string(b), ">S4</text>", "-svg: no row for S4")
}

// TestSimulateStandbysFlag: -standbys 0 gives the figures without standbys.
func TestSimulateStandbysFlag(t *testing.T) {
	with, _, code := simulate(t)
	require.Equal(t, 0, code)
	without, errs, code := simulate(t, "-standbys", "0")
	require.Equal(t, 0, code, "stderr %q", errs)
	assert.Contains(t, without, "0 standby(s)")
	assert.NotEqual(t, with, without)
}

func TestSimulateSuite(t *testing.T) {
	out, errs, code := simulate(t, "-suite", "3", "-seed", "5")
	require.Equal(t, 0, code, "stderr %q", errs)
	assert.Contains(t, out, "suite of 3 random scenarios, seed 5: totals per strategy")
	assert.Contains(t, out, "warm-up+probing")
}

// TestSimulateBadInput: every bad flag or scenario exits 2 before anything
// runs, naming the flag (or FILE:N) and what it allows.
func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("duration 1h\ntasks T1 size 5\nmembers S1\nat 1m fly S1\n"), 0o644))
	late := filepath.Join(dir, "late.txt")
	require.NoError(t, os.WriteFile(late, []byte("duration 1h\ntasks T1 size 5\nmembers S1 S2\nat 50m crash S1\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", bad}, "learner simulate: " + bad + `:4: unknown event "fly"` + "\n"},
		{[]string{"-scenario", bad, "-members", "5"}, "-members shapes the default scenario; it cannot be used with -scenario"},
		{[]string{"-scenario", filepath.Join(dir, "missing.txt")}, "missing.txt"},
		{[]string{"-scenario", late, "-duration", "30m"}, "learner simulate: " + late + ":4: crash event at 50m0s is after -duration 30m0s\n"},
		{[]string{"-duration", "1m"}, "-duration 1m0s: want at least 2m0s (line 19 of the default scenario has a join event then)"},
		{[]string{"-members", "1"}, "-members 1: want 4 to 1000"},
		{[]string{"-tasks", "0"}, "-tasks 0: want 1 to 10000"},
		{[]string{"-stateless", "200"}, "-stateless 200: want 0 to 96 (the number of tasks)"},
		{[]string{"-tasks", "1"}, "-stateless 16 (its default): want 0 to 1 (the number of tasks)"},
		{[]string{"-size", "big"}, "-size big: want MIN-MAX in MB"},
		{[]string{"-size", "9-1"}, "-size 9-1: want MIN-MAX with 0 < MIN <= MAX"},
		{[]string{"-rate", "-1"}, "-rate -1: want above 0"},
		{[]string{"-rate", "NaN"}, "-rate NaN: want above 0, at most 1e+12"},
		{[]string{"-size", "1-Inf"}, "-size 1-+Inf: want MIN-MAX with 0 < MIN <= MAX <= 1e+12"},
		{[]string{"-duration", "0s"}, "-duration 0s: want 1s to 1000h0m0s"},
		{[]string{"-pause", "-3s"}, "-pause -3s: want 0s to 1h0m0s"},
		{[]string{"-session-timeout", "2h"}, "-session-timeout 2h0m0s: want 1s to 1h0m0s"},
		{[]string{"-session-timeout", "30ms"}, "-session-timeout 30ms: want 1s to 1h0m0s"},
		{[]string{"-probing-interval", "0s"}, "-probing-interval 0s: want 1s to 1000h0m0s"},
		{[]string{"-max-warmups", "0"}, "-max-warmups 0: want 1 to 1000"},
		{[]string{"-leave-deadline", "-1s"}, "-leave-deadline -1s: want 0s to 1000h0m0s"},
		{[]string{"-standbys", "9"}, "-standbys 9: want 0 to 8"},
		{[]string{"-replay-lag", "-1s"}, "-replay-lag -1s: want 0s to 1h0m0s"},
		{[]string{"-handover", "twice"}, `-handover "twice": want one-round, follow-up, withhold or follow-up-ready`},
		{[]string{"-suite", "0"}, "-suite 0: want 1 to 200"},
		{[]string{"-suite", "2", "-members", "5"}, "-members shapes the default scenario; it cannot be used with -suite"},
		{[]string{"-suite", "2", "-svg", "x.svg"}, "-svg works on one scenario; it cannot be used with -suite"},
		{[]string{"-suite", "2", "-pause", "-1s"}, "-pause -1s: want 0s to 1h0m0s"},
		{[]string{"-suite", "5", "-duration", "1h"}, "-duration 1h0m0s: want at least 1h4m14s (suite scenario 2 of seed 1 has a join event then)"},
		{[]string{"-svg", filepath.Join(dir, "nonexistent", "x.svg")}, "-svg: open "},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		out, errs, code := simulate(t, tc.args...)
		assert.Equal(t, 2, code, "learner simulate %v: exit code (stderr %q)", tc.args, errs)
		assert.Empty(t, out, "learner simulate %v: stdout", tc.args)
		assert.Contains(t, errs, tc.want, "learner simulate %v: stderr", tc.args)
	}
}

// TestSimulateSVGFile: -svg replaces an existing file with the picture,
// and a path it cannot write fails before the run.
func TestSimulateSVGFile(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "timeline.svg")
	require.NoError(t, os.WriteFile(svg, []byte(strings.Repeat("an older, longer picture\n", 1e4)), 0o644))
	_, errs, code := simulate(t, "-members", "4", "-tasks", "6", "-stateless", "1", "-svg", svg)
	require.Equal(t, 0, code, "stderr %q", errs)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("<svg ")) && bytes.HasSuffix(b, []byte("</svg>\n")),
		"-svg over an existing file: got %.40q...%q, want the picture alone", b, b[max(0, len(b)-40):])

	// A directory in the picture's place fails at once, as a bad path does.
	blocked := filepath.Join(dir, "blocked.svg")
	require.NoError(t, os.Mkdir(blocked, 0o755))
	out, errs, code := simulate(t, "-members", "4", "-tasks", "6", "-stateless", "1", "-svg", blocked)
	assert.Equal(t, 2, code, "-svg onto a directory: exit code (stderr %q)", errs)
	assert.Empty(t, out, "-svg onto a directory: the run should not start")
	assert.Contains(t, errs, "blocked.svg")
}

// TestSimulateScenarioFromStdin: -scenario - reads the scenario from the
// command's standard input.
func TestSimulateScenarioFromStdin(t *testing.T) {
	var out, errb bytes.Buffer
	script := "duration 1h\ntasks T1 T2 size 5\nmembers S1 S2\nat 10m crash S2\n"
	code := run([]string{"simulate", "-scenario", "-"}, strings.NewReader(script), &out, &errb)
	require.Equal(t, 0, code, "learner simulate -scenario -: stderr %q", errb.String())
	assert.Contains(t, out.String(), "2 tasks")
}

// TestSimulateSVGDevice: -svg onto a file that cannot be truncated (a
// device, a pipe: /dev/null, /dev/stdout) writes the picture there, as
// os.Create's truncation, which such files ignore, let it.
func TestSimulateSVGDevice(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil || os.DevNull != "/dev/null" {
		t.Skip("no /dev/null")
	}
	_, errs, code := simulate(t, "-members", "4", "-tasks", "6", "-stateless", "1", "-svg", os.DevNull)
	assert.Equal(t, 0, code, "-svg %s: exit code (stderr %q)", os.DevNull, errs)
}

// TestSimulateScenarioTooLong: a scenario longer than any the limits allow
// (sim.MaxScenarioSize) fails with exit 2 and says so, read from a file or
// from standard input, instead of being read whole into memory: -scenario
// /dev/zero, or a binary file by mistake, would exhaust it.
func TestSimulateScenarioTooLong(t *testing.T) {
	const limit = sim.MaxScenarioSize
	script := "duration 1h\ntasks T1 T2 size 5\nmembers S1 S2\n"
	comment := "# " + strings.Repeat("x", 61) + "\n"
	long := script + strings.Repeat(comment, (limit-len(script))/len(comment)+1)
	require.Greater(t, len(long), limit)
	file := filepath.Join(t.TempDir(), "long.txt")
	require.NoError(t, os.WriteFile(file, []byte(long), 0o644))
	for _, args := range [][]string{{"-scenario", file}, {"-scenario", "-"}} {
		var out, errb bytes.Buffer
		code := run(append([]string{"simulate"}, args...), strings.NewReader(long), &out, &errb)
		assert.Equal(t, 2, code, "learner simulate %v of %d bytes: exit code (stderr %q)", args, len(long), errb.String())
		assert.Empty(t, out.String(), "learner simulate %v: stdout", args)
		assert.Contains(t, errb.String(), "longer than 67108864 bytes", "learner simulate %v: stderr", args)
	}

	// An endless input stops at the limit.
	var out, errb bytes.Buffer
	code := run([]string{"simulate", "-scenario", "-"}, zeros{}, &out, &errb)
	assert.Equal(t, 2, code, "learner simulate -scenario - < /dev/zero: exit code (stderr %q)", errb.String())
	assert.Equal(t, "learner simulate: -scenario: <standard input> is longer than 67108864 bytes\n", errb.String())
}

// zeros reads as /dev/zero does: zero bytes without end.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
