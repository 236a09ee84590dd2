package learner_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
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
	require.NoError(t, err)
	require.NotEmpty(t, files, "no scenario scripts in testdata/scenarios")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			blocks, err := parseScript(string(src))
			require.NoError(t, err, file)
			for i := range blocks {
				b := &blocks[i]
				got := runScenario(t, b)
				if *update {
					b.want = got
					continue
				}
				assert.Equal(t, b.want, got, "%s:%d: %s:\n%s", file, b.line, b.cmd, b.input)
			}
			if *update {
				require.NoError(t, os.WriteFile(file, []byte(formatScript(blocks)), 0o644))
			}
		})
	}
}

// runScenario runs one block and returns its output text.
func runScenario(t *testing.T, b *scriptBlock) string {
	t.Helper()
	require.Equal(t, "assign", b.cmd, "line %d: unknown command", b.line)
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
	vs := learnertest.Check(a.Tasks(), a.Options(), r.Members, out)
	assert.Empty(t, vs, "line %d: Assign breaks rules:\n%s", b.line, learnertest.FormatViolations(vs))
	n := len(r.Members)
	for shift := 1; shift <= n; shift++ {
		perm := slices.Clone(r.Members)
		if shift == n {
			slices.Reverse(perm)
		} else {
			perm = append(perm[shift:], perm[:shift]...)
		}
		other, err := a.Assign(perm)
		if assert.NoError(t, err, "line %d: Assign(members in another order)", b.line) {
			assert.Equal(t, got, FormatAssignments(other), "line %d: Assign(members in another order) differs from Assign(members in input order)", b.line)
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
