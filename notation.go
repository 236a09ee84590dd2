package learner

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/learnerassignor/learner/internal/errtext"
)

// The design document's notation, so its walkthroughs can be pasted in.
// One rebalance:
//
//	# comment (a trailing "// comment", as in the document, works too)
//	tasks: T1 T2 T3 T4 T5      required: the topology's tasks, in order
//	stateless: T5              optional; every other task is stateful
//	standbys: 1                optional options: standbys, max-learners,
//	max-learners: 2              acceptable-lag (default 0)
//	S1(assigned: [T1, T2], revoked: [], learning: [])
//	S4(learning: [T1], ready: [T1], standby: [T3], lag: [T3=120])
//	S2(assigned: [T3, T4], leaving, capacity: 2, rack: a)
//
// Member fields are optional and in any order. A UTF-8 byte-order mark at
// the start is skipped.

// ErrSyntax is wrapped by every *SyntaxError.
var ErrSyntax = errors.New("syntax error")

// SyntaxError reports malformed notation and the line (from 1) it is on.
type SyntaxError struct {
	Line int
	Msg  string
}

// Error returns "learner: line N: " and the message. A caller that names
// the input (a file) places Msg at Line itself, as learner assign does.
func (e *SyntaxError) Error() string { return "learner: " + atLine(e.Line, e.Msg) }

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// Rebalance is one rebalance written in the notation: the topology, the
// options and what every member reported at join.
type Rebalance struct {
	Tasks   []Task
	Options Options
	Members []MemberMetadata
	// MemberLines[i] is the line (from 1) Members[i] was read from, so
	// messages about a member can point at it. It is not part of the
	// rebalance: String ignores it, and it is nil in a Rebalance not
	// made by ParseRebalance.
	MemberLines []int
}

// ParseRebalance reads one rebalance in the notation. Errors are
// *SyntaxError values. Empty lists parse as nil, so ParseRebalance of
// String's output gives back an identical value.
func ParseRebalance(src string) (Rebalance, error) {
	src = strings.TrimPrefix(src, byteOrderMark)
	var r Rebalance
	seen := map[string]int{}
	stateless := map[string]bool{}
	var statelessIDs []string // in the order given: the error names the first unknown one, not a map-order one
	statelessLine := 0
	for i, line := range strings.Split(src, "\n") {
		p := &lineParser{line: i + 1, s: stripComment(line)}
		p.skipSpace()
		if p.done() {
			continue
		}
		key := p.ident()
		if key == "" {
			return Rebalance{}, p.errorf("want a header (tasks:, stateless:, ...) or a member line, got %s", p.token())
		}
		p.skipSpace()
		if p.peek() == '(' {
			m, err := p.member(key)
			if err != nil {
				return Rebalance{}, err
			}
			r.Members = append(r.Members, m)
			r.MemberLines = append(r.MemberLines, p.line)
			continue
		}
		if !p.eat(':') {
			return Rebalance{}, p.errorf("want ':' or '(' after %s", errtext.Quote(key))
		}
		if prev, dup := seen[key]; dup {
			return Rebalance{}, p.errorf("%s: given twice (first on line %d)", errtext.Clip(key), prev)
		}
		seen[key] = p.line
		var err error
		switch key {
		case "tasks":
			var ids []string
			if ids, err = p.idList(key); err == nil {
				for _, id := range ids {
					r.Tasks = append(r.Tasks, Task{ID: id, Stateful: true})
				}
			}
		case "stateless":
			var ids []string
			if ids, err = p.idList(key); err == nil {
				for _, id := range ids {
					stateless[id] = true
				}
				statelessIDs, statelessLine = ids, p.line
			}
		case "standbys":
			var v int64
			v, err = p.intValue(key, math.MaxInt)
			r.Options.Standbys = int(v)
		case "max-learners":
			var v int64
			v, err = p.intValue(key, math.MaxInt)
			r.Options.MaxLearners = int(v)
		case "acceptable-lag":
			r.Options.AcceptableLag, err = p.intValue(key, math.MaxInt64)
		default:
			return Rebalance{}, p.errorf("unknown header %s (want tasks, stateless, standbys, max-learners or acceptable-lag)", errtext.Quote(key))
		}
		if err != nil {
			return Rebalance{}, err
		}
	}
	if _, ok := seen["tasks"]; !ok {
		return Rebalance{}, &SyntaxError{Line: 1, Msg: "missing the tasks: line"}
	}
	ids := map[string]bool{}
	for _, t := range r.Tasks {
		if ids[t.ID] {
			return Rebalance{}, &SyntaxError{Line: seen["tasks"], Msg: fmt.Sprintf("task %s listed twice", errtext.Quote(t.ID))}
		}
		ids[t.ID] = true
	}
	for _, id := range statelessIDs {
		if !ids[id] {
			return Rebalance{}, &SyntaxError{Line: statelessLine, Msg: fmt.Sprintf("stateless task %s is not in tasks", errtext.Quote(id))}
		}
	}
	stateful := 0
	for i := range r.Tasks {
		r.Tasks[i].Stateful = !stateless[r.Tasks[i].ID]
		if r.Tasks[i].Stateful {
			stateful++
		}
	}
	// New's rule, checked here to point at the line: only standbys can
	// break it, as the notation has no negative numbers.
	if p := r.Options.problem(stateful); p != "" {
		return Rebalance{}, &SyntaxError{Line: seen["standbys"], Msg: p}
	}
	return r, nil
}

