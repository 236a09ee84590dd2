package boltstore_test

import (
	"testing"

	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/learnerassignor/learner/kgolearner/state/boltstore"
	"github.com/learnerassignor/learner/kgolearner/state/storetest"
	"github.com/stretchr/testify/require"
)

func TestStores(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() state.Stores {
		dir := t.TempDir()
		return func() state.Stores { return boltstore.Stores{Dir: dir} }
	})
}

// A store another process holds fails to open with an error naming the
// file, rather than hanging.
func TestOpenLocked(t *testing.T) {
	s := boltstore.Stores{Dir: t.TempDir()}
	first, err := s.Open("0_1")
	require.NoError(t, err)
	defer first.Close()
	_, err = s.Open("0_1")
	require.ErrorContains(t, err, "0_1.db: locked by another process")
}

func TestOpenBadName(t *testing.T) {
	_, err := boltstore.Stores{Dir: t.TempDir()}.Open("../x")
	require.ErrorContains(t, err, `task "../x" is not a file name`)
}

// Stores without a Dir (its zero value) refuse to open or list, saying
// so, rather than fail with "mkdir : no such file or directory" at the
// first task the member starts.
func TestNoDir(t *testing.T) {
	_, err := boltstore.Stores{}.Open("0_1")
	require.EqualError(t, err, "boltstore: Stores.Dir is empty")
	_, err = boltstore.Stores{}.Local()
	require.EqualError(t, err, "boltstore: Stores.Dir is empty")
}
