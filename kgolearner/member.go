package kgolearner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the member side: what a member reports at join, what it does
// with its assignment, and the hooks, run from kgo's group callbacks.
//
// kgo's order for a cooperative member (pkg/kgo/consumer_group.go): a
// session ends with OnPartitionsRevoked(nil) once the heartbeat sees a
// rebalance (or ForceRebalance), outside the join-and-sync lock that blocks
// commits; then joinAndSync calls JoinGroupMetadata and, after the
// SyncGroup, ParseSyncAssignment, both under that lock; then the new session
// calls OnPartitionsRevoked(lost) for partitions the assignment took away,
// then OnPartitionsAssigned(added), while heartbeating. Closing the client
// calls OnPartitionsRevoked with everything it owns; a fatal group error
// calls OnPartitionsLost.

// JoinGroupMetadata implements kgo.GroupBalancer: it encodes the member's
// status. The tasks released at the end of the last session (Revoked) leave
// the owned partitions, so the leader may hand them to their learners in
// this rebalance; learned tasks still running (the release failed) stay.
// It calls no hook: kgo holds its commit lock here.
func (b *Balancer) JoinGroupMetadata(topics []string, owned map[string][]int32, generation int32) []byte {
	b.mu.Lock()
	b.joins++
	m := b.w.Join() // idempotent when the session end already called it
	clear(b.reportedReady)
	for _, t := range m.Ready {
		b.reportedReady[t] = true
	}
	var released []string
	for _, t := range m.Revoked {
		if !b.running[t] {
			released = append(released, t)
		}
	}
	b.mu.Unlock()
	m.Revoked = released
	// The active tasks are the owned partitions' tasks (kgo's view, which
	// the leader must respect anyway), so the user data leaves them out:
	// for 100 tasks a member saves 200 bytes a join.
	m.Assigned = nil

	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = topics
	meta.Generation = generation
	// The Worker's report always encodes; if it ever did not, the leader
	// would still see the owned partitions, so the member still counts.
	meta.UserData, _ = b.codec.AppendMember(nil, m)
	gone := b.topo.partitionSet(released)
	for _, topic := range slices.Sorted(maps.Keys(owned)) {
		ps := slices.DeleteFunc(slices.Clone(owned[topic]), func(p int32) bool { return gone[topicPartition{topic, p}] })
		if len(ps) == 0 {
			continue
		}
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = topic, ps
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	return meta.AppendTo(nil)
}

// ParseSyncAssignment implements kgo.GroupBalancer: it applies the
// leader's assignment to the Worker and returns the partitions of the
// member's active tasks. The hooks run once the session starts
// (PartitionsAssigned): kgo holds its commit lock here.
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
	if err != nil || b.unknownTag(as) {
		// A leader with another topology or wire version: run what Kafka
		// assigned, as plain active tasks. Likewise for a leader with this
		// topology that tags a task it lacks (the wire format carries such
		// a task by name, and no leader of this package tags one): it is
		// buggy or hostile, and its other tags cannot be trusted either.
		as = learner.Assignment{}
	}
	// Active tasks travel as partitions (see plan).
	as.Assigned = b.topo.tasksOf(partitions)
	as.MemberID = workerID

	b.mu.Lock()
	defer b.mu.Unlock()
	ch, err := b.w.Apply(as)
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w", err)
	}
	// The session starts now for rejoin's wait too: a Ready or Leave
	// before PartitionsAssigned would otherwise measure it from the last
	// session and rejoin at once, before a slower member's SyncGroup.
	b.synced, b.changes, b.sessionStart = &as, ch, time.Now()
	return partitions, nil
}

// unknownTag reports whether as, decoded from a leader with the member's
// topology, tags a task that topology lacks: learning, learned or standby.
// The member would run a learner or standby hook for a task it has no
// partitions or changelog for. A revoked task the topology lacks is not
// one: the leader sends back the stale tasks a member reported
// (learner.IndexedAssignment.Stale), and the member ignores Revoked.
// Assigned is rebuilt from the partitions.
func (b *Balancer) unknownTag(as learner.Assignment) bool {
	unknown := func(t string) bool { return b.topo.index(t) < 0 }
	return slices.ContainsFunc(as.Learning, unknown) || slices.ContainsFunc(as.Learned, unknown) ||
		slices.ContainsFunc(as.Standby, unknown)
}