// Locate returns err, an error of Assign on r.Members, naming the member's
// line instead of its position when err is a *MemberError and r was parsed:
// a *LineError, "learner: line 3: member S1: duplicate member ID (also on
// line 2)". It wraps err, so errors.Is and errors.As see through it; other
// errors come back unchanged.
func (r Rebalance) Locate(err error) error {
	var me *MemberError
	if !errors.As(err, &me) || me.Position < 0 || me.Position >= len(r.MemberLines) {
		return err
	}
	msg := fmt.Sprintf("member %s: %s", errtext.Clip(me.ID), me.Problem)
	if d := me.DuplicateOf; d >= 0 && d < len(r.MemberLines) {
		msg += fmt.Sprintf(" (also on line %d)", r.MemberLines[d])
	}
	return &LineError{Line: r.MemberLines[me.Position], Msg: msg, Err: err}
}

// LineError is an error of Assign that Rebalance.Locate placed at the line
// of the notation its member was read from.
type LineError struct {
	Line int    // the member's line (from 1)
	Msg  string // what is wrong, naming the member but not its position
	Err  error  // the error of Assign
}

// Error returns "learner: line N: " and the message. A caller that names
// the input (a file) places Msg at Line itself, as learner assign does.
func (e *LineError) Error() string { return "learner: " + atLine(e.Line, e.Msg) }

// Unwrap returns the error of Assign.
func (e *LineError) Unwrap() error { return e.Err }

// Warning is something in a Rebalance that is allowed but likely a typo.
type Warning struct {
	Line int    // the member's line (from 1); 0 when the Rebalance was not parsed
	Msg  string // what is allowed but likely a typo, naming the member
}

// String returns "line N: " and the message, or the message alone when
// Line is 0. A caller that names the input (a file) places Msg at Line
// itself, as learner assign does.
func (w Warning) String() string {
	if w.Line == 0 {
		return w.Msg
	}
	return atLine(w.Line, w.Msg)
}

// atLine is how the package places a message at a line of the notation,
// so that syntax errors, rejections and warnings read alike.
func atLine(line int, msg string) string { return fmt.Sprintf("line %d: %s", line, msg) }

// Warnings lists what in r is allowed but likely a typo: a task a member
// lists that the tasks are without. Assign treats it as a task the
// topology no longer has (it is dropped or comes back revoked), so nothing
// else would point it out. Each warning names the member and, when r was
// parsed, its line.
func (r Rebalance) Warnings() []Warning {
	known := make(map[string]bool, len(r.Tasks))
	for _, t := range r.Tasks {
		known[t.ID] = true
	}
	var warnings []Warning
	for i, m := range r.Members {
		line := 0
		if i < len(r.MemberLines) {
			line = r.MemberLines[i]
		}
		warned := map[string]bool{}
		check := func(field string, ids ...string) {
			for _, id := range ids {
				if !known[id] && !warned[id] {
					warned[id] = true
					warnings = append(warnings, Warning{Line: line, Msg: fmt.Sprintf("member %s: task %s in %s is not in the tasks", errtext.Clip(m.ID), errtext.Quote(id), field)})
				}
			}
		}
		check("assigned", m.Assigned...)
		check("revoked", m.Revoked...)
		check("learning", m.Learning...)
		check("ready", m.Ready...)
		check("standby", m.Standby...)
		for _, l := range m.Lag {
			check("lag", l.Task)
		}
	}
	return warnings
}

// byteOrderMark is UTF-8's byte-order mark, which some editors put at the
// start of a file.
const byteOrderMark = "\uFEFF"

// stripComment cuts a "#" or "//" comment off a line.
func stripComment(line string) string {
	if i := strings.Index(line, "#"); i >= 0 {
		line = line[:i]
	}
	if i := strings.Index(line, "//"); i >= 0 {
		line = line[:i]
	}
	return line
}

// lineParser reads one line of the notation.
type lineParser struct {
	line int
	s    string
	pos  int
}

