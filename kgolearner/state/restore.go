package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// restoreLoop applies the changelog records the restore client fetches:
// learners, standbys and active tasks catching up. A restore that fails
// stops it: Run returns the error (fail), and the records after the one
// that failed must not reach the store, or its checkpoint would pass a
// record it never applied.
func (r *Runtime) restoreLoop(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.cond.Broadcast() // out of awaitTurn
		r.mu.Unlock()
	})
	defer stop()
	var turn uint64
	for ctx.Err() == nil {
		r.awaitTurn(ctx, &turn)
		resets := r.resets.Load()
		fs := r.rcl.PollRecords(ctx, maxBatch)
		if fs.IsClientClosed() {
			return
		}
		failed, missing, reported := false, false, false
		var lost []*task // fetched outside their changelog's offsets
		fs.EachError(func(topic string, p int32, err error) {
			if failed {
				return
			}
			if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
				// A changelog topic deleted (or just created): the lag
				// loop reports it once and stops Run if it stays
				// missing (missingTopicTimeout); or recreated, which
				// kgo keeps fetching by its old ID, and the lag loop's
				// check stops Run (checkRecreated). kgo answers such a
				// fetch at once, thousands of times a second.
				missing = true
				return
			}
			if t := r.tasks[r.byChangelog[inputKey(topic, p)]]; t != nil && errors.Is(err, kerr.OffsetOutOfRange) {
				// The changelog no longer holds the records after the
				// store's checkpoint (DeleteRecords, retention, a
				// recreated topic): what it still holds cannot extend
				// the store without a gap. As Kafka Streams does, the
				// store restores from the start (resetLost); the
				// restore client never resets an offset by itself
				// (NoResetOffset).
				lost = append(lost, t)
				return
			}
			err = fmt.Errorf("state: restore %s partition %d: %w", topic, p, err)
			if fatalCode(err) { // the task would never restore
				r.fail(err)
				failed = true
				return
			}
			if ctx.Err() == nil {
				r.observeError(err)
				reported = true // kgo fetches again at once (fetchFailed)
			}
		})
		if !failed && len(lost) > 0 {
			var err error
			failed, err = r.resetLost(ctx, lost)
			if err != nil && ctx.Err() == nil {
				r.observeError(err)
				reported = true
			}
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if t := r.tasks[r.byChangelog[inputKey(p.Topic, p.Partition)]]; !failed && t != nil && len(p.Records) > 0 {
				if err := r.restore(t, p.Records, resets); err != nil {
					r.fail(err)
					failed = true
				}
			}
		})
		if failed {
			return
		}
		if (missing || reported) && fs.NumRecords() == 0 {
			select { // rather than spin on the errors
			case <-ctx.Done():
			case <-time.After(r.cfg.LagInterval):
			}
		}
	}
}

// restore applies changelog records to a task's store, unless the task
// runs active (its own writes reach its store directly) or its store was
// reset after they were polled (resets is r.resets before the poll): they
// continue what the store held before. Removing the partition dropped
// the fetches kgo had buffered, but not these. Observer.Restored runs
// once the task's lock is released: a callback that waits for the poll
// loop, which takes that lock to activate or run the task, would
// otherwise wait for itself.
func (r *Runtime) restore(t *task, recs []*kgo.Record, resets uint64) error {
	n, ro, err := r.applyRestored(t, recs, resets)
	if f := r.cfg.Observer.Restored; f != nil && n > 0 {
		f(t.id, ro.String(), n)
	}
	return err
}

