// Package kgolearner runs the learner assignor in a Kafka consumer group
// driven by github.com/twmb/franz-go's kgo client.
//
// Each client gets its own Balancer, a kgo.GroupBalancer that speaks the
// "learner" protocol. At every join it reports the member's status (its
// learner.Worker's MemberMetadata, in the learner wire format) as the user
// data of a kmsg.ConsumerMemberMetadata, with the partitions it owns and its
// generation; its active tasks travel only as those owned partitions, Kafka's
// own record of who consumes what. The leader decodes every member, calls
// learner.Assignor.Assign and sends each member its active tasks as
// partitions and its learning, learned and standby tags in the assignment's
// user data.
//
// # Tasks and partitions
//
// The topology is a list of Subtopology values: groups of co-partitioned
// input topics. Partition p of every topic of subtopology i is task "<i>_<p>"
// (Kafka Streams' task IDs). A member is assigned all partitions of its
// active tasks; learners and standbys own no partition (they replay the
// task's changelog, which the application reads itself).
//
// # Cooperative rebalancing
//
// The balancer is cooperative: members keep their partitions across a
// rebalance. Kafka gives no way to order "the old owner stops" before "the
// new owner starts" within one generation, so the leader never hands a
// partition to a member while another member still reports owning it: it
// withholds the task for one generation (a promoted learner keeps learning
// it), the old owner revokes it, rejoins at once, and the next rebalance
// hands the task over. A promotion thus takes two quick rebalances where the
// design document has one; a stateless task that moves waits one rebalance
// too. A member that still owns a task, by the newest generation's claim,
// keeps it whatever stale claims (KIP-792) others make.
//
// # The application's part
//
// The application implements Hooks (start and stop an active task, a
// learner, a standby; shut down) and calls Ready when a learner has caught
// up, which makes the member rejoin as its learner.RejoinPolicy says, and
// Leave to hand its tasks over before it shuts down.
package kgolearner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/wire"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProtocolName is the group protocol name the balancer joins with. Every
// member of a group must use it.
const ProtocolName = "learner"

// Hooks are the application's side of the protocol. Every hook is optional.
// Hooks run on the client's group management goroutine, one at a time and
// in order (stops before starts), so they should hand long work to a
// goroutine of their own. A hook may call the Balancer's methods.
type Hooks struct {
	// StartActive starts processing a task: records of its partitions
	// arrive from the client's polls once Kafka has assigned them.
	StartActive func(task string)
	// StopActive stops processing a task and commits its progress. The
	// task's local state stays: the member may get the task back, for
	// example when it gave the task up at a join for a learner that was
	// not ready yet.
	StopActive func(task string)
	// StartLearning starts replaying a task's state beside its active
	// owner. Call Balancer.Ready once the replay has caught up.
	StartLearning func(task string)
	// StopLearning stops replaying a task. When the task also starts as
	// active, this is a promotion and the replayed state carries on.
	StopLearning func(task string)
	// StartStandby and StopStandby start and stop a standby replica.
	StartStandby, StopStandby func(task string)
	// Shutdown says that the member, after Leave, has handed all its
	// tasks over or reached its deadline: the application should close the
	// client. It runs on its own goroutine, so it may call kgo.Client.Close.
	Shutdown func()
	// Rebalanced, on the leader only, reports each rebalance it computed.
	Rebalanced func(Round)
}

// Round is one rebalance as the group's leader computed it.
type Round struct {
	// Members is what every member reported, as Assign saw it: IDs are the
	// coordinator's member IDs escaped by LearnerID, Assigned holds the
	// tasks of the partitions the member owns (less those it gave up at
	// this join and stale claims), and a task listed in two roles keeps
	// only the first of assigned, revoked, learning, standby.
	Members []learner.MemberMetadata
	// Assignments is what every member was sent: Assign's result with the
	// withheld tasks moved from Assigned to Learning (stateful tasks) or
	// left out (stateless ones) for one generation.
	Assignments []learner.Assignment
	// Withheld lists, in topology order, tasks Assign moved to a member
	// while another member still owned their partitions.
	Withheld []string
	// Undecoded counts members whose status could not be decoded (another
	// topology or wire version); they count as owning the tasks of the
	// partitions they own.
	Undecoded int
}

// Config configures a Balancer.
type Config struct {
	// Subtopologies is the topology: every member of the group must use
	// the same one.
	Subtopologies []Subtopology
	// Options configure the assignor. The leader's options are the ones
	// that apply.
	Options learner.Options
	// Policy says when a member with ready learners rejoins.
	Policy learner.RejoinPolicy
	// Hooks are the application's callbacks.
	Hooks Hooks
}

