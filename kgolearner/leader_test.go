package kgolearner

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionsOf returns the partitions of tasks (IDs; unknown ones have
// none) as the leader sends them, by topic in name order.
func (b *Balancer) partitionsOf(tasks []string) []kmsg.ConsumerMemberAssignmentTopic {
	var idx []int32
	for _, id := range tasks {
		if t := b.assignor.TaskIndex(id); t >= 0 {
			idx = append(idx, int32(t))
		}
	}
	slices.Sort(idx)
	w := assignmentWriter{t: b.topo}
	raw := w.append(nil, slices.Compact(idx), nil)
	var ka kmsg.ConsumerMemberAssignment
	if err := ka.ReadFrom(raw); err != nil {
		panic(err) // assignmentWriter.append wrote what kmsg cannot read
	}
	return ka.Topics
}

// TestAssignmentWriterMatchesKmsg checks the leader's encoder of member
// assignments against kmsg's, byte for byte: topics in name order (which is
// not the topology's: clicks, orders, payments), partitions ascending, the
// user data or null.
func TestAssignmentWriterMatchesKmsg(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	for _, c := range []struct {
		tasks    []int32
		topics   map[string][]int32
		userData []byte
	}{
		{nil, nil, nil},
		{[]int32{0, 1, 2, 3, 4}, everything, []byte{1, 2}},
		{[]int32{1, 3}, map[string][]int32{"orders": {1}, "payments": {1}, "clicks": {0}}, []byte{}},
		{[]int32{4}, map[string][]int32{"clicks": {1}}, nil},
	} {
		want := kmsg.NewConsumerMemberAssignment()
		for _, topic := range slices.Sorted(maps.Keys(c.topics)) {
			want.Topics = append(want.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: topic, Partitions: c.topics[topic]})
		}
		want.UserData = c.userData
		w := assignmentWriter{t: b.topo}
		got := w.append([]byte("prefix"), c.tasks, c.userData)
		assert.Equal(t, want.AppendTo([]byte("prefix")), got, "assignmentWriter.append(tasks %v, user data %v)", c.tasks, c.userData)
	}
}
