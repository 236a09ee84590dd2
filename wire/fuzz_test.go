package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/require"
)

// FuzzDecode feeds arbitrary bytes to both decoders (no panic, errors wrap a
// sentinel, whatever decodes re-encodes to the same value) and also reads
// the bytes as a recipe for member metadata that must round-trip. `go test`
// runs its seed corpus (testdata/fuzz/FuzzDecode) and the f.Add seeds; a
// long run:
//
//	go test ./wire -run='^$' -fuzz=FuzzDecode -fuzztime=10m
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
	f.Add([]byte{})
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, codec := range []*Codec{c, other} {
			m, err := codec.DecodeMember(data)
			checkDecoded(t, "DecodeMember", data, m, err, codec.AppendMember, codec.DecodeMember)
			as, err := codec.DecodeAssignment(data)
			checkDecoded(t, "DecodeAssignment", data, as, err, codec.AppendAssignment, codec.DecodeAssignment)
		}
		m := memberFromRecipe(c, data)
		b, err := c.AppendMember(nil, m)
		require.NoError(t, err, "AppendMember(%+v)", m)
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
// one task (known or not) into one of the lists.
func memberFromRecipe(c *Codec, data []byte) learner.MemberMetadata {
	m := learner.MemberMetadata{ID: "S1"}
	seen := map[string]bool{}
	for i, x := range data {
		id := c.tasks[int(x)%len(c.tasks)].ID
		if x >= 0xf0 {
			id = fmt.Sprintf("gone-%d", x&0x0f)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		switch i % 6 {
		case 0:
			m.Assigned = append(m.Assigned, id)
		case 1:
			m.Revoked = append(m.Revoked, id)
		case 2:
			m.Learning = append(m.Learning, id)
			if x&1 == 0 {
				m.Ready = append(m.Ready, id)
			}
		case 3:
			m.Standby = append(m.Standby, id)
		case 4:
			m.Lag = append(m.Lag, learner.TaskLag{Task: id, Lag: int64(x) << (x % 50)})
		default:
			m.Leaving, m.Capacity, m.Rack = !m.Leaving, int(x), fmt.Sprintf("r%d", x%3)
		}
	}
	return m
}
