package learner

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/scenarios")

// TestScenarios runs the datadriven scripts in testdata/scenarios: the
// design document's walkthroughs round by round, and scenarios of our own.
//
// A script is a sequence of blocks:
//
//	# comments (kept by -update)
//	assign
//	<one rebalance in the notation>
//	----
//	<expected assignments, or "error: ..." for rejected input>
//
// Every round is also checked against the invariants and for determinism:
// the members in reverse and rotated order must give the same output.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := parseScript(string(src))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for i := range blocks {
				b := &blocks[i]
				got := runScenario(t, b)
				if *update {
					b.want = got
					continue
				}
				if got != b.want {
					t.Errorf("%s:%d: %s:\n%s\n----\ngot:\n%s\nwant:\n%s", file, b.line, b.cmd, b.input, got, b.want)
				}
			}
			if *update {
				if err := os.WriteFile(file, []byte(formatScript(blocks)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// runScenario runs one block and returns its output text.
func runScenario(t *testing.T, b *scriptBlock) string {
	t.Helper()
	if b.cmd != "assign" {
		t.Fatalf("line %d: unknown command %q", b.line, b.cmd)
	}
	r, err := ParseRebalance(b.input)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	a, err := New(r.Tasks, r.Options)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	out, err := a.Assign(r.Members)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	got := FormatAssignments(out)
	for _, v := range checkInvariants(a, r.Members, out) {
		t.Errorf("line %d: invariant: %s", b.line, v)
	}
	n := len(r.Members)
	for shift := 1; shift <= n; shift++ {
		perm := slices.Clone(r.Members)
		if shift == n {
			slices.Reverse(perm)
		} else {
			perm = append(perm[shift:], perm[:shift]...)
		}
		other, err := a.Assign(perm)
		if err != nil || FormatAssignments(other) != got {
			t.Errorf("line %d: Assign(members in another order) = %v, %v; want the same as in input order:\n%s",
				b.line, FormatAssignments(other), err, got)
		}
	}
	return got
}

// scriptBlock is one command of a script with the text around it.
type scriptBlock struct {
	prefix string // comments and blank lines before the command
	cmd    string
	line   int // line number of the command
	input  string
	want   string
}

func parseScript(src string) ([]scriptBlock, error) {
	var blocks []scriptBlock
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	var prefix strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			prefix.WriteString(l + "\n")
			continue
		}
		b := scriptBlock{prefix: prefix.String(), cmd: strings.TrimSpace(l), line: i + 1}
		prefix.Reset()
		var in strings.Builder
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			in.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			return nil, &SyntaxError{Line: b.line, Msg: "command without ----"}
		}
		var want strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			want.WriteString(lines[i] + "\n")
		}
		i-- // let the blank line (if any) go to the next prefix
		b.input, b.want = in.String(), want.String()
		blocks = append(blocks, b)
	}
	return blocks, nil
}

func formatScript(blocks []scriptBlock) string {
	var s strings.Builder
	for _, b := range blocks {
		s.WriteString(b.prefix + b.cmd + "\n" + b.input + "----\n" + b.want)
	}
	return s.String()
}
