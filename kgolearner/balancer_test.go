package kgolearner

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var testTopology = []Subtopology{
	{Topics: []string{"orders", "payments"}, Partitions: 3, Stateful: true},
	{Topics: []string{"clicks"}, Partitions: 2},
}

func newTestBalancer(t testing.TB, subs []Subtopology) *Balancer {
	t.Helper()
	b, err := New(Config{Subtopologies: subs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTopologyMapsTasksToPartitions(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	var ids []string
	for _, task := range b.Tasks() {
		ids = append(ids, fmt.Sprintf("%s:%v", task.ID, task.Stateful))
	}
	if got, want := strings.Join(ids, " "), "0_0:true 0_1:true 0_2:true 1_0:false 1_1:false"; got != want {
		t.Errorf("Tasks() = %s, want %s", got, want)
	}
	for _, c := range []struct {
		topic     string
		partition int32
		task      string
	}{{"orders", 2, "0_2"}, {"payments", 0, "0_0"}, {"clicks", 1, "1_1"}, {"clicks", 2, ""}, {"other", 0, ""}, {"orders", -1, ""}} {
		if got, ok := b.TaskOf(c.topic, c.partition); got != c.task || ok != (c.task != "") {
			t.Errorf("TaskOf(%q, %d) = %q, %v; want %q", c.topic, c.partition, got, ok, c.task)
		}
	}
	if got, want := b.Partitions("0_1"), map[string][]int32{"orders": {1}, "payments": {1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Partitions(0_1) = %v, want %v", got, want)
	}
	if got := b.Partitions("9_9"); got != nil {
		t.Errorf("Partitions(9_9) = %v, want nil", got)
	}
	// A task is owned only when all its co-partitioned partitions are.
	owned := map[string][]int32{"orders": {0, 1, 1}, "payments": {1}, "clicks": {0}}
	if got, want := b.topo.tasksOf(owned), []string{"0_1", "1_0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tasksOf(%v) = %v, want %v", owned, got, want)
	}
}

func TestNewRejectsBadTopology(t *testing.T) {
	for _, subs := range [][]Subtopology{
		{{Topics: nil, Partitions: 1}},
		{{Topics: []string{"a"}, Partitions: 0}},
		{{Topics: []string{"a"}, Partitions: 1}, {Topics: []string{"b", "a"}, Partitions: 1}},
	} {
		if _, err := New(Config{Subtopologies: subs}); err == nil || !strings.HasPrefix(err.Error(), "kgolearner: ") {
			t.Errorf("New(%+v) error = %v, want a kgolearner: error", subs, err)
		}
	}
	if _, err := New(Config{Subtopologies: testTopology, Options: learner.Options{Standbys: -1}}); err == nil {
		t.Errorf("New(Standbys: -1) error = nil, want one")
	}
}

func TestLearnerID(t *testing.T) {
	for in, want := range map[string]string{
		"kgo-5d1f0c2e-aa":  "kgo-5d1f0c2e-aa",
		"my app.1-x":       "my.20app.2e1-x",
		"my.20app.2e1-x":   "my.2e20app.2e2e1-x",
		"":                 "-cbf29ce484222325",
		"rack/eu-west-1a!": "rack.2feu-west-1a.21",
	} {
		if got := LearnerID(in); got != want {
			t.Errorf("LearnerID(%q) = %q, want %q", in, got, want)
		}
	}
	long := LearnerID(strings.Repeat("é", 200))
	if len(long) > 255 || long == LearnerID(strings.Repeat("é", 201)) {
		t.Errorf("LearnerID(400 bytes) = %q (%d bytes), want at most 255 bytes and distinct from a longer ID", long, len(long))
	}
}

// joinMember builds what the coordinator hands the leader for one member.
func (b *Balancer) joinMember(id string, userData []byte, owned map[string][]int32) kmsg.JoinGroupResponseMember {
	return b.joinMemberAt(id, 1, userData, owned)
}

// joinMemberAt is joinMember for a member that last synced in generation.
func (b *Balancer) joinMemberAt(id string, generation int32, userData []byte, owned map[string][]int32) kmsg.JoinGroupResponseMember {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Generation = generation
	meta.Topics = slices.Sorted(slices.Values(b.topo.topics))
	meta.UserData = userData
	for _, topic := range meta.Topics {
		if ps, ok := owned[topic]; ok {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic, op.Partitions = topic, ps
			meta.OwnedPartitions = append(meta.OwnedPartitions, op)
		}
	}
	m := kmsg.NewJoinGroupResponseMember()
	m.MemberID, m.ProtocolMetadata = id, meta.AppendTo(nil)
	return m
}

// encodeMember encodes m as JoinGroupMetadata does, under the placeholder
// member ID.
func (b *Balancer) encodeMember(t testing.TB, m learner.MemberMetadata) []byte {
	t.Helper()
	m.ID = workerID
	data, err := b.codec.AppendMember(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// balance runs the leader's side on the given members and returns each
// member's partitions and decoded assignment, by member ID.
func (b *Balancer) balance(t testing.TB, members []kmsg.JoinGroupResponseMember, counts map[string]int32) (map[string]map[string][]int32, map[string]learner.Assignment, Round) {
	t.Helper()
	var round Round
	b.hooks.Rebalanced = func(r Round) { round = r }
	gb, _, err := b.MemberBalancer(members)
	if err != nil {
		t.Fatal(err)
	}
	into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
	if err != nil {
		t.Fatalf("BalanceOrError = %v", err)
	}
	parts := map[string]map[string][]int32{}
	tags := map[string]learner.Assignment{}
	for _, sa := range into.IntoSyncAssignment() {
		var ka kmsg.ConsumerMemberAssignment
		if err := ka.ReadFrom(sa.MemberAssignment); err != nil {
			t.Fatal(err)
		}
		parts[sa.MemberID] = map[string][]int32{}
		for _, at := range ka.Topics {
			parts[sa.MemberID][at.Topic] = at.Partitions
		}
		as, err := b.codec.DecodeAssignment(ka.UserData)
		if err != nil {
			t.Fatal(err)
		}
		tags[sa.MemberID] = as
	}
	return parts, tags, round
}

var testCounts = map[string]int32{"orders": 3, "payments": 3, "clicks": 2}

// TestLeaderWithholdsOwnedPartitions: S1 gave up 0_0 at join for S2's ready
// learner, but Kafka still has 0_0's partitions on S1. The leader must not
// hand them to S2 in this generation: S2 keeps learning 0_0, S1 loses the
// partitions (and revokes them), and the next rebalance hands them over.
func TestLeaderWithholdsOwnedPartitions(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	members := []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{Revoked: []string{"0_0"}}),
			map[string][]int32{"orders": {0, 1, 2}, "payments": {0, 1, 2}, "clicks": {0, 1}}),
		b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}, Ready: []string{"0_0"}}), nil),
	}
	parts, tags, round := b.balance(t, members, testCounts)
	if got := parts["S2"]["orders"]; len(got) > 0 {
		t.Errorf("S2 gets orders %v while S1 still owns them, want nothing of 0_0", got)
	}
	if got := tags["S2"].Learning; !reflect.DeepEqual(got, []string{"0_0"}) {
		t.Errorf("S2's learning = %v, want [0_0] kept while the task is withheld", got)
	}
	if got := parts["S1"]["orders"]; reflect.DeepEqual(got, []int32{0, 1, 2}) {
		t.Errorf("S1 keeps orders %v, want partition 0 revoked", got)
	}
	// Balancing also moves stateless 1_0 to S2, which needs no learner
	// but waits all the same.
	if !reflect.DeepEqual(round.Withheld, []string{"0_0", "1_0"}) {
		t.Errorf("Round.Withheld = %v, want [0_0 1_0]", round.Withheld)
	}

	// Next generation: S1 revoked the partitions and no longer reports 0_0.
	next := []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", b.encodeMember(t, learner.MemberMetadata{}), parts["S1"]),
		b.joinMember("S2", b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0"}, Ready: []string{"0_0"}}), nil),
	}
	parts, tags, round = b.balance(t, next, testCounts)
	if got := parts["S2"]; !reflect.DeepEqual(got["orders"], []int32{0}) || !reflect.DeepEqual(got["payments"], []int32{0}) {
		t.Errorf("S2 gets %v in the next generation, want 0_0's partitions", got)
	}
	if got := tags["S2"].Assigned; !reflect.DeepEqual(got, []string{"0_0", "1_0"}) || len(round.Withheld) > 0 {
		t.Errorf("S2's assigned = %v (withheld %v), want [0_0 1_0] and nothing withheld", got, round.Withheld)
	}
}

