package franzgo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/benchgroup"
	"github.com/learnerassignor/learner/internal/cputime"
	"github.com/learnerassignor/learner/learnertest"
	"github.com/learnerassignor/learner/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// group is one rebalance of benchgroup's group, encoded for each
// assignor. Topic i is subtopology i of the learner topology: partition p
// of topic i is task "i_p" (or, with hashed IDs, "t<i>-<p>", which the
// core interns through a hash map).
type group struct {
	benchgroup.Group
	hashed bool // task IDs not of the "<sub>_<part>" form
}

// topicShapes are the topic counts the benchmark spreads the partitions
// over: franz-go's balancers cost more with more topics, the learner's
// does not.
var topicShapes = []int{1, 10, 100, 400}

// newGroup returns the group of m members over tasks partitions in the given
// number of topics after the event (see benchgroup.New); every topic shape
// and ID form has the same members.
func newGroup(m, tasks, topics int, ev benchgroup.Event, hashed bool) group {
	name := strconv.Itoa
	if hashed {
		name = func(i int) string { return "t" + strconv.Itoa(i) }
	}
	return group{benchgroup.New(m, tasks, topics, ev, name), hashed}
}

// kafkaMembers encodes the group as the JoinGroup response the leader gets
// with the given balancer's metadata. Kafka has no "leaving soon": leaving
// members have left the group, and their partitions are up for grabs.
func (g group) kafkaMembers(bal kgo.GroupBalancer) []kmsg.JoinGroupResponseMember {
	return benchgroup.KafkaJoin(g.Group, bal.JoinGroupMetadata, func(id string, metadata []byte) kmsg.JoinGroupResponseMember {
		return kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: metadata}
	})
}

// learner returns the Assignor for the group's partitions, every task
// stateless, and the members' join reports, leaving members included.
func (g group) learner() (*learner.Assignor, []learner.MemberMetadata, error) {
	var tasks []learner.Task
	for _, topic := range g.Topics {
		for p := range g.Counts[topic] {
			tasks = append(tasks, learner.Task{ID: g.taskID(topic, p)})
		}
	}
	a, err := learner.New(tasks, learner.Options{})
	if err != nil {
		return nil, nil, err
	}
	out := make([]learner.MemberMetadata, len(g.Members))
	for i, m := range g.Members {
		out[i] = learner.MemberMetadata{ID: m.ID, Leaving: m.Leaving}
		for _, topic := range g.Topics {
			for _, p := range m.Owned[topic] {
				out[i].Assigned = append(out[i].Assigned, g.taskID(topic, p))
			}
		}
	}
	return a, out, nil
}

// learnerJoins returns the Assignor, a codec for its topology and each
// member's report in the learner wire format: the bytes a leader receives.
func (g group) learnerJoins() (*learner.Assignor, *wire.Codec, [][]byte, error) {
	a, members, err := g.learner()
	if err != nil {
		return nil, nil, nil, err
	}
	c := wire.NewCodec(a)
	joins := make([][]byte, len(members))
	for i, m := range members {
		if joins[i], err = c.AppendMember(nil, m); err != nil {
			return nil, nil, nil, err
		}
	}
	return a, c, joins, nil
}

// learnerBalance does what a learner group leader does with the members'
// reports: decode each one into task indices and AssignIndexed. Like
// kafkaBalance it stops before encoding the answers.
func learnerBalance(a *learner.Assignor, c *wire.Codec, joins [][]byte, members []learner.IndexedMember) ([]learner.IndexedAssignment, error) {
	for i, b := range joins {
		m, err := c.DecodeIndexedMember(b)
		if err != nil {
			return nil, err
		}
		members[i] = m
	}
	return a.AssignIndexed(members)
}

