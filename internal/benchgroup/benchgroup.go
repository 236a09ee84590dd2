// Package benchgroup builds the synthetic Kafka consumer group that the
// benchmarks against franz-go's balancers share (bench/franzgo's
// BenchmarkBalance and kgolearner's BenchmarkLeaderRebalance): a group
// balanced the way a sticky assignor leaves it, then one event.
//
// It holds plain data, so that the root module stays free of franz-go: each
// benchmark encodes the members with its own Kafka code.
package benchgroup

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Event is what happened to the balanced group before the rebalance.
type Event string

// The events the benchmarks run.
const (
	Stable    Event = "stable"     // nothing: the group is balanced
	ScaleUp   Event = "scale-up"   // 10% more members join, owning nothing
	ScaleDown Event = "scale-down" // 10% of the members leave
)

// Events lists every Event, in the order the benchmarks run them.
var Events = []Event{Stable, ScaleUp, ScaleDown}

// Group is one rebalance of the group.
type Group struct {
	// Topics are in topology order: topic i is subtopology i of a learner
	// topology, and partition p of it is task "<i>_<p>".
	Topics []string
	// Subscribed are the topics in name order, as members subscribe.
	Subscribed []string
	// Counts is the partition count of each topic.
	Counts map[string]int32
	// Members are sorted by ID, as Kafka hands them to the leader.
	Members []Member
}

// Member is one member's report.
type Member struct {
	ID string
	// Owned are its partitions per topic, ascending.
	Owned map[string][]int32
	// Leaving is true for a member that announced it is leaving: the
	// learner protocol hears it report Leaving, while in Kafka (which has no
	// "leaving soon") it has left the group.
	Leaving bool
}

// Generation is the generation the member reports with its owned
// partitions: 1, or -1 for a member that never joined (it owns nothing).
func (m Member) Generation() int32 {
	if len(m.Owned) == 0 {
		return -1
	}
	return 1
}

// New returns the group of m members over tasks partitions in the given
// number of topics, named by topic(i): tasks/topics partitions each, the
// last topic taking the rest. Before the event, partition k (counting
// across topics) is owned by member k mod m, so every member holds the same
// number of partitions of every topic (to within one) and the layout is a
// fixed point of a sticky balancer. The generator is seeded by the size
// alone: every topic shape of one size has the same members and the same
// owner for partition k. It wants m >= 1 and tasks >= topics >= 1 (every
// topic has a partition), and panics otherwise.
func New(m, tasks, topics int, ev Event, topic func(i int) string) Group {
	if m < 1 || topics < 1 || tasks < topics {
		panic(fmt.Sprintf("benchgroup: New(%d members, %d tasks, %d topics): want m >= 1 and tasks >= topics >= 1", m, tasks, topics))
	}
	rng := rand.New(rand.NewPCG(0x1ea4e7, uint64(tasks)<<20|uint64(m)))
	g := Group{Counts: map[string]int32{}}
	per := tasks / topics
	for i := range topics {
		g.Topics = append(g.Topics, topic(i))
		n := per
		if i == topics-1 {
			n = tasks - per*(topics-1)
		}
		g.Counts[g.Topics[i]] = int32(n)
	}
	g.Subscribed = slices.Sorted(slices.Values(g.Topics))

	total := m
	if ev == ScaleUp {
		total += m / 10
	}
	g.Members = make([]Member, total)
	seen := map[string]bool{}
	for i := range g.Members {
		id := fmt.Sprintf("app-consumer-%016x", rng.Uint64())
		for seen[id] {
			id = fmt.Sprintf("app-consumer-%016x", rng.Uint64())
		}
		seen[id] = true
		g.Members[i] = Member{ID: id, Owned: map[string][]int32{}}
	}
	for k := range tasks {
		i := min(k/per, topics-1)
		o := g.Members[k%m].Owned
		o[g.Topics[i]] = append(o[g.Topics[i]], int32(k-i*per))
	}
	if ev == ScaleDown {
		for _, i := range rng.Perm(m)[:m/10] {
			g.Members[i].Leaving = true
		}
	}
	slices.SortFunc(g.Members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return g
}

// Joined returns the members a Kafka leader hears from: those that did not
// leave.
func (g Group) Joined() []Member {
	return slices.DeleteFunc(slices.Clone(g.Members), func(m Member) bool { return m.Leaving })
}

// KafkaJoin returns the JoinGroup response a Kafka leader gets (the
// members that did not leave) when members encode their subscription with
// meta, a kgo balancer's JoinGroupMetadata; member builds one entry of the
// response (a kmsg.JoinGroupResponseMember, which this package cannot name
// without franz-go).
func KafkaJoin[M any](g Group, meta func(topics []string, owned map[string][]int32, generation int32) []byte, member func(id string, metadata []byte) M) []M {
	var out []M
	for _, m := range g.Joined() {
		out = append(out, member(m.ID, meta(g.Subscribed, m.Owned, m.Generation())))
	}
	return out
}