// PartitionsRevoked is the balancer's kgo.OnPartitionsRevoked callback (Opts
// sets it). With no partitions, a session ends because a rebalance begins:
// the member releases its learned tasks (stops them and commits their
// offsets) before it joins. With partitions, the member lost them in a
// rebalance or is leaving the group: it stops and commits the tasks they
// belong to.
func (b *Balancer) PartitionsRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	if len(revoked) == 0 {
		b.releaseLearned(ctx, cl)
		return
	}
	b.mu.Lock()
	var stop []string
	for t := range b.running {
		if b.topo.touches(t, revoked) {
			stop = append(stop, t)
		}
	}
	lost := b.memberID != "" && memberIDOf(cl) != b.memberID
	b.mu.Unlock()
	b.sort(stop)
	if lost {
		// The member rejoined under a new ID (its session expired during
		// the rebalance): what it ran may already run elsewhere.
		b.lose(cl, stop)
		return
	}
	b.stop(ctx, cl, stop)
}

// releaseLearned stops the tasks the last assignment tagged learned and
// commits their offsets; those that fail to stop or commit start again and
// stay owned.
func (b *Balancer) releaseLearned(ctx context.Context, cl *kgo.Client) {
	b.mu.Lock()
	b.joins++
	m := b.w.Join() // learned tasks move to Revoked
	var release []string
	for _, t := range m.Revoked {
		if b.running[t] {
			release = append(release, t)
		}
	}
	b.mu.Unlock()
	// A task that failed starts again: the join reports it owned (it
	// runs), so nobody else starts it in this rebalance. Not when the
	// coordinator refused the commit because it no longer has the member
	// (its session or the rebalance timeout ran out while it released):
	// the group may already have given the task to another member, which
	// runs it from the last commit, and the member is about to learn it
	// lost everything else too (OnPartitionsLost, or a rejoin under a new
	// member ID). Its join reports the task released, as after a commit.
	failed, gone := b.stop(ctx, cl, release)
	if gone {
		return
	}
	b.mu.Lock()
	for _, t := range failed {
		b.unreleased[t] = true
	}
	b.mu.Unlock()
	b.start(cl, failed)
}