// applyRestored is restore without the callback: it returns the number of
// records applied (zero if it failed) and the task's role then.
func (r *Runtime) applyRestored(t *task, recs []*kgo.Record, resets uint64) (int, role, error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	r.mu.Lock()
	skip, ro, from := t.running || t.store == nil || t.resetAt > resets, t.role, t.restored
	r.mu.Unlock()
	if skip {
		return 0, ro, nil
	}
	cp := t.checkpoint(t.cp.Changelog, maps.Clone(t.cp.Input))
	changes := make([]Change, 0, len(recs))
	var last []byte // the position of the last record applied
	n, start := 0, from
	for _, rec := range recs {
		if rec.Offset < from {
			continue // fetched before the partition was re-added
		}
		if rec.Attrs.IsControl() {
			// A transaction's marker (a changelog seeded by a
			// transactional producer) takes an offset but holds no
			// change: it counts as restored, or a changelog ending with
			// one would stay one record ahead of the store forever
			// (the restore client keeps them, KeepControlRecords, for
			// this). It is no record of a group: track leaves pending.
			from = rec.Offset + 1
			continue
		}
		ch, pos, marker, others, err := changeOf(rec)
		if err != nil {
			return 0, ro, fmt.Errorf("state: task %s: %w", t.id, err)
		}
		// The keys an earlier group lost to compaction go before this
		// record's changes, which may write one of them again.
		for _, lost := range t.track(rec.Offset, ch, pos, marker, others) {
			changes = append(changes, Change{Key: lost.Key})
		}
		if !marker {
			changes = append(changes, ch)
			changes = append(changes, others...)
		}
		last, from = pos, rec.Offset+1
		n++
	}
	if from > start {
		cp.Changelog = from
		if n > 0 {
			input, err := parsePositions(bytes.Split(last, []byte(";")))
			if err != nil {
				return 0, ro, fmt.Errorf("state: task %s: %w", t.id, err) // validPositions accepted it
			}
			cp.Input = input
		}
		if len(t.pending) > 0 {
			cp.Changelog = t.pendingFrom
		}
		if err := t.store.Apply(changes, cp); err != nil {
			return 0, ro, fmt.Errorf("%w: task %s apply: %w", ErrStore, t.id, err)
		}
		t.cp = cp
	}
	r.mu.Lock()
	t.restored = from
	if ro == roleActive {
		t.replayed += int64(n)
	}
	r.checkCaughtUp(t)
	r.mu.Unlock()
	return n, ro, nil
}

// track follows the changelog's groups (see groupHeader) as records are
// restored: a record carrying others starts a group whose records follow
// at the same position; a key of the group written again at that position
// (a retried write) leaves it as it is, and any other record, or one of
// another position, ends it. What is left of the last group is t.pending.
// The idempotent producer's prefix guarantee means only the changelog's
// last group can be cut short by its writer; compaction may drop records
// of earlier groups, whose keys later records then write. So when a record of a
// later input record (another position) ends a group, track returns what
// the group still lacked: keys whose old values its first record carried
// and the restore applied. Each must be deleted: a later record writes it
// again, or deleted it with a tombstone that the cleaner may since have
// dropped too (after the topic's delete.retention.ms), and the key would
// otherwise come back. t.applyMu is held.
func (t *task) track(offset int64, ch Change, pos []byte, marker bool, others []Change) (lost []Change) {
	if len(t.pending) > 0 && !bytes.Equal(pos, t.pendingPos) {
		lost = t.pending
	}
	switch {
	case others != nil:
		t.pending = make([]Change, len(others)) // others alias the fetch's buffer
		t.groupKeys = append(t.groupKeys[:0], slices.Clone(ch.Key))
		for i, o := range others {
			t.pending[i] = Change{Key: slices.Clone(o.Key), Value: cloneValue(o.Value)}
			t.groupKeys = append(t.groupKeys, t.pending[i].Key)
		}
		t.pendingPos, t.pendingFrom = slices.Clone(pos), offset
	case len(t.pending) > 0 && !marker && bytes.Equal(pos, t.pendingPos):
		same := func(k []byte) bool { return bytes.Equal(k, ch.Key) }
		if i := slices.IndexFunc(t.pending, func(p Change) bool { return same(p.Key) }); i >= 0 {
			t.pending = slices.Delete(t.pending, i, i+1)
		} else if !slices.ContainsFunc(t.groupKeys, same) {
			t.pending = nil // not of the group: a new one of the same position
		}
		// Else a key of the group written again: a retry of complete's
		// write whose first try landed in part. The rest is still
		// missing; forgetting it would let this member run without
		// writing it, and a restore from scratch lose it once compaction
		// drops the group's first record.
	default:
		t.pending = nil
	}
	return lost
}

func (ro role) String() string {
	switch ro {
	case roleActive:
		return "active"
	case roleLearner:
		return "learner"
	case roleStandby:
		return "standby"
	}
	return "none"
}

