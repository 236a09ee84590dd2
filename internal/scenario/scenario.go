// Package scenario reads, runs and writes the scenario scripts of
// testdata/scenarios, so that the tests that check them and learner assign,
// which replays them by hand, agree on every byte.
//
// A script is a sequence of blocks:
//
//	# comments and blank lines, kept as they are
//	assign
//	<one rebalance in the notation>
//	----
//	<its output: the assignments, or "error: ..." for rejected input>
//
// The output ends at the first blank line, or at the next assign.
package scenario

import (
	"fmt"
	"strings"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/errtext"
)

// Block is one command of a script with the text around it.
type Block struct {
	Prefix string // comments and blank lines before the command
	Cmd    string
	Line   int // line (from 1) of the command
	Input  string
	Output string
}

// Script is a parsed script.
type Script struct {
	Blocks []Block
	Tail   string // comments and blank lines after the last block
}

// IsScript reports whether src is a script rather than one rebalance in
// the notation: its first line that is neither blank nor a comment is a
// command alone (the notation has no line of one word).
func IsScript(src string) bool {
	for line := range strings.Lines(src) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return line == "assign"
	}
	return false
}

// Parse reads a script of assign blocks. Errors are *learner.SyntaxError
// values.
func Parse(src string) (Script, error) { return parse(src, "assign") }

// ParseAny reads a datadriven script whose commands the caller interprets
// (the coordinator's scripts): every line that is neither blank nor a
// comment starts a block, and is its Cmd.
func ParseAny(src string) (Script, error) { return parse(src, "") }

// parse reads a script; a non-empty only is the one command allowed.
func parse(src, only string) (Script, error) {
	var s Script
	// Windows line ends read as Unix ones, as the notation reads them: a
	// "----\r" line would otherwise not end the input.
	src = strings.ReplaceAll(src, "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	var prefix strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") { // as IsScript reads them
			prefix.WriteString(l + "\n")
			continue
		}
		b := Block{Prefix: prefix.String(), Cmd: strings.TrimSpace(l), Line: i + 1}
		prefix.Reset()
		if only != "" && b.Cmd != only {
			return Script{}, &learner.SyntaxError{Line: b.Line, Msg: fmt.Sprintf("unknown command %s (want %s)", errtext.Quote(b.Cmd), only)}
		}
		var in strings.Builder
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			in.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			return Script{}, &learner.SyntaxError{Line: b.Line, Msg: b.Cmd + " without ----"}
		}
		var out strings.Builder
		for i++; i < len(lines) && !endsOutput(lines[i], only); i++ {
			out.WriteString(lines[i] + "\n")
		}
		i-- // let the blank line or command (if any) go to the next block
		b.Input, b.Output = in.String(), out.String()
		s.Blocks = append(s.Blocks, b)
	}
	s.Tail = prefix.String()
	return s, nil
}

// endsOutput reports whether line ends a block's output: a blank line, or
// the one command allowed (no output line is one word), so that a block
// written without a blank line before it is not taken for output.
func endsOutput(line, only string) bool {
	t := strings.TrimSpace(line)
	return t == "" || only != "" && t == only
}

// String writes the script back: Parse(src).String() == src for every src
// ending in a newline that Parse accepts, with Windows line ends as Unix ones.
func (s Script) String() string {
	var b strings.Builder
	for _, bl := range s.Blocks {
		b.WriteString(bl.Prefix + bl.Cmd + "\n" + bl.Input + "----\n" + bl.Output)
	}
	b.WriteString(s.Tail)
	return b.String()
}

// Rewrite sets every block's output to out(block), block by block in
// order. An earlier output that gains or loses lines moves every later
// block in the written script, so Rewrite moves its Line first: a syntax
// error (Run) then names the line of the script String writes, and
// replaying that script gives it back unchanged.
func (s *Script) Rewrite(out func(Block) string) {
	shift := 0
	for i := range s.Blocks {
		b := &s.Blocks[i]
		b.Line += shift
		was := strings.Count(b.Output, "\n")
		b.Output = out(*b)
		shift += strings.Count(b.Output, "\n") - was
	}
}

// Result is what running one assign block gave.
type Result struct {
	Rebalance learner.Rebalance
	Assignor  *learner.Assignor    // nil if the input did not parse or New rejected it
	Out       []learner.Assignment // nil on error
	Err       error
}

// Run runs an assign block's input. Syntax errors name lines of the script.
func Run(b Block) Result {
	var res Result
	res.Rebalance, res.Err = learner.ParseRebalance(b.Input)
	if se, ok := res.Err.(*learner.SyntaxError); ok {
		// The input starts on the line after the command.
		res.Err = &learner.SyntaxError{Line: b.Line + se.Line, Msg: se.Msg}
	}
	if res.Err != nil {
		return res
	}
	if res.Assignor, res.Err = learner.New(res.Rebalance.Tasks, res.Rebalance.Options); res.Err != nil {
		return res
	}
	res.Out, res.Err = res.Assignor.Assign(res.Rebalance.Members)
	return res
}

// Output is the block output the result gives, as a script holds it.
func (r Result) Output() string {
	if r.Err != nil {
		return "error: " + r.Err.Error() + "\n"
	}
	return learner.FormatAssignments(r.Out)
}