func (p *lineParser) errorf(format string, args ...any) error {
	return &SyntaxError{Line: p.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *lineParser) done() bool { return p.pos >= len(p.s) }

// token quotes, for an error message, what comes next: a run of ID
// characters, else the one character, or "end of line".
func (p *lineParser) token() string {
	p.skipSpace()
	if p.done() {
		return "end of line"
	}
	end := p.pos
	for end < len(p.s) && ValidID(p.s[end:end+1]) {
		end++
	}
	if end == p.pos {
		_, size := utf8.DecodeRuneInString(p.s[p.pos:])
		end = p.pos + size
	}
	return errtext.Quote(p.s[p.pos:end])
}

func (p *lineParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.pos]
}

func (p *lineParser) skipSpace() {
	for !p.done() && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t' || p.s[p.pos] == '\r') {
		p.pos++
	}
}

// eat skips spaces and consumes c if it comes next.
func (p *lineParser) eat(c byte) bool {
	p.skipSpace()
	if p.peek() == c {
		p.pos++
		return true
	}
	return false
}

// ident reads a run of ID characters (letters, digits, '_', '-', '.').
func (p *lineParser) ident() string {
	start := p.pos
	for !p.done() && ValidID(p.s[p.pos:p.pos+1]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// id reads one well-formed ID: what it is, said where.
func (p *lineParser) id(where, what string) (string, error) {
	p.skipSpace()
	id := p.ident()
	if id == "" {
		return "", p.errorf("%s: want a %s, got %s", where, what, p.token())
	}
	if !ValidID(id) {
		return "", p.errorf("%s: %s %s is longer than %d bytes", where, what, errtext.Quote(id), MaxIDLen)
	}
	return id, nil
}

// idList reads the rest of a header line: IDs separated by spaces or commas.
func (p *lineParser) idList(key string) ([]string, error) {
	var ids []string
	for {
		p.skipSpace()
		p.eat(',')
		p.skipSpace()
		if p.done() {
			return ids, nil
		}
		id, err := p.id(key, "task ID")
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
}

// intValue reads the rest of a header line: one number up to limit.
func (p *lineParser) intValue(key string, limit int64) (int64, error) {
	v, err := p.number(key, limit)
	if err != nil {
		return 0, err
	}
	if p.skipSpace(); !p.done() {
		return 0, p.errorf("%s: unexpected %s after the number", key, p.token())
	}
	return v, nil
}

// number reads a decimal integer from 0 to limit.
func (p *lineParser) number(what string, limit int64) (int64, error) {
	p.skipSpace()
	start := p.pos
	for !p.done() && isDigit(p.s[p.pos]) {
		p.pos++
	}
	digits := p.s[start:p.pos]
	if digits == "" {
		return 0, p.errorf("%s: want a non-negative integer, got %s", what, p.token())
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v > limit {
		return 0, p.errorf("%s: %s is out of range (at most %d)", what, errtext.Quote(digits), limit)
	}
	return v, nil
}

// member reads "ID(field, field, ...)" after its ID.
func (p *lineParser) member(id string) (MemberMetadata, error) {
	m := MemberMetadata{ID: id}
	if !ValidID(id) {
		return m, p.errorf("member ID %s is longer than %d bytes", errtext.Quote(id), MaxIDLen)
	}
	id = errtext.Clip(id) // from here on only for messages
	p.eat('(')
	seen := map[string]bool{}
	for first := true; ; first = false {
		if p.eat(')') {
			break
		}
		if !first && !p.eat(',') {
			return m, p.errorf("member %s: want ',' or ')', got %s", id, p.token())
		}
		p.skipSpace()
		field := p.ident()
		if field == "" {
			return m, p.errorf("member %s: want a field name, got %s", id, p.token())
		}
		if seen[field] {
			return m, p.errorf("member %s: field %s given twice", id, errtext.Clip(field))
		}
		seen[field] = true
		var err error
		switch field {
		case "assigned":
			m.Assigned, err = p.taskList(id, field)
		case "revoked":
			m.Revoked, err = p.taskList(id, field)
		case "learning":
			m.Learning, err = p.taskList(id, field)
		case "ready":
			m.Ready, err = p.taskList(id, field)
		case "standby":
			m.Standby, err = p.taskList(id, field)
		case "lag":
			m.Lag, err = p.lagList(id)
		case "leaving":
			m.Leaving = true
		case "capacity":
			if !p.eat(':') {
				return m, p.errorf("member %s: want ':' after capacity", id)
			}
			var v int64
			v, err = p.number("member "+id+": capacity", math.MaxInt)
			m.Capacity = int(v)
		case "rack":
			if !p.eat(':') {
				return m, p.errorf("member %s: want ':' after rack", id)
			}
			m.Rack, err = p.id("member "+id, "rack")
		default:
			return m, p.errorf("member %s: unknown field %s (want assigned, revoked, learning, ready, standby, leaving, capacity, rack or lag)", id, errtext.Quote(field))
		}
		if err != nil {
			return m, err
		}
	}
	if p.skipSpace(); !p.done() {
		return m, p.errorf("member %s: unexpected %s after ')'", id, p.token())
	}
	return m, nil
}

// taskList reads ": [T1, T2]". An empty list is nil.
func (p *lineParser) taskList(member, field string) ([]string, error) {
	var ids []string
	err := p.bracketed(member, field, func() error {
		id, err := p.id("member "+member, "task ID in "+field)
		ids = append(ids, id)
		return err
	})
	return ids, err
}

// lagList reads ": [T1=1200, T3=0]". An empty list is nil.
func (p *lineParser) lagList(member string) ([]TaskLag, error) {
	var lags []TaskLag
	err := p.bracketed(member, "lag", func() error {
		id, err := p.id("member "+member, "task ID in lag")
		if err != nil {
			return err
		}
		if !p.eat('=') {
			return p.errorf("member %s: lag of %s: want '=' and a number", member, errtext.Clip(id))
		}
		v, err := p.number("member "+member+": lag of "+errtext.Clip(id), math.MaxInt64)
		lags = append(lags, TaskLag{Task: id, Lag: v})
		return err
	})
	return lags, err
}

// bracketed reads ": [item, item, ...]", calling item for each.
func (p *lineParser) bracketed(member, field string, item func() error) error {
	if !p.eat(':') || !p.eat('[') {
		return p.errorf("member %s: want '%s: [...]'", member, field)
	}
	for first := true; ; first = false {
		if p.eat(']') {
			return nil
		}
		if !first && !p.eat(',') {
			return p.errorf("member %s: %s: want ',' or ']', got %s", member, field, p.token())
		}
		if err := item(); err != nil {
			return err
		}
	}
}

// String writes r back in the notation.
func (r Rebalance) String() string {
	var b strings.Builder
	b.WriteString("tasks:")
	var stateless []string
	for _, t := range r.Tasks {
		b.WriteString(" " + t.ID)
		if !t.Stateful {
			stateless = append(stateless, t.ID)
		}
	}
	b.WriteString("\n")
	if len(stateless) > 0 {
		fmt.Fprintf(&b, "stateless: %s\n", strings.Join(stateless, " "))
	}
	for _, o := range []struct {
		key string
		v   int64
	}{{"standbys", int64(r.Options.Standbys)}, {"max-learners", int64(r.Options.MaxLearners)}, {"acceptable-lag", r.Options.AcceptableLag}} {
		if o.v != 0 {
			fmt.Fprintf(&b, "%s: %d\n", o.key, o.v)
		}
	}
	for _, m := range r.Members {
		b.WriteString(FormatMember(m) + "\n")
	}
	return b.String()
}

// FormatMember writes one member's join report in the notation, with the
// document's three fields always present and the others only when set.
func FormatMember(m MemberMetadata) string {
	b := lineHead(m.ID, m.Assigned, m.Revoked, m.Learning)
	optionalList(b, "ready", m.Ready)
	optionalList(b, "standby", m.Standby)
	if m.Leaving {
		b.WriteString(", leaving")
	}
	if m.Capacity != 0 {
		fmt.Fprintf(b, ", capacity: %d", m.Capacity)
	}
	if m.Rack != "" {
		fmt.Fprintf(b, ", rack: %s", m.Rack)
	}
	if len(m.Lag) > 0 {
		lags := make([]string, len(m.Lag))
		for i, l := range m.Lag {
			lags[i] = fmt.Sprintf("%s=%d", l.Task, l.Lag)
		}
		fmt.Fprintf(b, ", lag: [%s]", strings.Join(lags, ", "))
	}
	b.WriteString(")")
	return b.String()
}

// FormatAssignment writes one member's assignment in the document's
// notation: assigned, revoked and learning always, then learned and standby
// when non-empty.
func FormatAssignment(a Assignment) string {
	b := lineHead(a.MemberID, a.Assigned, a.Revoked, a.Learning)
	optionalList(b, "learned", a.Learned)
	optionalList(b, "standby", a.Standby)
	b.WriteString(")")
	return b.String()
}

// FormatAssignments writes one line per assignment, in the given order.
func FormatAssignments(as []Assignment) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(FormatAssignment(a) + "\n")
	}
	return b.String()
}

// optionalList writes a field beyond the document's three, only when it
// lists something, so lines from the document read back unchanged.
func optionalList(b *strings.Builder, field string, ids []string) {
	if len(ids) > 0 {
		fmt.Fprintf(b, ", %s: %s", field, list(ids))
	}
}

// lineHead starts a member line with the document's three fields, which it
// always prints, even empty.
func lineHead(id string, assigned, revoked, learning []string) *strings.Builder {
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s(assigned: %s, revoked: %s, learning: %s", id, list(assigned), list(revoked), list(learning))
	return b
}

func list(ids []string) string { return "[" + strings.Join(ids, ", ") + "]" }