// checkCaughtUp marks an active task caught up once it restored up to an
// end offset listed after it became active: its previous owner stopped
// writing before that. r.mu is held.
func (r *Runtime) checkCaughtUp(t *task) {
	if t.role == roleActive && !t.running && !t.caughtUp && !t.endAt.Before(t.activatedAt) && t.restored >= t.end {
		t.caughtUp = true
		if r.wakePoll != nil {
			r.wakePoll() // the poll loop activates it
		}
	}
}

// prioritize pauses the restores of learners and standbys while an active
// task catches up, as Kafka Streams pauses standbys: the active task's
// input waits for its restore, theirs does not. r.mu is held.
func (r *Runtime) prioritize() {
	background, urgent := map[string][]int32{}, map[string][]int32{}
	for _, t := range r.tasks {
		switch {
		case !t.consuming:
		case t.role == roleActive:
			urgent[t.changelog] = append(urgent[t.changelog], t.partition)
		default:
			background[t.changelog] = append(background[t.changelog], t.partition)
		}
	}
	// A partition paused as a learner's stays paused when its task turns
	// active: resume the urgent ones whatever they were.
	r.rcl.ResumeFetchPartitions(urgent)
	r.urgent = len(urgent) > 0
	r.cond.Broadcast() // an urgent restore ends awaitTurn
	if len(urgent) > 0 {
		r.rcl.PauseFetchPartitions(background)
	} else {
		r.rcl.ResumeFetchPartitions(background)
	}
}

// Restores yield to active processing. A member's learners and standbys
// replay whole states (a scale-up brings each new member hundreds of
// thousands of records), and that replay competes with the member's active
// tasks for CPU, memory bandwidth, disk and the broker. Kafka Streams
// updates standbys between active batches on its stream thread; the runtime
// restores on a goroutine of its own but makes the same bargain while
// active tasks fall behind: once an active batch took longer than
// Config.RestoreYield from poll to acknowledgement, or its poll came back
// full, the restore loop takes one restore fetch per active batch (at most
// restoreFetchBytes a broker), until no batch was slow for yieldHold.
// Learners thus always progress, and become ready later on a busy member:
// a scale-up takes longer, in exchange for the tasks that stay put keeping
// up. The restore client fetches only when polled (kgo buffers one fetch
// per broker), so a restore loop that waits also stops fetching. Active
// tasks catching up never wait (urgent, see prioritize): their own input
// waits for their restore.

// yieldHold is how long restores keep yielding after the last slow
// active batch: a loaded member alternates slow and fast batches, and
// restoring at full speed after each fast one makes the next one slow.
const yieldHold = time.Second

// awaitTurn waits, while the member's active tasks are behind and no
// active task catches up, until an active batch ended since the restore
// loop's last turn (*turn).
func (r *Runtime) awaitTurn(ctx context.Context, turn *uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.behind && !r.urgent && r.batches == *turn && ctx.Err() == nil {
		r.cond.Wait()
	}
	*turn = r.batches
}

// paced notes an active batch: how long it took from poll to
// acknowledgement (zero for a poll with nothing to process) and whether
// the poll was full. It gives the restore loop its next turn.
func (r *Runtime) paced(took time.Duration, full bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if full || (r.cfg.RestoreYield > 0 && took > r.cfg.RestoreYield) {
		r.slowAt = now
	}
	r.behind = !r.slowAt.IsZero() && now.Sub(r.slowAt) < yieldHold
	r.batches++
	r.cond.Broadcast()
}

// missingTopicTimeout is how long a changelog topic may stay unknown
// before the runtime gives up.
const missingTopicTimeout = 10 * time.Second

// runningListInterval is how often the lag loop lists the changelog end
// offsets of running tasks too (it lists the others every LagInterval):
// their lag is not needed, only whether their changelog topic still
// exists; and how often it checks that the topics were not recreated
// (checkRecreated), one Metadata request.
const runningListInterval = time.Second

// lagLoop keeps the restore client's partitions in line with the tasks'
// roles, lists changelog end offsets, reports lags and readiness, finds
// the active tasks that caught up, and stops Run if a changelog topic was
// deleted (missingTopicTimeout) or recreated (checkRecreated).
func (r *Runtime) lagLoop(ctx context.Context) {
	tick := time.NewTicker(r.cfg.LagInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.kickLag:
		}
		if err := r.refreshLags(ctx); err != nil && ctx.Err() == nil {
			r.observeError(err)
		}
	}
}

