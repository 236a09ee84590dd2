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
	cp := state.Checkpoint{Changelog: 12, Input: map[string]int64{"b": 3, "a": 0}}
	text, err := cp.MarshalText()
	require.NoError(t, err)
	require.Equal(t, "12;a=0;b=3", string(text))
	var got state.Checkpoint
	require.NoError(t, got.UnmarshalText(text))
	require.Equal(t, cp, got)
	for _, bad := range []string{"", "-1", "x", "1;a", "1;=2", "1;a=-2", "1;a=b"} {
		require.Error(t, got.UnmarshalText([]byte(bad)), "UnmarshalText(%q)", bad)
	}
}
