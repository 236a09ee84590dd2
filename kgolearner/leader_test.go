package kgolearner

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskIndices returns the indices of tasks (IDs; unknown ones have none),
// ascending, without repeats.
func (b *Balancer) taskIndices(tasks []string) []int32 {
	var idx []int32
	for _, id := range tasks {
		if t := b.assignor.TaskIndex(id); t >= 0 {
			idx = append(idx, int32(t))
		}
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}

// partitionsOf returns the partitions of tasks (IDs; unknown ones have
// none) as the leader sends them, by topic in name order.
func (b *Balancer) partitionsOf(tasks []string) []kmsg.ConsumerMemberAssignmentTopic {
	w := assignmentWriter{t: b.topo}
	raw := w.append(nil, b.taskIndices(tasks), nil)
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

// TestAssignmentWriterOrdersManyTopics checks assignmentWriter.append
// against kmsg's encoder with 20 topics whose name order reverses the
// topology's, both for a member holding tasks of a few topics (whose ranks
// it sorts) and of many (it walks every rank), twice with one writer.
func TestAssignmentWriterOrdersManyTopics(t *testing.T) {
	var subs []Subtopology
	for i := range 20 {
		subs = append(subs, Subtopology{Topics: []string{fmt.Sprintf("topic-%02d", 19-i)}, Partitions: 3})
	}
	b := newTestBalancer(t, subs)
	w := assignmentWriter{t: b.topo}
	for _, tasks := range [][]int32{
		{4, 5, 46},               // two topics: sorted
		{0, 2, 4, 7, 20, 33, 59}, // six: walked
		{1, 58},                  // sorted, after a walk
		{0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45, 48, 51, 54, 57}, // all
	} {
		topics := map[string][]int32{}
		for _, task := range tasks {
			topic := subs[task/3].Topics[0]
			topics[topic] = append(topics[topic], task%3)
		}
		want := kmsg.NewConsumerMemberAssignment()
		for _, topic := range slices.Sorted(maps.Keys(topics)) {
			want.Topics = append(want.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: topic, Partitions: topics[topic]})
		}
		assert.Equal(t, want.AppendTo(nil), w.append(nil, tasks, nil), "assignmentWriter.append(tasks %v)", tasks)
	}
}

// TestClaimsReadBack checks the claims the leader reads from the members'
// owned partitions: the tasks each member owns whole come out ascending
// whatever order the partitions came in, a repeated partition counts once,
// a task of two topics owned in one of them is claimed but not whole, and
// each task's claimers are in member order.
func TestClaimsReadBack(t *testing.T) {
	b := newTestBalancer(t, testTopology) // 0_0-0_2: orders and payments; 1_0, 1_1: clicks
	j, err := b.readJoin([]kmsg.JoinGroupResponseMember{
		b.joinMember("S1", nil, map[string][]int32{"orders": {2, 0, 1, 1}, "payments": {1, 2}, "clicks": {1, 0}}),
		b.joinMember("S2", nil, map[string][]int32{"payments": {0}, "clicks": {1}}),
		b.joinMember("S3", nil, map[string][]int32{"payments": {0}, "orders": {0}}),
	})
	require.NoError(t, err)
	c := j.claims
	for m, want := range [][]int32{{1, 2, 3, 4}, {4}, {0}} {
		assert.Equal(t, want, c.whole[c.wholeAt[m]:c.wholeAt[m+1]], "tasks member %d owns whole", m)
	}
	for task, want := range [][]int32{{0, 1, 2}, {0}, {0}, {0}, {0, 1}} {
		assert.Equal(t, want, c.claimers(task), "claimers of task %d", task)
	}
}

// TestLeaderReusesScratch checks that a leader's rebalances do not leak into
// each other through the working memory a Balancer keeps between them
// (scratch): rebalances of two groups in turn on one Balancer send what a
// new Balancer sends for each, and a group balanced once is not balanced
// again.
func TestLeaderReusesScratch(t *testing.T) {
	groups := func(b *Balancer) [][]kmsg.JoinGroupResponseMember {
		return [][]kmsg.JoinGroupResponseMember{{
			b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{}), everything),
			b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}, Ready: []string{"0_0"}}), nil),
		}, {
			b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{Revoked: []string{"0_0"}}),
				map[string][]int32{"orders": {1}, "payments": {1}}),
			b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{}), map[string][]int32{"clicks": {0, 1}}),
			b.joinMember("S3", b.encodeMember(t, learner.MemberMetadata{}), map[string][]int32{"orders": {2}, "payments": {2}}),
		}}
	}
	sync := func(b *Balancer, members []kmsg.JoinGroupResponseMember) kgo.IntoSyncAssignment {
		gb, _, err := b.MemberBalancer(members)
		require.NoError(t, err)
		into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(testCounts)
		require.NoError(t, err)
		_, err = gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(testCounts)
		assert.Error(t, err, "BalanceOrError of a group balanced already")
		return into
	}
	b := newTestBalancer(t, testTopology)
	for round, g := range [...]int{0, 1, 0, 1} {
		fresh := newTestBalancer(t, testTopology)
		assert.Equal(t, sync(fresh, groups(fresh)[g]).IntoSyncAssignment(), sync(b, groups(b)[g]).IntoSyncAssignment(),
			"rebalance %d (group %d): the assignments sent, against a new Balancer's", round, g)
	}
}

