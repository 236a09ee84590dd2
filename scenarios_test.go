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
	"github.com/learnerassignor/learner/internal/scenario"
	"github.com/learnerassignor/learner/learnertest"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/scenarios")

// TestScenarios runs the datadriven scripts in testdata/scenarios (format:
// package internal/scenario): the design document's walkthroughs round by
// round, and scenarios of our own. -update rewrites each block's output.
//
// Every round is also checked against learnertest's rules and for
// determinism: the members in reverse and rotated order must give the same
// output.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no scenario scripts in testdata/scenarios")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			s, err := scenario.Parse(string(src))
			require.NoError(t, err, file)
			s.Rewrite(func(b scenario.Block) string {
				got := runScenario(t, &b)
				if *update {
					return got
				}
				assert.Equal(t, b.Output, got, "%s:%d: %s:\n%s", file, b.Line, b.Cmd, b.Input)
				return b.Output
			})
			if *update {
				require.NoError(t, os.WriteFile(file, []byte(s.String()), 0o644))
			}
		})
	}
}

// runScenario runs one block and returns its output text.
func runScenario(t *testing.T, b *scenario.Block) string {
	t.Helper()
	res := scenario.Run(*b)
	if res.Err != nil {
		return res.Output()
	}
	a, r, out := res.Assignor, res.Rebalance, res.Out
	got := res.Output()
	vs := learnertest.Check(a.Tasks(), a.Options(), r.Members, out)
	assert.Empty(t, vs, "line %d: Assign breaks rules:\n%s", b.Line, learnertest.FormatViolations(vs))
	n := len(r.Members)
	for shift := 1; shift <= n; shift++ {
		perm := slices.Clone(r.Members)
		if shift == n {
			slices.Reverse(perm)
		} else {
			perm = append(perm[shift:], perm[:shift]...)
		}
		other, err := a.Assign(perm)
		if assert.NoError(t, err, "line %d: Assign(members in another order)", b.Line) {
			assert.Equal(t, got, FormatAssignments(other), "line %d: Assign(members in another order) differs from Assign(members in input order)", b.Line)
		}
	}
	return got
}
