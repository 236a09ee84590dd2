package kgolearner

import (
	"math"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/assert"
)

// TestNewBoundsPartitionsWithoutOverflow: the totals New bounds overflowed
// a 32-bit int, which let a topology far above learner.MaxTasks through. It
// can only fail on a 32-bit platform. The package's other tests import
// learnertest, which does not build for one, so this file stands alone:
//
//	GOARCH=386 go test -run TestNewBoundsPartitionsWithoutOverflow $(ls *.go | grep -v _test.go) topology_test.go
//
// Each topology repeats a topic in its first subtopology, so that a
// topology let through fails on the repeat before building a task, instead
// of exhausting memory.
func TestNewBoundsPartitionsWithoutOverflow(t *testing.T) {
	for _, c := range []struct {
		name string
		subs []Subtopology
		msg  string
	}{
		// 2 x 2^30 partitions: 2^31 wraps to -2^31.
		{"partitions of one subtopology", []Subtopology{{Topics: []string{"a", "a"}, Partitions: learner.MaxTasks}},
			"subtopology 0 brings the tasks to 1073741824 and the input partitions to 2147483648"},
		// 2^29 + 2^31-1 tasks and 2^30 + 2^31-1 partitions both wrap.
		{"tasks of two subtopologies", []Subtopology{
			{Topics: []string{"a", "a"}, Partitions: learner.MaxTasks / 2},
			{Topics: []string{"b"}, Partitions: math.MaxInt32},
		}, "subtopology 1 brings the tasks to 2684354559 and the input partitions to 3221225471"},
	} {
		_, err := New(Config{Subtopologies: c.subs})
		if !assert.ErrorIs(t, err, learner.ErrInvalidTopology, "%s: New", c.name) {
			continue
		}
		assert.ErrorIs(t, err, ErrInvalidConfig, "%s: New", c.name)
		assert.Contains(t, err.Error(), c.msg, "%s: New", c.name)
	}
}
