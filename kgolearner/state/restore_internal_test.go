package state

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// While an active task catches up, learners and standbys pause; its own
// changelog partition runs even if it was paused as a learner's before.
func TestPrioritize(t *testing.T) {
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 3, Stateful: true}}})
	require.NoError(t, err)
	r.rcl, err = kgo.NewClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{}))
	require.NoError(t, err)
	defer r.rcl.Close()
	paused := func() map[string][]int32 { return r.rcl.PauseFetchPartitions(nil) }
	for _, id := range []string{"0_0", "0_1", "0_2"} {
		r.tasks[id].consuming, r.tasks[id].role = true, roleLearner
	}

	r.tasks["0_0"].role = roleActive
	r.prioritize()
	require.Equal(t, map[string][]int32{"g-0-changelog": {1, 2}}, sorted(paused()), "paused while 0_0 catches up")

	r.tasks["0_0"].role, r.tasks["0_1"].role = roleLearner, roleActive
	r.prioritize()
	require.Equal(t, map[string][]int32{"g-0-changelog": {0, 2}}, sorted(paused()), "paused while 0_1, paused before, catches up")

	r.tasks["0_1"].consuming = false // caught up: it runs
	r.prioritize()
	require.Empty(t, paused(), "paused with no task catching up")
}

func sorted(m map[string][]int32) map[string][]int32 {
	for _, ps := range m {
		slices.Sort(ps)
	}
	return m
}

// Learner and standby restores yield to slow active batches, one turn per
// active batch, until no batch was slow for yieldHold; they never wait
// while an active task catches up.
func TestAwaitTurn(t *testing.T) {
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}}})
	require.NoError(t, err)
	ctx := context.Background()
	var turn uint64
	returns := func() bool {
		done := make(chan struct{})
		go func() { r.awaitTurn(ctx, &turn); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(50 * time.Millisecond):
			r.paced(0, false) // end the wait: the batch the restore loop waits for
			<-done
			return false
		}
	}

	r.paced(10*time.Millisecond, false)
	require.True(t, returns(), "awaitTurn waited after a fast batch")
	require.True(t, returns(), "awaitTurn waited after a fast batch, second turn")

	r.paced(r.cfg.RestoreYield+time.Millisecond, false)
	require.True(t, returns(), "awaitTurn waited for its first turn after a slow batch")
	require.False(t, returns(), "awaitTurn took a second turn with no active batch in between")
	r.paced(0, false)
	require.True(t, returns(), "awaitTurn waited after an active batch, within yieldHold of a slow one")
	require.False(t, returns(), "awaitTurn stopped yielding within yieldHold of a slow batch")

	r.mu.Lock()
	r.urgent = true
	r.mu.Unlock()
	require.True(t, returns(), "awaitTurn waited while an active task catches up")
	require.True(t, returns(), "awaitTurn waited while an active task catches up, second turn")
	r.mu.Lock()
	r.urgent = false
	r.mu.Unlock()

	r.paced(0, true)
	require.True(t, returns(), "awaitTurn waited for its first turn after a full poll")
	require.False(t, returns(), "awaitTurn did not yield after a full poll")

	r.mu.Lock()
	r.slowAt = time.Now().Add(-yieldHold)
	r.mu.Unlock()
	r.paced(0, false)
	require.True(t, returns(), "awaitTurn yielded yieldHold after the last slow batch")
	require.True(t, returns(), "awaitTurn yielded yieldHold after the last slow batch, second turn")

	cctx, cancel := context.WithCancel(ctx)
	r.paced(time.Second, false)
	r.awaitTurn(cctx, &turn)
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
		r.mu.Lock()
		r.cond.Broadcast() // as restoreLoop's AfterFunc does
		r.mu.Unlock()
	}()
	r.awaitTurn(cctx, &turn) // returns once ctx is done
}

