package kgolearner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/cputime"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderGroup is one rebalance of a group of 1,000 members over 100 topics
// of 1,000 partitions (100,000 stateless tasks, the problem franz-go's
// balancers solve), balanced before one event happened: partition k
// (counting across topics) was owned by member k mod 1,000.
type leaderGroup struct {
	subs    []Subtopology
	topics  []string // sorted
	counts  map[string]int32
	members []leaderMember
}

type leaderMember struct {
	id      string // a kgo member ID
	owned   map[string][]int32
	leaving bool
}

const (
	leaderMembers    = 1_000
	leaderTopics     = 100
	leaderPartitions = 1_000
)

// Leader benchmark events: what happened to the balanced group.
const (
	leaderStable    = "stable"     // nothing
	leaderScaleUp   = "scale-up"   // 10% more members join, owning nothing
	leaderScaleDown = "scale-down" // 10% of the members leave
)

func newLeaderGroup(ev string) leaderGroup {
	rng := rand.New(rand.NewPCG(0x1ea4e7, leaderMembers))
	g := leaderGroup{counts: map[string]int32{}}
	for i := range leaderTopics {
		topic := "t" + strconv.Itoa(i)
		g.subs = append(g.subs, Subtopology{Topics: []string{topic}, Partitions: leaderPartitions})
		g.topics = append(g.topics, topic)
		g.counts[topic] = leaderPartitions
	}
	slices.Sort(g.topics)
	total := leaderMembers
	if ev == leaderScaleUp {
		total += leaderMembers / 10
	}
	for range total {
		g.members = append(g.members, leaderMember{
			id: fmt.Sprintf("kgo-%016x-1c2d-4e5f-8a9b-0c1d2e3f4a5b", rng.Uint64()), owned: map[string][]int32{}})
	}
	for k := range leaderTopics * leaderPartitions {
		topic := g.subs[k/leaderPartitions].Topics[0]
		o := g.members[k%leaderMembers].owned
		o[topic] = append(o[topic], int32(k%leaderPartitions))
	}
	if ev == leaderScaleDown {
		for _, i := range rng.Perm(leaderMembers)[:leaderMembers/10] {
			g.members[i].leaving = true
		}
	}
	slices.SortFunc(g.members, func(a, b leaderMember) int { return strings.Compare(a.id, b.id) })
	return g
}

// learnerJoin returns the JoinGroup response the learner leader gets: every
// member, a leaving one reporting Leaving (the learner protocol's scale-down).
func (g leaderGroup) learnerJoin(b *Balancer, tb testing.TB) []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	for _, m := range g.members {
		gen := int32(1)
		if len(m.owned) == 0 {
			gen = -1
		}
		data := b.encodeMember(tb, learner.MemberMetadata{Leaving: m.leaving})
		out = append(out, b.joinMemberAt(m.id, gen, data, m.owned))
	}
	return out
}

// kafkaJoin returns the JoinGroup response a franz-go leader gets with bal's
// metadata: members that left are gone (Kafka has no "leaving soon").
func (g leaderGroup) kafkaJoin(bal kgo.GroupBalancer) []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	for _, m := range g.members {
		if m.leaving {
			continue
		}
		gen := int32(1)
		if len(m.owned) == 0 {
			gen = -1
		}
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.ProtocolMetadata = bal.JoinGroupMetadata(g.topics, m.owned, gen)
		out = append(out, jm)
	}
	return out
}

// wholeBalance is everything a kgo group leader does between receiving the
// JoinGroup response and sending SyncGroup: decode every member, balance,
// and encode every member's assignment.
func wholeBalance(bal kgo.GroupBalancer, members []kmsg.JoinGroupResponseMember, counts map[string]int32) ([]kmsg.SyncGroupRequestGroupAssignment, error) {
	mb, _, err := bal.MemberBalancer(members)
	if err != nil {
		return nil, err
	}
	into, err := mb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
	if err != nil {
		return nil, err
	}
	return into.IntoSyncAssignment(), nil
}

// BenchmarkLeaderRebalance times the Kafka leader's whole rebalance, from
// the JoinGroup response to the SyncGroup assignments, for kgolearner and
// for franz-go's CooperativeStickyBalancer on the same group; compare them
// with benchstat -col /balancer.
func BenchmarkLeaderRebalance(b *testing.B) {
	for _, ev := range []string{leaderStable, leaderScaleUp, leaderScaleDown} {
		name := fmt.Sprintf("members=%d/tasks=%d/event=%s/balancer=", leaderMembers, leaderTopics*leaderPartitions, ev)
		b.Run(name+"kgolearner", func(b *testing.B) {
			g := newLeaderGroup(ev)
			bal := newTestBalancer(b, g.subs)
			members := g.learnerJoin(bal, b)
			cputime.Loop(b, func() error {
				_, err := wholeBalance(bal, members, g.counts)
				return err
			})
		})
		b.Run(name+"cooperative-sticky", func(b *testing.B) {
			g := newLeaderGroup(ev)
			members := g.kafkaJoin(kgo.CooperativeStickyBalancer())
			cputime.Loop(b, func() error {
				_, err := wholeBalance(kgo.CooperativeStickyBalancer(), members, g.counts)
				return err
			})
		})
	}
}

// TestLeaderRebalanceGroup checks that the benchmark's rebalances do the
// work they are named for on the kgolearner leader: every member gets an
// assignment, a stable group moves nothing, and after scale-up or
// scale-down tasks move (deferred one generation while their old owners
// still own the partitions).
func TestLeaderRebalanceGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-task topology")
	}
	for _, ev := range []string{leaderStable, leaderScaleUp, leaderScaleDown} {
		g := newLeaderGroup(ev)
		bal := newTestBalancer(t, g.subs)
		var round Round
		bal.hooks.Rebalanced = func(r Round) { round = r }
		plan, err := wholeBalance(bal, g.learnerJoin(bal, t), g.counts)
		if err != nil {
			t.Fatalf("%s: leader rebalance error: %v", ev, err)
		}
		if len(plan) != len(g.members) {
			t.Fatalf("%s: %d assignments, want one per member (%d)", ev, len(plan), len(g.members))
		}
		switch {
		case ev == leaderStable && len(round.Deferred) != 0:
			t.Errorf("%s: %d tasks deferred, want none moved", ev, len(round.Deferred))
		case ev != leaderStable && len(round.Deferred) == 0:
			t.Errorf("%s: no task deferred, want the moved tasks deferred one generation", ev)
		}
	}
}
