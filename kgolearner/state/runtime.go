// Package state is a stateful stream-processing runtime on top of
// kgolearner: it keeps each stateful task's state in a local Store backed by
// a changelog topic, restores learners and standbys from the changelog,
// reports their lag and readiness to the learner protocol, and hands tasks
// over with their state.
//
// # Guarantees
//
// Every changelog record carries the task's input position once its input
// record was processed (the "learner.position" header), and a store applies
// changes and that position atomically. A task's state therefore always
// names the input it reflects, whatever offsets the group committed: a new
// owner skips the input its restored state already holds, so state is
// exactly once across hand-overs and crashes, and output at least once. The
// changes of one input record are all or nothing: its first changelog
// record carries them all (the "learner.group" header), so a write that
// fails or a crash in the middle of them leaves either none or the whole
// record restorable, and whoever runs the task next writes the records the
// changelog lacks. An
// active task, per batch, produces its output, then its changelog records,
// and applies them to its store once the changelog has acknowledged them;
// only then does it commit its input offsets. Offsets are thus a lower
// bound that saves replay, never the source of truth.
//
// # Roles
//
// The protocol's roles map to the runtime as follows. An active task first
// replays the rest of its changelog (nothing for a promoted learner that was
// caught up, everything for a cold start), then processes its input, whose
// fetching is paused meanwhile. A learner or standby replays the changelog
// with a direct-assignment consumer of its own; the runtime reports its lag
// (changelog end offset minus restored offset) with every join, the
// largest lag for a copy whose store it has not listed yet (so that the
// leader never takes a copy not yet measured for caught up), and
// calls Ready for a learner whose lag is at most Options.AcceptableLag. A
// standby that becomes a learner, and a learner that becomes active, keep
// their store and replay only what they miss. A task whose learner or
// standby role ends keeps its store, open, for a later role; records
// fetched before the role ended may still be applied to it, which
// Observer.Restored reports with the role "none".
package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Processor processes one input record of a task: it reads and writes the
// task's state and emits output through ctx. An error stops the runtime.
type Processor func(ctx *Context, rec *kgo.Record) error

// Config configures a Runtime.
type Config struct {
	// Group is the consumer group; changelog topics are named after it
	// (ChangelogTopic).
	Group string
	// Subtopologies, Options and Policy are kgolearner's; every stateful
	// subtopology gets one store per task and one changelog topic. A
	// learner calls Ready, and a standby counts as caught up, once a lag
	// listing finds it within Options.AcceptableLag: at 0, only a listing
	// that finds it at the changelog's very end, which a busy changelog may
	// never allow; set it to about the records a task writes to its
	// changelog in a second or more (Kafka Streams' default is 10,000).
	Subtopologies []kgolearner.Subtopology
	Options       learner.Options
	Policy        learner.RejoinPolicy
	// Stores opens the tasks' stores; nil means a MemoryStores of the
	// runtime's own.
	Stores Stores
	// Process processes input records.
	Process Processor
	// ClientOpts are extra kgo options for the runtime's clients (brokers,
	// timeouts, logging).
	ClientOpts []kgo.Opt
	// Cooperative runs the same application on kgo's
	// CooperativeStickyBalancer instead of the learner protocol, for
	// comparison: no learners or standbys, so a moved task restores its
	// state cold. A revoke commits what the revoked tasks processed, as
	// in learner mode. Subtopologies must then have one topic each, since
	// that balancer does not co-partition.
	Cooperative bool
	// LagInterval is how often the runtime lists changelog end offsets to
	// update lags and readiness; zero means 100ms.
	LagInterval time.Duration
	// RestoreYield is how long an active batch may take, from poll to
	// acknowledgement, before the member's learners and standbys yield to
	// its active tasks: from then until no batch was slow for a second,
	// they restore one fetch per active batch (see restore.go). Zero
	// means 100ms; negative, they yield only after a full poll.
	RestoreYield time.Duration
	// DeliveryTimeout bounds the wait for each of a batch's writes (its
	// output, then its changelog records) to be acknowledged; zero or
	// negative means 2 minutes, the producer's delivery.timeout.ms
	// default, which Kafka Streams keeps. kgo retries without end a
	// write the broker answers with a code Kafka marks retriable
	// (NOT_ENOUGH_REPLICAS while a partition has fewer in-sync replicas
	// than its min.insync.replicas, NOT_LEADER_OR_FOLLOWER), and the
	// member would stall without a word. Past the timeout kgo fails the
	// write at its next attempt (under NOT_ENOUGH_REPLICAS, at each
	// metadata refresh: kgo.MetadataMinAge, 5 s by default), and the
	// batch goes round again as any failed write does, with an Error
	// event: one a timeout while the fault lasts. The event wraps
	// context.DeadlineExceeded, not the broker's code, which kgo drops
	// (it logs it at kgo.LogLevelDebug only).
	//
	// The timeout does not bound a write kgo sent without learning its
	// fate: one the broker never answers (hung with its connections
	// open, an answer lost), which kgo sends again each time the
	// connection's read deadline passes (kgo.ProduceRequestTimeout plus
	// kgo.RequestTimeoutOverhead, 10 s + 10 s by default) until an
	// answer acknowledges or refuses it, and one answered
	// REQUEST_TIMED_OUT or NOT_ENOUGH_REPLICAS_AFTER_APPEND, which the
	// broker may have written, and which kgo tries until it is
	// acknowledged. Failing such a write could leave it to land later,
	// so kgo does not, and the task waits for the broker; lower timeouts
	// only make each try shorter. Cancelling Run's ctx ends the wait 2 s
	// later (see Run). The wait is reported: an Error event
	// wrapping ErrWriteStalled twice the timeout after the write, and one
	// a timeout after that while it lasts (a timeout under half of
	// kgo.MetadataMinAge reports so a NOT_ENOUGH_REPLICAS write, too,
	// until kgo's next try fails it). Run
	// refuses kgo.AllowIdempotentProduceCancellation in ClientOpts,
	// which fails such a write at the timeout: it may then land after
	// the batch's retry, as a zombie's does (see the README).
	//
	// kgo.RecordDeliveryTimeout in ClientOpts applies too, but kgo
	// counts it from each record's Timestamp: an output record that
	// carries an input's timestamp older than that timeout fails at
	// every try, and its task never progresses.
	DeliveryTimeout time.Duration
	// Observer receives events; every field is optional.
	Observer Observer
}

