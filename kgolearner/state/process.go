package state

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// pollWait bounds a poll, so that the loop notices Shutdown without
	// waiting for input. A task that catches up ends the poll at once.
	pollWait = 100 * time.Millisecond
	// maxBatch bounds the records of one batch: a batch's writes are
	// waited for as one, and StopActive waits for the batch in flight.
	maxBatch = 10_000
	// commitTimeout bounds a commit; a commit that fails is retried with
	// the next batch's, and the changelog's positions make up for it.
	commitTimeout = 10 * time.Second
)

// markerHeader marks a changelog record that carries only a position: the
// batch's last records changed no state, yet the position must reach the
// changelog so that no new owner processes them again.
const markerHeader = "learner.marker"

// Context is a task's view while Process handles one of its records.
type Context struct {
	tb *taskBatch
}

// Task returns the task's ID.
func (c *Context) Task() string { return c.tb.t.id }

// Partition returns the task's partition: the partition of its input
// topics and of its changelog.
func (c *Context) Partition() int32 { return c.tb.t.partition }

// ErrStateless is wrapped by the errors of Get, Put and Delete of a task of
// a stateless subtopology.
var ErrStateless = errors.New("state: task is stateless")

// Get returns the value of key in the task's state, including the writes
// of the batch in progress. The value is the caller's: changing it changes
// neither the state nor the changelog.
func (c *Context) Get(key []byte) ([]byte, bool, error) {
	t := c.tb.t
	if !t.stateful {
		return nil, false, fmt.Errorf("%w: task %s", ErrStateless, t.id)
	}
	if v, ok := c.tb.overlay[string(key)]; ok {
		return cloneValue(v), v != nil, nil // v is also the pending change's
	}
	v, ok, err := t.store.Get(key)
	if err != nil {
		return nil, false, fmt.Errorf("%w: task %s get: %w", ErrStore, t.id, err)
	}
	return v, ok, nil
}

// ErrInvalidKey is wrapped by the errors of Put and Delete of an empty key, which a
// compacted changelog cannot hold, or of the key "learner.position", which
// the runtime's position markers use: compaction would keep only the later
// of the two.
var ErrInvalidKey = errors.New("state: invalid key")

// Put sets key to value in the task's state; a nil value deletes the key.
// The change reaches the store once the changelog has acknowledged it.
// Several Puts of one key for one input record write one changelog record,
// the last value. When an input record changes several keys, its first
// changelog record also carries the others' changes, so that a write cut
// short restores all of them or none: all of an input record's changes
// together must fit one record the producer and the broker accept
// (kgo.ProducerBatchMaxBytes, 1,000,012 bytes by default, counting the
// record batch around it; the topic's max.message.bytes). Changes, or an
// Emit, that do not stop Run with an error wrapping kerr.MessageTooLarge:
// one too large for the producer before anything of its batch is written,
// one the broker refuses once its batch's output may have been written.
func (c *Context) Put(key, value []byte) error {
	t := c.tb.t
	if !t.stateful {
		return fmt.Errorf("%w: task %s", ErrStateless, t.id)
	}
	if len(key) == 0 || string(key) == positionHeader {
		return fmt.Errorf("%w: task %s: put %q", ErrInvalidKey, t.id, key)
	}
	key, value = slices.Clone(key), cloneValue(value)
	tb := c.tb
	tb.overlay[string(key)] = value
	if i, ok := tb.groupAt[string(key)]; ok {
		tb.group[i].Value = value
		return nil
	}
	if tb.groupAt == nil {
		tb.groupAt = map[string]int{}
	}
	tb.groupAt[string(key)] = len(tb.group)
	tb.group = append(tb.group, Change{Key: key, Value: value})
	return nil
}

// Delete removes key from the task's state.
func (c *Context) Delete(key []byte) error { return c.Put(key, nil) }

// Emit produces an output record to rec.Topic, partition rec.Partition (the
// runtime partitions manually; Partition() is the task's own). Output is
// acknowledged before the state changes of the same batch are written, so
// it is produced at least once.
func (c *Context) Emit(rec *kgo.Record) { c.tb.outputs = append(c.tb.outputs, rec) }

func cloneValue(v []byte) []byte {
	if v == nil {
		return nil
	}
	return append([]byte{}, v...)
}