// validPositions accepts exactly what parsePositions parses into at least
// one position.
func TestValidPositions(t *testing.T) {
	for _, s := range []string{"", "a=1", "a=0;b=12", "a=1;", ";a=1", "a=", "=1", "a=-1", "a=1x", "a=+1", "a=b=1",
		"a=9223372036854775807", "a=9223372036854775808", "a=99999999999999999999", "a=00000000000000000001", "a=01;b=2"} {
		pos, err := parsePositions(bytes.Split([]byte(s), []byte(";")))
		want := err == nil && len(pos) > 0
		assert.Equal(t, want, validPositions([]byte(s)), "validPositions(%q)", s)
	}
}

// Records polled before a store's reset continue what the store held
// before it: restore drops them, and takes those polled after.
func TestRestoreDropsRecordsPolledBeforeReset(t *testing.T) {
	r, tk := openedTask(t)
	rec := func(offset int64, key string) *kgo.Record {
		rec := ChangelogRecord("g-0-changelog", 0, []byte(key), []byte("v"), map[string]int64{"in": offset + 1})
		rec.Offset = offset
		return rec
	}
	has := func(key string) bool {
		_, ok, err := tk.store.Get([]byte(key))
		require.NoError(t, err)
		return ok
	}
	require.NoError(t, r.restore(tk, []*kgo.Record{rec(0, "a"), rec(1, "b")}, r.resets.Load()))
	require.True(t, has("b"), "b after its record was restored")

	polled := r.resets.Load()
	require.NoError(t, r.reset(tk, "in a test"))
	require.NoError(t, r.restore(tk, []*kgo.Record{rec(2, "c")}, polled))
	require.False(t, has("c"), "c, whose record was polled before the reset, in the store")
	require.Zero(t, tk.restored, "restored offset after a record polled before the reset")

	require.NoError(t, r.restore(tk, []*kgo.Record{rec(0, "a")}, r.resets.Load()))
	require.True(t, has("a"), "a, polled after the reset, in the store")
	require.False(t, has("b"), "b, cleared by the reset, in the store")
}

// A changelog record the store cannot apply stops the restore: the restore
// loop reports the error and returns, rather than go on and apply the
// records after the bad one, which would carry the store's checkpoint past
// a record it never applied (a restart would then skip it for good).
func TestBadChangelogRecordStopsTheRestore(t *testing.T) {
	const changelog = "g-0-changelog"
	_, seed, prod := oneTopicCluster(t, changelog)
	good := func(key string, next int64) *kgo.Record {
		return ChangelogRecord(changelog, 0, []byte(key), []byte("v"), map[string]int64{"in": next})
	}
	bad := &kgo.Record{Topic: changelog, Partition: 0, Key: []byte("b"), Value: []byte("no position header")}
	require.NoError(t, prod.ProduceSync(context.Background(), good("a", 1), bad, good("c", 2)).FirstErr())

	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}}})
	require.NoError(t, err)
	r.rcl, err = kgo.NewClient(seed, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{changelog: {0: kgo.NewOffset().AtStart()}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.FetchMaxWait(50*time.Millisecond))
	require.NoError(t, err)
	defer r.rcl.Close()
	tk := r.tasks["0_0"]
	require.NoError(t, r.open(tk))
	tk.role, tk.consuming = roleLearner, true

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { r.restoreLoop(ctx); close(done) }()
	select {
	case err := <-r.fatal:
		require.ErrorIs(t, err, ErrBadChangelog)
	case <-time.After(10 * time.Second):
		t.Fatal("no error after 10s for a changelog record without a position")
	}
	// More records after the bad one: a restore that goes on applies them.
	require.NoError(t, prod.ProduceSync(context.Background(), good("d", 3)).FirstErr())
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
		t.Errorf("the restore loop still ran 5s after a failed restore")
	}
	cp, err := tk.store.Checkpoint()
	require.NoError(t, err)
	require.Zero(t, cp.Changelog, "the store's checkpoint after a failed restore at offset 1 (0: the batch with the bad record applies nothing)")
	_, ok, err := tk.store.Get([]byte("d"))
	require.NoError(t, err)
	require.False(t, ok, "d, written after the bad record, in the store")
}

