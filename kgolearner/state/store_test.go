package state_test

import (
	"testing"

	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/learnerassignor/learner/kgolearner/state/storetest"
	"github.com/stretchr/testify/require"
)

func TestMemoryStores(t *testing.T) {
	storetest.Run(t, func(*testing.T) func() state.Stores {
		s := &state.MemoryStores{}
		return func() state.Stores { return s }
	})
}

func TestCheckpointText(t *testing.T) {
	id := [16]byte{0x3b, 0x8c, 0xd5, 0xaa, 0x1a, 0x27, 0xa7, 0x2d, 0x91, 0x86, 0x54, 0x8f, 0x4d, 0x30, 0xb1, 0x82}
	for _, c := range []struct {
		cp   state.Checkpoint
		text string
	}{
		{state.Checkpoint{Changelog: 12, Input: map[string]int64{"b": 3, "a": 0}}, "12;a=0;b=3"},
		{state.Checkpoint{Changelog: 12, Input: map[string]int64{"b": 3, "a": 0}, ChangelogID: id}, "12@O4zVqhonpy2RhlSPTTCxgg;a=0;b=3"},
		{state.Checkpoint{ChangelogID: id}, "0@O4zVqhonpy2RhlSPTTCxgg"},
		{state.Checkpoint{}, "0"},
	} {
		text, err := c.cp.MarshalText()
		require.NoError(t, err)
		require.Equal(t, c.text, string(text), "MarshalText() of %+v", c.cp)
		var got state.Checkpoint
		require.NoError(t, got.UnmarshalText(text))
		require.Equal(t, c.cp, got, "UnmarshalText(%q)", text)
	}
	var got state.Checkpoint
	for _, bad := range []string{"", "-1", "+1", "x", "1;a", "1;=2", "1;a=-2", "1;a=b",
		"1@", "@O4zVqhonpy2RhlSPTTCxgg", "1@O4zVqhonpy2RhlSPTTCxg", "1@O4zVqhonpy2RhlSPTTCxggA", "1@O4zVqhonpy2RhlSPTTCxgg==",
		"1@O4zVqhonpy2RhlSPTTCxgh", // bits past the ID's 128: another text of the same ID
		"1@O4zVqhonpy2RhlSPTTCx+g", "1@AAAAAAAAAAAAAAAAAAAAAA", "1@O4zVqhonpy2RhlSPTTCxgg@O4zVqhonpy2RhlSPTTCxgg",
		"1;a=2@O4zVqhonpy2RhlSPTTCxgg"} {
		require.Error(t, got.UnmarshalText([]byte(bad)), "UnmarshalText(%q)", bad)
	}
}