// Balancer is one client's kgo.GroupBalancer for the learner protocol: the
// member's state between rebalances, and the leader's logic when the client
// leads the group. Build one per client with New, pass Opts to
// kgo.NewClient and Bind the client. A Balancer is safe for concurrent use.
type Balancer struct {
	topo     *topology
	assignor *learner.Assignor
	codec    *wire.Codec
	policy   learner.RejoinPolicy
	hooks    Hooks
	cl       atomic.Pointer[kgo.Client]

	mu            sync.Mutex
	w             *learner.Worker
	stoppedAtJoin map[string]bool // revoked at the pending join, StopActive already called
	shutdown      bool            // Hooks.Shutdown was called
	deadline      *time.Timer     // fires at the Leave deadline
}

var _ kgo.GroupBalancer = (*Balancer)(nil)

// workerID is the ID of the member's learner.Worker, and the member ID in
// every message of the wire format, which requires one. The coordinator's
// member ID identifies a member to the leader; it travels in Kafka's own
// JoinGroup fields and may change when a session expires, so the user data
// carries this short placeholder instead, and the leader ignores it.
const workerID = "self"

// New returns a Balancer for the given configuration.
func New(cfg Config) (*Balancer, error) {
	topo, err := newTopology(cfg.Subtopologies)
	if err != nil {
		return nil, err
	}
	a, err := learner.New(topo.tasks, cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w", err)
	}
	return &Balancer{
		topo:          topo,
		assignor:      a,
		codec:         wire.NewCodec(a),
		policy:        cfg.Policy,
		hooks:         cfg.Hooks,
		w:             learner.NewWorker(workerID, cfg.Policy),
		stoppedAtJoin: map[string]bool{},
	}, nil
}

// Opts returns the client options the balancer needs: the input topics to
// consume, the balancer itself and an OnPartitionsLost callback (an
// application that sets its own must call PartitionsLost from it). Add
// kgo.ConsumerGroup and the brokers.
func (b *Balancer) Opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumeTopics(b.topo.topics...),
		kgo.Balancers(b),
		kgo.OnPartitionsLost(b.PartitionsLost),
	}
}

// Bind gives the balancer the client it balances for, so that Ready and
// Leave can make it rejoin the group.
func (b *Balancer) Bind(cl *kgo.Client) { b.cl.Store(cl) }

// Tasks returns the topology's tasks, in order.
func (b *Balancer) Tasks() []learner.Task { return b.assignor.Tasks() }

// TaskOf returns the task a partition belongs to, for routing records.
func (b *Balancer) TaskOf(topic string, partition int32) (string, bool) {
	t := b.topo.taskOf(topic, partition)
	if t < 0 {
		return "", false
	}
	return b.topo.tasks[t].ID, true
}

// Partitions returns the partitions of a task (topic -> partitions).
func (b *Balancer) Partitions(task string) map[string][]int32 {
	t, ok := b.topo.index[task]
	if !ok {
		return nil
	}
	out := map[string][]int32{}
	b.topo.partitions(t, func(topic string, p int32) { out[topic] = append(out[topic], p) })
	return out
}

// Ready reports that a learner task has caught up. The member rejoins the
// group when its learner.RejoinPolicy says so, and the leader then moves
// the task to it. Ready reports whether task is one of the member's learner
// tasks; other tasks are ignored.
func (b *Balancer) Ready(task string) bool {
	b.mu.Lock()
	ok := b.w.Restored(task)
	rejoin := b.w.ShouldRejoin(time.Now())
	b.mu.Unlock()
	if rejoin {
		b.rejoin()
	}
	return ok
}

// SetLag reports the remaining changelog lag of the member's local state of
// a task (see learner.Worker.SetLag); it is sent at the next join.
func (b *Balancer) SetLag(task string, lag int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.w.SetLag(task, lag)
}

// Leave announces that the member is leaving: it rejoins so that the leader
// hands its tasks to learners on the other members, and calls
// Hooks.Shutdown once it has no active task left or, with a non-zero
// deadline, when the deadline passes (its tasks then go to their learners
// as soon as it leaves the group).
func (b *Balancer) Leave(deadline time.Time) {
	b.mu.Lock()
	b.w.Leave(deadline)
	if b.deadline != nil {
		b.deadline.Stop()
	}
	if !deadline.IsZero() {
		b.deadline = time.AfterFunc(time.Until(deadline), b.checkDeadline)
	}
	rejoin := b.w.ShouldRejoin(time.Now())
	b.mu.Unlock()
	if rejoin {
		b.rejoin()
	}
}

func (b *Balancer) checkDeadline() {
	b.mu.Lock()
	fire := !b.shutdown && b.w.ShouldShutdown(time.Now())
	b.shutdown = b.shutdown || fire
	b.mu.Unlock()
	if fire && b.hooks.Shutdown != nil {
		go b.hooks.Shutdown()
	}
}

func (b *Balancer) rejoin() {
	if cl := b.cl.Load(); cl != nil {
		cl.ForceRebalance()
	}
}

// ProtocolName implements kgo.GroupBalancer.
func (b *Balancer) ProtocolName() string { return ProtocolName }

// IsCooperative implements kgo.GroupBalancer: members keep their partitions
// across rebalances.
func (b *Balancer) IsCooperative() bool { return true }