// taskBatch is one task's share of a batch.
type taskBatch struct {
	t         *task
	recs      []*kgo.Record // to process, in order
	done      []*kgo.Record // processed (not skipped as already in state)
	skipped   int
	overlay   map[string][]byte // writes of this batch; nil value: deleted
	changes   []Change
	changelog []*kgo.Record
	group     []Change       // the record in process's changes, one per key, in first-Put order
	groupAt   map[string]int // key -> index in group
	outputs   []*kgo.Record
	pos       map[string]int64 // input position after the record in process
	marked    bool             // pos reached the changelog with the last record
}

// pollLoop polls input and processes it batch by batch until ctx is done,
// Shutdown, or a fatal error.
func (r *Runtime) pollLoop(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.stop:
			return nil
		case err := <-r.fatal:
			return err
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, pollWait)
		r.mu.Lock()
		r.wakePoll = cancel
		r.mu.Unlock()
		fs := r.cl.PollRecords(pctx, maxBatch)
		cancel()
		if fs.IsClientClosed() {
			return nil
		}
		err := r.step(ctx, fs)
		r.cl.AllowRebalance()
		if err != nil {
			return err
		}
		if fs.NumRecords() == 0 && fetchFailed(fs) {
			select { // rather than spin on the errors (fetchFailed)
			case <-ctx.Done():
			case <-r.stop:
			case err := <-r.fatal:
				return err
			case <-time.After(startBackoffMin):
			}
		}
	}
}

// fetchFailed reports whether a poll brought a fetch error other than its
// own deadline's. kgo hands back a partition error it does not retry
// itself (UNKNOWN_SERVER_ERROR, which fatalCode lets Run survive) at every
// poll, at once, and fetches again as soon as the poll drained it: polling
// again straight after such a poll with no records spun against the
// broker, over 20,000 fetches and Error events a second. The poll loop
// waits instead, as Kafka's clients wait retry.backoff.ms
// (startBackoffMin); the restore loop waits LagInterval, as it does for a
// missing changelog topic.
func fetchFailed(fs kgo.Fetches) bool {
	failed := false
	fs.EachError(func(_ string, _ int32, err error) {
		failed = failed || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
	})
	return failed
}

// step activates caught-up tasks and processes one poll's records. A
// partition's fetch error code retrying cannot fix (fatalCode) is its
// error once the poll's records are handled, which kgo counts as polled;
// not a group's (kgo.ErrGroupSession, UNKNOWN_MEMBER_ID once the session
// expired, say), which kgo reports through the poll too and recovers from
// by joining again.
func (r *Runtime) step(ctx context.Context, fs kgo.Fetches) (err error) {
	var refused error
	fs.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		err = fmt.Errorf("state: fetch %s partition %d: %w", topic, p, err)
		if _, group := errors.AsType[*kgo.ErrGroupSession](err); !group && fatalCode(err) {
			refused = cmp.Or(refused, err)
			return
		}
		r.observeError(err)
	})
	defer func() { err = cmp.Or(err, refused) }()
	r.activate(ctx)
	start := time.Now()
	batch := r.collect(fs)
	if len(batch) == 0 {
		r.paced(0, false)
		return nil
	}
	err = r.process(ctx, batch)
	if err == nil {
		err = r.write(ctx, batch)
	}
	r.paced(time.Since(start), fs.NumRecords() >= maxBatch)
	r.release(batch, err)
	if err != nil {
		// Whatever failed, kgo counts the batch as polled, and the
		// offsets it counts are what a revoke commits, Run's own stop
		// included: they must name processed records only.
		r.rewind(batch)
	}
	switch {
	case err == nil:
		r.commit(batch)
		return nil
	case ctx.Err() != nil:
		return nil // stopped mid-batch, as a crash would
	case errors.Is(err, errWrite) && !refusedAgain(err):
		if r.failed.Err() == nil {
			r.observeError(err) // the tasks restore what reached the changelog and go on
		}
		return nil // after fail: the poll loop returns its error
	}
	return err
}

// refusedAgain reports whether a write failed with an error that writing
// the same records again would meet: a broker's code retrying cannot fix
// (fatalCode), such as a batch too large for the broker (its
// max.message.bytes for the topic below the producer's
// kgo.ProducerBatchMaxBytes), a record its validation refuses
// (INVALID_RECORD, INVALID_TIMESTAMP), or ACLs or credentials it refuses,
// as Run's start does. Such an error stops Run, as checkSizes's does and as
// Kafka Streams' default production exception handler does: the runtime
// would otherwise process the batch again and again, and emit its output
// every time. Not the codes of a producer the broker no longer knows
// (fencedProducer), which Kafka Streams takes for a task migrated and a
// new round of the batch fixes.
func refusedAgain(err error) bool {
	return fatalCode(err) && !fencedProducer(err)
}