// PartitionsAssigned is the balancer's kgo.OnPartitionsAssigned callback
// (Opts sets it). The session of the last sync starts: the member runs its
// assignment's hooks, stops before starts.
func (b *Balancer) PartitionsAssigned(ctx context.Context, cl *kgo.Client, added map[string][]int32) {
	b.adopt(cl) // before Bind, the session's rejoin needs the client
	b.mu.Lock()
	var reset []string
	if b.synced != nil && b.memberID != "" && memberIDOf(cl) != b.memberID {
		// The member rejoined under a new ID (its JoinGroup came after
		// the coordinator dropped it), and kept some tasks it ran under
		// the old one: PartitionsRevoked lost only those it no longer
		// has. In between the group may have run them elsewhere and
		// committed further, while kgo, which never saw them go, kept
		// their cursors where the member was: they are lost too, and
		// start again below from the group's committed offsets. Only
		// those whose cursors moved there: one without a commit, or
		// whose fetch failed, runs on from its cursor, since a lost
		// instance's work is dropped and nothing would redo it.
		stale := slices.Collect(maps.Keys(b.running))
		b.mu.Unlock()
		b.sort(stale)
		reset = b.seekCommitted(ctx, cl, stale)
		b.lose(cl, reset)
		b.mu.Lock()
	}
	as, ch := b.synced, b.changes
	b.synced = nil
	if as == nil {
		b.mu.Unlock()
		return
	}
	// A static member whose join reported nothing it runs (a new client,
	// or one that lost its session) may get active tasks computed for its
	// previous incarnation, without a rebalance (KIP-345). The broker then
	// keeps that join's report, which claims none of them, until the
	// member's next JoinGroup; should the member miss a rebalance's join
	// meanwhile, the leader reads it and gives the tasks to others while
	// the member runs them (TestStaticRestartThenMissesJoin). So it
	// rejoins once, for a report that claims them. It cannot tell such an
	// assignment from one computed for its own join (a static group's
	// first rebalance, say), so those cost a rebalance too, which moves
	// nothing.
	restarted := b.memberID == "" && len(as.Assigned) > 0 && static(cl)
	b.memberID, b.sessionStart = memberIDOf(cl), time.Now()
	var stop, start, kept []string
	for t := range b.running {
		if !slices.Contains(as.Assigned, t) {
			stop = append(stop, t)
		}
	}
	addedSet := map[topicPartition]bool{}
	for topic, ps := range added {
		for _, p := range ps {
			addedSet[topicPartition{topic, p}] = true
		}
	}
	runs := make(map[string]bool, len(as.Assigned))
	for _, t := range as.Assigned {
		runs[t] = true
		if !b.running[t] {
			start = append(start, t)
			if !b.topo.allPartitions(b.topo.index(t), addedSet) && !slices.Contains(reset, t) {
				kept = append(kept, t)
			}
		}
	}
	// A leader of another topology may assign some partitions of a task
	// only (its topology split the task's topics between tasks), or
	// partitions of no task. The member cannot run them, and kgo would
	// fetch them, once this callback returns, for polls that deliver
	// records of no running task, which the application can only drop and
	// kgo's autocommit then commits past. They stay paused, and stay in
	// kgo's assignment: the leader must see who owns them.
	idle := map[string][]int32{}
	for tp := range addedSet {
		if t := b.topo.taskOf(tp.topic, tp.partition); t < 0 || !runs[b.topo.tasks[t].ID] {
			idle[tp.topic] = append(idle[tp.topic], tp.partition)
		}
	}
	fire := ch.Shutdown && !b.shutdown
	b.shutdown = b.shutdown || fire
	// A learned tag on a stateless task or on a task the member failed to
	// release, or a learner it reported ready and did not get, is a move
	// the leader deferred: it is due now.
	chase, chaseLater := b.chase(as.Learning) // counts every session: never skipped by ||
	rejoin := chase || restarted || b.w.ShouldRejoin(time.Now()) || slices.ContainsFunc(as.Learned, func(t string) bool {
		return b.unreleased[t] || len(b.stateful([]string{t})) == 0
	})
	clear(b.unreleased)
	clear(b.reportedReady)
	b.mu.Unlock()

	if cl != nil && len(idle) > 0 {
		cl.PauseFetchPartitions(idle)
	}
	// Normally empty: a task the assignment takes away lost its
	// partitions, and PartitionsRevoked stopped it.
	b.sort(stop)
	b.stop(ctx, cl, stop)
	each(b.hooks.StopLearning, b.stateful(ch.StopLearning))
	each(b.hooks.StopStandby, ch.StopStandby)
	each(b.hooks.StartLearning, b.stateful(ch.StartLearning))
	each(b.hooks.StartStandby, ch.StartStandby)
	b.sort(kept)
	b.seekCommitted(ctx, cl, kept)
	b.start(cl, start)
	if fire && b.hooks.Shutdown != nil {
		go b.hooks.Shutdown()
	}
	if rejoin {
		// Learners became ready while the join was pending, the leader
		// deferred a move to the next rebalance, or the broker keeps a
		// report that claims none of the member's tasks.
		go b.rejoin(false)
	} else if chaseLater {
		go b.rejoin(true)
	}
}

// maxChases is how many sessions in a row a member rejoins for a learner
// task it reported ready and got back to learn. A deferred move needs one,
// and one more per SyncGroup of the owner that a rebalance refused; so does
// a join that followed one the member missed, whose readiness the leader
// ignores (dropReadiness).
const maxChases = 3

// chase reports whether the member should rejoin for a learner task that
// its join reported ready and the assignment gives back to learn: a move
// the leader deferred, due at the next rebalance, which nothing else may
// start. It does so now for up to maxChases sessions in a row per task,
// and later, a session timeout on, in the session after those (b.mu held).
//
// The cap is for an owner that is away: a static member that missed the
// join, which a real broker keeps in the group with the report of its last
// join until it returns or its session expires. The leader keeps the task
// on it at every rebalance, and a rejoin after each would keep the group
// rebalancing, each rebalance waiting the rebalance timeout for the absent
// member while kgo holds every member's commits (TestStaticMemberMissesJoin:
// 11 to 13 generations in 3.5 s on kfake); its return or expiry starts the
// rebalance that moves the task, which the later rejoin then finds done
// (rejoin drops it). An owner whose release failed rejoins by itself. The
// later rejoin is for an owner present whose SyncGroup the rebalance of
// each chase refused (it came more than a heartbeat interval late, see
// rejoin): it has the learned tag only from the session after, which
// nobody else ends (TestDeferredMoveOwnerSyncRefused; without it the group
// stayed stable with the task on its owner).
func (b *Balancer) chase(learning []string) (now, later bool) {
	deferred := func(t string) bool { return b.reportedReady[t] && slices.Contains(learning, t) }
	maps.DeleteFunc(b.chased, func(t string, _ int) bool { return !deferred(t) })
	for _, t := range learning {
		if deferred(t) {
			b.chased[t]++
			now = now || b.chased[t] <= maxChases
			later = later || b.chased[t] == maxChases+1
		}
	}
	return now, later
}

