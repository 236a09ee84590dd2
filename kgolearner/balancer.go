// Package kgolearner runs the learner assignor in a Kafka consumer group
// driven by github.com/twmb/franz-go's kgo client.
//
// Each client gets its own Balancer, a kgo.GroupBalancer that speaks the
// "learner" protocol. At every join it reports the member's status (its
// learner.Worker's MemberMetadata, in the learner wire format) as the user
// data of a kmsg.ConsumerMemberMetadata, with the partitions it owns and its
// generation; its active tasks travel only as those owned partitions, Kafka's
// own record of who consumes what. The leader decodes every member (tasks by
// index, wire.Codec.DecodeIndexedMember), calls
// learner.Assignor.AssignIndexed and sends each member its active tasks as
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
// # Hand-over in one rebalance
//
// Kafka cannot order "the old owner stops" before "the new owner starts"
// inside one generation, so the owner stops first, before it joins. When a
// rebalance begins (kgo's OnPartitionsRevoked at the end of a session, which
// runs before the JoinGroup and outside kgo's join and sync), the member
// releases the tasks its last assignment tagged learned: it pauses their
// partitions' fetches, calls Hooks.StopActive and commits the offsets it
// polled from them. Its join then leaves their partitions out of the
// OwnedPartitions it reports, so the leader can give a task to its learner
// in this very rebalance if the learner is ready, and gives it back to the
// owner if not (the owner resumes it where it stopped, or from the group's
// committed offsets if kgo kept the partitions through a round it did not
// sync, in which another member may have run it). Progress is durable
// before anyone else can start the task: the commit completes before the
// owner's JoinGroup is sent, and the group cannot complete the rebalance
// without that JoinGroup.
//
// The leader never gives a partition to a member while another member still
// reports owning it. A task Assign moves while its owner still owns it (the
// owner could not commit, or a stateless task, which needs no learner) stays
// with its owner for one more generation, tagged learned, while the new
// owner learns it. The next rebalance moves the task, released like any
// learned task; the members start it as soon as they have applied the
// assignment: the owner when the task is stateless or its release failed,
// the receiver when it had reported the task ready, for three deferrals in
// a row at most, then once more a session timeout later (an owner that has
// not released it by then is a static member that missed the join, whose
// return or session expiry starts the rebalance, or, rarely, one whose
// SyncGroup each of those rebalances refused, which nobody else would
// rejoin for). (Not the leader: a rebalance it started right after its own
// SyncGroup could reach the owner before the owner's SyncGroup, which the
// broker would then refuse.)
//
// kgo follows a generation in which a member lost partitions with one more
// rebalance (kgo rejoins after revoking them), in which no learner that was
// not ready can be promoted. So when the leader's assignment makes a member
// lose a partition, it tags learned only the stateful tasks whose learner
// reported them ready: the others' owners keep running them through the
// follow-up's join instead of releasing them for nothing, and the
// follow-up's assignment tags them again.
//
// # The application's part
//
// The application implements Hooks, processes the records of each poll
// before the next one and calls kgo.Client.AllowRebalance after each poll's
// records (Opts sets kgo.BlockRebalanceOnPoll, so a rebalance never stops a
// task in the middle of a poll's records). It calls Ready when a learner
// has caught up, which makes the member rejoin as its learner.RejoinPolicy
// says (and Unready if the learner's state is lost again before it is
// promoted), and Leave to hand its tasks over before it shuts down.
package kgolearner