// recordFits draws the line where kgo does, or up to 3 bytes before: a
// record it says fits, kgo produces; one it says does not, kgo fails with
// kerr.MessageTooLarge unless it is within 3 bytes of the limit.
func TestRecordFitsAsKgo(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer c.Close()
	for _, opts := range [][]kgo.Opt{{kgo.ProducerBatchMaxBytes(4096)}, {kgo.BrokerMaxWriteBytes(4096), kgo.ProducerBatchMaxBytes(2048), kgo.ClientID("a-client")}, {kgo.MaxBufferedBytes(3000)}} {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		require.NoError(t, err)
		r := &Runtime{cl: cl}
		r.readLimits()
		var fits, refused int
		for n := 1900; n < 4100; n++ {
			rec := ChangelogRecord("t", 0, []byte("key"), make([]byte, n), map[string]int64{"in": 12345})
			size, limit, ok := r.recordFits(rec)
			err := cl.ProduceSync(context.Background(), rec).FirstErr()
			if ok {
				require.NoError(t, err, "value of %d bytes, %d in a batch against %d: recordFits says it fits", n, size, limit)
				fits++
				continue
			}
			refused++
			if !errors.Is(err, kerr.MessageTooLarge) {
				// kgo counts a batch's length prefix at 4 bytes until it
				// knows the broker's produce version, as a varint after:
				// recordFits takes the larger.
				require.NoError(t, err)
				require.LessOrEqual(t, size-limit, int64(3), "value of %d bytes, %d in a batch against %d: recordFits says it does not fit, kgo produced it", n, size, limit)
			}
		}
		require.NotZero(t, fits, "records that fit")
		require.NotZero(t, refused, "records too large")
		cl.Close()
	}
}

// The changelog records a task writes before it runs (the rest of an
// input record whose write was cut short) are held to the producer's limits
// too: too large now (a limit lowered since), they stop Run rather than be
// refused at every poll.
func TestCompleteTooLargeStopsRun(t *testing.T) {
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}}})
	require.NoError(t, err)
	r.limits = producerLimits{batch: func(string) int32 { return 1000 }, write: 100 << 20, byTopic: map[string]int64{}}
	tk := r.tasks["0_0"]
	require.NoError(t, r.open(tk))
	tk.pending = []Change{{Key: []byte("a"), Value: make([]byte, 2000)}}
	require.False(t, r.complete(context.Background(), tk), "complete with a record over the producer's limit")
	select {
	case err := <-r.fatal:
		require.ErrorIs(t, err, kerr.MessageTooLarge)
	default:
		t.Fatal("complete with a record over the producer's limit did not stop Run")
	}
}

// Those records refused by the broker's ACLs stop Run too, as a batch's
// do, rather than be refused at every poll.
func TestCompleteDeniedStopsRun(t *testing.T) {
	c, seed, _ := oneTopicCluster(t, "g-0-changelog")
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return RefusedProduce(kr, kerr.TopicAuthorizationFailed.Code), nil, true
	})
	r, tk := openedTask(t)
	var err error
	r.cl, err = kgo.NewClient(seed, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer r.cl.Close()
	r.readLimits()
	tk.pending, tk.pendingPos = []Change{{Key: []byte("a"), Value: []byte("1")}}, []byte("in=1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.False(t, r.complete(ctx, tk), "complete with its write denied")
	select {
	case err := <-r.fatal:
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	default:
		t.Fatal("complete with its write denied did not stop Run")
	}
}

// A task activating that had caught up with its changelog and whose store
// is then reset (the changelog lost records) is no longer caught up: it
// restores again before it runs, rather than run on an empty store.
func TestResetTaskCaughtUpRestoresAgain(t *testing.T) {
	r, tk := openedTask(t)
	recs := []*kgo.Record{
		ChangelogRecord("g-0-changelog", 0, []byte("a"), []byte("1"), map[string]int64{"in": 1}),
		ChangelogRecord("g-0-changelog", 0, []byte("b"), []byte("2"), map[string]int64{"in": 2}),
	}
	for i, rec := range recs {
		rec.Offset = int64(i)
	}
	now := time.Now()
	r.mu.Lock()
	tk.role, tk.activatedAt, tk.end, tk.endAt = roleActive, now, 2, now
	r.mu.Unlock()
	require.NoError(t, r.restore(tk, recs, r.resets.Load()))
	caughtUp := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return tk.caughtUp
	}
	require.True(t, caughtUp(), "caught up after restoring to the end listed after activation")

	require.NoError(t, r.reset(tk, "in a test"))
	require.False(t, caughtUp(), "caught up after its store was reset")

	require.NoError(t, r.restore(tk, recs[:1], r.resets.Load()))
	require.False(t, caughtUp(), "caught up one record short of the end")
	require.NoError(t, r.restore(tk, recs[1:], r.resets.Load()))
	require.True(t, caughtUp(), "caught up after restoring again to the end")
}