// learnerBalanceByID is learnerBalance through task IDs: DecodeMember and
// Assign.
func learnerBalanceByID(a *learner.Assignor, c *wire.Codec, joins [][]byte, members []learner.MemberMetadata) ([]learner.Assignment, error) {
	for i, b := range joins {
		m, err := c.DecodeMember(b)
		if err != nil {
			return nil, err
		}
		members[i] = m
	}
	return a.Assign(members)
}

func (g group) taskID(topic string, partition int32) string {
	if g.hashed {
		return topic + "-" + strconv.Itoa(int(partition))
	}
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
// SyncGroup is left out on both sides (kgolearner's BenchmarkLeaderRebalance
// times the whole leader path, encoding included).
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

// BenchmarkBalance runs each assignor on the same rebalances, timed from
// the bytes a leader receives: franz-go's balancers decode the members'
// subscriptions, the learner decodes the members' wire reports into task
// indices (wire.Codec.DecodeIndexedMember) before AssignIndexed. Compare
// them with
//
//	benchstat -col /balancer
//
// The balancers are learner (task IDs of Kafka Streams' "<sub>_<part>"
// form), learner-hashed (the same group with IDs the core would intern
// through a hash map; by index, no ID is looked up; franz-go's work does not
// depend on the IDs), learner-by-id (the learner through task IDs:
// DecodeMember and Assign), sticky and cooperative-sticky.
func BenchmarkBalance(b *testing.B) {
	const m, tasks = 1_000, 100_000
	for _, topics := range topicShapes {
		for _, ev := range benchgroup.Events {
			name := fmt.Sprintf("members=%d/tasks=%d/topics=%d/event=%s/balancer=", m, tasks, topics, ev)
			for _, hashed := range []bool{false, true} {
				bal := "learner"
				if hashed {
					bal = "learner-hashed"
				}
				b.Run(name+bal, func(b *testing.B) {
					a, c, joins, err := newGroup(m, tasks, topics, ev, hashed).learnerJoins()
					require.NoError(b, err)
					members := make([]learner.IndexedMember, len(joins))
					cputime.Loop(b, func() error {
						_, err := learnerBalance(a, c, joins, members)
						return err
					})
				})
			}
			b.Run(name+"learner-by-id", func(b *testing.B) {
				a, c, joins, err := newGroup(m, tasks, topics, ev, false).learnerJoins()
				require.NoError(b, err)
				members := make([]learner.MemberMetadata, len(joins))
				cputime.Loop(b, func() error {
					_, err := learnerBalanceByID(a, c, joins, members)
					return err
				})
			})
			for _, bal := range balancers {
				b.Run(name+bal.name, func(b *testing.B) {
					g := newGroup(m, tasks, topics, ev, false)
					members := g.kafkaMembers(bal.new())
					cputime.Loop(b, func() error {
						_, err := kafkaBalance(bal.new(), members, g.Counts)
						return err
					})
				})
			}
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
	for _, topics := range topicShapes {
		for _, ev := range benchgroup.Events {
			for _, hashed := range []bool{false, true} {
				g := newGroup(m, tasks, topics, ev, hashed)
				name := fmt.Sprintf("topics=%d/%s/hashed=%v", topics, ev, hashed)
				a, members, err := g.learner()
				require.NoError(t, err, "learner setup")
				t.Run(name+"/learner", func(t *testing.T) { checkLearner(t, g, ev) })
				if hashed {
					continue // franz-go never sees the learner's task IDs
				}
				// Kafka has no "leaving soon": leaving members have left the group.
				joined := slices.DeleteFunc(slices.Clone(members), func(mm learner.MemberMetadata) bool { return mm.Leaving })
				for _, bal := range balancers {
					t.Run(name+"/"+bal.name, func(t *testing.T) {
						plan, err := kafkaBalance(bal.new(), g.kafkaMembers(bal.new()), g.Counts)
						require.NoError(t, err, "%s balance(%s)", bal.name, ev)
						checkPlan(t, g, ev, a.Tasks(), joined, plan, !bal.new().IsCooperative())
					})
				}
			}
		}
	}
}

// checkLearner runs the learner leader's timed paths on g (decoding every
// member's wire report, then AssignIndexed, or Assign through IDs), checks
// that both agree, and checks the answer.
func checkLearner(t *testing.T, g group, ev benchgroup.Event) {
	a, c, joins, err := g.learnerJoins()
	require.NoError(t, err, "learner setup")
	members := make([]learner.MemberMetadata, len(joins))
	out, err := learnerBalanceByID(a, c, joins, members)
	require.NoError(t, err, "decode and Assign(%s)", ev)
	indexed, err := learnerBalance(a, c, joins, make([]learner.IndexedMember, len(joins)))
	require.NoError(t, err, "decode and AssignIndexed(%s)", ev)
	tasks := a.Tasks()
	for i, as := range out {
		x := indexed[i]
		require.Equal(t, as.MemberID, x.MemberID, "AssignIndexed(%s) member %d", ev, i)
		require.Len(t, x.Assigned, len(as.Assigned), "AssignIndexed(%s): member %s", ev, as.MemberID)
		for k, t32 := range x.Assigned {
			require.Equal(t, as.Assigned[k], tasks[t32].ID, "AssignIndexed(%s): member %s task %d, want Assign's", ev, as.MemberID, k)
		}
	}
	vs := learnertest.Check(a.Tasks(), a.Options(), members, out)
	require.Empty(t, vs, "Assign(%s) breaks rules:\n%s", ev, learnertest.FormatViolations(vs))
	sep := "_"
	if g.hashed {
		sep = "-"
	}
	plan := map[string]map[string][]int32{}
	for _, as := range out {
		plan[as.MemberID] = map[string][]int32{}
		for _, id := range as.Assigned {
			topic, p, _ := strings.Cut(id, sep)
			n, err := strconv.Atoi(p)
			require.NoError(t, err, "Assign(%s): member %s gets task %q, not a partition of the group", ev, as.MemberID, id)
			plan[as.MemberID][topic] = append(plan[as.MemberID][topic], int32(n))
		}
		assert.Empty(t, slices.Concat(as.Learning, as.Learned, as.Standby),
			"Assign(%s): member %s has learners, learned or standby tasks, want none for stateless tasks", ev, as.MemberID)
	}
	checkPlan(t, g, ev, a.Tasks(), members, plan, true)
}

// checkPlan checks one assignor's plan (member -> topic -> partitions) for
// the group after the event, whose members joined reporting joins; complete
// says whether every partition must be placed now (otherwise the ones left
// out count as withheld).
func checkPlan(t *testing.T, g group, ev benchgroup.Event, tasks []learner.Task, joins []learner.MemberMetadata, plan map[string]map[string][]int32, complete bool) {
	t.Helper()
	var out []learner.Assignment
	placed := map[string]bool{}
	for _, j := range joins {
		a := learner.Assignment{MemberID: j.ID}
		for topic, ps := range plan[j.ID] {
			for _, p := range ps {
				a.Assigned = append(a.Assigned, g.taskID(topic, p))
				placed[g.taskID(topic, p)] = true
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
	for _, mem := range g.Members {
		owned[mem.ID] = mem.Owned
		n := 0
		for _, ps := range plan[mem.ID] {
			n += len(ps)
		}
		if mem.Leaving {
			assert.Zero(t, n, "leaving member %s keeps %d partitions, want 0", mem.ID, n)
			continue
		}
		lo, hi = min(lo, n), max(hi, n)
		if ev == benchgroup.Stable {
			for topic, ps := range owned[mem.ID] {
				got := slices.Sorted(slices.Values(plan[mem.ID][topic]))
				require.Equal(t, ps, got, "stable group: member %s topic %s changed", mem.ID, topic)
			}
		}
	}
	if complete {
		assert.LessOrEqual(t, hi-lo, 1, "staying members hold %d to %d partitions, want balanced", lo, hi)
	}
}