// Observer receives a runtime's events. Callbacks run on the runtime's
// goroutines, without its locks held (they may call Status), and should
// return quickly: they delay processing or restoring.
type Observer struct {
	// Processed reports an input record whose effects are durable (its
	// changelog records and output are acknowledged).
	Processed func(task string, rec *kgo.Record)
	// Running reports that an active task caught up with its changelog and
	// processes input; replayed is the changelog records it restored
	// since it became active (zero for a promoted, caught-up learner).
	Running func(task string, replayed int64)
	// Restored reports changelog records applied to a task's store by a
	// task in role "learner", "standby" or "active" (catching up), or
	// "none": records fetched while the task was a learner or standby and
	// applied after that role ended, before the runtime stopped
	// restoring it (its store stays for a later role).
	Restored func(task, role string, records int)
	// Rebalanced reports a rebalance computed by this member as leader.
	Rebalanced func()
	// Error reports a transient error the runtime recovers from, such as
	// a failed attempt at a start step, which Run retries (see Run), or,
	// on the leader at every rebalance, input topics that do not match the
	// topology (kgolearner.ErrTopicsMismatch): until the topics or the
	// topology are fixed, the tasks of the subtopologies concerned stay
	// with the members that run them, and those nobody runs, unassigned.
	Error func(error)
}

// Runtime runs one member of a stateful application. Build it with New: on
// the zero Runtime, Run returns an error wrapping ErrInvalidConfig, Status
// reports nothing and Shutdown and Leave do nothing.
type Runtime struct {
	ran    atomic.Bool // Run was called: a Runtime runs once
	cfg    Config
	topo   *kgolearner.Balancer // topology, and the group balancer unless Cooperative
	cl     *kgo.Client          // group member: input, output, changelog writes
	rcl    *kgo.Client          // direct consumer of changelog partitions
	stores Stores

	mu          sync.Mutex
	cond        *sync.Cond
	tasks       map[string]*task
	byInput     map[string]string  // "topic/partition" -> task
	byChangelog map[string]string  // "changelog/partition" -> task
	wakePoll    context.CancelFunc // ends the poll in progress
	behind      bool               // an active batch was slow or full lately: restores yield
	slowAt      time.Time          // when an active batch was last slow or full
	urgent      bool               // an active task catches up with its changelog
	batches     uint64             // polls the poll loop has handled, for awaitTurn
	assignedAs  string             // Cooperative: the member ID of the last assignment (revokeActive)

	kickLag         chan struct{}
	kickCommit      chan struct{}
	toCommit        map[string]map[int32]kgo.EpochOffset // offsets for the commit loop
	missingSince    time.Time                            // lag loop: when a changelog topic went missing
	missingReported bool                                 // lag loop: the missing topic was reported
	runningListedAt time.Time                            // lag loop: when it last listed running tasks' changelogs
	startsListedAt  time.Time                            // lag loop: when it last listed empty stores' start offsets (skipDeleted)
	stopOnce        sync.Once
	stop            chan struct{} // closed by Shutdown: Run returns
	fatal           chan error
	failed          context.Context // done once fail was called: writes in flight stop
	cancelFailed    context.CancelFunc
	resets          atomic.Uint64  // stores reset so far (see restore)
	readyMu         sync.Mutex     // orders the lag loop's Ready and a reset's Unready (announceReady)
	limits          producerLimits // of cl, for recordFits
	abandoned       bool           // produce left a write in flight (the poll goroutine's; see Run)
}

// restoreFetchBytes caps a restore fetch.
const restoreFetchBytes = 256 << 10

// ErrStore wraps an error from a task's store.
var ErrStore = errors.New("state: store")

// ErrInvalidConfig is wrapped by the errors of a Config New or Run cannot
// use: a missing field, a topology kgolearner refuses, ClientOpts kgo
// refuses or that disable idempotent writes or allow their cancellation.
// It is kgolearner's, which the errors of the topology wrap already.
var ErrInvalidConfig = kgolearner.ErrInvalidConfig