// learnerRuntime returns a runtime whose member learns task 0_0 (its
// balancer applied an assignment saying so) with the task's store open,
// and joinReady, which returns what the member's next join reports ready.
func learnerRuntime(t *testing.T) (r *Runtime, tk *task, joinReady func() []string) {
	t.Helper()
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}}})
	require.NoError(t, err)
	a, err := learner.New(r.topo.Tasks(), learner.Options{})
	require.NoError(t, err)
	codec := wire.NewCodec(a)
	joinReady = func() []string {
		var meta kmsg.ConsumerMemberMetadata
		require.NoError(t, meta.ReadFrom(r.topo.JoinGroupMetadata(nil, nil, 1)))
		m, err := codec.DecodeMember(meta.UserData)
		require.NoError(t, err)
		return m.Ready
	}
	joinReady()
	ka := kmsg.NewConsumerMemberAssignment()
	ka.UserData, err = codec.AppendAssignment(nil, learner.Assignment{MemberID: "S1", Learning: []string{"0_0"}})
	require.NoError(t, err)
	_, err = r.topo.ParseSyncAssignment(ka.AppendTo(nil))
	require.NoError(t, err)
	tk = r.tasks["0_0"]
	require.NoError(t, r.open(tk))
	return r, tk, joinReady
}

// TestResetLearnerWithdrawsReady: a learner that reported Ready and whose
// store is then reset is not reported ready at the member's next join, so
// the leader does not move the task to a store that restores from the start.
func TestResetLearnerWithdrawsReady(t *testing.T) {
	r, tk, joinReady := learnerRuntime(t)
	r.mu.Lock()
	tk.role, tk.ready = roleLearner, true
	r.mu.Unlock()
	require.True(t, r.topo.Ready("0_0"), "Ready(0_0) of the member's learner task")
	require.Equal(t, []string{"0_0"}, joinReady(), "Ready at the join before the reset")

	require.NoError(t, r.reset(tk, "in a test"))
	assert.Empty(t, joinReady(), "Ready at the join after the learner's store was reset")
	r.mu.Lock()
	assert.False(t, tk.ready, "the task still counts its Ready as reported: it would not report it again once restored")
	r.mu.Unlock()
}

// Records restored for a task without a role (fetched while it was a
// learner or standby) are applied and reported with the role "none", as
// Observer.Restored says.
func TestRestoredRoleNone(t *testing.T) {
	var roles []string
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}},
		Observer:      Observer{Restored: func(_, role string, _ int) { roles = append(roles, role) }}})
	require.NoError(t, err)
	tk := r.tasks["0_0"]
	require.NoError(t, r.open(tk))
	rec := ChangelogRecord("g-0-changelog", 0, []byte("a"), []byte("1"), map[string]int64{"in": 1})
	require.NoError(t, r.restore(tk, []*kgo.Record{rec}, r.resets.Load()))
	require.Equal(t, []string{"none"}, roles, "roles reported for a task without a role")
}

