package state

import (
	"slices"
	"testing"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// While an active task catches up, learners and standbys pause; its own
// changelog partition runs even if it was paused as a learner's before.
func TestPrioritize(t *testing.T) {
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 3, Stateful: true}}})
	require.NoError(t, err)
	r.rcl, err = kgo.NewClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}))
	require.NoError(t, err)
	defer r.rcl.Close()
	paused := func() map[string][]int32 { return r.rcl.PauseFetchPartitions(nil) }
	for _, id := range []string{"0_0", "0_1", "0_2"} {
		r.tasks[id].consuming, r.tasks[id].role = true, roleLearner
	}

	r.tasks["0_0"].role = roleActive
	r.prioritize()
	require.Equal(t, map[string][]int32{"g-0-changelog": {1, 2}}, sorted(paused()), "paused while 0_0 catches up")

	r.tasks["0_0"].role, r.tasks["0_1"].role = roleLearner, roleActive
	r.prioritize()
	require.Equal(t, map[string][]int32{"g-0-changelog": {0, 2}}, sorted(paused()), "paused while 0_1, paused before, catches up")

	r.tasks["0_1"].consuming = false // caught up: it runs
	r.prioritize()
	require.Empty(t, paused(), "paused with no task catching up")
}

func sorted(m map[string][]int32) map[string][]int32 {
	for _, ps := range m {
		slices.Sort(ps)
	}
	return m
}