// fencedProducer reports whether err carries a code with which a broker
// refuses a producer's ID, epoch or sequence, as kgo's producer reports
// them (sink.go) when it cannot recover by itself.
func fencedProducer(err error) bool {
	return errors.Is(err, kerr.OutOfOrderSequenceNumber) || errors.Is(err, kerr.UnknownProducerID) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.ProducerFenced)
}

// activate starts processing the active tasks that caught up with their
// changelog. It runs on the poll goroutine, between polls, where kgo allows
// SetOffsets and no revoke runs.
func (r *Runtime) activate(ctx context.Context) {
	r.mu.Lock()
	var ready []*task
	for _, t := range r.tasks {
		if t.role == roleActive && !t.running && t.caughtUp {
			ready = append(ready, t)
		}
	}
	r.mu.Unlock()
	for _, t := range ready {
		if !r.complete(ctx, t) {
			continue // caught up still: the next poll tries again
		}
		t.applyMu.Lock()
		r.mu.Lock()
		if t.role == roleActive && !t.running && t.caughtUp {
			t.running = true
			t.pos = maps.Clone(t.cp.Input)
			if t.pos == nil {
				t.pos = map[string]int64{}
			}
			if t.consuming {
				r.rcl.RemoveConsumePartitions(map[string][]int32{t.changelog: {t.partition}})
				t.consuming = false
			}
			// Fetch from the state's position: kgo may have fetched past
			// it while the task was not running here (it gave the task
			// up at a join and got it back, or a write failed). A
			// partition kgo has yet to assign starts at the committed
			// offset instead, which is never past the position.
			seek := map[string]map[int32]kgo.EpochOffset{}
			for topic := range t.inputs {
				seek[topic] = map[int32]kgo.EpochOffset{t.partition: {Epoch: -1, Offset: t.pos[topic]}}
			}
			r.cl.SetOffsets(seek)
			r.cl.ResumeFetchPartitions(t.inputs)
			replayed := t.replayed
			r.mu.Unlock()
			t.applyMu.Unlock()
			if f := r.cfg.Observer.Running; f != nil {
				f(t.id, replayed)
			}
			continue
		}
		r.mu.Unlock()
		t.applyMu.Unlock()
	}
}

// complete writes the changelog records of the last input record restored
// that the changelog lacks (t.pending, see groupHeader) and reports whether
// the task may run. Its store holds those changes; the changelog must too
// before anything follows them, or a restore would take the next records'
// position without them once compaction dropped the group's first record.
// A failed write is reported (Observer.Error) once the task's lock is
// released, as Observer promises: the restore loop takes it too.
func (r *Runtime) complete(ctx context.Context, t *task) bool {
	ok, err := r.writePending(ctx, t)
	if err != nil {
		r.observeError(err)
	}
	return ok
}

// writePending is complete without the report: it returns the error of a
// failed write the task recovers from, by trying again at the next poll.
func (r *Runtime) writePending(ctx context.Context, t *task) (bool, error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	if len(t.pending) == 0 {
		return true, nil
	}
	recs := make([]*kgo.Record, len(t.pending))
	for i, ch := range t.pending {
		recs[i] = changelogRecord(t.changelog, t.partition, ch.Key, ch.Value, t.pendingPos)
	}
	// The records were written once, within the limits of then; a producer
	// or topic limit lowered since would refuse them on every try.
	if err := r.checkSizes(&taskBatch{t: t, changelog: recs}); err != nil {
		r.fail(err)
		return false, nil
	}
	if err := r.produce(ctx, recs); err != nil {
		err = fmt.Errorf("state: task %s: write the %d records the changelog's last input record lacks: %w", t.id, len(recs), err)
		if refusedAgain(err) {
			r.fail(err)
			return false, nil
		}
		return false, err
	}
	cp := t.checkpoint(recs[len(recs)-1].Offset+1, t.cp.Input)
	if err := t.store.Apply(nil, cp); err != nil {
		r.fail(fmt.Errorf("%w: task %s apply: %w", ErrStore, t.id, err))
		return false, nil
	}
	t.cp, t.pending = cp, nil
	r.mu.Lock()
	t.restored = cp.Changelog
	r.mu.Unlock()
	return true, nil
}