// A store reset between the lag loop's listing, which found the learner
// ready, and its Ready call must win: the Unready of the reset comes
// first, and a Ready after it would report an emptied store ready until
// the next reset.
func TestResetBeforeReadyCallWins(t *testing.T) {
	r, tk, joinReady := learnerRuntime(t)
	r.mu.Lock()
	tk.role, tk.ready = roleLearner, true // the lag loop's listing found it ready
	r.mu.Unlock()
	require.NoError(t, r.reset(tk, "in a test")) // the restore loop, meanwhile
	r.announceReady([]*task{tk})                 // the lag loop goes on
	assert.Empty(t, joinReady(), "Ready at the join after the learner's store was reset")
}

// Observer.Error, when complete fails to write the records the changelog
// lacks, runs without the runtime's locks held, as Observer says: the
// restore loop may apply the task's records meanwhile, and Status answers.
func TestCompleteErrorWithoutLocks(t *testing.T) {
	c, seed, _ := oneTopicCluster(t, "g-0-changelog")
	c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return RefusedProduce(kr, kerr.UnknownServerError.Code), nil, true
	})
	var r *Runtime
	var tk *task
	var errs int
	unlocked := map[string]bool{}
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}},
		Observer: Observer{Error: func(error) {
			errs++
			for name, mu := range map[string]interface{ TryLock() bool }{"the task's store lock": &tk.applyMu, "the runtime's lock": &r.mu} {
				if unlocked[name] = mu.TryLock(); unlocked[name] {
					mu.(interface{ Unlock() }).Unlock()
				}
			}
		}}})
	require.NoError(t, err)
	r.cl, err = kgo.NewClient(seed, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer r.cl.Close()
	r.readLimits()
	tk = r.tasks["0_0"]
	require.NoError(t, r.open(tk))
	tk.pending, tk.pendingPos = []Change{{Key: []byte("a"), Value: []byte("1")}}, []byte("in=1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.False(t, r.complete(ctx, tk), "complete with its write refused")
	require.Equal(t, 1, errs, "Error events")
	require.Equal(t, map[string]bool{"the task's store lock": true, "the runtime's lock": true}, unlocked, "locks free while Error ran")
}

// failingCloseStore is a memory store whose Close fails.
type failingCloseStore struct{ Store }

func (failingCloseStore) Close() error { return errors.New("boom") }

// A store that fails to close is reported (Observer.Error) without the
// task's lock held, as Observer says.
func TestCloseErrorWithoutLocks(t *testing.T) {
	var tk *task
	var locked []bool
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}},
		Observer: Observer{Error: func(err error) {
			free := tk.applyMu.TryLock()
			if free {
				tk.applyMu.Unlock()
			}
			locked = append(locked, !free)
		}}})
	require.NoError(t, err)
	tk = r.tasks["0_0"]
	require.NoError(t, r.open(tk))
	tk.store = failingCloseStore{tk.store}
	r.closeStores()
	require.Equal(t, []bool{false}, locked, "the task's lock held at each Error event of closeStores")
}