// New builds a runtime. Run starts it. Its errors wrap ErrInvalidConfig.
func New(cfg Config) (*Runtime, error) {
	if cfg.Process == nil {
		return nil, fmt.Errorf("state: Config.Process is nil: %w", ErrInvalidConfig)
	}
	if cfg.Group == "" {
		return nil, fmt.Errorf("state: Config.Group is empty: %w", ErrInvalidConfig)
	}
	if cfg.LagInterval <= 0 {
		cfg.LagInterval = 100 * time.Millisecond
	}
	if cfg.RestoreYield == 0 {
		cfg.RestoreYield = 100 * time.Millisecond
	}
	if cfg.DeliveryTimeout <= 0 {
		cfg.DeliveryTimeout = 2 * time.Minute
	}
	r := &Runtime{cfg: cfg, stores: cfg.Stores, tasks: map[string]*task{}, byInput: map[string]string{}, byChangelog: map[string]string{},
		kickLag: make(chan struct{}, 1), kickCommit: make(chan struct{}, 1), toCommit: map[string]map[int32]kgo.EpochOffset{}, stop: make(chan struct{}), fatal: make(chan error, 1)}
	if r.stores == nil {
		r.stores = &MemoryStores{}
	}
	r.cond = sync.NewCond(&r.mu)
	r.failed, r.cancelFailed = context.WithCancel(context.Background())
	hooks := kgolearner.Hooks{
		StartActive:   r.startActive,
		StopActive:    r.stopActive,
		LoseActive:    r.dropActive,
		StartLearning: func(t string) { r.setRole(t, roleLearner) },
		StopLearning:  func(t string) { r.setRole(t, roleNone) },
		StartStandby:  func(t string) { r.setRole(t, roleStandby) },
		StopStandby:   func(t string) { r.setRole(t, roleNone) },
		Shutdown:      r.Shutdown,
		Rebalanced: func(round kgolearner.Round) {
			if round.Err != nil {
				// The input topics do not match the topology: the tasks of
				// the subtopologies concerned stay unassigned, and kgo's
				// logger, which a runtime's user rarely sets, is the only
				// other place that says why nothing is processed.
				r.observeError(fmt.Errorf("state: %w", round.Err))
			}
			if f := cfg.Observer.Rebalanced; f != nil {
				f()
			}
		},
	}
	b, err := kgolearner.New(kgolearner.Config{Subtopologies: cfg.Subtopologies, Options: cfg.Options, Policy: cfg.Policy, Hooks: hooks})
	if err != nil {
		return nil, fmt.Errorf("state: %w", err) // ErrInvalidConfig
	}
	r.topo = b
	for i, sub := range cfg.Subtopologies {
		if cfg.Cooperative && len(sub.Topics) != 1 {
			return nil, fmt.Errorf("state: subtopology %d has %d input topics; Cooperative needs one: %w", i, len(sub.Topics), ErrInvalidConfig)
		}
		for p := range sub.Partitions {
			id := taskID(i, p)
			t := &task{id: id, stateful: sub.Stateful, partition: p, inputs: b.Partitions(id)}
			if sub.Stateful {
				t.changelog = ChangelogTopic(cfg.Group, i)
				r.byChangelog[inputKey(t.changelog, p)] = id
			}
			for _, topic := range sub.Topics {
				r.byInput[inputKey(topic, p)] = id
			}
			r.tasks[id] = t
		}
	}
	return r, nil
}

// clientOpts returns the options of the group member's client, whose
// context is ctx.
func (r *Runtime) clientOpts(ctx context.Context) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.WithContext(ctx),
		kgo.ConsumerGroup(r.cfg.Group),
		kgo.BlockRebalanceOnPoll(),
		kgo.DisableAutoCommit(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	if r.cfg.Cooperative {
		opts = append(opts,
			kgo.ConsumeTopics(topicsOf(r.cfg.Subtopologies)...),
			kgo.Balancers(countingBalancer{kgo.CooperativeStickyBalancer(), r.cfg.Observer.Rebalanced}),
			kgo.OnPartitionsAssigned(r.assignActive),
			kgo.OnPartitionsRevoked(r.revokeActive),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { r.eachTask(ps, r.dropActive) }),
		)
	} else {
		opts = append(opts, r.topo.Opts()...)
	}
	return slices.Concat(r.cfg.ClientOpts, opts)
}