// collect sorts polled records by task: records of running tasks make the
// batch; the others (a task catching up with its changelog, or one this
// member stopped) are dropped, and their partitions rewound to the first
// dropped record. kgo thus never counts a record as polled that was not
// processed: whatever offsets it commits for this member (a revoke commits
// a stopping task's polled offsets: kgolearner's, or revokeActive with
// Cooperative) are processed ones.
func (r *Runtime) collect(fs kgo.Fetches) []*taskBatch {
	r.mu.Lock()
	byTask := map[string]*taskBatch{}
	rewind := map[string]map[int32]kgo.EpochOffset{}
	fs.EachRecord(func(rec *kgo.Record) {
		t := r.tasks[r.byInput[inputKey(rec.Topic, rec.Partition)]]
		if t != nil && t.running {
			tb := byTask[t.id]
			if tb == nil {
				tb = &taskBatch{t: t, overlay: map[string][]byte{}}
				byTask[t.id] = tb
			}
			tb.recs = append(tb.recs, rec)
			return
		}
		if rewind[rec.Topic] == nil {
			rewind[rec.Topic] = map[int32]kgo.EpochOffset{}
		}
		if eo, ok := rewind[rec.Topic][rec.Partition]; !ok || rec.Offset < eo.Offset {
			rewind[rec.Topic][rec.Partition] = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset}
		}
	})
	batch := slices.SortedFunc(maps.Values(byTask), func(a, b *taskBatch) int { return strings.Compare(a.t.id, b.t.id) })
	for _, tb := range batch {
		tb.t.busy = true
	}
	r.mu.Unlock()
	r.cl.SetOffsets(rewind)
	// Their fetches stop until the task runs: a catching-up task's
	// partitions may have been resumed by the balancer.
	paused := map[string][]int32{}
	for topic, ps := range rewind {
		for p := range ps {
			paused[topic] = append(paused[topic], p)
		}
	}
	r.cl.PauseFetchPartitions(paused)
	return batch
}

// process runs Process over the batch. It locks every task's store until
// release: the restore loop must not write a store while its task runs.
// All are locked before the first record, as release unlocks them all
// whichever record fails; the batch is in task order, and no other
// goroutine holds two stores' locks, so the order cannot deadlock.
func (r *Runtime) process(ctx context.Context, batch []*taskBatch) error {
	for _, tb := range batch {
		tb.t.applyMu.Lock()
	}
	for _, tb := range batch {
		t := tb.t
		tb.pos = maps.Clone(t.pos)
		if tb.pos == nil {
			tb.pos = map[string]int64{}
		}
		for _, rec := range tb.recs {
			if t.stateful && rec.Offset < tb.pos[rec.Topic] {
				tb.skipped++ // its effects are in the state already
				continue
			}
			tb.pos[rec.Topic] = rec.Offset + 1
			c := &Context{tb: tb}
			if err := r.cfg.Process(c, rec); err != nil {
				return fmt.Errorf("state: task %s: process %s partition %d offset %d: %w", t.id, rec.Topic, rec.Partition, rec.Offset, err)
			}
			tb.marked = len(tb.group) > 0
			tb.endRecord()
			tb.done = append(tb.done, rec)
		}
		if t.stateful && len(tb.done) > 0 && !tb.marked {
			tb.changelog = append(tb.changelog, &kgo.Record{
				Topic: t.changelog, Partition: t.partition, Key: []byte(positionHeader), Value: []byte{},
				Headers: []kgo.RecordHeader{{Key: positionHeader, Value: encodePosition(tb.pos)}, {Key: markerHeader}},
			})
		}
	}
	return nil
}

// endRecord turns the changes of the input record just processed into
// changelog records, the first carrying the others (groupHeader).
func (tb *taskBatch) endRecord() {
	if len(tb.group) == 0 {
		return
	}
	t, pos := tb.t, encodePosition(tb.pos)
	for i, ch := range tb.group {
		rec := changelogRecord(t.changelog, t.partition, ch.Key, ch.Value, pos)
		if i == 0 && len(tb.group) > 1 {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: groupHeader, Value: encodeChanges(tb.group[1:])})
		}
		tb.changelog = append(tb.changelog, rec)
	}
	tb.changes = append(tb.changes, tb.group...)
	tb.group = tb.group[:0]
	clear(tb.groupAt)
}

