package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func simulate(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"simulate"}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func TestSimulateDefault(t *testing.T) {
	out, errs, code := simulate(t)
	if code != 0 || errs != "" {
		t.Fatalf("learner simulate: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"96 tasks (16 stateless), 8 members at start", "downtime", "learner (stable)", "learner (eager)", "stop-the-world", "cooperative", "warm-up+probing"} {
		if !strings.Contains(out, want) {
			t.Errorf("learner simulate output lacks %q:\n%s", want, out)
		}
	}
}

// TestSimulatePrintedScenario checks that -print-scenario writes the
// default in the scenario format: read back with -scenario, it gives the
// same table.
func TestSimulatePrintedScenario(t *testing.T) {
	text, _, code := simulate(t, "-print-scenario", "-members", "6", "-tasks", "20", "-stateless", "4")
	if code != 0 {
		t.Fatalf("-print-scenario: exit %d", code)
	}
	file := filepath.Join(t.TempDir(), "scenario.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want, _, _ := simulate(t, "-members", "6", "-tasks", "20", "-stateless", "4")
	got, errs, code := simulate(t, "-scenario", file)
	if code != 0 || got != want {
		t.Errorf("-scenario of the printed default: exit %d, stderr %q, output\n%s\nwant\n%s", code, errs, got, want)
	}
}

func TestSimulateVerboseAndSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	out, errs, code := simulate(t, "-members", "4", "-tasks", "6", "-stateless", "1", "-v", "-svg", svg)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"== learner (stable)\n",
		"\n#Rebalance 1 at 1m0s (S3 joins), leader S1\n",
		"\tS1(assigned: [T1, T2, T3], revoked: [], learning: [])\n",
		"S1 performs task assignments at 1m3s:\n",
		"Withheld for the follow-up rebalance: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-v output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<svg ")) || !bytes.HasSuffix(b, []byte("</svg>\n")) || !bytes.Contains(b, []byte(">S4</text>")) {
		t.Errorf("-svg wrote no complete picture with a row for S4:\n%.300s", b)
	}
}

func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("duration 1h\ntasks T1 size 5\nmembers S1\nat 1m fly S1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
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
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("learner simulate %v: exit %d, stdout %q, stderr %q; want exit 2, no output, stderr containing %q", tc.args, code, out, errs, tc.want)
		}
	}
}