import (
	"context"
	"errors"
	"fmt"
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
//
// Hooks run from kgo's group callbacks (OnPartitionsRevoked,
// OnPartitionsAssigned, OnPartitionsLost), never inside kgo's join and
// sync: a hook may block, commit and call the Balancer's methods. They run
// one at a time, stops before starts. With kgo.BlockRebalanceOnPoll (set by
// Opts) none of them runs while the application holds polled records, that
// is between a PollFetches and its AllowRebalance. Two hooks are apart:
// Shutdown runs on its own goroutine, and Rebalanced inside the leader's
// join, where the application may be processing a poll's records (kgo lets
// it poll during a rebalance once the session's revoke has returned).
//
// Long work belongs on the application's own goroutines, with one
// exception: StopActive must finish the task's durable work before it
// returns. A release runs after the member's session has ended and before
// it joins. kgo keeps heartbeating until OnPartitionsRevoked returns, so the
// session does not expire, but a rebalance in progress waits for the
// member's JoinGroup only up to the rebalance timeout (kgo's default: 60
// s): the coordinator drops a member whose releases (StopActive and the
// commit) outlast it.
type Hooks struct {
	// StartActive starts processing a task: records of its partitions
	// arrive from the client's polls, from the offset the task's last
	// owner committed.
	StartActive func(task string)
	// StopActive stops processing a task and makes durable whatever the
	// application keeps besides Kafka's offsets (for example by flushing
	// the task's changelog writes). When it returns nil, the balancer
	// commits the offsets polled from the task's partitions, synchronously;
	// the next owner starts from there. A release (a task its last
	// assignment tagged learned, stopped when a rebalance begins) commits
	// before the member joins the rebalance; if StopActive returns an
	// error, or the commit fails, the member keeps the task: StartActive
	// runs again and the member reports it still owned, so nobody else
	// starts it in this rebalance. Except when the coordinator refused the
	// commit because it no longer has the member (UNKNOWN_MEMBER_ID,
	// FENCED_INSTANCE_ID: the release outlasted the rebalance timeout,
	// say): the group may already run the task elsewhere, so it stays
	// stopped, and the next owner starts from the last commit. A task whose
	// partitions the assignment took away, and every task of a closing
	// client, stays stopped whatever StopActive returns (its partitions are
	// no longer the member's): after an error, or a failed commit, the next
	// owner starts from the last commit.
	//
	// The task's local state stays: the member may get the task back, for
	// example when it released the task for a learner that was not ready
	// yet.
	StopActive func(task string) error
	// LoseActive stops a task the member lost: its session ended (or its
	// membership changed) before it could commit, and another member may
	// already be running the task from the last commit. Nothing is
	// committed; the application should discard uncommitted work rather
	// than flush it. If LoseActive is nil, StopActive runs instead and its
	// error is ignored.
	LoseActive func(task string)
	// StartLearning starts replaying a stateful task's state beside its
	// active owner. Call Balancer.Ready once the replay has caught up.
	// (Stateless tasks move without learners: no hook runs for them.)
	StartLearning func(task string)
	// StopLearning stops replaying a task. When the task also starts as
	// active, this is a promotion and the replayed state carries on.
	StopLearning func(task string)
	// StartStandby and StopStandby start and stop a standby replica.
	StartStandby, StopStandby func(task string)
	// Shutdown says that the member, after Leave, has handed all its
	// tasks over or reached its deadline: the application should close the
	// client, which stops and commits the tasks it still runs. It runs on
	// its own goroutine, so it may call kgo.Client.Close.
	Shutdown func()
	// Rebalanced, on the leader only, reports each rebalance it computed.
	// It runs inside the leader's join; it must not block. The Round is
	// built only for it (the leader works on task indices): its lists are
	// the hook's own.
	Rebalanced func(Round)
}

// Round is one rebalance as the group's leader computed it.
type Round struct {
	// Members is what every member reported, as Assign saw it: IDs are the
	// coordinator's member IDs escaped by LearnerID, Assigned holds the
	// tasks of the partitions the member owns (less those it released at
	// this join and stale claims), a task listed in two roles keeps
	// only the first of assigned, revoked, learning, standby, and the
	// tasks the topology lacks that a member holds are in its Revoked (the
	// leader assigns by task index, where these have none: see
	// learner.IndexedMember), and a report older than the newest
	// generation among the members has no Ready and no lag within
	// AcceptableLag of a learner task (see docs/kafka.md).
	Members []learner.MemberMetadata
	// Planned is Assign's result for Members.
	Planned []learner.Assignment
	// Assignments is what every member was sent: Planned with the deferred
	// tasks kept by their owners (tagged learned) and learned by their
	// receivers.
	Assignments []learner.Assignment
	// Deferred lists, in topology order, tasks Assign moved to a member
	// while another member still owned their partitions. They move at the
	// next rebalance.
	Deferred []string
	// Withheld lists the deferred tasks that nobody runs in this
	// generation: no member could keep them (only stale claims, of a
	// member that missed rebalances, or claims of some of their partitions
	// by several members held them), and their claimers are told to revoke
	// them.
	Withheld []string
	// Undecoded counts members whose status could not be decoded (another
	// topology or wire version); they count as owning the tasks of the
	// partitions they own.
	Undecoded int
	// Err, when not nil, says why the leader could not compute this round
	// for every task and wraps ErrTopicsMismatch: a topic of the topology
	// is missing from the cluster's metadata or has another number of
	// partitions (added to an input topic, say; Kafka Streams stops on it
	// too). The tasks of the subtopologies whose topics differ then stay
	// with the members that report them, but ready learners of theirs
	// stop, and those nobody reports stay unassigned (in Planned too,
	// which for them follows none of Assign's rules); the other tasks
	// follow Assign's rules. The client's logger gets the error at each
	// rebalance until the topics or the topology are fixed.
	Err error
	// FollowUp reports that kgo will follow this round with another
	// rebalance, since a member loses a partition it owned or released at
	// this join. Assignments then tag learned only the stateful tasks
	// whose learner reported them ready (and the stateless ones): the
	// others' owners keep them through the follow-up.
	FollowUp bool
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
	// CommitTimeout is the deadline of each commit of a stopping task's
	// offsets (and of the offset fetch before a task resumes from the
	// group's committed offsets). Zero means 10 seconds; keep it well
	// under the rebalance timeout (see Hooks), since a release's commit
	// runs between the end of a session and the member's JoinGroup; Bind
	// warns when it is not under it.
	//
	// It bounds the commit's own OffsetCommit request, not its wait for a
	// commit already in flight: kgo sends one commit at a time and waits
	// for an earlier one, whatever the context says (kgo's autocommit, on
	// the group's context, or a commit the application started;
	// pkg/kgo/consumer_group.go lines 3529 and 3777 in franz-go v1.22.3).
	// Only kgo's own timeouts bound that earlier commit (kgo.RetryTimeout,
	// 30 s for a commit by default). So a commit lasts the longer of
	// CommitTimeout and that wait; one whose deadline passed meanwhile
	// fails, and a release that fails starts its task again. The
	// earlier commit holds back the member's JoinGroup in any case (kgo
	// sends no JoinGroup while a commit is in flight).
	CommitTimeout time.Duration
}

// Balancer is one client's kgo.GroupBalancer for the learner protocol: the
// member's state between rebalances, and the leader's logic when the client
// leads the group. Build one per client with New (the zero Balancer has no
// topology, and using it panics), pass Opts to kgo.NewClient and Bind the
// client. A Balancer is safe for concurrent use.
// Once it has led a rebalance it keeps the leader's working memory for the
// next, about 25 bytes a task.
type Balancer struct {
	topo          *topology
	assignor      *learner.Assignor
	codec         *wire.Codec
	untagged      []byte // the user data of an assignment without tags (see assignmentUserData)
	policy        learner.RejoinPolicy
	hooks         Hooks
	commitTimeout time.Duration
	cl            atomic.Pointer[kgo.Client]
	spare         atomic.Pointer[scratch] // the last rebalance's, for the next (see scratch)

	mu sync.Mutex
	w  *learner.Worker
	// running holds the active tasks whose StartActive ran and whose
	// StopActive did not; the partitions of the others are paused.
	running map[string]bool
	// synced is the last sync's assignment, run when the session starts
	// (PartitionsAssigned); nil when none is pending.
	synced *learner.Assignment
	// changes are synced's learner and standby changes.
	changes learner.Changes
	// memberID is the coordinator's member ID the running tasks were
	// started under: a task owned under an older ID was lost.
	memberID string
	// sessionStart is when the last session started (see rejoin).
	sessionStart time.Time
	// joins counts the member's joins (session ends and JoinGroups): a
	// rejoin delayed past one is moot (see rejoin).
	joins uint64
	// unreleased holds the learned tasks whose release failed at the
	// end of the last session: the member still runs and reports them.
	unreleased map[string]bool
	// reportedReady holds the learner tasks the last join reported ready.
	reportedReady map[string]bool
	// chased counts, by learner task, the sessions in a row whose
	// assignment gave back to learn a task the join had reported ready
	// (see chase).
	chased        map[string]int
	shutdown      bool        // Hooks.Shutdown was called
	deadline      *time.Timer // fires at the Leave deadline
	leaveDeadline time.Time   // Leave's, for a Worker that replaces a lost one
}

var _ kgo.GroupBalancer = (*Balancer)(nil)

// workerID is the ID of the member's learner.Worker, and the member ID in
// every message of the wire format, which requires one. The coordinator's
// member ID identifies a member to the leader; it travels in Kafka's own
// JoinGroup fields and may change when a session expires, so the user data
// carries this short placeholder instead, and the leader ignores it.
const workerID = "self"

// defaultCommitTimeout is Config.CommitTimeout's zero value.
const defaultCommitTimeout = 10 * time.Second

// ErrInvalidConfig is wrapped by every error of New: a Config it cannot
// use. Errors learner.New returns, and a topology of more than
// learner.MaxTasks tasks or partitions, also wrap the learner package's
// sentinel (learner.ErrInvalidOptions, learner.ErrInvalidTopology).
var ErrInvalidConfig = errors.New("invalid config")

// New returns a Balancer for the given configuration. Its errors wrap
// ErrInvalidConfig.
func New(cfg Config) (*Balancer, error) {
	topo, err := newTopology(cfg.Subtopologies)
	if err != nil {
		return nil, err
	}
	a, err := learner.New(topo.tasks, cfg.Options)
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w: %w", ErrInvalidConfig, err)
	}
	topo.index = a.TaskIndex
	if cfg.CommitTimeout < 0 {
		return nil, fmt.Errorf("kgolearner: commit timeout %v is negative: %w", cfg.CommitTimeout, ErrInvalidConfig)
	}
	if cfg.CommitTimeout == 0 {
		cfg.CommitTimeout = defaultCommitTimeout
	}
	codec := wire.NewCodec(a)
	untagged, err := codec.AppendAssignment(nil, learner.Assignment{MemberID: workerID})
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w", err) // cannot happen: workerID is a valid ID
	}
	return &Balancer{
		topo:          topo,
		assignor:      a,
		codec:         codec,
		untagged:      untagged,
		policy:        cfg.Policy,
		hooks:         cfg.Hooks,
		commitTimeout: cfg.CommitTimeout,
		w:             learner.NewWorker(workerID, cfg.Policy),
		running:       map[string]bool{},
		unreleased:    map[string]bool{},
		reportedReady: map[string]bool{},
		chased:        map[string]int{},
	}, nil
}