// TestLeaderFallsBackOnOwnedPartitions: a member whose user data does not
// decode (garbage, or another topology) still owns what Kafka says it owns,
// and one from another topology keeps its leaving flag.
func TestLeaderFallsBackOnOwnedPartitions(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	other := newTestBalancer(t, []Subtopology{{Topics: []string{"orders", "payments"}, Partitions: 3, Stateful: true}})
	members := []kmsg.JoinGroupResponseMember{
		b.joinMember("S1", []byte("garbage"), map[string][]int32{"orders": {0, 1, 2}, "payments": {0, 1, 2}}),
		b.joinMember("S2", other.encodeMember(t, learner.MemberMetadata{Assigned: []string{"0_0"}, Leaving: true}),
			map[string][]int32{"clicks": {0, 1}}),
	}
	_, tags, round := b.balance(t, members, testCounts)
	if round.Undecoded != 2 {
		t.Errorf("Round.Undecoded = %d, want 2", round.Undecoded)
	}
	want := []learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"0_0", "0_1", "0_2"}},
		{ID: "S2", Assigned: []string{"1_0", "1_1"}, Leaving: true},
	}
	if !reflect.DeepEqual(round.Members, want) {
		t.Errorf("Round.Members = %+v, want %+v", round.Members, want)
	}
	if got := tags["S1"].Assigned; !reflect.DeepEqual(got, []string{"0_0", "0_1", "0_2"}) {
		t.Errorf("S1's assigned = %v, want the tasks it owns", got)
	}
}

