package kgolearner

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/benchgroup"
	"github.com/learnerassignor/learner/internal/cputime"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	leaderMembers    = 1_000
	leaderTopics     = 100
	leaderPartitions = 1_000
)

// leaderGroup is one rebalance of benchgroup's group of 1,000 members over
// 100 topics of 1,000 partitions (100,000 stateless tasks, the problem
// franz-go's balancers solve) after the event; topic i is subtopology i.
type leaderGroup struct {
	benchgroup.Group
	subs []Subtopology
}

func newLeaderGroup(ev benchgroup.Event) leaderGroup {
	g := leaderGroup{Group: benchgroup.New(leaderMembers, leaderTopics*leaderPartitions, leaderTopics, ev,
		func(i int) string { return "t" + strconv.Itoa(i) })}
	for _, topic := range g.Topics {
		g.subs = append(g.subs, Subtopology{Topics: []string{topic}, Partitions: g.Counts[topic]})
	}
	return g
}

// learnerJoin returns the JoinGroup response the learner leader gets: every
// member, a leaving one reporting Leaving (the learner protocol's scale-down).
func (g leaderGroup) learnerJoin(b *Balancer, tb testing.TB) []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	for _, m := range g.Members {
		data := b.encodeMember(tb, learner.MemberMetadata{Leaving: m.Leaving})
		out = append(out, b.joinMemberAt(m.ID, m.Generation(), data, m.Owned))
	}
	return out
}

// kafkaJoin returns the JoinGroup response a franz-go leader gets with bal's
// metadata: members that left are gone (Kafka has no "leaving soon").
func (g leaderGroup) kafkaJoin(bal kgo.GroupBalancer) []kmsg.JoinGroupResponseMember {
	return benchgroup.KafkaJoin(g.Group, bal.JoinGroupMetadata, func(id string, metadata []byte) kmsg.JoinGroupResponseMember {
		return kmsg.JoinGroupResponseMember{MemberID: id, ProtocolMetadata: metadata}
	})
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
	for _, ev := range benchgroup.Events {
		name := fmt.Sprintf("members=%d/tasks=%d/event=%s/balancer=", leaderMembers, leaderTopics*leaderPartitions, ev)
		b.Run(name+"kgolearner", func(b *testing.B) {
			g := newLeaderGroup(ev)
			bal := newTestBalancer(b, g.subs)
			members := g.learnerJoin(bal, b)
			cputime.Loop(b, func() error {
				_, err := wholeBalance(bal, members, g.Counts)
				return err
			})
		})
		b.Run(name+"cooperative-sticky", func(b *testing.B) {
			g := newLeaderGroup(ev)
			members := g.kafkaJoin(kgo.CooperativeStickyBalancer())
			cputime.Loop(b, func() error {
				_, err := wholeBalance(kgo.CooperativeStickyBalancer(), members, g.Counts)
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
	for _, ev := range benchgroup.Events {
		g := newLeaderGroup(ev)
		bal := newTestBalancer(t, g.subs)
		var round Round
		bal.hooks.Rebalanced = func(r Round) { round = r }
		plan, err := wholeBalance(bal, g.learnerJoin(bal, t), g.Counts)
		if err != nil {
			t.Fatalf("%s: leader rebalance error: %v", ev, err)
		}
		if len(plan) != len(g.Members) {
			t.Fatalf("%s: %d assignments, want one per member (%d)", ev, len(plan), len(g.Members))
		}
		switch {
		case ev == benchgroup.Stable && len(round.Deferred) != 0:
			t.Errorf("%s: %d tasks deferred, want none moved", ev, len(round.Deferred))
		case ev != benchgroup.Stable && len(round.Deferred) == 0:
			t.Errorf("%s: no task deferred, want the moved tasks deferred one generation", ev)
		}
	}
}