func (r *Runtime) refreshLags(ctx context.Context) error {
	listed := time.Now()
	parts := map[string][]int32{}
	before := map[string]int64{} // restored offsets before the listing
	checkRunning := listed.Sub(r.runningListedAt) >= runningListInterval
	r.mu.Lock()
	add := map[string]map[int32]kgo.Offset{}
	remove := map[string][]int32{}
	for _, t := range r.tasks {
		switch want := t.restoring(); {
		case want && !t.consuming:
			if add[t.changelog] == nil {
				add[t.changelog] = map[int32]kgo.Offset{}
			}
			from := kgo.NewOffset().At(t.restored)
			if t.restored == 0 {
				from = kgo.NewOffset().AtStart() // an empty store takes what the changelog holds
			}
			add[t.changelog][t.partition] = from
		case !want && t.consuming:
			remove[t.changelog] = append(remove[t.changelog], t.partition)
		}
		t.consuming = t.restoring()
		switch {
		case t.opened && !t.running:
			parts[t.changelog] = append(parts[t.changelog], t.partition)
			before[t.id] = t.restored
		case t.opened && checkRunning:
			// Listed only to notice a changelog topic deleted under
			// running tasks: kgo retries their writes for a while.
			parts[t.changelog] = append(parts[t.changelog], t.partition)
		}
	}
	if checkRunning {
		r.runningListedAt = listed
	}
	r.rcl.RemoveConsumePartitions(remove)
	r.rcl.AddConsumePartitions(add)
	r.prioritize()
	r.mu.Unlock()
	if len(parts) == 0 {
		return nil
	}
	ends, err := EndOffsets(ctx, r.rcl, parts)
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		// Just created (metadata takes a moment to list a new topic), or
		// deleted under the running application: then the state it held
		// is not durable any more, and recreating the topic would hide
		// that.
		if r.missingSince.IsZero() {
			r.missingSince, r.missingReported = listed, false
		}
		switch missing := listed.Sub(r.missingSince); {
		case missing > missingTopicTimeout:
			r.fail(fmt.Errorf("state: changelog topic missing for %v: %w", missingTopicTimeout, err))
		case missing > missingTopicTimeout/2 && !r.missingReported:
			// Once, and not for a topic just created, which metadata
			// lists after a second or so.
			r.missingReported = true
			r.observeError(fmt.Errorf("state: changelog topic missing for %v; Run stops if it still is after %v: %w", missing.Round(time.Second), missingTopicTimeout, err))
		}
		return nil
	case err != nil:
		return err
	}
	r.missingSince = time.Time{}
	if checkRunning || pastEnd(r.tasks, before, ends) {
		// Once a second, and before a store past its changelog's end is
		// reset (below): a changelog topic recreated under the running
		// member looks as if it lost records, and its ends, the new
		// topic's, are worth nothing. After the listing, so that ends
		// listed from a topic recreated since the check are not used.
		if failed, err := r.checkRecreated(ctx); failed || err != nil {
			return err // the next listing tries again
		}
	}
	if err := r.skipDeleted(ctx, parts, ends); err != nil && ctx.Err() == nil {
		r.observeError(err) // the lags still go out; the next listing tries again
	}
	lags := map[string]int64{}
	var ready, ahead []*task
	r.mu.Lock()
	for topic, ps := range parts {
		for _, p := range ps {
			t := r.tasks[r.byChangelog[inputKey(topic, p)]]
			if t.running {
				continue
			}
			end := ends[topic][p] // EndOffsets lists every partition asked
			t.end, t.endAt = end, listed
			if before[t.id] > end {
				// The end grows, so it can only be below what the store
				// held before the listing if the changelog lost records.
				ahead = append(ahead, t)
				continue
			}
			lags[t.id] = max(0, end-t.restored)
			if t.role == roleLearner && !t.ready && lags[t.id] <= r.cfg.Options.AcceptableLag {
				t.ready = true
				ready = append(ready, t)
			}
			r.checkCaughtUp(t)
		}
	}
	r.mu.Unlock()
	for _, t := range ahead {
		if err := r.reset(t, fmt.Sprintf("past the changelog's end %d", t.end)); err != nil {
			r.fail(err)
		}
	}
	if r.cfg.Cooperative {
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(lags)) {
		if err := r.topo.SetLag(id, lags[id]); err != nil {
			return err // cannot happen: the topology's task IDs are valid
		}
	}
	r.announceReady(ready)
	return nil
}