// TestLeaderToleratesContradictions: a member whose user data contradicts
// its owned partitions and a zombie still claiming partitions
// that moved on do not fail the rebalance, steal tasks or hold up their
// current owner.
func TestLeaderToleratesContradictions(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	members := []kmsg.JoinGroupResponseMember{
		// Learns 0_0 while owning it. (User data cannot contradict itself:
		// the wire codec refuses to encode or decode that.)
		b.joinMemberAt("S1", 5, b.encodeMember(t, learner.MemberMetadata{Learning: []string{"0_0", "0_1"}, Ready: []string{"0_1"}}),
			map[string][]int32{"orders": {0}, "payments": {0}}),
		// A zombie from generation 3 still claims 0_0 and 1_0.
		b.joinMemberAt("S2", 3, b.encodeMember(t, learner.MemberMetadata{}), map[string][]int32{"orders": {0}, "payments": {0}, "clicks": {0}}),
	}
	parts, _, round := b.balance(t, members, testCounts)
	want := []learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"0_0"}, Learning: []string{"0_1"}, Ready: []string{"0_1"}},
		{ID: "S2", Assigned: []string{"1_0"}},
	}
	if !reflect.DeepEqual(round.Members, want) {
		t.Errorf("Round.Members = %+v, want %+v", round.Members, want)
	}
	if slices.Contains(round.Withheld, "0_0") || !slices.Contains(parts["S1"]["orders"], 0) || slices.Contains(parts["S2"]["orders"], 0) {
		t.Errorf("plan %v, withheld %v: want S1 to keep 0_0 and the zombie S2 to lose it", parts, round.Withheld)
	}
}

func TestLeaderRejectsPartitionCountMismatch(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	gb, _, err := b.MemberBalancer([]kmsg.JoinGroupResponseMember{b.joinMember("S1", nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, counts := range []map[string]int32{
		{"orders": 4, "payments": 3, "clicks": 2},
		{"orders": 3, "clicks": 2},
	} {
		if _, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts); err == nil || !strings.Contains(err.Error(), "payments") && !strings.Contains(err.Error(), "orders") {
			t.Errorf("BalanceOrError(%v) error = %v, want one naming the topic", counts, err)
		}
	}
}

// bigGroup builds the JoinGroup members of a balanced group of 1,000
// members and 100,000 tasks (one topic of 100,000 partitions) with one
// standby each: member i owns every 1,000th partition from i and keeps
// standbys of the next ones.
func bigGroup(t testing.TB) (b *Balancer, members []kmsg.JoinGroupResponseMember, userData int) {
	const size, tasks = 1000, 100_000
	b = newTestBalancer(t, []Subtopology{{Topics: []string{"input"}, Partitions: tasks, Stateful: true}})
	for i := range size {
		var m learner.MemberMetadata
		owned := map[string][]int32{}
		for task := i; task < tasks; task += size {
			// JoinGroupMetadata leaves Assigned to the owned partitions.
			m.Standby = append(m.Standby, fmt.Sprintf("0_%d", (task+1)%tasks))
			owned["input"] = append(owned["input"], int32(task))
		}
		data := b.encodeMember(t, m)
		userData += len(data)
		// A kgo member ID: client ID, '-', UUID.
		members = append(members, b.joinMember(fmt.Sprintf("kgo-%08x-1c2d-4e5f-8a9b-0c1d2e3f4a5b", i), data, owned))
	}
	return b, members, userData
}

// TestJoinGroupPayload measures the leader's whole JoinGroup response, as
// Kafka frames it, for 1,000 members and 100,000 tasks with one standby
// each: member IDs, subscriptions, owned partitions and the learner user
// data.
func TestJoinGroupPayload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-task topology")
	}
	_, members, userData := bigGroup(t)
	resp := kmsg.NewJoinGroupResponse()
	resp.Version = 9
	resp.Members = members
	total := len(resp.AppendTo(nil))
	n := float64(len(members))
	t.Logf("JoinGroup response for %d members x 100000 tasks, 1 standby: %d bytes (%.0f per member), of which learner user data %d bytes (%.0f per member)",
		len(members), total, float64(total)/n, userData, float64(userData)/n)
	if total > 1_000_000 {
		t.Errorf("JoinGroup response = %d bytes, want under Kafka's 1 MB default", total)
	}
}