// Run runs the member until ctx is done, Leave has handed its tasks over,
// or a fatal error (a store that fails, a bad changelog record, an error of
// Process, a write the broker refuses with an error code that writing
// again would meet, such as INVALID_RECORD; a changelog topic deleted, or
// deleted and recreated, while it runs: the state the topic held is no
// longer durable, and going on would hide that). It creates the changelog
// topics that are missing, refuses existing ones it cannot use
// (ErrChangelogTopic), opens the stores left from an earlier run (clearing
// those of a changelog topic since deleted and recreated, see
// Checkpoint.ChangelogID) and reports their lag at the first join.
//
// Run rides out brokers that are unreachable or refuse for a while at
// start, as it does once running. A start step that fails (the changelog
// topics' metadata, policies and creation; the stores' end offsets) goes
// to Observer.Error and is tried again, after 100 ms, a wait that doubles
// with every failure up to 1 s, until it succeeds or ctx is done. The
// rule, applied to what a request returns once kgo's own retries of it
// gave up: a broker's error code is retried if Kafka marks it retriable
// (kerr.IsRetriable), or is UNKNOWN_SERVER_ERROR (a broker's answer to any
// unexpected failure, passing ones too), and stops Run at once if not, as
// authorization and SASL errors (kerr.TopicAuthorizationFailed,
// ClusterAuthorizationFailed, SaslAuthenticationFailed) and a replication
// factor the brokers refuse do; an error of the connection is retried: a dial refused or failed, a
// name that does not resolve, a timeout, a connection cut, or closed at
// its first request, which kgo reports as a TLS or SASL mismatch
// (kgo.ErrFirstReadEOF) but a broker going down causes too; any other
// error stops Run at once: ErrChangelogTopic, ErrInvalidConfig, ErrStore,
// a TLS handshake that fails, and kgo's errors that kgo does not retry
// either (kgo.IsRetryableBrokerErr). A changelog topic the brokers do not
// know, as for a second or so after Run (or another member, whose creation
// came first) created it, is retried without an Error event for 5 s, and
// stops Run after 10 s, as it does once running.
// Cancelling ctx during the start makes Run return at once, with an error
// wrapping ctx's and the last failure; Shutdown makes it return nil.
//
// Cancelling ctx ends the batch in flight: writes the broker answers within
// 2 s of the cancel complete it; one it has not answered by then (Shutdown
// and Leave wait for those) is abandoned with the batch, as a crash would;
// call Leave for an orderly hand-over. A write abandoned so may still land,
// so Run then returns as a crash would too: its client commits nothing and
// sends no LeaveGroup, and the group keeps the member until its session
// timeout, rather than let the next owners of its tasks restore their
// changelogs before the write lands. Otherwise Run leaves the group: its
// group client stops the member's tasks, commits the offsets of what they
// processed and sends a LeaveGroup, after a JoinGroup or SyncGroup in
// flight is answered. It gets 2 s from the cancel for that, the write's
// grace included: a request the broker has not answered by then (a broker
// hung, or a rebalance another member holds up, whose JoinGroup the
// coordinator may answer only at the rebalance timeout) is abandoned, as a
// crash would, and Run returns (the restore client's close is bounded
// alike). A kgo.WithContext in ClientOpts ends the clients too: one that
// ends with ctx leaves no grace for the leave. The group then notices the
// member gone after its session timeout (or the rebalance timeout), and the
// next owners process again what the commit missed, skipping what their
// state holds. Without the cancel, after Shutdown or Leave, the leave waits
// as long as kgo does: 10 s for the commit (kgolearner's commit timeout, or
// with Cooperative the runtime's), kgo.RetryTimeout (30 s by default) for
// the LeaveGroup, the rebalance timeout plus kgo.RequestTimeoutOverhead
// (70 s by default) for a JoinGroup; cancelling ctx meanwhile ends it 2 s
// later. A Runtime runs once: Run called again returns an error wrapping
// ErrInvalidConfig at once, as it does on a Runtime not built with New.
func (r *Runtime) Run(ctx context.Context) (err error) {
	if !r.built() {
		return fmt.Errorf("state: Run on a Runtime not built with New: %w", ErrInvalidConfig)
	}
	if r.ran.Swap(true) {
		return fmt.Errorf("state: Run called again: a Runtime runs once: %w", ErrInvalidConfig)
	}
	// The restore client's defaults come first, so ClientOpts may change
	// them. A short metadata age lists a changelog topic just created in
	// about a second rather than kgo's default five. Fetches are capped
	// well below kgo's 50 MB: a restore then shares the broker with the
	// active tasks' writes in small slices instead of holding it for one
	// huge response (on the in-process kfake, a 50 MB restore fetch stalled
	// every member's processing for its whole duration). An offset out of
	// range is returned, not reset: the restore loop resets the store.
	// A changelog seeded by a transactional producer is read as committed,
	// whatever ClientOpts say of the input: an aborted transaction's
	// records never happened. Control records are returned so that the
	// restore counts their offsets: such a changelog may end with one. Its
	// end offset stays the high watermark (EndOffsets), so that an active
	// task waits for a transaction still open rather than write after
	// records its store lacks.
	//
	// The clients get leaveGrace, once ctx is done, to commit and leave
	// the group, end their fetch sessions and push their last metrics
	// (TestCancelBoundsTheRestoreClientsClose): past it, their context
	// (closing) ends, which fails at once the requests the broker has not
	// answered (the commit, the LeaveGroup, a JoinGroup or SyncGroup in
	// flight), and their Close returns.
	closing, abandon := context.WithCancel(context.Background())
	defer abandon()
	defer context.AfterFunc(ctx, func() {
		t := time.NewTimer(leaveGrace)
		defer t.Stop()
		select {
		case <-t.C:
			abandon()
		case <-closing.Done():
		}
	})()
	r.rcl, err = kgo.NewClient(slices.Concat([]kgo.Opt{kgo.WithContext(closing), kgo.MetadataMinAge(time.Second),
		kgo.FetchMaxBytes(restoreFetchBytes), kgo.FetchMaxPartitionBytes(restoreFetchBytes / 4)},
		r.cfg.ClientOpts, []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}), kgo.ConsumeResetOffset(kgo.NoResetOffset()),
			kgo.KeepControlRecords(), kgo.FetchIsolationLevel(kgo.ReadCommitted())})...)
	if err != nil {
		return fmt.Errorf("state: %w: %w", ErrInvalidConfig, err) // kgo refuses only options
	}
	defer r.rcl.Close()
	// Without idempotent writes a refused batch may be followed by one
	// that lands, and a restore would take that one's position without
	// the refused changes (see groupHeader). With cancellation a batch
	// failed at its timeout may land after its retry (see
	// Config.DeliveryTimeout). Checked on the restore client, which has
	// ClientOpts too, before anything is created.
	for _, o := range []struct {
		opt  any
		what string
	}{
		{kgo.DisableIdempotentWrite, "disable idempotent writes, which the changelog relies on"},
		{kgo.AllowIdempotentProduceCancellation, "allow idempotent produce cancellation, whose failed writes may land after the changelog's next ones"},
	} {
		if on, _ := r.rcl.OptValue(o.opt).(bool); on {
			return fmt.Errorf("state: ClientOpts %s: %w", o.what, ErrInvalidConfig)
		}
	}
	var ids map[string][16]byte
	if err := r.startRetry(ctx, func(ctx context.Context) (err error) {
		ids, err = ensureTopics(ctx, r.rcl, r.changelogPartitions(), r.observeError)
		return err
	}); err != nil {
		return startErr(err)
	}
	for _, t := range r.tasks { // before any store opens
		t.changelogID = ids[t.changelog]
	}
	// Whatever stops Run from here, the start included, closes the stores
	// it opened: a store left open stays locked (bbolt's file lock) for
	// the rest of the process. On the normal path the loops that use
	// them have ended by then.
	defer r.closeStores()
	if err := r.openLocal(ctx); err != nil {
		return startErr(err)
	}
	// A kgo.WithContext of ClientOpts' replaces closing in the restore
	// client: the member's client ends with either. kgo takes a nil one
	// for context.Background, which WithCancel refuses with a panic.
	member, _ := r.rcl.OptValue(kgo.WithContext).(context.Context)
	if member == nil {
		member = context.Background()
	}
	member, endMember := context.WithCancel(member)
	defer endMember()
	defer context.AfterFunc(closing, endMember)()
	r.mu.Lock()
	r.cl, err = kgo.NewClient(r.clientOpts(member)...)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("state: %w: %w", ErrInvalidConfig, err)
	}
	r.readLimits()
	if !r.cfg.Cooperative {
		r.topo.Bind(r.cl)
	}
	loops, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.restoreLoop(loops) })
	wg.Go(func() { r.lagLoop(loops) })
	wg.Go(func() { r.commitLoop(loops) })
	err = r.pollLoop(ctx)
	if ctx.Err() == nil {
		r.commitQueued(ctx) // an orderly stop commits what it processed
	}
	if r.abandoned {
		// The write may still land: the member stays in the group until
		// its session ends, as a crashed one does, rather than let its
		// tasks' next owners restore before it lands. Its client sends
		// neither the revoke's commit nor a LeaveGroup.
		endMember()
	}
	r.cl.Close() // leaves the group
	cancel()
	wg.Wait()
	return err
}