// errWrite wraps a failed produce: the batch's tasks restore from their
// changelog and fetch their input again from the restored position.
var errWrite = errors.New("state: write")

// write produces the batch's output, then its changelog records, and once
// both are acknowledged applies the changes to the stores.
func (r *Runtime) write(ctx context.Context, batch []*taskBatch) error {
	var outputs, changelog []*kgo.Record
	for _, tb := range batch {
		if err := r.checkSizes(tb); err != nil {
			return err
		}
		outputs = append(outputs, tb.outputs...)
		changelog = append(changelog, tb.changelog...)
	}
	if err := r.produce(ctx, outputs); err != nil {
		return fmt.Errorf("%w: output: %w", errWrite, err)
	}
	if err := r.produce(ctx, changelog); err != nil {
		return fmt.Errorf("%w: changelog: %w", errWrite, err)
	}
	for _, tb := range batch {
		t := tb.t
		if !t.stateful || len(tb.changelog) == 0 {
			t.pos = tb.pos
			continue
		}
		first, last := tb.changelog[0].Offset, tb.changelog[len(tb.changelog)-1].Offset
		if ctx.Err() != nil && (first != t.cp.Changelog || last-first != int64(len(tb.changelog)-1)) {
			// A write answered in the grace of a cancelled Run, landed
			// after another writer's records: the group had dropped
			// this member and the task's next owner wrote. The store
			// never applied those records, so its checkpoint must not
			// pass them: kept (on disk), it would restore from there
			// when the task came back, another owner's position over
			// its own stale values. It stays where it was; a restore
			// applies the changelog in order, these records included.
			continue
		}
		cp := t.checkpoint(last+1, tb.pos)
		if err := t.store.Apply(tb.changes, cp); err != nil {
			return fmt.Errorf("%w: task %s apply: %w", ErrStore, t.id, err)
		}
		t.cp, t.pos = t.checkpoint(cp.Changelog, maps.Clone(cp.Input)), tb.pos
	}
	return nil
}

// checkSizes returns an error wrapping kerr.MessageTooLarge if one of the
// task's records, output or changelog, is larger than the producer takes
// (see recordFits). kgo would fail it, and the runtime would process the
// record again with the same result, forever: nothing of the batch is
// written, and the error stops Run.
func (r *Runtime) checkSizes(tb *taskBatch) error {
	for _, recs := range []struct {
		kind string
		recs []*kgo.Record
	}{{"output", tb.outputs}, {"changelog", tb.changelog}} {
		for _, rec := range recs.recs {
			if size, limit, ok := r.recordFits(rec); !ok {
				return fmt.Errorf("state: task %s: a %s record of %s takes %d bytes in a record batch, over the %d the producer takes (kgo.ProducerBatchMaxBytes; a changelog record carries all of one input record's changes, see Context.Put): %w",
					tb.t.id, recs.kind, rec.Topic, size, limit, kerr.MessageTooLarge)
			}
		}
	}
	return nil
}

// recordBatchOverhead is the size of a record batch without records, as
// kgo counts it (its own constant of that name).
const recordBatchOverhead = 65

// recordFits reports whether rec fits a record batch of its own within the
// producer's limits, with the batch's size and the limit: kgo fails a
// record that does not with kerr.MessageTooLarge. The size is what kgo
// counts for a batch's first record (sink.go, recordNumbersAt), the
// batch's length prefix at its largest (4 bytes; kgo counts it as a varint
// once it knows the broker's produce version), so a record up to 3 bytes
// smaller than kgo would take may be refused (TestRecordFitsAsKgo); the limit
// is kgo.ProducerBatchMaxBytes for the topic, or less if
// kgo.BrokerMaxWriteBytes leaves less room in a request, and a record's
// bytes (key, value and headers) must also fit kgo.MaxBufferedBytes if set.
// A broker whose max.message.bytes for the topic is lower refuses the
// batch instead (see step).
func (r *Runtime) recordFits(rec *kgo.Record) (size, limit int64, ok bool) {
	l := 1 + kbin.VarlongLen(0) + kbin.VarintLen(0) + // attributes, timestamp and offset deltas
		kbin.VarintLen(int32(len(rec.Key))) + len(rec.Key) +
		kbin.VarintLen(int32(len(rec.Value))) + len(rec.Value) +
		kbin.VarintLen(int32(len(rec.Headers)))
	user := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		l += kbin.VarintLen(int32(len(h.Key))) + len(h.Key) + kbin.VarintLen(int32(len(h.Value))) + len(h.Value)
		user += len(h.Key) + len(h.Value)
	}
	size = int64(recordBatchOverhead + kbin.VarintLen(int32(l)) + l)
	if r.limits.buffered > 0 && int64(user) > r.limits.buffered {
		return size, r.limits.buffered, false
	}
	limit, ok = r.limits.byTopic[rec.Topic]
	if !ok {
		limit = int64(r.limits.batch(rec.Topic))
		// A request of one partition's batch: kgo's
		// maxRecordBatchBytesForTopic, its parts summed.
		request := int64(4+2+2+4+2+len(r.limits.clientID)) + 2 + 2 + 4 + 4 + 1 + 2 + int64(max(16, len(rec.Topic))) + 4 + 4 + 4
		limit = min(limit, int64(r.limits.write)-request)
		r.limits.byTopic[rec.Topic] = limit
	}
	return size, limit, size <= limit
}

