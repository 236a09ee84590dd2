package franzgo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/cputime"
	"github.com/learnerassignor/learner/learnertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// group is one rebalance of a group that was balanced before one event
// happened, described once and then encoded for each assignor.
//
// Topic i is subtopology i of the learner topology: partition p of topic i
// is task "i_p". The layout before the event is what a sticky assignor
// converges to: partition k (counting across topics) is owned by member
// k mod M, so every member holds the same number of partitions of every topic
// (to within one) and the layout is a fixed point of both assignors.
type group struct {
	topics  []string         // sorted
	counts  map[string]int32 // partitions per topic
	members []member         // sorted by ID, as Kafka hands them to the leader
}

type member struct {
	id      string
	owned   map[string][]int32 // partitions per topic, sorted
	leaving bool               // announced leaving: learner reports it, Kafka has it leave
}

// partitionsPerTopic is every topic's partition count; the topic count grows
// with the partition count.
const partitionsPerTopic = 1000

type event string

const (
	stable    event = "stable"     // nothing: the group is balanced
	scaleUp   event = "scale-up"   // 10% more members join, owning nothing
	scaleDown event = "scale-down" // 10% of the members leave
)

// newGroup returns the group of m members over tasks partitions after the
// event, from a generator seeded by the size.
func newGroup(m, tasks int, ev event) group {
	rng := rand.New(rand.NewPCG(0x1ea4e7, uint64(tasks)<<20|uint64(m)))
	g := group{counts: map[string]int32{}}
	for k := 0; k < tasks; k += partitionsPerTopic {
		topic := strconv.Itoa(k / partitionsPerTopic)
		g.topics = append(g.topics, topic)
		g.counts[topic] = int32(min(partitionsPerTopic, tasks-k))
	}
	slices.Sort(g.topics)

	total := m
	if ev == scaleUp {
		total += m / 10
	}
	g.members = make([]member, total)
	seen := map[string]bool{}
	for i := range g.members {
		id := fmt.Sprintf("app-consumer-%016x", rng.Uint64())
		for seen[id] {
			id = fmt.Sprintf("app-consumer-%016x", rng.Uint64())
		}
		seen[id] = true
		g.members[i] = member{id: id, owned: map[string][]int32{}}
	}
	for k := range tasks {
		topic := strconv.Itoa(k / partitionsPerTopic)
		o := g.members[k%m].owned
		o[topic] = append(o[topic], int32(k%partitionsPerTopic))
	}
	if ev == scaleDown {
		for _, i := range rng.Perm(m)[:m/10] {
			g.members[i].leaving = true
		}
	}
	slices.SortFunc(g.members, func(a, b member) int { return strings.Compare(a.id, b.id) })
	return g
}

// kafkaMembers encodes the group as the JoinGroup response the leader gets
// with the given balancer's metadata. Kafka has no "leaving soon": leaving
// members have left the group, and their partitions are up for grabs.
func (g group) kafkaMembers(bal kgo.GroupBalancer) []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	for _, m := range g.members {
		if m.leaving {
			continue
		}
		gen := int32(1)
		if len(m.owned) == 0 {
			gen = -1 // never joined
		}
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.ProtocolMetadata = bal.JoinGroupMetadata(g.topics, m.owned, gen)
		out = append(out, jm)
	}
	return out
}

// learner returns the Assignor for the group's partitions, every task
// stateless, and the members' join reports, leaving members included.
func (g group) learner() (*learner.Assignor, []learner.MemberMetadata, error) {
	var tasks []learner.Task
	for i := range len(g.topics) {
		topic := strconv.Itoa(i) // topology order, not the sorted order
		for p := range g.counts[topic] {
			tasks = append(tasks, learner.Task{ID: taskID(topic, p)})
		}
	}
	a, err := learner.New(tasks, learner.Options{})
	if err != nil {
		return nil, nil, err
	}
	out := make([]learner.MemberMetadata, len(g.members))
	for i, m := range g.members {
		out[i] = learner.MemberMetadata{ID: m.id, Leaving: m.leaving}
		for _, topic := range g.topics {
			for _, p := range m.owned[topic] {
				out[i].Assigned = append(out[i].Assigned, taskID(topic, p))
			}
		}
	}
	return a, out, nil
}

func taskID(topic string, partition int32) string {
	return topic + "_" + strconv.Itoa(int(partition))
}

// balancers are franz-go's two sticky balancers, by the name the benchmark
// gives them.
var balancers = []struct {
	name string
	new  func() kgo.GroupBalancer
}{
	{"sticky", kgo.StickyBalancer},
	{"cooperative-sticky", kgo.CooperativeStickyBalancer},
}