// leaveGrace is how long Run's clients may take to commit, leave the
// group and close once Run's ctx is done (see Run): a broker answers
// their requests in milliseconds, and one that does not may never.
const leaveGrace = 2 * time.Second

// Leave hands the member's tasks over and then makes Run return: with the
// learner protocol, its tasks go to learners on the other members first
// (until deadline, if not zero; see kgolearner.Balancer.Leave); with
// Cooperative, it leaves the group at once. Before Run's start is over
// (its retries through an outage included), the member has joined no
// group and has nothing to hand over: Leave is then Shutdown.
func (r *Runtime) Leave(deadline time.Time) {
	r.mu.Lock()
	started := r.cl != nil
	r.mu.Unlock()
	if r.cfg.Cooperative || !started {
		r.Shutdown()
		return
	}
	r.topo.Leave(deadline)
}

// Shutdown makes Run return after the batch in flight, leaving the group
// without a hand-over. The batch's writes are waited for, one the broker
// does not answer too (see Config.DeliveryTimeout), and so is the leave,
// as long as kgo waits for the broker (see Run): cancelling ctx ends
// either wait.
func (r *Runtime) Shutdown() {
	if r.built() {
		r.stopOnce.Do(func() { close(r.stop) })
	}
}

// built reports whether New built r: the zero Runtime has no topology, no
// stop channel, nothing to run or stop.
func (r *Runtime) built() bool { return r.topo != nil }

// fail stops the runtime with err; the first error wins. It ends the
// writes in flight (produce), which kgo may otherwise retry for many
// seconds (a deleted changelog topic), so that Run returns soon. Run then
// leaves the group at once, unlike after a cancel (see Run): a write so
// abandoned may still land after its task's next owner restored. Staying
// in the group until the session ends, as after a cancel, would make every
// such error cost the other members a session timeout, as a crash does
// (their stops waited 2 s or 12 s instead of 0.1 s in
// TestChangelogTopicRecreatedWhileRunning).
func (r *Runtime) fail(err error) {
	select {
	case r.fatal <- err:
	default:
	}
	r.cancelFailed()
}

func (r *Runtime) observeError(err error) {
	if f := r.cfg.Observer.Error; f != nil {
		f(err)
	}
}

// changelogPartitions returns the partition count of every changelog topic.
func (r *Runtime) changelogPartitions() map[string]int32 {
	out := map[string]int32{}
	for i, s := range r.cfg.Subtopologies {
		if s.Stateful {
			out[ChangelogTopic(r.cfg.Group, i)] = s.Partitions
		}
	}
	return out
}