// A store opens as it is unless its checkpoint and the runtime both know
// the changelog topic's ID and the two differ (the topic was deleted and
// recreated): then it is cleared, with an Error event naming both. A
// checkpoint without an ID, as earlier versions wrote, gets the runtime's
// at its next write.
func TestOpenChecksChangelogID(t *testing.T) {
	old, now := [16]byte{15: 1}, [16]byte{15: 2}
	for _, c := range []struct {
		name          string
		stored, known [16]byte
		reset         bool
	}{
		{"Recreated", old, now, true},
		{"Same", now, now, false},
		{"NoneStored", noTopicID, now, false},
		{"NoneKnown", old, noTopicID, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			stores := &MemoryStores{}
			s, err := stores.Open("0_0")
			require.NoError(t, err)
			require.NoError(t, s.Apply([]Change{{Key: []byte("k"), Value: []byte("v")}}, Checkpoint{Changelog: 5, Input: map[string]int64{"in": 5}, ChangelogID: c.stored}))
			var events []string
			r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil }, Stores: stores,
				Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}},
				Observer:      Observer{Error: func(err error) { events = append(events, err.Error()) }}})
			require.NoError(t, err)
			tk := r.tasks["0_0"]
			tk.changelogID = c.known
			require.NoError(t, r.open(tk))

			_, kept, err := tk.store.Get([]byte("k"))
			require.NoError(t, err)
			if c.reset {
				require.False(t, kept, "key of the store after open, stored ID %x, the topic's %x", c.stored, c.known)
				require.Equal(t, int64(0), tk.restored, "restored offset after open")
				require.Equal(t, []string{"state: task 0_0: store at changelog offset 5, from topic ID AAAAAAAAAAAAAAAAAAAAAQ of g-0-changelog, " +
					"whose ID is now AAAAAAAAAAAAAAAAAAAAAg (the topic was deleted and recreated): restoring from the start"}, events, "Error events")
				return
			}
			require.True(t, kept, "key of the store after open, stored ID %x, the topic's %x", c.stored, c.known)
			require.Equal(t, int64(5), tk.restored, "restored offset after open")
			require.Empty(t, events, "Error events")
			rec := changelogRecord(tk.changelog, 0, []byte("k2"), []byte("v2"), []byte("in=6"))
			rec.Offset = 5
			_, _, err = r.applyRestored(tk, []*kgo.Record{rec}, r.resets.Load())
			require.NoError(t, err)
			cp, err := tk.store.Checkpoint()
			require.NoError(t, err)
			require.Equal(t, Checkpoint{Changelog: 6, Input: map[string]int64{"in": 6}, ChangelogID: c.known}, cp, "checkpoint after a restore")
		})
	}
}

// A store the restore client fetched outside its changelog's offsets is
// reset, unless the changelog topic's ID is not the one Run started with:
// the topic was recreated under the running member, whose offsets restart
// at zero, and Run fails instead, keeping the store.
func TestResetLostChecksChangelogID(t *testing.T) {
	other := [16]byte{15: 1}
	for _, c := range []struct {
		name      string
		known     func(listed [16]byte) [16]byte // the task's changelogID, from the ID the brokers list
		recreated bool
	}{
		{"Recreated", func([16]byte) [16]byte { return other }, true},
		{"Same", func(listed [16]byte) [16]byte { return listed }, false},
		{"Unknown", func([16]byte) [16]byte { return noTopicID }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, seed, _ := oneTopicCluster(t, "g-0-changelog")
			r, tk := openedTask(t)
			var err error
			r.rcl, err = kgo.NewClient(seed)
			require.NoError(t, err)
			t.Cleanup(r.rcl.Close)
			meta := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(tk.changelog)
			meta.Topics = append(meta.Topics, mt)
			resp, err := meta.RequestWith(context.Background(), r.rcl)
			require.NoError(t, err)
			listed := resp.Topics[0].TopicID
			tk.changelogID = c.known(listed)
			require.NoError(t, tk.store.Apply([]Change{{Key: []byte("k"), Value: []byte("v")}}, tk.checkpoint(5, map[string]int64{"in": 5})))

			failed, err := r.resetLost(context.Background(), []*task{tk})
			require.NoError(t, err)
			require.Equal(t, c.recreated, failed, "resetLost failed Run")
			_, kept, err := tk.store.Get([]byte("k"))
			require.NoError(t, err)
			require.Equal(t, c.recreated, kept, "key of the store after resetLost")
			select {
			case err := <-r.fatal:
				require.True(t, c.recreated, "Run failed: %v", err)
				require.ErrorIs(t, err, ErrChangelogTopic)
				require.ErrorContains(t, err, "topic ID AAAAAAAAAAAAAAAAAAAAAQ of g-0-changelog, whose ID is now "+formatTopicID(listed))
			default:
				require.False(t, c.recreated, "Run did not fail")
			}
		})
	}
}

