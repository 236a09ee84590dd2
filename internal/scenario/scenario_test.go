package scenario

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const script = `# A comment.

assign
tasks: T1
S1()
----
S1(assigned: [T1], revoked: [], learning: [])

# Rejected input.
assign
tasks: T1
S1(assigned: [T1]
----
error: learner: line 12: member S1: want ',' or ')', got end of line

# A trailing comment.
`

func TestParseRunString(t *testing.T) {
	assert.True(t, IsScript(script))
	s, err := Parse(script)
	require.NoError(t, err)
	require.Len(t, s.Blocks, 2)
	assert.Equal(t, 3, s.Blocks[0].Line)
	assert.Equal(t, "\n# A trailing comment.\n", s.Tail)
	for _, b := range s.Blocks {
		assert.Equal(t, b.Output, Run(b).Output(), "Run(block at line %d)", b.Line)
	}
	assert.Equal(t, script, s.String(), "Parse(script).String()")
}

// TestRewriteMovesLines: a stale output that gains lines moves the block
// after it, whose syntax error must name its line in the script written,
// so that one replay settles the script.
func TestRewriteMovesLines(t *testing.T) {
	stale := strings.Replace(script, "S1(assigned: [T1], revoked: [], learning: [])\n", "", 1)
	s, err := Parse(stale)
	require.NoError(t, err)
	run := func(b Block) string { return Run(b).Output() }
	s.Rewrite(run)
	assert.Equal(t, script, s.String(), "Rewrite(Run) of a script whose first output was missing")
	again, err := Parse(s.String())
	require.NoError(t, err)
	again.Rewrite(run)
	assert.Equal(t, script, again.String(), "Rewrite(Run) of its own output")
}

func TestIsScript(t *testing.T) {
	assert.False(t, IsScript("tasks: T1\nS1()\n"), "a rebalance")
	assert.False(t, IsScript("# only comments\n\n"))
	assert.True(t, IsScript("  # indented comment\n  assign  \n"))
}

// TestParseIndentedComment: a script IsScript accepts because its comment
// is indented parses with that comment kept as it is.
func TestParseIndentedComment(t *testing.T) {
	src := "  # indented comment\nassign\ntasks: T1\nS1()\n----\nS1(assigned: [T1], revoked: [], learning: [])\n"
	require.True(t, IsScript(src))
	s, err := Parse(src)
	require.NoError(t, err, "Parse(%q)", src)
	require.Len(t, s.Blocks, 1)
	assert.Equal(t, "  # indented comment\n", s.Blocks[0].Prefix)
	assert.Equal(t, src, s.String(), "Parse(src).String()")
}

// TestParseBlocksWithoutBlankLine: a block that follows an output with no
// blank line between is a block, not more output (replaying such a script
// printed the first block alone and lost the second).
func TestParseBlocksWithoutBlankLine(t *testing.T) {
	src := "assign\ntasks: T1\nS1()\n----\nassign\ntasks: T1\nS1(\n----\n"
	s, err := Parse(src)
	require.NoError(t, err, "Parse(%q)", src)
	require.Len(t, s.Blocks, 2, "Parse(%q).Blocks", src)
	assert.Equal(t, 5, s.Blocks[1].Line)
	assert.Equal(t, src, s.String(), "Parse(src).String()")
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"assign\ntasks: T1\n", "learner: line 1: assign without ----"},
		{"# c\nassign\n----\n\nbalance\n----\n", `learner: line 5: unknown command "balance" (want assign)`},
	} {
		_, err := Parse(tc.src)
		assert.EqualError(t, err, tc.want, "Parse(%q)", tc.src)
	}
}

// TestParseCRLF: a script saved with Windows line ends parses as the same
// script with Unix ones, as a single rebalance in the notation does, rather
// than failing for want of a "----" line it has.
func TestParseCRLF(t *testing.T) {
	crlf := strings.ReplaceAll(script, "\n", "\r\n")
	require.True(t, IsScript(crlf))
	s, err := Parse(crlf)
	require.NoError(t, err, "Parse(%q)", crlf)
	assert.Equal(t, script, s.String(), "Parse(crlf).String()")
	for _, b := range s.Blocks {
		assert.Equal(t, b.Output, Run(b).Output(), "Run(block at line %d)", b.Line)
	}
}
