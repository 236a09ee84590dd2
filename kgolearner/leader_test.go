package kgolearner

import (
	"slices"

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
	topics, _, _ := b.topo.appendAssignment(nil, nil, nil, slices.Compact(idx))
	return topics
}