// kafkaBalance does what a franz-go group leader does with the JoinGroup
// response: decode the members' metadata and balance. Encoding the plan for
// SyncGroup is left out, as the learner side has no wire format.
func kafkaBalance(bal kgo.GroupBalancer, members []kmsg.JoinGroupResponseMember, counts map[string]int32) (map[string]map[string][]int32, error) {
	mb, _, err := bal.MemberBalancer(members)
	if err != nil {
		return nil, err
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
	if err != nil {
		return nil, err
	}
	return into.(*kgo.BalancePlan).AsMemberIDMap(), nil
}

// BenchmarkBalance runs each assignor on the same rebalances; compare them
// with benchstat -col /balancer.
func BenchmarkBalance(b *testing.B) {
	const m, tasks = 1_000, 100_000
	for _, ev := range []event{stable, scaleUp, scaleDown} {
		name := fmt.Sprintf("members=%d/tasks=%d/event=%s/balancer=", m, tasks, ev)
		b.Run(name+"learner", func(b *testing.B) {
			a, members, err := newGroup(m, tasks, ev).learner()
			require.NoError(b, err)
			cputime.Loop(b, func() error {
				_, err := a.Assign(members)
				return err
			})
		})
		for _, bal := range balancers {
			b.Run(name+bal.name, func(b *testing.B) {
				g := newGroup(m, tasks, ev)
				members := g.kafkaMembers(bal.new())
				cputime.Loop(b, func() error {
					_, err := kafkaBalance(bal.new(), members, g.counts)
					return err
				})
			})
		}
	}
}

// TestSameProblem checks that every assignor solves each benchmark's
// rebalance: the rules every round keeps (learnertest.CheckRound: each
// partition on one member, one assignment per member), nothing on leaving
// members, the staying members balanced, and nothing moved when the group
// was already balanced. The learner's answer must also keep every rule of
// learnertest.Check. The cooperative balancer withholds the partitions it
// moves for one more rebalance, so it only has to place no partition twice.
func TestSameProblem(t *testing.T) {
	const m, tasks = 100, 10_000
	for _, ev := range []event{stable, scaleUp, scaleDown} {
		g := newGroup(m, tasks, ev)
		a, members, err := g.learner()
		require.NoError(t, err, "learner setup")

		t.Run(string(ev)+"/learner", func(t *testing.T) {
			out, err := a.Assign(members)
			require.NoError(t, err, "Assign(%s)", ev)
			vs := learnertest.Check(a.Tasks(), a.Options(), members, out)
			require.Empty(t, vs, "Assign(%s) breaks rules:\n%s", ev, learnertest.FormatViolations(vs))
			plan := map[string]map[string][]int32{}
			for _, as := range out {
				plan[as.MemberID] = map[string][]int32{}
				for _, id := range as.Assigned {
					topic, p, _ := strings.Cut(id, "_")
					n, _ := strconv.Atoi(p)
					plan[as.MemberID][topic] = append(plan[as.MemberID][topic], int32(n))
				}
				assert.Empty(t, slices.Concat(as.Learning, as.Learned, as.Standby),
					"Assign(%s): member %s has learners, learned or standby tasks, want none for stateless tasks", ev, as.MemberID)
			}
			checkPlan(t, g, ev, a.Tasks(), members, plan, true)
		})
		// Kafka has no "leaving soon": leaving members have left the group.
		joined := slices.DeleteFunc(slices.Clone(members), func(mm learner.MemberMetadata) bool { return mm.Leaving })
		for _, bal := range balancers {
			t.Run(string(ev)+"/"+bal.name, func(t *testing.T) {
				plan, err := kafkaBalance(bal.new(), g.kafkaMembers(bal.new()), g.counts)
				require.NoError(t, err, "%s balance(%s)", bal.name, ev)
				checkPlan(t, g, ev, a.Tasks(), joined, plan, !bal.new().IsCooperative())
			})
		}
	}
}

// checkPlan checks one assignor's plan (member -> topic -> partitions) for
// the group after the event, whose members joined reporting joins; complete
// says whether every partition must be placed now (otherwise the ones left
// out count as withheld).
func checkPlan(t *testing.T, g group, ev event, tasks []learner.Task, joins []learner.MemberMetadata, plan map[string]map[string][]int32, complete bool) {
	t.Helper()
	var out []learner.Assignment
	placed := map[string]bool{}
	for _, j := range joins {
		a := learner.Assignment{MemberID: j.ID}
		for topic, ps := range plan[j.ID] {
			for _, p := range ps {
				a.Assigned = append(a.Assigned, taskID(topic, p))
				placed[taskID(topic, p)] = true
			}
		}
		out = append(out, a)
	}
	for id := range plan {
		if !slices.ContainsFunc(joins, func(m learner.MemberMetadata) bool { return m.ID == id }) {
			out = append(out, learner.Assignment{MemberID: id}) // CheckRound reports it
		}
	}
	var withheld []string
	for _, task := range tasks {
		if !complete && !placed[task.ID] {
			withheld = append(withheld, task.ID)
		}
	}
	vs := learnertest.CheckRound(tasks, joins, out, withheld)
	require.Empty(t, vs, "%s: the plan breaks rules:\n%s", ev, learnertest.FormatViolations(vs))

	owned := map[string]map[string][]int32{} // what the members report owning
	lo, hi := int(^uint(0)>>1), 0
	for _, mem := range g.members {
		owned[mem.id] = mem.owned
		n := 0
		for _, ps := range plan[mem.id] {
			n += len(ps)
		}
		if mem.leaving {
			assert.Zero(t, n, "leaving member %s keeps %d partitions, want 0", mem.id, n)
			continue
		}
		lo, hi = min(lo, n), max(hi, n)
		if ev == stable {
			for topic, ps := range owned[mem.id] {
				got := slices.Sorted(slices.Values(plan[mem.id][topic]))
				require.Equal(t, ps, got, "stable group: member %s topic %s changed", mem.id, topic)
			}
		}
	}
	if complete {
		assert.LessOrEqual(t, hi-lo, 1, "staying members hold %d to %d partitions, want balanced", lo, hi)
	}
}