// BenchmarkLeaderBalance measures one rebalance of that group on the
// leader: decoding every member, Assign, withholding and encoding the plan.
func BenchmarkLeaderBalance(b *testing.B) {
	bal, members, _ := bigGroup(b)
	counts := map[string]int32{"input": 100_000}
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

// syncBytes encodes what the leader sends one member, under the
// placeholder member ID.
func (b *Balancer) syncBytes(t testing.TB, as learner.Assignment) []byte {
	t.Helper()
	as.MemberID = workerID
	ka := kmsg.NewConsumerMemberAssignment()
	ka.Topics = b.partitionsOf(as.Assigned)
	var err error
	if ka.UserData, err = b.codec.AppendAssignment(nil, as); err != nil {
		t.Fatal(err)
	}
	return ka.AppendTo(nil)
}

// TestMemberSideHooks follows one member through an assignment, a join
// that gives up a learned task, the leader handing the task back, and a
// lost session: the hooks fire once per change, stops before starts.
func TestMemberSideHooks(t *testing.T) {
	var events []string
	record := func(what string) func(string) { return func(task string) { events = append(events, what+" "+task) } }
	b, err := New(Config{Subtopologies: testTopology, Hooks: Hooks{
		StartActive: record("start"), StopActive: record("stop"),
		StartLearning: record("learn"), StopLearning: record("unlearn"),
		StartStandby: record("standby"), StopStandby: record("unstandby"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(step string, want ...string) {
		t.Helper()
		if !slices.Equal(events, want) {
			t.Errorf("%s: hooks %q, want %q", step, events, want)
		}
		events = nil
	}

	parts, err := b.ParseSyncAssignment(b.syncBytes(t, learner.Assignment{
		Assigned: []string{"0_0", "1_0"}, Learned: []string{"0_0"}, Learning: []string{"0_1"}, Standby: []string{"0_2"}}))
	if want := map[string][]int32{"orders": {0}, "payments": {0}, "clicks": {0}}; err != nil || !reflect.DeepEqual(parts, want) {
		t.Fatalf("ParseSyncAssignment = %v, %v; want %v", parts, err, want)
	}
	expect("first assignment", "learn 0_1", "standby 0_2", "start 0_0", "start 1_0")

	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(b.JoinGroupMetadata([]string{"clicks", "orders", "payments"}, parts, 7)); err != nil {
		t.Fatal(err)
	}
	expect("join", "stop 0_0") // learned: given up before the join goes out
	b.JoinGroupMetadata([]string{"clicks", "orders", "payments"}, parts, 7)
	expect("join again")
	m, err := b.codec.DecodeMember(meta.UserData)
	if want := (learner.MemberMetadata{ID: workerID, Revoked: []string{"0_0"}, Learning: []string{"0_1"}, Standby: []string{"0_2"}}); err != nil || !reflect.DeepEqual(m, want) || meta.Generation != 7 || len(meta.OwnedPartitions) != 3 {
		t.Errorf("JoinGroupMetadata = %+v with user data %+v, %v; want generation 7, 3 owned topics and %+v", meta, m, err, want)
	}

	// The learner was not ready: the leader hands 0_0 back.
	if _, err := b.ParseSyncAssignment(b.syncBytes(t, learner.Assignment{
		Assigned: []string{"0_0", "1_0"}, Learning: []string{"0_1"}, Standby: []string{"0_2"}})); err != nil {
		t.Fatal(err)
	}
	expect("task handed back", "start 0_0")

	b.PartitionsLost(context.Background(), nil, parts)
	expect("lost session", "stop 0_0", "stop 1_0")
	if err := meta.ReadFrom(b.JoinGroupMetadata([]string{"clicks", "orders", "payments"}, nil, -1)); err != nil {
		t.Fatal(err)
	}
	m, err = b.codec.DecodeMember(meta.UserData)
	if want := (learner.MemberMetadata{ID: workerID, Learning: []string{"0_1"}, Standby: []string{"0_2"}}); err != nil || !reflect.DeepEqual(m, want) {
		t.Errorf("join after a lost session reports %+v, %v; want the learner and standby kept: %+v", m, err, want)
	}
}