// Opts returns the client options the balancer needs: the input topics to
// consume, the balancer itself, kgo.BlockRebalanceOnPoll and the three
// group callbacks that run the hooks. An application that sets its own
// OnPartitionsAssigned, OnPartitionsRevoked or OnPartitionsLost must call
// the Balancer's method of the same name from it. Add kgo.ConsumerGroup and
// the brokers.
func (b *Balancer) Opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumeTopics(b.topo.topics...),
		kgo.Balancers(b),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(b.PartitionsAssigned),
		kgo.OnPartitionsRevoked(b.PartitionsRevoked),
		kgo.OnPartitionsLost(b.PartitionsLost),
	}
}

// Bind gives the balancer the client it balances for, so that Ready and
// Leave can make it rejoin the group. It warns on the client's logger
// (kgo.WithLogger) when Config.CommitTimeout is not under the client's
// rebalance timeout (kgo.RebalanceTimeout): one slow release commit could
// then outlast a rebalance, and the coordinator would drop the member. No
// warning does not mean a release fits the rebalance timeout: StopActive
// is not bounded, and neither is a release commit's wait for a commit
// already in flight, such as kgo's autocommit (see Config.CommitTimeout).
//
// kgo may join the group before kgo.NewClient returns, so the first
// session can start before Bind; its PartitionsAssigned binds the client
// it is called with if none is bound yet, so that a rejoin that session
// asks for (a restarted static member's, say) is not lost. A Ready or
// Leave before both does not rejoin; the member's first join reports it.
func (b *Balancer) Bind(cl *kgo.Client) {
	if b.cl.Swap(cl) != cl {
		b.checkCommitTimeout(cl)
	}
}