// PartitionsLost is the balancer's kgo.OnPartitionsLost callback (Opts sets
// it). The client lost its session, and with it its partitions: the member
// stops its active tasks without committing (LoseActive) and rejoins as a
// new member. Its learners and standbys carry on, since their local state
// is still good.
func (b *Balancer) PartitionsLost(_ context.Context, cl *kgo.Client, _ map[string][]int32) {
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
	for _, l := range old.Lag {
		b.w.SetLag(l.Task, l.Lag)
	}
	if old.Leaving {
		b.w.Leave(b.leaveDeadline) // the deadline's timer runs on
	}
	lose := slices.Collect(maps.Keys(b.running))
	b.synced, b.memberID = nil, ""
	b.mu.Unlock()
	b.sort(lose)
	b.lose(cl, lose)
	each(b.hooks.StopLearning, b.stateful(stopLearning))
	each(b.hooks.StopStandby, stopStandby)
}

// stop stops running tasks and commits their offsets, and returns those
// that failed (StopActive returned an error or the commit failed), and
// whether the coordinator refused the commit because it no longer has the
// member (see commit). Their partitions are paused first, so no later poll
// returns their records; they stay paused until the task starts again.
func (b *Balancer) stop(ctx context.Context, cl *kgo.Client, tasks []string) (failed []string, gone bool) {
	if len(tasks) == 0 {
		return nil, false
	}
	b.pause(cl, tasks)
	var commit []string
	for _, t := range tasks {
		b.setRunning(t, false)
		if b.hooks.StopActive == nil {
			commit = append(commit, t)
			continue
		}
		if err := b.hooks.StopActive(t); err != nil {
			failed = append(failed, t)
			continue
		}
		commit = append(commit, t)
	}
	notCommitted, gone := b.commit(ctx, cl, commit)
	return append(failed, notCommitted...), gone
}

// lose stops running tasks without committing.
func (b *Balancer) lose(cl *kgo.Client, tasks []string) {
	b.pause(cl, tasks)
	for _, t := range tasks {
		b.setRunning(t, false)
		switch {
		case b.hooks.LoseActive != nil:
			b.hooks.LoseActive(t)
		case b.hooks.StopActive != nil:
			_ = b.hooks.StopActive(t) // documented: ignored, nothing is committed
		}
	}
}

// seekCommitted sets the fetch offsets of the tasks' partitions to the
// group's committed offsets. kgo kept these partitions assigned while the
// member had stopped their tasks (it released them at a join whose
// SyncGroup the broker refused, so kgo never saw them go), and fetches
// nothing for them: their cursors stand where the member stopped, while
// another member may have run the tasks since and committed further. Where
// the group has no committed offset, or the fetch fails within the commit
// timeout, the cursor stays: records after it run again, none is skipped.
// It returns the tasks all of whose cursors it set.
func (b *Balancer) seekCommitted(ctx context.Context, cl *kgo.Client, tasks []string) (sought []string) {
	if cl == nil || len(tasks) == 0 {
		return nil
	}
	group, _ := cl.OptValue(kgo.ConsumerGroup).(string)
	parts := b.topo.partitionMap(tasks)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	for _, topic := range slices.Sorted(maps.Keys(parts)) {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, parts[topic]
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := b.commitContext(ctx)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || kerr.ErrorForCode(resp.ErrorCode) != nil {
		return
	}
	seek := map[string]map[int32]kgo.EpochOffset{}
	set := map[topicPartition]bool{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if kerr.ErrorForCode(rp.ErrorCode) != nil || rp.Offset < 0 {
				continue
			}
			if seek[rt.Topic] == nil {
				seek[rt.Topic] = map[int32]kgo.EpochOffset{}
			}
			seek[rt.Topic][rp.Partition] = kgo.EpochOffset{Epoch: rp.LeaderEpoch, Offset: rp.Offset}
			set[topicPartition{rt.Topic, rp.Partition}] = true
		}
	}
	cl.SetOffsets(seek)
	for _, t := range tasks {
		if b.topo.allPartitions(b.topo.index(t), set) {
			sought = append(sought, t)
		}
	}
	return sought
}