// skipDeleted moves the empty stores of tasks restoring, among parts, to
// their changelog's start offset when it is past zero: the changelog lost
// its first records (DeleteRecords, retention on a topic created with
// cleanup.policy=compact,delete), and an empty store holds every record
// before the start. The restore fetches from the start anyway (AtStart),
// but a changelog whose records were all deleted has no record to fetch,
// and without this the store would stay at zero, its lag the end offset,
// and an active task would never catch up. ends are the partitions' end
// offsets, listed just before.
func (r *Runtime) skipDeleted(ctx context.Context, parts map[string][]int32, ends map[string]map[int32]int64) error {
	empty := map[string][]int32{}
	r.mu.Lock()
	for topic, ps := range parts {
		for _, p := range ps {
			// Only stores with a role: one kept for later roles waits
			// for its next, rather than list its start every time.
			if t := r.tasks[r.byChangelog[inputKey(topic, p)]]; t.restoring() && t.restored == 0 && ends[topic][p] > 0 {
				empty[topic] = append(empty[topic], p)
			}
		}
	}
	r.mu.Unlock()
	// At most once a second: a cold restore's store is empty only until
	// its first fetch, and listing its start every LagInterval meanwhile
	// would only load the broker.
	if len(empty) == 0 || time.Since(r.startsListedAt) < runningListInterval {
		return nil
	}
	r.startsListedAt = time.Now()
	starts, err := startOffsets(ctx, r.rcl, empty)
	if err != nil {
		return err
	}
	for topic, ps := range empty {
		for _, p := range ps {
			if start := starts[topic][p]; start > 0 {
				if err := r.skipTo(r.tasks[r.byChangelog[inputKey(topic, p)]], start); err != nil {
					r.fail(err)
					return nil
				}
			}
		}
	}
	return nil
}

// skipTo sets an empty store's checkpoint to its changelog's start offset
// (see skipDeleted), unless it restored records or runs since.
func (r *Runtime) skipTo(t *task, start int64) error {
	t.applyMu.Lock() // no restore, reset or write of the store meanwhile
	defer t.applyMu.Unlock()
	r.mu.Lock()
	skip := t.running || t.store == nil || t.restored != 0 || len(t.pending) > 0
	r.mu.Unlock()
	if skip {
		return nil
	}
	cp := t.checkpoint(start, t.cp.Input)
	if err := t.store.Apply(nil, cp); err != nil {
		return fmt.Errorf("%w: task %s apply: %w", ErrStore, t.id, err)
	}
	t.cp = cp
	r.mu.Lock()
	t.restored = start
	r.mu.Unlock()
	return nil
}

// announceReady calls Ready for the learner tasks the lag loop found ready
// and still ready: a reset since the listing (the restore loop's) cleared
// t.ready and withdraws it, and its Unready must not come before this
// Ready, or the emptied store would count as ready. readyMu orders the
// two calls; the client's ForceRebalance, which Ready may call, runs
// without r.mu.
func (r *Runtime) announceReady(ready []*task) {
	for _, t := range ready {
		r.readyMu.Lock()
		r.mu.Lock()
		still := t.ready
		r.mu.Unlock()
		if still {
			r.topo.Ready(t.id)
		}
		r.readyMu.Unlock()
	}
}

// pastEnd reports whether a store's restored offset before the listing
// (before, by task) is past its changelog partition's end (ends): the
// changelog lost records, or was recreated (refreshLags).
func pastEnd(tasks map[string]*task, before map[string]int64, ends map[string]map[int32]int64) bool {
	for id, restored := range before {
		if t := tasks[id]; restored > ends[t.changelog][t.partition] {
			return true
		}
	}
	return false
}