// reuseTopology has a subtopology of two topics, a stateless one and a
// bigger stateful one, so that random groups exercise every per-task array
// the leader keeps between rebalances.
var reuseTopology = []Subtopology{
	{Topics: []string{"orders", "payments"}, Partitions: 12, Stateful: true},
	{Topics: []string{"clicks"}, Partitions: 8},
	{Topics: []string{"views"}, Partitions: 20, Stateful: true},
}

var reuseCounts = map[string]int32{"orders": 12, "payments": 12, "clicks": 8, "views": 20}

// randomJoin returns a random JoinGroup response for reuseTopology: members
// of random generations owning random partitions (stray ones included),
// with random learning, ready, revoked and standby tags, and now and then
// user data that does not decode.
func randomJoin(t *testing.T, b *Balancer, r *rand.Rand) []kmsg.JoinGroupResponseMember {
	n := 1 + r.IntN(7)
	var members []kmsg.JoinGroupResponseMember
	for i := range n {
		owned := map[string][]int32{}
		for _, topic := range slices.Sorted(maps.Keys(reuseCounts)) {
			for p := range reuseCounts[topic] + 1 { // the last one is a stray
				if r.IntN(n+1) == 0 {
					owned[topic] = append(owned[topic], p)
				}
			}
		}
		var mm learner.MemberMetadata
		for _, task := range b.Tasks() {
			switch r.IntN(20) {
			case 0:
				mm.Learning = append(mm.Learning, task.ID)
				if r.IntN(2) == 0 {
					mm.Ready = append(mm.Ready, task.ID)
				}
			case 1:
				mm.Revoked = append(mm.Revoked, task.ID)
			case 2:
				mm.Standby = append(mm.Standby, task.ID)
			}
		}
		userData := b.encodeMember(t, mm)
		if r.IntN(10) == 0 {
			userData = []byte("garbage")
		}
		members = append(members, b.joinMemberAt(fmt.Sprintf("m-%d", i), int32(1+r.IntN(3)), userData, owned))
	}
	return members
}

// TestLeaderReuseMatchesFresh: one Balancer leading random rebalances in
// turn, some after a round the topics' mismatch kept as it was, sends what a new Balancer sends for
// each and reports the same Round.
func TestLeaderReuseMatchesFresh(t *testing.T) {
	reused := newTestBalancer(t, reuseTopology)
	var got Round
	reused.hooks.Rebalanced = func(r Round) { got = r }
	for i := range 300 {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		fresh := newTestBalancer(t, reuseTopology)
		var want Round
		fresh.hooks.Rebalanced = func(r Round) { want = r }
		join := randomJoin(t, fresh, r)
		gb, _, err := fresh.MemberBalancer(join)
		require.NoError(t, err)
		wantPlan, wantErr := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(reuseCounts)

		if i%5 == 0 {
			gb, _, err := reused.MemberBalancer(join)
			require.NoError(t, err)
			kept, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"orders": 1})
			require.NoError(t, err, "rebalance %d: BalanceOrError with a wrong partition count", i)
			require.ErrorIs(t, got.Err, ErrTopicsMismatch, "rebalance %d: Round.Err with a wrong partition count", i)
			require.Empty(t, newOverlaps(t, join, kept.IntoSyncAssignment()), "rebalance %d, kept: partitions sent to a member while another member owns them", i)
		}
		gb, _, err = reused.MemberBalancer(join)
		require.NoError(t, err)
		gotPlan, gotErr := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(reuseCounts)
		require.Equal(t, wantErr, gotErr, "rebalance %d: the error, against a new Balancer's", i)
		if wantErr != nil {
			continue
		}
		require.Equal(t, wantPlan.IntoSyncAssignment(), gotPlan.IntoSyncAssignment(), "rebalance %d: the assignments sent, against a new Balancer's", i)
		require.Empty(t, newOverlaps(t, join, gotPlan.IntoSyncAssignment()), "rebalance %d: partitions sent to a member while another member owns them", i)
		require.Equal(t, want, got, "rebalance %d: the Round, against a new Balancer's", i)
	}
}

// TestLeaderConcurrentGroups: groups balanced at once on one Balancer each
// get what a new Balancer sends for them.
func TestLeaderConcurrentGroups(t *testing.T) {
	const groups, workers, calls = 24, 4, 30
	joins := make([][]kmsg.JoinGroupResponseMember, groups)
	want := make([][]kmsg.SyncGroupRequestGroupAssignment, groups)
	for i := range groups {
		fresh := newTestBalancer(t, reuseTopology)
		joins[i] = randomJoin(t, fresh, rand.New(rand.NewPCG(uint64(i), 2)))
		gb, _, err := fresh.MemberBalancer(joins[i])
		require.NoError(t, err)
		plan, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(reuseCounts)
		require.NoError(t, err)
		want[i] = plan.IntoSyncAssignment()
	}
	b := newTestBalancer(t, reuseTopology)
	var wg sync.WaitGroup
	got := make([][][]kmsg.SyncGroupRequestGroupAssignment, workers)
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for c := range calls {
				gb, _, err := b.MemberBalancer(joins[(w*7+c*3)%groups])
				if err == nil {
					var plan kgo.IntoSyncAssignment
					if plan, err = gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(reuseCounts); err == nil {
						got[w] = append(got[w], plan.IntoSyncAssignment())
						continue
					}
				}
				errs[w] = err
				return
			}
		})
	}
	wg.Wait()
	for w := range workers {
		require.NoError(t, errs[w], "worker %d", w)
		for c := range calls {
			require.Equal(t, want[(w*7+c*3)%groups], got[w][c], "worker %d call %d: the assignments sent, against a new Balancer's", w, c)
		}
	}
}