// producerLimits are the options of the member's client that recordFits
// needs, read once: kgo's OptValue is too slow to call per record.
type producerLimits struct {
	batch    func(topic string) int32 // kgo.ProducerBatchMaxBytesFn
	write    int32                    // kgo.BrokerMaxWriteBytes
	buffered int64                    // kgo.MaxBufferedBytes, 0 for none
	clientID string
	byTopic  map[string]int64 // recordFits's limit by topic (the poll goroutine's)
}

// readLimits reads r.limits from r.cl.
func (r *Runtime) readLimits() {
	r.limits = producerLimits{batch: func(string) int32 { return 1000012 }, write: 100 << 20, byTopic: map[string]int64{}}
	if fn, ok := r.cl.OptValue(kgo.ProducerBatchMaxBytesFn).(func(string) int32); ok && fn != nil {
		r.limits.batch = fn
	}
	if write, ok := r.cl.OptValue(kgo.BrokerMaxWriteBytes).(int32); ok {
		r.limits.write = write
	}
	r.limits.buffered, _ = r.cl.OptValue(kgo.MaxBufferedBytes).(int64)
	r.limits.clientID, _ = r.cl.OptValue(kgo.ClientID).(string)
}

// produce produces recs and waits for every acknowledgement. Once the
// runtime failed (fail), or leaveGrace after ctx is done, it stops waiting
// and cancels the records' context: Run returns, abandoning the writes in
// flight as a crash would, rather than wait for kgo to give up on them (it
// retries a deleted topic's for many seconds, and a write the broker never
// answers until it does). The records' context ends after
// Config.DeliveryTimeout too, rather than kgo.RecordDeliveryTimeout, which
// kgo counts from each record's Timestamp, not from now: kgo then fails
// the records it may, not those of a write it sent without learning its
// fate (see Config.DeliveryTimeout). Such a write it reports instead, as
// ErrWriteStalled, from twice the timeout on and once a timeout after
// that while it lasts: a hung broker would stall the task without a word.
func (r *Runtime) produce(ctx context.Context, recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DeliveryTimeout)
	defer cancel()
	var mu sync.Mutex
	var first error
	left, done := len(recs), make(chan struct{})
	for _, rec := range recs {
		r.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if left--; left == 0 {
				close(done)
			}
		})
	}
	// The report runs on the timer's goroutine, which holds none of the
	// runtime's locks, as Observer promises (produce may run under a
	// task's); over, set once produce returns, ends it. A report under
	// way holds reporting, which produce takes before it returns, so that
	// none outlives it, nor Run: not mu, which kgo's acknowledgements
	// take, so that a slow Observer delays no acknowledgement.
	start, over := time.Now(), false
	firstReport := r.cfg.DeliveryTimeout
	if firstReport <= math.MaxInt64/2 { // else it would overflow: wait the timeout alone
		firstReport *= 2
	}
	var stalled *time.Timer
	var reporting sync.Mutex
	mu.Lock()
	stalled = time.AfterFunc(firstReport, func() {
		reporting.Lock()
		defer reporting.Unlock()
		mu.Lock()
		n, ended := left, over
		mu.Unlock()
		if n == 0 || ended {
			return
		}
		r.observeError(fmt.Errorf("%w: %d of %d records to %s unacknowledged %v after they were produced (Config.DeliveryTimeout %v)",
			ErrWriteStalled, n, len(recs), recordTopics(recs), time.Since(start).Round(100*time.Millisecond), r.cfg.DeliveryTimeout))
		mu.Lock()
		defer mu.Unlock()
		if !over && left > 0 {
			stalled.Reset(r.cfg.DeliveryTimeout)
		}
	})
	mu.Unlock()
	defer func() {
		reporting.Lock() // after a report under way
		defer reporting.Unlock()
		mu.Lock()
		defer mu.Unlock()
		over = true
		stalled.Stop()
	}()
	select {
	case <-done:
	case <-r.failed.Done():
	case <-parent.Done():
		// The broker gets the leave's grace to answer: a write it
		// acknowledges meanwhile completes the batch, and the member
		// leaves as usual.
		grace := time.NewTimer(leaveGrace)
		defer grace.Stop()
		select {
		case <-done:
		case <-r.failed.Done():
		case <-grace.C:
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if left > 0 {
		if r.failed.Err() != nil {
			return errFailed // Run stops on the error, and leaves the group (see fail)
		}
		// Abandoned after the cancel's grace: the write may land later,
		// and the member must not leave the group before its session
		// ends (see Run).
		r.abandoned = true
		return parent.Err()
	}
	if first != nil && ctx.Err() != nil && parent.Err() == nil {
		return fmt.Errorf("not acknowledged within %v (Config.DeliveryTimeout): %w", r.cfg.DeliveryTimeout, first)
	}
	return first
}

// ErrWriteStalled is wrapped by the Error events of a write that kgo sent
// and the broker has not answered (or answered REQUEST_TIMED_OUT or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND) twice Config.DeliveryTimeout after it
// was produced: kgo fails no record of such a write before an answer, since
// it could still land, and the task waits for it. One event comes then,
// and one a DeliveryTimeout after that while the write lasts. A write the
// broker refuses with a code kgo retries (NOT_ENOUGH_REPLICAS) is reported
// too when kgo's next try, which fails it, comes later than that: kgo tries
// it at its next metadata refresh (kgo.MetadataMinAge, 5 s by default), so
// a DeliveryTimeout under half of that reports it as stalled until it fails.
// An event counts the records unacknowledged when it was made: the write
// may be acknowledged by the time Observer.Error runs, though its task
// goes on only once the event returned, and none comes after. Keeping the
// acknowledgement out until the event returned would hold every
// acknowledgement of the member's client (kgo delivers them one at a time)
// for as long as Observer takes.
var ErrWriteStalled = errors.New("state: write stalled, still waiting for the broker")

// recordTopics names the topics of recs, sorted, for messages.
func recordTopics(recs []*kgo.Record) string {
	topics := make([]string, 0, 1)
	for _, rec := range recs {
		if !slices.Contains(topics, rec.Topic) {
			topics = append(topics, rec.Topic)
		}
	}
	slices.Sort(topics)
	return strings.Join(topics, ", ")
}

// errFailed is produce's error once the runtime failed.
var errFailed = errors.New("state: the runtime stopped on an error")

// commitError returns the first partition error of a commit response.
func commitError(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s partition %d: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// release ends the batch: it unlocks the stores, and after a failed write
// sends the batch's stateful tasks back to catching up from their
// changelog (which may hold part of the batch).
func (r *Runtime) release(batch []*taskBatch, err error) {
	r.mu.Lock()
	for _, tb := range batch {
		t := tb.t
		if err != nil && t.role == roleActive && t.stateful {
			t.running, t.caughtUp = false, false
			t.activatedAt, t.replayed = time.Now(), 0
			r.cl.PauseFetchPartitions(t.inputs)
		}
		t.busy = false
		t.restored = t.cp.Changelog
	}
	r.cond.Broadcast()
	r.mu.Unlock()
	for _, tb := range batch {
		tb.t.applyMu.Unlock()
	}
	if f := r.cfg.Observer.Processed; f != nil && err == nil {
		for _, tb := range batch {
			for _, rec := range tb.done {
				f(tb.t.id, rec)
			}
		}
	}
	if err != nil {
		r.kick()
	}
}

// rewind sets the input of a failed batch's tasks back to what their state
// holds (the changelog's position), or for a stateless task to the batch's
// first record of each input topic: kgo counts the batch as polled.
func (r *Runtime) rewind(batch []*taskBatch) {
	seek := map[string]map[int32]kgo.EpochOffset{}
	at := func(topic string, p int32, offset int64) {
		if seek[topic] == nil {
			seek[topic] = map[int32]kgo.EpochOffset{}
		}
		if _, ok := seek[topic][p]; !ok {
			seek[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: offset}
		}
	}
	for _, tb := range batch {
		t := tb.t
		if !t.stateful {
			for _, rec := range tb.recs { // in offset order by partition
				at(rec.Topic, rec.Partition, rec.Offset)
			}
			continue
		}
		t.applyMu.Lock()
		for topic := range t.inputs {
			at(topic, t.partition, t.cp.Input[topic])
		}
		t.applyMu.Unlock()
	}
	r.cl.SetOffsets(seek)
}

// commit queues the batch's input offsets for the commit loop. Committing
// here would stall every task of the member for the length of each
// rebalance: kgo blocks commits during its join and sync.
func (r *Runtime) commit(batch []*taskBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tb := range batch {
		if tb.t.role != roleActive {
			continue
		}
		for _, rec := range tb.recs {
			if r.toCommit[rec.Topic] == nil {
				r.toCommit[rec.Topic] = map[int32]kgo.EpochOffset{}
			}
			if eo := r.toCommit[rec.Topic][rec.Partition]; rec.Offset+1 > eo.Offset {
				r.toCommit[rec.Topic][rec.Partition] = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset + 1}
			}
		}
	}
	select {
	case r.kickCommit <- struct{}{}:
	default:
	}
}

// commitLoop commits the queued offsets, the newest per partition, until
// ctx is done. A failed commit only costs replay: the next owner skips what
// its state holds.
func (r *Runtime) commitLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kickCommit:
		}
		r.commitQueued(ctx)
	}
}

