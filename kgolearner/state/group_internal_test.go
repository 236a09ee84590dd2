package state

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeChanges reads back what encodeChanges writes, telling an empty
// value from a delete.
func TestChangesRoundTrip(t *testing.T) {
	in := []Change{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b")}, {Key: []byte("c"), Value: []byte{}}}
	out, err := decodeChanges(encodeChanges(in))
	require.NoError(t, err)
	require.Equal(t, in, out, "decodeChanges(encodeChanges(changes))")
	require.Nil(t, out[1].Value, "decodeChanges(encodeChanges(changes)): the delete's value")
	require.NotNil(t, out[2].Value, "decodeChanges(encodeChanges(changes)): the empty value")
}

// decodeChanges refuses what encodeChanges never writes, with an error
// rather than a panic or a change read past the bytes.
func TestDecodeChangesRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"nothing":          {},
		"an empty key":     {0, changeDelete},
		"a key past":       {5, 'a'},
		"no kind":          {1, 'a'},
		"an unknown kind":  {1, 'a', 7},
		"a value past":     {1, 'a', changeSet, 3, 'x'},
		"a huge length":    {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"a bad varint":     {0x80},
		"a trailing field": append(encodeChanges([]Change{{Key: []byte("a")}}), 1),
	} {
		_, err := decodeChanges(b)
		require.Error(t, err, "decodeChanges(%s %v)", name, b)
	}
}

// FuzzDecodeChanges: decodeChanges never panics, and what it accepts
// encodes to bytes that decode to the same changes (not always to the same
// bytes: a uvarint may be written with needless continuation bytes).
func FuzzDecodeChanges(f *testing.F) {
	f.Add(encodeChanges([]Change{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b")}}))
	f.Add([]byte{1, 'a', changeSet, 3, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		changes, err := decodeChanges(b)
		if err != nil {
			return
		}
		again, err := decodeChanges(encodeChanges(changes))
		require.NoError(t, err, "decodeChanges(encodeChanges(decodeChanges(%v)))", b)
		require.Equal(t, changes, again, "decodeChanges(encodeChanges(decodeChanges(%v)))", b)
		for i := range changes {
			require.Equal(t, changes[i].Value == nil, again[i].Value == nil, "change %d of %v: a delete read back as a set, or back", i, b)
		}
	})
}

// track keeps what the changelog lacks of its last group: a group's first
// record lists the others, each record of the group at its position
// crosses itself off, and anything else ends the group.
func TestTrack(t *testing.T) {
	a, b, c := Change{Key: []byte("a"), Value: []byte("1")}, Change{Key: []byte("b")}, Change{Key: []byte("c"), Value: []byte("3")}
	p1, p2 := []byte("in=1"), []byte("in=2")
	var tk task
	tk.track(10, a, p1, false, []Change{b, c})
	require.Equal(t, []Change{b, c}, tk.pending, "pending after a group's first record")
	require.Equal(t, int64(10), tk.pendingFrom)
	tk.track(11, b, p1, false, nil)
	require.Equal(t, []Change{c}, tk.pending, "pending after the group's second record")
	tk.track(12, c, p1, false, nil)
	require.Empty(t, tk.pending, "pending after the group's last record")

	tk.track(13, a, p2, false, []Change{b, c})
	tk.track(14, c, p1, false, nil) // another position: a later group
	require.Empty(t, tk.pending, "pending after a record of another position")

	tk.track(15, a, p2, false, []Change{b, c})
	tk.track(16, Change{Key: []byte("learner.position")}, p2, true, nil)
	require.Empty(t, tk.pending, "pending after a marker")

	tk.track(17, a, p2, false, []Change{b, c})
	tk.track(18, Change{Key: []byte("z")}, p2, false, nil)
	require.Empty(t, tk.pending, "pending after a record of the same position not in the group")

	tk.track(19, a, p2, false, []Change{b, c})
	tk.track(20, a, p2, false, []Change{b}) // the group written again from its start
	require.Equal(t, []Change{b}, tk.pending, "pending after a second first record")
	require.Equal(t, int64(20), tk.pendingFrom)

	// complete's write of b and c landed b, failed c, and its retry
	// landed b again and failed c: c is still missing.
	tk.track(21, a, p1, false, []Change{b, c})
	tk.track(22, b, p1, false, nil)
	tk.track(23, b, p1, false, nil)
	require.Equal(t, []Change{c}, tk.pending, "pending after a key of the group written again")
	tk.track(24, a, p1, false, nil)
	require.Equal(t, []Change{c}, tk.pending, "pending after the group's first key written again")
	require.Equal(t, []Change{c}, tk.track(25, a, p2, false, nil), "lost when a later input record ends the group")
}