// openLocal opens the stores the member kept from an earlier run and
// reports their lag, so that the first join already tells the leader.
func (r *Runtime) openLocal(ctx context.Context) error {
	ids, err := r.stores.Local()
	if err != nil {
		return fmt.Errorf("%w: list local stores: %w", ErrStore, err)
	}
	slices.Sort(ids)
	parts := map[string][]int32{}
	for _, id := range ids {
		t := r.tasks[id]
		if t == nil || !t.stateful {
			continue // state of a topology this member no longer runs
		}
		if err := r.open(t); err != nil {
			return err
		}
		parts[t.changelog] = append(parts[t.changelog], t.partition)
	}
	if len(parts) == 0 || r.cfg.Cooperative {
		return nil
	}
	var ends map[string]map[int32]int64
	if err := r.startRetry(ctx, func(ctx context.Context) (err error) {
		ends, err = EndOffsets(ctx, r.rcl, parts)
		return err
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if t := r.tasks[id]; t != nil && t.stateful {
			if err := r.topo.SetLag(id, max(0, ends[t.changelog][t.partition]-t.restored)); err != nil {
				return err // cannot happen: the topology's task IDs are valid
			}
		}
	}
	return nil
}

// The waits between the attempts of a start step (startRetry): the first,
// doubled after every failure up to the last. They are the defaults of
// Kafka's own clients (retry.backoff.ms and retry.backoff.max.ms, KIP-580),
// and the last is short enough for a changelog topic just created, which
// metadata lists after a second or so.
const (
	startBackoffMin = 100 * time.Millisecond
	startBackoffMax = time.Second
)

// errStopped is startRetry's error when Shutdown stopped the start.
var errStopped = errors.New("state: shut down during the start")

// startErr is Run's error for a start that failed with err: none if
// Shutdown stopped it.
func startErr(err error) error {
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// startRetry runs step, a start step of Run, until it succeeds, fails with
// an error retrying cannot fix (startRetriable), or ctx is done or
// Shutdown called, which also cancel the attempt in flight. It waits
// startBackoffMin between attempts, doubled after every failure up to
// startBackoffMax, and reports every failure it retries to Observer.Error
// but those of a changelog topic the brokers do not know
// (UNKNOWN_TOPIC_OR_PARTITION), as a broker answers for a while after Run
// created the topic: these it reports once the topic has been missing for
// missingTopicTimeout/2, and it fails after missingTopicTimeout, as the
// lag loop does once running (the topic was deleted, and recreating it
// would hide lost state). When ctx is done, its error wraps ctx's and the
// last failure.
func (r *Runtime) startRetry(ctx context.Context, step func(context.Context) error) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-sctx.Done():
		}
	}()
	var last error // the last failure that was not ctx's
	var missingSince time.Time
	for wait := startBackoffMin; ; wait = min(2*wait, startBackoffMax) {
		err := step(sctx)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			if last == nil || !errors.Is(err, ctx.Err()) {
				last = err
			}
			return startAbandoned(ctx, last)
		case sctx.Err() != nil:
			return errStopped
		case !startRetriable(err):
			return err
		}
		last = err
		switch {
		case !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, kerr.UnknownTopicID):
			missingSince = time.Time{}
			r.observeError(fmt.Errorf("%w (Run retries its start in %v)", err, wait))
		case missingSince.IsZero():
			missingSince = time.Now()
		case time.Since(missingSince) > missingTopicTimeout:
			return fmt.Errorf("state: changelog topic missing for %v: %w", missingTopicTimeout, err)
		case time.Since(missingSince) > missingTopicTimeout/2:
			r.observeError(fmt.Errorf("%w (missing for %v; Run retries its start in %v, and stops if it still is after %v)",
				err, time.Since(missingSince).Round(time.Second), wait, missingTopicTimeout))
		}
		t := time.NewTimer(wait)
		select {
		case <-sctx.Done():
			t.Stop()
			if ctx.Err() == nil {
				return errStopped
			}
			return startAbandoned(ctx, last)
		case <-t.C:
		}
	}
}

// startAbandoned is startRetry's error when ctx is done: it wraps ctx's
// error and last, the last failure.
func startAbandoned(ctx context.Context, last error) error {
	if errors.Is(last, ctx.Err()) {
		return last // the first attempt, cut short by ctx
	}
	return fmt.Errorf("state: start abandoned: %w; last failure: %w", ctx.Err(), last)
}

// startRetriable reports whether a start step that failed with err may
// succeed if tried again (see Run for the rule). What the member's own
// configuration causes never does: ErrChangelogTopic, ErrInvalidConfig,
// ErrStore. A broker's error code is retriable unless fatalCode says it is
// not (authorization and SASL errors). The other errors are kgo's: those
// of the connection are retried, whatever kgo does with them itself (it
// fails at once on a refused dial to a seed broker, on a connection
// closed at its first request (ErrFirstReadEOF), and so would Run), and
// so are those kgo retries (kgo.IsRetryableBrokerErr); any other (a
// broker too old for a request, a TLS certificate refused) is not.
func startRetriable(err error) bool {
	if errors.Is(err, ErrChangelogTopic) || errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrStore) {
		return false
	}
	if _, ok := errors.AsType[*kerr.Error](err); ok {
		return !fatalCode(err)
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && (oe.Op == "remote error" || oe.Op == "local error") {
		// A TLS alert, received or sent (crypto/tls reports both as a
		// net.OpError of these Ops): a handshake the broker or the member
		// refused, a certificate missing, unknown or expired, which no
		// retry fixes (kgo does not retry it either).
		return false
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true // a dial, a DNS lookup, a read or write timing out
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || kgo.IsRetryableBrokerErr(err)
}

// fatalCode reports whether err carries a broker's error code that
// retrying cannot fix: one Kafka marks not retriable (an authorization
// error, say), which stops Run at once during its start (startRetriable)
// and once it runs: kgo returns such a fetch error at every poll, at once,
// so a loop that reported it and polled again would spin without ever
// progressing. Not UNKNOWN_SERVER_ERROR, though Kafka marks it so: a broker
// answers it for any unexpected failure, a passing one too, and the next
// request may succeed (the Java consumer logs it and fetches again).
func fatalCode(err error) bool {
	_, ok := errors.AsType[*kerr.Error](err)
	return ok && !kerr.IsRetriable(err) && !errors.Is(err, kerr.UnknownServerError)
}

// open opens the task's store, once. A store whose checkpoint names
// another changelog topic ID than the task's (a store kept from a topic
// since deleted and recreated, see recreated) is reset: the new topic's
// offsets restart at zero, so a restore from the store's checkpoint would
// extend its state with records of another history, silently whenever the
// new topic holds that offset.
func (r *Runtime) open(t *task) error {
	cp, opened, err := r.openStore(t)
	if err != nil || !opened {
		return err
	}
	if why := recreated(t.changelog, cp.ChangelogID, t.changelogID); why != "" {
		return r.reset(t, "from "+why)
	}
	return nil
}

// openStore is open without the check of the changelog's ID: it returns
// the checkpoint of the store it opened, if it opened one.
func (r *Runtime) openStore(t *task) (Checkpoint, bool, error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	if t.store != nil || !t.stateful {
		return Checkpoint{}, false, nil
	}
	s, err := r.stores.Open(t.id)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("%w: open task %s: %w", ErrStore, t.id, err)
	}
	cp, err := s.Checkpoint()
	if err == nil {
		err = cp.check()
	}
	if err != nil {
		s.Close()
		return Checkpoint{}, false, fmt.Errorf("%w: task %s checkpoint: %w", ErrStore, t.id, err)
	}
	t.store, t.cp = s, cp
	r.mu.Lock()
	t.opened, t.restored = true, cp.Changelog
	r.mu.Unlock()
	return cp, true, nil
}

