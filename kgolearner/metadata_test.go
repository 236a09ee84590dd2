package kgolearner

import (
	"fmt"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigGroupMembers and bigGroupTasks are the scale the README quotes.
const bigGroupMembers, bigGroupTasks = 1000, 100_000

// bigGroup builds the JoinGroup members of a balanced group of 1,000
// members and 100,000 tasks (one topic of 100,000 partitions) with one
// standby each, as JoinGroupMetadata encodes them: member i owns every
// 1,000th partition from i and keeps standbys of the next ones.
func bigGroup(t testing.TB) (b *Balancer, members []kmsg.JoinGroupResponseMember) {
	b, err := New(Config{Subtopologies: []Subtopology{{Topics: []string{"input"}, Partitions: bigGroupTasks, Stateful: true}},
		Options: learner.Options{Standbys: 1}})
	require.NoError(t, err)
	for i := range bigGroupMembers {
		var m learner.MemberMetadata
		owned := map[string][]int32{}
		for task := i; task < bigGroupTasks; task += bigGroupMembers {
			// JoinGroupMetadata leaves Assigned to the owned partitions.
			m.Standby = append(m.Standby, fmt.Sprintf("0_%d", (task+1)%bigGroupTasks))
			owned["input"] = append(owned["input"], int32(task))
		}
		// A kgo member ID: client ID, '-', UUID.
		members = append(members, b.joinMember(fmt.Sprintf("kgo-%08x-1c2d-4e5f-8a9b-0c1d2e3f4a5b", i), b.encodeMember(t, m), owned))
	}
	return b, members
}

// metadataSize is what the group coordinator stores for a group: every
// member's subscription and assignment, with Kafka's own fields and the
// learner's user data counted apart.
type metadataSize struct {
	record                       int // the GroupMetadataValue record (v3, as the classic coordinator writes it)
	subscriptions, assignments   int // their bytes in it
	subscriptionUD, assignmentUD int // the learner's user data within them
	ownedPartitions, partitions  int // Kafka's partition lists within them: 4 bytes a partition
}

func measureMetadata(t testing.TB, members []kmsg.JoinGroupResponseMember, plan []kmsg.SyncGroupRequestGroupAssignment) metadataSize {
	t.Helper()
	assignment := map[string][]byte{}
	for _, sa := range plan {
		assignment[sa.MemberID] = sa.MemberAssignment
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType = "consumer"
	v.Generation = 1
	v.Protocol = kmsg.StringPtr(ProtocolName)
	v.Leader = kmsg.StringPtr(members[0].MemberID)
	var s metadataSize
	for _, m := range members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.MemberID
		vm.ClientID = "kgo"
		vm.ClientHost = "/10.0.0.1"
		vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis = 60_000, 45_000
		vm.Subscription, vm.Assignment = m.ProtocolMetadata, assignment[m.MemberID]
		require.NotNil(t, vm.Assignment, "no assignment for %s", m.MemberID)
		v.Members = append(v.Members, vm)

		var meta kmsg.ConsumerMemberMetadata
		require.NoError(t, meta.ReadFrom(vm.Subscription))
		var ka kmsg.ConsumerMemberAssignment
		require.NoError(t, ka.ReadFrom(vm.Assignment))
		s.subscriptions += len(vm.Subscription)
		s.assignments += len(vm.Assignment)
		s.subscriptionUD += len(meta.UserData)
		s.assignmentUD += len(ka.UserData)
		for _, op := range meta.OwnedPartitions {
			s.ownedPartitions += 4 * len(op.Partitions)
		}
		for _, at := range ka.Topics {
			s.partitions += 4 * len(at.Partitions)
		}
	}
	s.record = len(v.AppendTo(nil))
	return s
}

// TestGroupMetadataSize measures the record the group coordinator stores
// for 1,000 members and 100,000 tasks with one standby each (every member
// runs 100 tasks and keeps 100 standbys): every subscription and every
// assignment. Kafka's own partition lists (the owned partitions in each
// subscription, the partitions in each assignment: 4 bytes a partition)
// and its per-member fields come to more than 900,000 bytes by themselves,
// so the record cannot fit Kafka's default 1,048,588-byte limit with
// anything the learner adds beyond about 100 bytes a member; the test
// prints the numbers the README and docs/kafka.md quote, and fails if the
// learner's part grows.
func TestGroupMetadataSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-task topology")
	}
	b, members := bigGroup(t)
	gb, _, err := b.MemberBalancer(members)
	require.NoError(t, err)
	into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(map[string]int32{"input": bigGroupTasks})
	require.NoError(t, err)
	s := measureMetadata(t, members, into.IntoSyncAssignment())
	n := float64(bigGroupMembers)
	kafka := s.record - s.subscriptionUD - s.assignmentUD
	t.Logf("group metadata record for %d members x %d tasks, 1 standby: %d bytes (%.0f per member)", bigGroupMembers, bigGroupTasks, s.record, float64(s.record)/n)
	t.Logf("  subscriptions %d bytes, of which owned partitions %d and learner user data %d (%.0f per member)",
		s.subscriptions, s.ownedPartitions, s.subscriptionUD, float64(s.subscriptionUD)/n)
	t.Logf("  assignments %d bytes, of which partitions %d and learner user data %d (%.0f per member)",
		s.assignments, s.partitions, s.assignmentUD, float64(s.assignmentUD)/n)
	t.Logf("  Kafka's own part (everything but the learner's user data): %d bytes (%.0f per member); the learner adds %.0f per member",
		kafka, float64(kafka)/n, float64(s.subscriptionUD+s.assignmentUD)/n)
	// Measured on 2026-11-30: 225 + 221 bytes a member (the wire format's
	// header, the placeholder member ID and the standby list each way). A
	// regression in the learner's part fails here.
	require.LessOrEqual(t, s.subscriptionUD+s.assignmentUD, 450_000, "learner user data in the group metadata")
}

// BenchmarkLeaderBalance measures one rebalance of that group on the
// leader: decoding every member, Assign, deferring and encoding the plan.
func BenchmarkLeaderBalance(b *testing.B) {
	bal, members := bigGroup(b)
	counts := map[string]int32{"input": bigGroupTasks}
	b.ResetTimer()
	for b.Loop() {
		gb, _, err := bal.MemberBalancer(members)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts); err != nil {
			b.Fatal(err)
		}
	}
}