// adopt binds cl, the client a group callback runs for, unless a client is
// bound already (see Bind).
func (b *Balancer) adopt(cl *kgo.Client) {
	if cl != nil && b.cl.CompareAndSwap(nil, cl) {
		b.checkCommitTimeout(cl)
	}
}

// checkCommitTimeout warns when Config.CommitTimeout is not under cl's
// rebalance timeout (see Bind).
func (b *Balancer) checkCommitTimeout(cl *kgo.Client) {
	// A necessary condition only: the commit's wait for one already in
	// flight is not counted, since kgo does not bound it by our deadline.
	if rt, ok := cl.OptValue(kgo.RebalanceTimeout).(time.Duration); ok && b.commitTimeout >= rt {
		b.log(kgo.LogLevelWarn, "learner: the commit timeout is not under the rebalance timeout; a slow release commit may get the member dropped from the group",
			"commit_timeout", b.commitTimeout, "rebalance_timeout", rt)
	}
}

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
	t := b.topo.index(task)
	if t < 0 {
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
		b.rejoin(false)
	}
	return ok
}

// Unready withdraws Ready: the learner task's local state fell behind again
// (the application lost or reset it), so the member stops reporting it
// ready until Ready is called again (see learner.Worker.Unready). It
// reports whether task is one of the member's learner tasks. A join already
// sent may have reported it ready: the assignment answering it may still
// start the task active here, and the application restores it first.
func (b *Balancer) Unready(task string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.reportedReady, task) // not a deferred move to chase with a rejoin
	return b.w.Unready(task)
}