// JoinGroupMetadata implements kgo.GroupBalancer: it joins the member's
// Worker, stops the tasks it gives up at this join (tagged learned by the
// last assignment) and encodes its status.
func (b *Balancer) JoinGroupMetadata(topics []string, owned map[string][]int32, generation int32) []byte {
	b.mu.Lock()
	m := b.w.Join()
	var stop []string
	for _, t := range m.Revoked {
		if !b.stoppedAtJoin[t] {
			b.stoppedAtJoin[t] = true
			stop = append(stop, t)
		}
	}
	b.mu.Unlock()
	// The task must have stopped before the join is sent: the leader may
	// hand it to its learner in this rebalance.
	each(b.hooks.StopActive, stop)

	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = topics
	meta.Generation = generation
	// The active tasks are the owned partitions' tasks (kgo's view, which
	// the leader must respect anyway) less Revoked, so the user data
	// leaves them out: for 100 tasks a member that saves 200 bytes a join.
	m.Assigned = nil
	// The Worker's report always encodes; if it ever did not, the leader
	// would still see the owned partitions, so the member still counts.
	meta.UserData, _ = b.codec.AppendMember(nil, m)
	for _, topic := range slices.Sorted(maps.Keys(owned)) {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = topic, owned[topic]
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	return meta.AppendTo(nil)
}

// ParseSyncAssignment implements kgo.GroupBalancer: it applies the
// leader's assignment to the Worker, runs the hooks for the changes and
// returns the partitions of the member's active tasks.
func (b *Balancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	var ka kmsg.ConsumerMemberAssignment
	if err := ka.ReadFrom(assignment); err != nil {
		return nil, fmt.Errorf("kgolearner: sync assignment: %w", err)
	}
	partitions := make(map[string][]int32, len(ka.Topics))
	for _, t := range ka.Topics {
		partitions[t.Topic] = t.Partitions
	}
	as, err := b.codec.DecodeAssignment(ka.UserData)
	if err != nil {
		// A leader with another topology or wire version: run what Kafka
		// assigned, as plain active tasks.
		as = learner.Assignment{Assigned: b.topo.tasksOf(partitions)}
	}
	as.MemberID = workerID

	b.mu.Lock()
	ch, err := b.w.Apply(as)
	clear(b.stoppedAtJoin)
	fire := ch.Shutdown && !b.shutdown
	b.shutdown = b.shutdown || fire
	rejoin := err == nil && b.w.ShouldRejoin(time.Now())
	b.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w", err)
	}

	each(b.hooks.StopActive, ch.StopActive)
	each(b.hooks.StopLearning, ch.StopLearning)
	each(b.hooks.StopStandby, ch.StopStandby)
	each(b.hooks.StartLearning, ch.StartLearning)
	each(b.hooks.StartStandby, ch.StartStandby)
	each(b.hooks.StartActive, ch.StartActive)
	if fire && b.hooks.Shutdown != nil {
		go b.hooks.Shutdown()
	}
	if rejoin {
		// Learners became ready while the join was pending; the
		// heartbeat loop picks the signal up once this session starts.
		go b.rejoin()
	}
	return partitions, nil
}

// PartitionsLost is the balancer's kgo.OnPartitionsLost callback (Opts sets
// it). The client lost its session, and with it its partitions: the member
// stops its active tasks and rejoins as a new member. Its learners and
// standbys carry on, since their local state is still good.
func (b *Balancer) PartitionsLost(context.Context, *kgo.Client, map[string][]int32) {
	b.mu.Lock()
	old := b.w.Join() // reads the state; the old Worker is dropped
	b.w = learner.NewWorker(workerID, b.policy)
	keep := learner.Assignment{MemberID: workerID, Learning: old.Learning, Standby: old.Standby}
	var stopLearning, stopStandby []string
	if _, err := b.w.Apply(keep); err != nil {
		// Cannot happen (a Worker never reports a task twice), but if it
		// did, the member would start afresh.
		b.w = learner.NewWorker(workerID, b.policy)
		stopLearning, stopStandby = old.Learning, old.Standby
	}
	for _, t := range old.Ready {
		b.w.Restored(t)
	}
	var stop []string
	for _, t := range slices.Concat(old.Assigned, old.Revoked) {
		if !b.stoppedAtJoin[t] {
			stop = append(stop, t)
		}
	}
	clear(b.stoppedAtJoin)
	b.mu.Unlock()
	each(b.hooks.StopActive, stop)
	each(b.hooks.StopLearning, stopLearning)
	each(b.hooks.StopStandby, stopStandby)
}

// MemberBalancer implements kgo.GroupBalancer: when the client leads the
// group, it decodes every member's kmsg.ConsumerMemberMetadata.
func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(leader{b}, members)
	if err != nil {
		return nil, nil, fmt.Errorf("kgolearner: %w", err)
	}
	return cb, cb.MemberTopics(), nil
}

func each(hook func(string), tasks []string) {
	if hook == nil {
		return
	}
	for _, t := range tasks {
		hook(t)
	}
}