// resetLost resets the stores of tasks the restore client fetched outside
// their changelog's offsets (see restoreLoop), unless the changelog topic
// was deleted and recreated under the running member, whose offsets then
// restarted at zero: Run fails (checkRecreated) and leaves the stores as
// they are, the only copy left of the state the deleted topic held, which
// a reset would clear for nothing and a restore from the new topic would
// hide the loss of (refreshLags checks likewise before it resets a store
// past its changelog's end). It reports whether Run fails; err is that of
// a check that could not list the topics' IDs, which leaves the stores for
// the next fetch: the restore client keeps the partitions' offsets, and
// fetches them out of range again.
func (r *Runtime) resetLost(ctx context.Context, tasks []*task) (bool, error) {
	if failed, err := r.checkRecreated(ctx); failed || err != nil {
		return failed, err
	}
	for _, t := range tasks {
		if err := r.reset(t, "outside the changelog's offsets"); err != nil {
			r.fail(err)
			return true, nil
		}
	}
	return false, nil
}

// checkRecreated lists the changelog topics' IDs and fails Run, with an
// error wrapping ErrChangelogTopic, if one is not the ID Run started with
// (recreated): the topic was deleted and recreated under the running
// member, which keeps the policy for a changelog topic deleted (the lag
// loop's missingTopicTimeout): the state it held is not durable any more,
// and the new topic would hide that. Nor could the member go on as it
// is: kgo keeps fetching the old topic ID (UNKNOWN_TOPIC_ID for ever), and
// on kfake writes some batches to the new topic and fails the others with
// UNKNOWN_TOPIC_ID, every time. It reports whether Run fails; err is the
// listing's. A topic the brokers do not list is left to the missing-topic
// check; one whose ID is unknown on either side, unchecked.
func (r *Runtime) checkRecreated(ctx context.Context) (bool, error) {
	known := map[string][16]byte{}
	for _, t := range r.tasks {
		if t.stateful && t.changelogID != noTopicID {
			known[t.changelog] = t.changelogID // set before the loops start
		}
	}
	if len(known) == 0 {
		return false, nil
	}
	resp, err := changelogMetadata(ctx, r.rcl, slices.Sorted(maps.Keys(known)))
	if err != nil {
		return false, err
	}
	for _, mt := range resp.Topics {
		if mt.Topic == nil || mt.ErrorCode != 0 {
			continue
		}
		if why := recreated(*mt.Topic, known[*mt.Topic], mt.TopicID); why != "" {
			r.fail(fmt.Errorf("state: running on changelog %s: the state it held is lost, and Run stops rather than go on with the new topic: %w", why, ErrChangelogTopic))
			return true, nil
		}
	}
	return false, nil
}

// reset clears a store that its changelog cannot extend (why says how),
// so that the state restores again from the changelog's start.
func (r *Runtime) reset(t *task, why string) error {
	t.applyMu.Lock()
	r.mu.Lock()
	if t.running || t.store == nil {
		r.mu.Unlock()
		t.applyMu.Unlock()
		return nil
	}
	was := t.restored
	err := t.store.Clear()
	unready := false
	if err == nil {
		t.cp, t.restored, t.pending = Checkpoint{}, 0, nil
		// An active task that had caught up restores again before it
		// runs: activate would otherwise run it on the empty store.
		t.caughtUp = false
		// A learner reported ready is not any more: the leader would
		// move the task here to restore from the start while it is down.
		unready, t.ready = t.ready, false
		t.resetAt = r.resets.Add(1)
		if t.consuming {
			r.rcl.RemoveConsumePartitions(map[string][]int32{t.changelog: {t.partition}})
			t.consuming = false
		}
	}
	r.mu.Unlock()
	t.applyMu.Unlock()
	if err != nil {
		return fmt.Errorf("%w: task %s clear: %w", ErrStore, t.id, err)
	}
	if unready && !r.cfg.Cooperative {
		r.readyMu.Lock() // after a Ready of the lag loop's in flight (announceReady)
		r.topo.Unready(t.id)
		r.readyMu.Unlock()
	}
	r.observeError(fmt.Errorf("state: task %s: store at changelog offset %d, %s: restoring from the start", t.id, was, why))
	r.kick() // the lag loop adds the partition back
	return nil
}