// start starts tasks and resumes their partitions' fetches.
func (b *Balancer) start(cl *kgo.Client, tasks []string) {
	if len(tasks) == 0 {
		return
	}
	for _, t := range tasks {
		b.setRunning(t, true)
		if b.hooks.StartActive != nil {
			b.hooks.StartActive(t)
		}
	}
	if cl != nil {
		cl.ResumeFetchPartitions(b.topo.partitionMap(tasks))
	}
}

func (b *Balancer) pause(cl *kgo.Client, tasks []string) {
	if cl != nil && len(tasks) > 0 {
		cl.PauseFetchPartitions(b.topo.partitionMap(tasks))
	}
}

func (b *Balancer) setRunning(task string, running bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if running {
		b.running[task] = true
	} else {
		delete(b.running, task)
	}
}

// commit synchronously commits the offsets polled from the tasks'
// partitions and returns the tasks whose commit failed. Partitions with
// nothing polled since their last commit need none. gone reports that the
// coordinator refused the commit because it no longer has the member:
// UNKNOWN_MEMBER_ID (it dropped the member) or FENCED_INSTANCE_ID (another
// instance took over its instance ID). ILLEGAL_GENERATION is not such a
// refusal: the coordinator checks the member first, so the member is still
// in the group.
func (b *Balancer) commit(ctx context.Context, cl *kgo.Client, tasks []string) (failed []string, gone bool) {
	if cl == nil || len(tasks) == 0 {
		return nil, false
	}
	polled := cl.UncommittedOffsets()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for _, t := range tasks {
		b.topo.partitions(b.topo.index(t), func(topic string, p int32) {
			if eo, ok := polled[topic][p]; ok {
				if offsets[topic] == nil {
					offsets[topic] = map[int32]kgo.EpochOffset{}
				}
				offsets[topic][p] = eo
			}
		})
	}
	if len(offsets) == 0 {
		return nil, false
	}
	ctx, cancel := b.commitContext(ctx)
	defer cancel()
	bad := map[topicPartition]bool{}
	var reqErr error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			reqErr = err
			return
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				switch err := kerr.ErrorForCode(rp.ErrorCode); {
				case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID):
					gone = true
					fallthrough
				case err != nil:
					bad[topicPartition{rt.Topic, rp.Partition}] = true
				}
			}
		}
	})
	for _, t := range tasks {
		if reqErr != nil || b.topo.anyPartition(b.topo.index(t), bad) {
			failed = append(failed, t)
		}
	}
	return failed, gone
}

// stateful keeps the stateful tasks of ts: a stateless task moves through
// a learner tag only to wait for its owner's release, with nothing to
// replay, so the application hears nothing of it.
func (b *Balancer) stateful(ts []string) []string {
	return slices.DeleteFunc(slices.Clone(ts), func(t string) bool {
		i := b.topo.index(t)
		return i >= 0 && !b.topo.tasks[i].Stateful
	})
}

// sort puts tasks in topology order: hooks run in a fixed order.
func (b *Balancer) sort(tasks []string) {
	slices.SortFunc(tasks, func(x, y string) int { return b.topo.index(x) - b.topo.index(y) })
}

// static reports whether the client is a static member (kgo.InstanceID).
func static(cl *kgo.Client) bool {
	if cl == nil {
		return false
	}
	vs := cl.OptValues(kgo.InstanceID) // the ID, and whether it is set
	return len(vs) == 2 && vs[1] == true
}

func memberIDOf(cl *kgo.Client) string {
	if cl == nil {
		return ""
	}
	id, _ := cl.GroupMetadata()
	return id
}

func each(hook func(string), tasks []string) {
	if hook == nil {
		return
	}
	for _, t := range tasks {
		hook(t)
	}
}