// commitQueued commits the queued offsets of tasks still active here.
//
// A task may stop (a revoke) between the queue's snapshot and the commit:
// the revoke callback (kgolearner's, or revokeActive with Cooperative)
// then commits the task's offsets, and this commit, waiting behind that
// one (kgo runs commits one at a time), would land after it and move the
// group back to the older offsets, which the task's next owner would
// process again (stateless output twice).
// So the commit's last step before its request (PreCommitFnContext, run
// once every earlier commit is answered) drops the partitions of tasks
// stopped since the snapshot. A task that stops after that step commits
// in its revoke behind this request, which kgo then has answered (its
// commits go out one at a time, in order; consumer_group.go, commit).
func (r *Runtime) commitQueued(ctx context.Context) {
	r.mu.Lock()
	offsets := r.toCommit
	r.toCommit = map[string]map[int32]kgo.EpochOffset{}
	stops := map[*task]uint64{}
	for topic, ps := range offsets {
		for p := range ps {
			if t := r.tasks[r.byInput[inputKey(topic, p)]]; t == nil || t.role != roleActive {
				delete(ps, p)
			} else {
				stops[t] = t.stops.Load()
			}
		}
	}
	r.mu.Unlock()
	if len(stops) == 0 {
		return
	}
	r.commitSync(ctx, r.cl, offsets, "commit", func(req *kmsg.OffsetCommitRequest) error {
		topics := req.Topics[:0]
		for _, rt := range req.Topics {
			rt.Partitions = slices.DeleteFunc(rt.Partitions, func(rp kmsg.OffsetCommitRequestTopicPartition) bool {
				t := r.tasks[r.byInput[inputKey(rt.Topic, rp.Partition)]]
				return t == nil || t.stops.Load() != stops[t]
			})
			if len(rt.Partitions) > 0 {
				topics = append(topics, rt)
			}
		}
		req.Topics = topics // kgo sends nothing if none is left
		return nil
	})
}

// commitSync commits offsets through cl, synchronously and within
// commitTimeout, with pre, if not nil, as the request's last step
// (kgo.PreCommitFnContext). A failure is reported (Observer.Error) as what,
// unless ctx ended: a failed commit only costs replay.
func (r *Runtime) commitSync(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset, what string, pre func(*kmsg.OffsetCommitRequest) error) {
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	if pre != nil {
		cctx = kgo.PreCommitFnContext(cctx, pre)
	}
	cl.CommitOffsetsSync(cctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err == nil {
			err = commitError(resp)
		}
		if err != nil && ctx.Err() == nil {
			r.observeError(fmt.Errorf("state: %s: %w", what, err))
		}
	})
}
