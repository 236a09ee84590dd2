package state_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Observer callbacks run without the runtime's locks held, so a callback
// that waits for the runtime's other goroutines only delays its own. Here
// Restored, once task 0_1 restored its whole changelog, waits for the
// task's Running event: the poll loop activates the task, which takes the
// task's store lock. (Before: the restore loop called Restored with that
// lock held, and neither went on until the callback gave up.)
func TestRestoredCallbackDoesNotHoldTheStoreLock(t *testing.T) {
	changelog := state.ChangelogTopic("g", 0)
	c := newCluster(t, "in", changelog)
	c.produce(state.ChangelogRecord(changelog, 1, []byte("k1"), []byte("x"), map[string]int64{"in": 0}),
		state.ChangelogRecord(changelog, 1, []byte("k2"), []byte("x"), map[string]int64{"in": 0}))
	running, waited, giveUp := make(chan struct{}), make(chan bool, 1), make(chan struct{})
	defer close(giveUp) // before the cleanup stops Run, which waits for the callback
	var restored atomic.Int64
	c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process:       func(*state.Context, *kgo.Record) error { return nil },
		Observer: state.Observer{
			Restored: func(task, _ string, n int) {
				if task != "0_1" || restored.Add(int64(n)) != 2 {
					return
				}
				select {
				case <-running:
					waited <- true
				case <-giveUp:
					waited <- false
				}
			},
			Running: func(task string, _ int64) {
				if task == "0_1" {
					close(running)
				}
			},
		},
	})
	select {
	case ok := <-waited:
		if !ok {
			t.Fatal("the Restored callback gave up")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("task 0_1 did not run within 20s of its Restored callback waiting for it: the callback holds a lock its activation needs")
	}
}
