package learner_test

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// Fuzz targets. `go test` runs their seed corpora (testdata/fuzz/...) and the
// f.Add seeds; long runs:
//
//	go test -run='^$' -fuzz='^FuzzAssign$' -fuzztime=10m
//	go test -run='^$' -fuzz='^FuzzNotation$' -fuzztime=10m

// byteSource is a rand.Source that reads the fuzzer's bytes, so the fuzzer
// steers the group generator. Past the end it continues with a fixed PCG:
// a constant stream would make rand's rejection sampling loop forever.
type byteSource struct {
	b    []byte
	tail rand.PCG
}

func (s *byteSource) Uint64() uint64 {
	if len(s.b) == 0 {
		return s.tail.Uint64()
	}
	var buf [8]byte
	n := copy(buf[:], s.b)
	s.b = s.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

// fuzzSpec keeps fuzzed groups small: the fuzzer explores shapes, not sizes.
var fuzzSpec = learnertest.Spec{MaxMembers: 10, MaxTasks: 24, Features: true}

// FuzzAssign builds member metadata from the fuzz bytes: the first byte
// picks one kind of malformed input to inject (or none), the rest drive the
// group generator. Assign must never panic; malformed input must be refused
// with an error wrapping ErrInvalidMember; valid input must satisfy every
// invariant, deterministically and whatever the member order.
func FuzzAssign(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("\x00\x13\x37 learner assignor seed bytes: a few members and tasks"))
	f.Add([]byte("\x05 a malformed member"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		corrupt, rest := data[0], data[1:]
		src := &byteSource{b: rest}
		g, err := learnertest.Generate(rand.New(src), fuzzSpec)
		require.NoError(t, err, "Generate")
		a, err := New(g.Tasks, g.Options)
		require.NoError(t, err, "New(generated topology)")
		if what, ok := corruptGroup(&g, corrupt, rand.New(src)); ok {
			_, err := a.Assign(g.Members)
			require.ErrorIs(t, err, ErrInvalidMember, "Assign with %s: want an error wrapping ErrInvalidMember\ninput:\n%s", what, g)
			return
		}
		_, vs := learnertest.CheckAssign(g.Tasks, g.Options, a.Assign, g.Members, rand.New(rand.NewPCG(uint64(len(data)), 4)))
		require.Empty(t, vs, "%d violations:\n%sinput:\n%s", len(vs), learnertest.FormatViolations(vs), g)
	})
}

// corruptGroup injects the kind of malformed report selected by c (rule 12
// of the core issue), returning what it did; c without a kind, or a group
// without members, is left valid.
func corruptGroup(g *Rebalance, c byte, r *rand.Rand) (string, bool) {
	kinds := 10
	k := int(c) % (2 * kinds) // half of the inputs stay valid
	if k >= kinds || len(g.Members) == 0 {
		return "", false
	}
	m := &g.Members[r.IntN(len(g.Members))]
	task := "T1"
	if len(g.Tasks) > 0 {
		task = g.Tasks[r.IntN(len(g.Tasks))].ID
	}
	switch k {
	case 0:
		if len(g.Members) < 2 {
			return "", false
		}
		g.Members[0].ID = g.Members[1].ID
		return "a duplicate member ID", true
	case 1:
		m.ID = ""
		return "an empty member ID", true
	case 2:
		m.ID = "S 1"
		return "a malformed member ID", true
	case 3:
		m.Assigned = append(m.Assigned, "T/1")
		return "a malformed task ID", true
	case 4:
		*m = learnertest.WithoutTask(*m, task)
		m.Assigned = append(m.Assigned, task)
		m.Standby = append(m.Standby, task)
		return "a task both assigned and standby", true
	case 5:
		*m = learnertest.WithoutTask(*m, task)
		m.Ready = append(m.Ready, task)
		return "a ready task that is not learning", true
	case 6:
		*m = learnertest.WithoutTask(*m, task)
		m.Revoked = append(m.Revoked, task, task)
		return "a task revoked twice", true
	case 7:
		m.Capacity = -1
		return "a negative capacity", true
	case 8:
		*m = learnertest.WithoutTask(*m, task)
		m.Learning = append(m.Learning, task)
		m.Lag = append(m.Lag, TaskLag{Task: task, Lag: -5})
		return "a negative lag", true
	default:
		m.Rack = "rack a"
		return "a malformed rack", true
	}
}

// FuzzNotation: ParseRebalance never panics; its errors are *SyntaxError
// with a line number; what parses prints with String and parses back to
// the same value, and printing that again gives the same text.
func FuzzNotation(f *testing.F) {
	f.Add("tasks: T1 T2\nS1(assigned: [T1], revoked: [T2], learning: [])\n")
	f.Add("tasks: T1\nstateless: T1\nstandbys: 1\nmax-learners: 2\nacceptable-lag: 3\nS1(learning: [T1], ready: [T1], lag: [T1=4], leaving, capacity: 2, rack: a)\n")
	f.Add("\uFEFFtasks: T1\nS1(capacity: 9223372036854775807, lag: [T1=9223372036854775807])\nacceptable-lag: 9223372036854775807\n")
	f.Add("tasks: T1\nS1(capacity: 99999999999999999999)\n")
	f.Fuzz(func(t *testing.T, src string) {
		r, err := ParseRebalance(src)
		if err != nil {
			var se *SyntaxError
			require.ErrorAs(t, err, &se, "ParseRebalance(%q): want a *SyntaxError", src)
			require.ErrorIs(t, err, ErrSyntax, "ParseRebalance(%q)", src)
			require.True(t, se.Line >= 1 && se.Line <= strings.Count(src, "\n")+1, "ParseRebalance(%q) error %v: line %d is not a line of the input", src, err, se.Line)
			return
		}
		printed := r.String()
		again, err := ParseRebalance(printed)
		require.NoError(t, err, "ParseRebalance(String())\noriginal input %q\nprinted %q", src, printed)
		again.MemberLines = r.MemberLines // where members were, not what they are
		require.Equal(t, r, again, "ParseRebalance(String()) differs from the original\nprinted %q", printed)
		require.Equal(t, printed, again.String(), "String() not stable")
	})
}