// closeStores closes the open stores, reporting their errors once the
// task's lock is released, as Observer promises.
func (r *Runtime) closeStores() {
	for _, t := range r.tasks {
		var err error
		t.applyMu.Lock()
		if t.store != nil {
			err = t.store.Close()
			t.store = nil
		}
		t.applyMu.Unlock()
		if err != nil {
			r.observeError(fmt.Errorf("%w: close task %s: %w", ErrStore, t.id, err))
		}
	}
}

// startActive is the StartActive hook: a stateful task replays the rest of
// its changelog, its input paused, before it processes input.
func (r *Runtime) startActive(id string) {
	t := r.tasks[id]
	if t == nil {
		return
	}
	if err := r.open(t); err != nil {
		r.fail(err)
		return
	}
	r.mu.Lock()
	t.role, t.running, t.caughtUp = roleActive, !t.stateful, false
	t.activatedAt, t.replayed = time.Now(), 0
	if t.stateful {
		r.cl.PauseFetchPartitions(t.inputs)
	} else {
		r.cl.ResumeFetchPartitions(t.inputs)
	}
	r.mu.Unlock()
	r.kick()
}

// stopActive is the StopActive hook (and, through dropActive, LoseActive
// and the Cooperative revoke and loss callbacks). It waits for the task's
// batch in flight to be acknowledged and applied, so that its store and
// changelog hold everything it processed, and returns nil. After it the
// offsets kgo counts as polled for the task's partitions are processed
// ones (collect and step give the others back): on a revoke, kgolearner
// (learner mode) or revokeActive (Cooperative) then commits them; after a
// loss, or a revoke once the member rejoined under a new member ID, nobody
// does: the membership that ran the task is gone. It never commits itself,
// so it cannot block on kgo's commit lock whatever goroutine calls it.
func (r *Runtime) stopActive(id string) error {
	t := r.tasks[id]
	if t == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for t.busy {
		r.cond.Wait()
	}
	t.stops.Add(1) // see commitQueued
	if t.role == roleActive {
		t.role = roleNone
	}
	t.running, t.caughtUp = false, false
	r.cl.PauseFetchPartitions(t.inputs)
	// The offsets queued for the task are processed ones, which the
	// revoke's commit covers (and a loss must not commit); left queued,
	// they could be committed after the task came back here and another
	// owner had committed further, moving the group back.
	for topic := range t.inputs {
		delete(r.toCommit[topic], t.partition)
	}
	return nil
}

// dropActive is stopActive for callbacks that take no error.
func (r *Runtime) dropActive(id string) { _ = r.stopActive(id) }

// assignActive is the Cooperative OnPartitionsAssigned callback, which kgo
// runs at the start of every session: it starts the added partitions'
// tasks, and notes the member ID the session runs under.
func (r *Runtime) assignActive(_ context.Context, cl *kgo.Client, added map[string][]int32) {
	id, _ := cl.GroupMetadata()
	r.mu.Lock()
	r.assignedAs = id
	r.mu.Unlock()
	r.eachTask(added, r.startActive)
}

// revokeActive is the Cooperative OnPartitionsRevoked callback. kgo runs it
// with the partitions a rebalance took away once the member has synced the
// new generation, before it rejoins to give them up, and with every
// partition when the client closes, before its LeaveGroup (with none at a
// session's end, when it does nothing). It stops the partitions' tasks and
// then commits what they processed, as kgolearner does for a revoke in
// learner mode: left uncommitted, those records would be processed again
// by the partitions' next owners. The commit must be made here: kgo forgets
// the revoked partitions' polled offsets once the callback returns.
//
// A member that rejoined under a new member ID (the coordinator dropped it
// during the rebalance, and kgo joined again without one) gets the revoke
// of what it ran under the old ID, which the group may since have given to
// another member that committed further: it commits nothing, as after a
// loss (kgolearner's PartitionsRevoked does the same).
func (r *Runtime) revokeActive(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	r.eachTask(revoked, r.dropActive)
	id, _ := cl.GroupMetadata()
	r.mu.Lock()
	rejoined := r.assignedAs != "" && id != r.assignedAs
	r.mu.Unlock()
	if !rejoined {
		r.commitPolled(ctx, cl, revoked)
	}
}