// TestNewCopyReportsLargestLag: a learner or standby that starts reports
// the largest lag at the member's next join, until the lag loop has
// measured it: with none, Assign would count a standby caught up at kgo's
// follow-up rebalance, before its replay began, and release the copy it
// replaces. A copy already restoring keeps its measured lag when its role
// changes (a standby turned learner); Cooperative reports no lags.
func TestNewCopyReportsLargestLag(t *testing.T) {
	for _, cooperative := range []bool{false, true} {
		r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil }, Cooperative: cooperative,
			Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}}})
		require.NoError(t, err)
		joinLags := joinLagsOf(t, r)

		r.setRole("0_0", roleStandby)
		r.setRole("0_1", roleLearner)
		if cooperative { // its balancer is kgo's: the learner's metadata is not sent
			assert.Empty(t, joinLags(), "lags Cooperative's balancer keeps")
			continue
		}
		assert.Equal(t, map[string]int64{"0_0": math.MaxInt64, "0_1": math.MaxInt64}, joinLags(), "lags at the join after two copies started")

		require.NoError(t, r.topo.SetLag("0_0", 7)) // the lag loop's listing
		r.setRole("0_0", roleLearner)
		assert.Equal(t, int64(7), joinLags()["0_0"], "lag of a standby turned learner, measured before")
	}
}

// joinLagsOf returns a function that returns the lags r's member reports
// at its next join, by task.
func joinLagsOf(t *testing.T, r *Runtime) func() map[string]int64 {
	a, err := learner.New(r.topo.Tasks(), learner.Options{})
	require.NoError(t, err)
	codec := wire.NewCodec(a)
	return func() map[string]int64 {
		var meta kmsg.ConsumerMemberMetadata
		require.NoError(t, meta.ReadFrom(r.topo.JoinGroupMetadata(nil, nil, 1)))
		m, err := codec.DecodeMember(meta.UserData)
		require.NoError(t, err)
		lags := map[string]int64{}
		for _, l := range m.Lag {
			lags[l.Task] = l.Lag
		}
		return lags
	}
}

// TestMeasuredCopyKeepsItsLag: a learner or standby starting on a store
// the member already reports correctly keeps that report: the lag the lag
// loop listed for a store with no role (it lists every open store that is
// not running), or none for a store that ran active until now (the old
// owner's copy a promotion keeps as a standby, rule 13: reported as the
// largest lag, a follow-up rebalance before the next listing would count it
// behind and could release it while the new standby replays). A store
// that became active here and was stopped before any listing has no lag
// the loop measured, and reports the largest.
func TestMeasuredCopyKeepsItsLag(t *testing.T) {
	r, err := New(Config{Group: "g", Process: func(*Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 3, Stateful: true}}})
	require.NoError(t, err)
	joinLags := joinLagsOf(t, r)
	for _, id := range []string{"0_0", "0_1", "0_2"} {
		require.NoError(t, r.open(r.tasks[id]))
	}
	// 0_0: state left on disk, listed by the lag loop.
	r.tasks["0_0"].end, r.tasks["0_0"].endAt = 7, time.Now()
	require.NoError(t, r.topo.SetLag("0_0", 7))
	// 0_1: ran active (it was listed after it became active), then stopped.
	activated := time.Now()
	r.tasks["0_1"].activatedAt, r.tasks["0_1"].endAt = activated, activated.Add(time.Millisecond)
	// 0_2: became active, stopped before the lag loop listed it.
	r.tasks["0_2"].activatedAt = activated

	r.setRole("0_0", roleLearner)
	r.setRole("0_1", roleStandby)
	r.setRole("0_2", roleStandby)
	assert.Equal(t, map[string]int64{"0_0": 7, "0_2": math.MaxInt64}, joinLags(), "lags at the join after the roles started")
}
