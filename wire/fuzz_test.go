package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/require"
)

// FuzzDecode feeds arbitrary bytes to the decoders (no panic, errors wrap a
// sentinel, whatever decodes re-encodes to the same value, DecodeIndexedMember
// agrees with DecodeMember and AssignIndexed takes what it decodes) and also reads
// the bytes as a recipe for member metadata, which AppendMember must refuse
// exactly when Assign does, and which must otherwise round-trip. `go test`
// runs its seed corpus (testdata/fuzz/FuzzDecode) and the f.Add seeds; a
// long run:
//
//	go test ./wire -run='^$' -fuzz='^FuzzDecode$' -fuzztime=10m
func FuzzDecode(f *testing.F) {
	c, other := wireTopology(f, 40), wireTopology(f, 41)
	for _, m := range wireMembers {
		if b, err := c.AppendMember(nil, m); err == nil {
			f.Add(b)
		}
	}
	for _, as := range wireAssignments {
		if b, err := c.AppendAssignment(nil, as); err == nil {
			f.Add(b)
		}
	}
	for _, tc := range refusedMembers {
		f.Add(rawMember(c, tc.m))
	}
	for _, tc := range refusedAssignments {
		f.Add(rawAssignment(c, tc.as))
	}
	f.Add([]byte{})
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1})                                 // a recipe Assign and AppendMember refuse: 0_1 assigned and revoked
	f.Add([]byte{1, 2, 3, 4, 5, 3, 0, 8, 9, 11, 12, 5}) // a loose recipe reporting task 5's lag twice
	f.Add([]byte{1, 2, 6, 4, 5, 6})                     // a loose recipe listing learning task 6 ready twice
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, codec := range []*Codec{c, other} {
			m, err := codec.DecodeMember(data)
			checkDecoded(t, "DecodeMember", data, m, err, codec.AppendMember, codec.DecodeMember)
			x, xErr := codec.DecodeIndexedMember(data)
			require.Equal(t, err, xErr, "DecodeIndexedMember(%x) error, want DecodeMember's", data)
			if err == nil || errors.Is(err, ErrTopologyMismatch) {
				require.Equal(t, codec.indexedMember(m), x, "DecodeIndexedMember(%x), want DecodeMember's by index", data)
			}
			if err == nil {
				_, err := codec.a.AssignIndexed([]learner.IndexedMember{x})
				require.NoError(t, err, "AssignIndexed(DecodeIndexedMember(%x))", data)
			}
			as, err := codec.DecodeAssignment(data)
			checkDecoded(t, "DecodeAssignment", data, as, err, codec.AppendAssignment, codec.DecodeAssignment)
		}
		m := memberFromRecipe(c, data)
		_, assignErr := c.a.Assign([]learner.MemberMetadata{m})
		b, err := c.AppendMember(nil, m)
		if assignErr != nil || err != nil {
			require.ErrorIs(t, assignErr, learner.ErrInvalidMember, "Assign(%+v), which AppendMember refuses with %v", m, err)
			require.ErrorIs(t, err, learner.ErrInvalidMember, "AppendMember(%+v), which Assign refuses with %v", m, assignErr)
			return
		}
		got, err := c.DecodeMember(b)
		require.NoError(t, err, "DecodeMember(AppendMember(%+v))", m)
		require.Equal(t, c.canonicalMember(m), got, "DecodeMember(AppendMember(%+v))", m)
	})
}

// checkDecoded checks one decoder's answer to arbitrary bytes: an error
// wrapping ErrMalformed with the zero value, a partial value with
// ErrTopologyMismatch, or a value that re-encodes and decodes unchanged.
func checkDecoded[T any](t *testing.T, name string, data []byte, v T, err error,
	encode func([]byte, T) ([]byte, error), decode func([]byte) (T, error)) {
	t.Helper()
	switch {
	case errors.Is(err, ErrMalformed):
		var zero T
		require.Equal(t, zero, v, "%s(%x) with error %v, want the zero value", name, data, err)
		return
	case errors.Is(err, ErrTopologyMismatch):
		return // partial by design; the matching codec checks the round trip
	}
	require.NoError(t, err, "%s(%x): want no error or one wrapping ErrMalformed or ErrTopologyMismatch", name, data)
	b, err := encode(nil, v)
	require.NoError(t, err, "%s(%x) = %+v, which does not re-encode", name, data, v)
	again, err := decode(b)
	require.NoError(t, err, "%s(re-encoded %+v)", name, v)
	require.Equal(t, v, again, "%s(re-encoded %+v), want it unchanged", name, v)
}

// memberFromRecipe builds member metadata from fuzz bytes: each byte puts
// one task (known or not) into one of the lists. After an even first byte
// the report is valid; after an odd one a task may come back in another
// list or the same, and a ready task may not be learning, so the report
// may be one Assign rejects: after an odd first byte a lag or a ready
// task may also repeat, which both must refuse.
func memberFromRecipe(c *Codec, data []byte) learner.MemberMetadata {
	m := learner.MemberMetadata{ID: "S1"}
	loose := len(data) > 0 && data[0]&1 == 1
	seen, seenReady, seenLag := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, x := range data {
		id := c.taskID(int32(int(x) % c.taskCount()))
		if x >= 0xf0 {
			id = fmt.Sprintf("gone-%d", x&0x0f)
		}
		if seen[id] && !loose {
			continue
		}
		seen[id] = true
		switch i % 7 {
		case 0:
			m.Assigned = append(m.Assigned, id)
		case 1:
			m.Revoked = append(m.Revoked, id)
		case 2:
			m.Learning = append(m.Learning, id)
			if x&1 == 0 && (!seenReady[id] || loose) {
				seenReady[id] = true
				m.Ready = append(m.Ready, id)
			}
		case 3:
			m.Standby = append(m.Standby, id)
		case 4:
			if !seenLag[id] || loose {
				seenLag[id] = true
				m.Lag = append(m.Lag, learner.TaskLag{Task: id, Lag: int64(x) << (x % 50)})
			}
		case 5:
			if loose {
				seenReady[id] = true
				m.Ready = append(m.Ready, id)
			}
		default:
			m.Leaving, m.Capacity, m.Rack = !m.Leaving, int(x), fmt.Sprintf("r%d", x%3)
		}
	}
	return m
}