// commitPolled synchronously commits, within commitTimeout, the offsets
// kgo counts as polled for partitions, whose tasks stopped (stopActive):
// processed ones. A failed commit is reported (Observer.Error); the next
// owner then processes those records again, or skips what its state holds.
// Once Run's ctx is done, a commit the broker does not answer ends with
// the client's context, leaveGrace later (see Run), whether the revoke is
// the leave's or one under way at the cancel.
//
// It runs in a revoke callback, where a commit cannot deadlock: kgo runs
// the callback outside the JoinGroup and SyncGroup (whose lock commits
// wait for), once the poll loop allowed the rebalance (BlockRebalanceOnPoll;
// the commit needs no poll), and a commit of commitQueued's in flight only
// delays this one: kgo sends commits one at a time, in order, and that
// commit's callback and PreCommitFnContext take none of the runtime's
// locks. The commit carries the member ID and generation kgo holds then,
// those of the session the revoke runs in: the generation whose SyncGroup
// took the partitions away (or, closing, the one the member leaves). Kafka
// accepts a commit of the current generation until the next rebalance's
// joins are in, which waits for this member's JoinGroup, sent after the
// callback; a member the coordinator dropped meanwhile (the rebalance
// timeout ran out) has its commit refused, and the error reported.
func (r *Runtime) commitPolled(ctx context.Context, cl *kgo.Client, partitions map[string][]int32) {
	polled := cl.UncommittedOffsets()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for topic, ps := range partitions {
		for _, p := range ps {
			if eo, ok := polled[topic][p]; ok {
				if offsets[topic] == nil {
					offsets[topic] = map[int32]kgo.EpochOffset{}
				}
				offsets[topic][p] = eo
			}
		}
	}
	if len(offsets) == 0 {
		return
	}
	r.commitSync(ctx, cl, offsets, "commit of revoked partitions", nil)
}

// setRole is the hook of a learner or standby starting (role) or stopping
// (roleNone).
func (r *Runtime) setRole(id string, ro role) {
	t := r.tasks[id]
	if t == nil || !t.stateful {
		return
	}
	var unmeasured bool
	if ro != roleNone {
		r.mu.Lock()
		unmeasured = !t.opened
		r.mu.Unlock()
		if err := r.open(t); err != nil {
			r.fail(err)
			return
		}
	}
	r.mu.Lock()
	switch {
	case ro != roleNone:
		if (unmeasured || t.activatedUnlisted()) && !r.cfg.Cooperative {
			// A copy whose lag the lag loop has not listed: a store opened
			// just now, or one that became active here and has not been
			// listed since (it never ran). Reported without a lag, Assign
			// would take it as caught up (rule 13: a standby reporting no
			// lag) and release the copy it replaces, or rank it before a
			// measured copy behind it (rule 5), at a join before the first
			// listing (kgo's follow-up rebalance comes at once). It reports
			// the largest lag until then: not caught up. Any other store
			// keeps what the member reports for it: the lag the loop listed
			// (it lists every open store that is not running, with a role
			// or without), or none for a store that ran active until now,
			// whose state is current. The balancer calls the hooks with
			// its lock released.
			_ = r.topo.SetLag(id, math.MaxInt64) // cannot fail: the topology's task IDs are valid
		}
		t.role, t.ready = ro, false
	case t.role == roleLearner || t.role == roleStandby:
		t.role = roleNone
	}
	r.mu.Unlock()
	r.kick()
}

// eachTask calls fn for the tasks of partitions (Cooperative's callbacks).
func (r *Runtime) eachTask(partitions map[string][]int32, fn func(string)) {
	var ids []string
	for topic, ps := range partitions {
		for _, p := range ps {
			if id, ok := r.byInput[inputKey(topic, p)]; ok {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		fn(id)
	}
}

// kick makes the lag loop run now.
func (r *Runtime) kick() {
	select {
	case r.kickLag <- struct{}{}:
	default:
	}
}

func taskID(sub int, partition int32) string { return fmt.Sprintf("%d_%d", sub, partition) }

func inputKey(topic string, partition int32) string { return fmt.Sprintf("%s/%d", topic, partition) }

func topicsOf(subs []kgolearner.Subtopology) []string {
	var out []string
	for _, s := range subs {
		out = append(out, s.Topics...)
	}
	return out
}

// countingBalancer reports every rebalance its member leads.
type countingBalancer struct {
	kgo.GroupBalancer
	rebalanced func()
}

func (c countingBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	if c.rebalanced != nil {
		c.rebalanced()
	}
	return c.GroupBalancer.MemberBalancer(members)
}

// Status is what a member does with its tasks.
type Status struct {
	// Active lists the tasks it processes, Restoring those of them still
	// catching up with their changelog; Learning and Standby the tasks it
	// replays beside their owners. Each in task order.
	Active, Restoring, Learning, Standby []string
	// Lag is, for each learner and standby task whose changelog end has
	// been listed (every Config.LagInterval), the records it had left to
	// replay then; a task not listed yet is absent.
	Lag map[string]int64
}

// Status returns what the member does now: nothing on a Runtime not built
// with New.
func (r *Runtime) Status() Status {
	if !r.built() {
		return Status{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var s Status
	for _, t := range r.topo.Tasks() {
		rt := r.tasks[t.ID]
		switch rt.role {
		case roleActive:
			s.Active = append(s.Active, t.ID)
			if !rt.running {
				s.Restoring = append(s.Restoring, t.ID)
			}
		case roleLearner:
			s.Learning = append(s.Learning, t.ID)
		case roleStandby:
			s.Standby = append(s.Standby, t.ID)
		}
		if (rt.role == roleLearner || rt.role == roleStandby) && !rt.endAt.IsZero() {
			if s.Lag == nil {
				s.Lag = map[string]int64{}
			}
			s.Lag[t.ID] = max(0, rt.end-rt.restored)
		}
	}
	return s
}
