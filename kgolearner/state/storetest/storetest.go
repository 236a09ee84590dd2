// Package storetest checks a state.Stores implementation against the
// contract the runtime relies on. An implementation's test calls Run.
package storetest

import (
	"slices"
	"testing"

	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
)

// Run checks the Stores that open returns. open is called once per test
// and again to find the data a "restarted" member sees: it must return
// Stores over the same storage each time it is called with the same t.
func Run(t *testing.T, open func(t *testing.T) func() state.Stores) {
	t.Run("ApplyThenGet", func(t *testing.T) {
		s := mustOpen(t, open(t)(), "0_1")
		cp := state.Checkpoint{Changelog: 3, Input: map[string]int64{"words": 7}, ChangelogID: [16]byte{1, 2, 3}}
		require.NoError(t, s.Apply([]state.Change{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}, {Key: []byte("a"), Value: []byte("3")}}, cp))
		requireValue(t, s, "a", "3")
		requireValue(t, s, "b", "2")
		got, err := s.Checkpoint()
		require.NoError(t, err)
		require.Equal(t, cp, got, "Checkpoint() after Apply")
	})
	t.Run("DeleteAndEmptyValue", func(t *testing.T) {
		s := mustOpen(t, open(t)(), "0_1")
		require.NoError(t, s.Apply([]state.Change{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("e"), Value: []byte{}}}, state.Checkpoint{Changelog: 2}))
		require.NoError(t, s.Apply([]state.Change{{Key: []byte("a")}}, state.Checkpoint{Changelog: 3}))
		_, ok, err := s.Get([]byte("a"))
		require.NoError(t, err)
		require.False(t, ok, "Get(a) after a nil Value deleted it")
		requireValue(t, s, "e", "")
	})
	t.Run("GetReturnsACopy", func(t *testing.T) {
		s := mustOpen(t, open(t)(), "0_1")
		require.NoError(t, s.Apply([]state.Change{{Key: []byte("a"), Value: []byte("1")}}, state.Checkpoint{Changelog: 1}))
		v, _, err := s.Get([]byte("a"))
		require.NoError(t, err)
		v[0] = 'X' // the runtime hands Get's value to Process, which may change it
		requireValue(t, s, "a", "1")
	})
	t.Run("EmptyStore", func(t *testing.T) {
		s := mustOpen(t, open(t)(), "0_2")
		cp, err := s.Checkpoint()
		require.NoError(t, err)
		require.Zero(t, cp.Changelog, "Checkpoint() of a new store")
		_, ok, err := s.Get([]byte("a"))
		require.NoError(t, err)
		require.False(t, ok)
	})
	t.Run("Clear", func(t *testing.T) {
		s := mustOpen(t, open(t)(), "0_1")
		require.NoError(t, s.Apply([]state.Change{{Key: []byte("a"), Value: []byte("1")}}, state.Checkpoint{Changelog: 1}))
		require.NoError(t, s.Clear())
		_, ok, err := s.Get([]byte("a"))
		require.NoError(t, err)
		require.False(t, ok, "Get(a) after Clear")
		cp, err := s.Checkpoint()
		require.NoError(t, err)
		require.Zero(t, cp.Changelog, "Checkpoint() after Clear")
	})
	t.Run("SurvivesReopen", func(t *testing.T) {
		stores := open(t)
		s := mustOpen(t, stores(), "0_3")
		cp := state.Checkpoint{Changelog: 9, Input: map[string]int64{"words": 4, "clicks": 2}, ChangelogID: [16]byte{15: 9}}
		require.NoError(t, s.Apply([]state.Change{{Key: []byte("k"), Value: []byte("v")}}, cp))
		require.NoError(t, s.Close())

		again := stores()
		local, err := again.Local()
		require.NoError(t, err)
		require.True(t, slices.Contains(local, "0_3"), "Local() = %v after a store of 0_3 was written, want it listed", local)
		s = mustOpen(t, again, "0_3")
		requireValue(t, s, "k", "v")
		got, err := s.Checkpoint()
		require.NoError(t, err)
		require.Equal(t, cp, got, "Checkpoint() after reopening")
	})
}

func mustOpen(t *testing.T, s state.Stores, task string) state.Store {
	t.Helper()
	st, err := s.Open(task)
	require.NoError(t, err, "Open(%q)", task)
	t.Cleanup(func() { st.Close() })
	return st
}

func requireValue(t *testing.T, s state.Store, key, want string) {
	t.Helper()
	v, ok, err := s.Get([]byte(key))
	require.NoError(t, err)
	require.True(t, ok, "Get(%q) found nothing, want %q", key, want)
	require.Equal(t, want, string(v), "Get(%q)", key)
}