// SetLag reports the remaining changelog lag of the member's local state of
// a task (see learner.Worker.SetLag); it is sent at the next join. A
// malformed task ID is an error wrapping learner.ErrInvalidMember: the
// member's report could not be encoded with it.
func (b *Balancer) SetLag(task string, lag int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.w.SetLag(task, lag); err != nil {
		return fmt.Errorf("kgolearner: %w", err)
	}
	return nil
}

// Leave announces that the member is leaving: it rejoins so that the leader
// hands its tasks to learners on the other members, and calls
// Hooks.Shutdown once it has no active task left or, with a non-zero
// deadline, when the deadline passes (its tasks then go to their learners
// as soon as it leaves the group).
func (b *Balancer) Leave(deadline time.Time) {
	b.mu.Lock()
	b.w.Leave(deadline)
	b.leaveDeadline = deadline
	if b.deadline != nil {
		b.deadline.Stop()
	}
	if !deadline.IsZero() {
		b.deadline = time.AfterFunc(time.Until(deadline), b.checkDeadline)
	}
	rejoin := b.w.ShouldRejoin(time.Now())
	b.mu.Unlock()
	if rejoin {
		b.rejoin(false)
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

// rejoin starts a rebalance, but no sooner than one heartbeat interval
// after the member's session began: a member that rejoins the moment it has
// its own assignment can start the next rebalance before a slower member's
// SyncGroup reaches the broker, which then refuses it, and that member
// joins again without ever seeing its assignment (a learned tag, say).
//
// A delayed rejoin is dropped if the member joins meanwhile (kgo's
// follow-up, say): that join reports its ready learners and its leaving,
// releases its learned tasks, and the session it leads to decides anew
// whether to rejoin (PartitionsAssigned). Forced anyway, it would start one
// more rebalance that changes nothing.
//
// With later, it waits one session timeout instead (see chase).
func (b *Balancer) rejoin(later bool) {
	cl := b.cl.Load()
	if cl == nil {
		return
	}
	opt, settle := kgo.HeartbeatInterval, 3*time.Second // kgo's defaults
	if later {
		opt, settle = kgo.SessionTimeout, 45*time.Second
	}
	if d, ok := cl.OptValue(opt).(time.Duration); ok {
		settle = d
	}
	b.mu.Lock()
	wait, joins := time.Until(b.sessionStart.Add(settle)), b.joins
	b.mu.Unlock()
	if wait <= 0 {
		cl.ForceRebalance()
		return
	}
	time.AfterFunc(wait, func() {
		b.mu.Lock()
		moot := b.joins != joins
		b.mu.Unlock()
		if !moot {
			cl.ForceRebalance()
		}
	})
}

// logError logs err at error level on the bound client's logger
// (kgo.WithLogger): the leader's plan runs inside kgo's join, which leaves it
// no other way to the application but the Rebalanced hook.
func (b *Balancer) logError(err error) {
	b.log(kgo.LogLevelError, "learner leader: the tasks of the subtopologies whose topics differ stay where they are", "err", err)
}

// log logs msg and its key-value pairs at level on the bound client's
// logger, if it logs that level.
func (b *Balancer) log(level kgo.LogLevel, msg string, keyvals ...any) {
	cl := b.cl.Load()
	if cl == nil {
		return
	}
	if l, ok := cl.OptValue(kgo.WithLogger).(kgo.Logger); ok && l != nil && l.Level() >= level {
		l.Log(level, msg, keyvals...)
	}
}

// ProtocolName implements kgo.GroupBalancer.
func (b *Balancer) ProtocolName() string { return ProtocolName }

// IsCooperative implements kgo.GroupBalancer: members keep their partitions
// across rebalances.
func (b *Balancer) IsCooperative() bool { return true }

// MemberBalancer implements kgo.GroupBalancer: when the client leads the
// group, it reads every member's kmsg.ConsumerMemberMetadata.
func (b *Balancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	j, err := b.readJoin(members)
	if err != nil {
		return nil, nil, err
	}
	return j, j.topics, nil
}

// commitContext sets the deadline of one commit of stopping tasks'
// offsets, or of one offset fetch. kgo's CommitOffsetsSync does not stop
// at it while an earlier commit is in flight (see Config.CommitTimeout).
func (b *Balancer) commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.commitTimeout)
}
