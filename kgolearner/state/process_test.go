package state_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var errBoom = errors.New("boom")

// An error of Process makes Run return it, whichever task of the batch
// fails (the batch holds the tasks 0_0 and 0_1; 0_0, the first, fails).
func TestProcessErrorStopsRun(t *testing.T) {
	c := newCluster(t, "in")
	c.produce(&kgo.Record{Topic: "in", Partition: 0}, &kgo.Record{Topic: "in", Partition: 1})
	done, _ := c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2}},
		Process: func(_ *state.Context, rec *kgo.Record) error {
			if rec.Partition == 0 {
				return errBoom
			}
			return nil
		},
	})
	require.ErrorIs(t, waitErr(t, done), errBoom)
}

// A record whose Process failed was not processed: the offsets committed
// when Run returns must not pass it, so the next member processes it.
func TestProcessErrorCommitsNothingOfTheBatch(t *testing.T) {
	c := newCluster(t, "in")
	c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("a")})
	topology := []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2}}
	done, _ := c.run(state.Config{Subtopologies: topology, Process: func(*state.Context, *kgo.Record) error { return errBoom }})
	require.ErrorIs(t, waitErr(t, done), errBoom)

	c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("b")})
	seen := make(chan int64, 2)
	c.run(state.Config{Subtopologies: topology, Process: func(_ *state.Context, rec *kgo.Record) error {
		seen <- rec.Offset
		return nil
	}})
	for _, want := range []int64{0, 1} {
		select {
		case got := <-seen:
			require.Equal(t, want, got, "offset processed by the member after the failed one")
		case <-time.After(20 * time.Second):
			t.Fatalf("offset %d never processed", want)
		}
	}
}

// A stateless task of two input topics whose output write fails processes
// every record of the batch again, of both topics, and the two tasks of
// the same topics (partitions 0 and 1) both rewind.
func TestFailedWriteRewindsStatelessInputs(t *testing.T) {
	c := newCluster(t, "a", "b", "out")
	var recs []*kgo.Record
	for p := range int32(2) {
		for i := range 5 {
			recs = append(recs, &kgo.Record{Topic: "a", Partition: p, Value: []byte{byte(i)}}, &kgo.Record{Topic: "b", Partition: p, Value: []byte{byte(i)}})
		}
	}
	c.produce(recs...)
	c.failProduce(func(n int) bool { return n == 1 }) // the member's first produce: the batch's output
	var mu sync.Mutex
	processed, total := map[string]int{}, 0
	all := make(chan struct{})
	c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"a", "b"}, Partitions: 2}},
		Process: func(ctx *state.Context, rec *kgo.Record) error {
			ctx.Emit(&kgo.Record{Topic: "out", Partition: ctx.Partition(), Value: rec.Value})
			return nil
		},
		Observer: state.Observer{Processed: func(task string, rec *kgo.Record) {
			mu.Lock()
			defer mu.Unlock()
			processed[task+" "+rec.Topic]++
			if total++; total == 20 {
				close(all)
			}
		}},
	})
	select {
	case <-all:
	case <-time.After(20 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]int{"0_0 a": 5, "0_0 b": 5, "0_1 a": 5, "0_1 b": 5}, processed, "records processed by task and topic after a failed write")
}

// counter is a member of one stateful subtopology over "in" (2 partitions)
// whose writes time out after 1 s (Config.DeliveryTimeout), for the tests
// of a stalled write. Process counts in key "k" the records of its task,
// emitting the count before to "out", or sends the count to read for a
// record "read".
type counter struct {
	*cluster
	cfg       state.Config
	rt        *state.Runtime
	done      <-chan error
	stop      func() // cancels Run and waits for it
	processed atomic.Int64
	read      chan int
	errs      chan timedErr               // the Error events
	onError   atomic.Pointer[func(error)] // if set, called with each Error event first
}

// timedErr is an Error event and when it came.
type timedErr struct {
	at  time.Time
	err error
}

// newCounter starts a counter, with opts added to its ClientOpts, and
// returns once it processed a first record.
func newCounter(t *testing.T, opts ...kgo.Opt) *counter { return newCounterWith(t, nil, opts...) }

// newCounterWith is newCounter with set, if not nil, applied to the
// counter's Config before it starts.
func newCounterWith(t *testing.T, set func(*state.Config), opts ...kgo.Opt) *counter {
	c := &counter{cluster: newCluster(t, "in", "out"), read: make(chan int, 1), errs: make(chan timedErr, 10)}
	first := make(chan struct{})
	c.cfg = state.Config{
		Subtopologies:   []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		DeliveryTimeout: time.Second,
		ClientOpts:      opts,
		Process: func(ctx *state.Context, rec *kgo.Record) error {
			v, _, err := ctx.Get([]byte("k"))
			if err != nil {
				return err
			}
			n, _ := strconv.Atoi(string(v))
			if string(rec.Value) == "read" {
				select {
				case c.read <- n:
				default:
				}
				return nil
			}
			ctx.Emit(&kgo.Record{Topic: "out", Partition: 0, Value: v, Timestamp: rec.Timestamp})
			return ctx.Put([]byte("k"), []byte(strconv.Itoa(n+1)))
		},
		Observer: state.Observer{
			Processed: func(string, *kgo.Record) {
				if c.processed.Add(1) == 1 {
					close(first)
				}
			},
			Error: func(err error) {
				t.Log(err)
				if f := c.onError.Load(); f != nil {
					(*f)(err)
				}
				select {
				case c.errs <- timedErr{time.Now(), err}:
				default:
				}
			},
		},
	}
	if set != nil {
		set(&c.cfg)
	}
	c.rt, c.done, c.stop = c.start(c.cfg)
	c.in("1")
	waitFor(t, c.done, first, "first record processed")
	return c
}

// restart runs the counter again, with a new runtime whose store starts
// empty, once the last one's Run returned.
func (c *counter) restart() { c.rt, c.done, c.stop = c.start(c.cfg) }

// in writes a record of value v to "in" partition 0, an hour old (see
// TestStalledWriteIsReported).
func (c *counter) in(v string) {
	c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte(v), Timestamp: time.Now().Add(-time.Hour)})
}

// count writes a record "read" and returns the count Process read, failing
// the test if Run returns first or after 20 s.
func (c *counter) count() int {
	c.t.Helper()
	c.in("read")
	select {
	case n := <-c.read:
		return n
	case err := <-c.done:
		c.t.Fatalf("Run returned %v", err)
	case <-time.After(20 * time.Second):
		c.t.Fatal("no read after 20s")
	}
	return 0
}

// A changelog write the broker keeps answering NOT_ENOUGH_REPLICAS (fewer
// in-sync replicas than the topic's min.insync.replicas), which kgo
// retries without end, fails after Config.DeliveryTimeout: each timeout is
// an Error event and the batch goes round again, rather than a silent
// stall (before: 15 s of the fault, no Error event, nothing processed).
// Once the fault ends the count is exact. The event names the deadline,
// not the broker's code: kgo fails the records with their context's error
// and keeps NOT_ENOUGH_REPLICAS in its debug log only. The input records
// are an hour old and the output carries their timestamps:
// kgo.RecordDeliveryTimeout, which kgo counts from a record's timestamp,
// fails every such output at once (set to 2 minutes in ClientOpts, without
// a fault: no record processed in 24 s, 217 Error events).
func TestStalledWriteIsReported(t *testing.T) {
	// kgo tries a write answered NOT_ENOUGH_REPLICAS again at its next
	// metadata refresh, and fails it there once timed out.
	c := newCounter(t, kgo.MetadataMinAge(250*time.Millisecond))
	fault := c.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: state.ChangelogTopic("g", 0), Err: kerr.NotEnoughReplicas, Count: -1})
	c.in("2")
	c.in("3")
	var events []time.Time
	for len(events) < 2 {
		select {
		case e := <-c.errs:
			if !errors.Is(e.err, context.DeadlineExceeded) {
				continue
			}
			require.ErrorContains(t, e.err, "state: write: changelog: not acknowledged within 1s (Config.DeliveryTimeout)")
			require.NotErrorIs(t, e.err, kerr.NotEnoughReplicas, "kgo keeps the broker's code now: say so in Config.DeliveryTimeout and the README")
			events = append(events, e.at)
		case err := <-c.done:
			t.Fatalf("Run returned %v", err)
		case <-time.After(20 * time.Second):
			t.Fatalf("no Error event %d of the stalled write after 20s", len(events)+1)
		}
	}
	require.GreaterOrEqual(t, events[1].Sub(events[0]), time.Second, "time between two Error events of the stalled write")
	require.Equal(t, int64(1), c.processed.Load(), "records processed while the changelog refuses writes")
	fault.Remove()
	require.Equal(t, 3, c.count(), "count once the changelog takes writes again")
}

// A changelog write kgo sent and cannot tell landed or not is waited for
// past Config.DeliveryTimeout: kgo fails none of its records before an
// answer settles it (the state README's Failures tells why the runtime
// keeps it so). Such are a write the broker never answers (hung with its
// connections open, or its answer lost; here kfake keeps the Produce
// requests to the changelog without replying), where each try ends at its
// connection's read deadline, kgo.ProduceRequestTimeout (1 s here) plus
// kgo.RequestTimeoutOverhead (5 s, memberTimings), and kgo sends it
// again; and a write answered REQUEST_TIMED_OUT or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, which the broker may have written
// (kfake has), and which kgo tries again after its backoff until it is
// acknowledged. The wait is reported, as ErrWriteStalled, from twice the
// timeout on (before: no Error event at all), and only until the write is
// acknowledged. Once the broker acknowledges it the task goes on, with the
// count exact and each change in the changelog once.
func TestUncertainWriteIsWaitedFor(t *testing.T) {
	changelog := state.ChangelogTopic("g", 0)
	answered := func(code *kerr.Error) func(*counter) func() {
		return func(c *counter) func() {
			fault := c.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: changelog, Err: code, Count: -1})
			return fault.Remove
		}
	}
	for _, tc := range []struct {
		name  string
		fault func(*counter) (end func())
	}{
		{"unanswered", func(c *counter) func() { return c.hang(changelog) }},
		{"REQUEST_TIMED_OUT", answered(kerr.RequestTimedOut)},
		{"NOT_ENOUGH_REPLICAS_AFTER_APPEND", answered(kerr.NotEnoughReplicasAfterAppend)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCounter(t, kgo.ProduceRequestTimeout(time.Second))
			end := sync.OnceFunc(tc.fault(c))
			t.Cleanup(end)         // before c's: a test failed early lets Run return
			produced := time.Now() // before the write: Process runs after
			c.in("2")
			c.in("3")
			stalled := func(e timedErr) {
				t.Helper()
				require.ErrorIs(t, e.err, state.ErrWriteStalled, "Error event while the write's fate is unknown")
				require.ErrorContains(t, e.err, "records to "+changelog+" unacknowledged")
			}
			var e timedErr
			select {
			case e = <-c.errs:
			case err := <-c.done:
				t.Fatalf("Run returned %v", err)
			case <-time.After(5 * time.Second):
				t.Fatal("no Error event of the stalled write after 5s")
			}
			stalled(e)
			require.GreaterOrEqual(t, e.at.Sub(produced), 2*time.Second, "first report of the stalled write, after twice the 1s DeliveryTimeout")
			require.Equal(t, int64(1), c.processed.Load(), "records processed while the write's fate is unknown")
			end()
			require.Equal(t, 3, c.count(), "count once the broker answers")
			require.Eventually(t, func() bool { return c.processed.Load() == 4 }, 20*time.Second, 10*time.Millisecond, "records processed once the broker answers")
			require.Equal(t, []string{"k", "k", "k"}, c.changelogKeys(changelog, 0), "changelog keys")
			// Reports stop with the write: none a DeliveryTimeout and more
			// after it was acknowledged.
			for len(c.errs) > 0 {
				stalled(<-c.errs)
			}
			select {
			case e := <-c.errs:
				t.Fatalf("Error event after the write was acknowledged: %v", e.err)
			case <-time.After(1500 * time.Millisecond):
			}
		})
	}
}

// hang makes the broker answer no Produce request to topic until end is
// called: kfake keeps each without replying, as a broker hung with its
// connections open.
func (c *counter) hang(topic string) (end func()) {
	return c.hangRequests(int16(kmsg.Produce), c.producesTo(topic))
}

// producesTo returns whether a Produce request writes to topic.
func (c *cluster) producesTo(topic string) func(kmsg.Request) bool {
	id := topicID(c.t, c.admin(), topic) // Produce v13 names topics by ID
	toTopic := func(rt kmsg.ProduceRequestTopic) bool { return rt.Topic == topic || rt.TopicID == id }
	return func(kr kmsg.Request) bool { return slices.ContainsFunc(kr.(*kmsg.ProduceRequest).Topics, toTopic) }
}

// holdNextWrite makes the broker hold the next Produce request to topic
// until land is called (at the test's end at the latest), then handle it
// as usual; held is closed once the request arrives.
func (c *cluster) holdNextWrite(topic string) (held <-chan struct{}, land func()) {
	toTopic := c.producesTo(topic)
	arrived, release := make(chan struct{}), make(chan struct{})
	land = sync.OnceFunc(func() { close(release) })
	c.t.Cleanup(land)
	var hold atomic.Bool
	hold.Store(true)
	c.c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		if toTopic(kr) && hold.CompareAndSwap(true, false) {
			close(arrived)
			c.c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	return arrived, land
}

// countLeaves counts the LeaveGroup requests the broker gets from now on.
func (c *cluster) countLeaves() *atomic.Int32 {
	var leaves atomic.Int32
	c.c.ControlKey(int16(kmsg.LeaveGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		leaves.Add(1)
		return nil, nil, false
	})
	return &leaves
}

// cancel cancels Run's ctx, and returns a channel closed once Run returned.
func (c *counter) cancel() <-chan struct{} {
	stopped := make(chan struct{})
	go func() {
		c.stop()
		close(stopped)
	}()
	return stopped
}

// cancelWithin cancels Run's ctx and returns how long Run took to return,
// failing the test, with what Run waits for, if it runs 5 s more.
func (c *counter) cancelWithin(waiting string) time.Duration {
	c.t.Helper()
	cancelled := time.Now()
	select {
	case <-c.cancel():
	case <-time.After(5 * time.Second):
		c.t.Fatalf("Run still running 5s after its ctx was cancelled, waiting for %s", waiting)
	}
	require.NoError(c.t, <-c.done, "Run's error once its ctx was cancelled")
	return time.Since(cancelled)
}

// Cancelling Run's ctx while a changelog write waits for a broker that
// never answers abandons the write as a crash would: Run returns 2 s after
// the cancel, the broker's grace to answer (before: it waited for the
// broker, still running 40 s after the cancel). The write never landed, so
// the next runtime restores the count without it and processes its record
// again: the count is exact.
func TestCancelAbandonsUnansweredWrite(t *testing.T) {
	changelog := state.ChangelogTopic("g", 0)
	c := newCounter(t, kgo.ProduceRequestTimeout(time.Second))
	end := sync.OnceFunc(c.hang(changelog))
	t.Cleanup(end)
	c.in("2")
	select {
	case e := <-c.errs:
		require.ErrorIs(t, e.err, state.ErrWriteStalled, "Error event while the write's fate is unknown")
	case err := <-c.done:
		t.Fatalf("Run returned %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no Error event of the stalled write after 5s")
	}
	c.cancelWithin("a write the broker never answers")
	end()
	c.restart()
	require.Equal(t, 2, c.count(), "count after the abandoned write, restored and processed again")
	// count reads the batch's own changes: wait for its write, which
	// makes "2" and "read" processed.
	require.Eventually(t, func() bool { return c.processed.Load() == 3 }, 20*time.Second, 10*time.Millisecond, "records processed once restarted")
	require.Equal(t, []string{"k", "k"}, c.changelogKeys(changelog, 0), "changelog keys")
}

// Cancelling Run's ctx while a changelog write is in flight gives the
// broker the leave's grace (2 s) to answer it. A write answered meanwhile
// completes the batch, and the member leaves the group. One still
// unanswered is abandoned, and may land later: the member then stays in
// the group until its session ends, as a crashed one does, so that its
// task's next owner restores after a write landing meanwhile. Here kfake
// holds the write and appends it 0.3 s after the cancel, or 1.5 s after
// Run returned (the session is 2 s). Before: the member abandoned the
// write at once and left (LeaveGroup), the next owner restored the
// changelog without it, processed "2" and "3" again and wrote its
// changes, and the held write, landing after them, took "k" back to "2"
// while "j" kept the change of "3": the member after it counted "3" twice
// (j 2).
func TestCancelledWriterStaysForItsSession(t *testing.T) {
	for _, tc := range []struct {
		name   string
		landAt time.Duration // after the cancel
		leaves int32         // LeaveGroup requests of the cancelled member
	}{
		{"answered within the grace", 300 * time.Millisecond, 1},
		{"unanswered", 2*time.Second + 1500*time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, "in")
			reads := make(chan [2]int, 1)
			var processed atomic.Int64
			cfg := state.Config{
				Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
				// "k" counts the records, "j" those of value "3": a
				// record changes two keys.
				Process: func(ctx *state.Context, rec *kgo.Record) error {
					var n [2]int
					for i, key := range []string{"k", "j"} {
						v, _, err := ctx.Get([]byte(key))
						if err != nil {
							return err
						}
						n[i], _ = strconv.Atoi(string(v))
					}
					switch string(rec.Value) {
					case "read":
						select {
						case reads <- n:
						default:
						}
						return nil
					case "3":
						if err := ctx.Put([]byte("j"), []byte(strconv.Itoa(n[1]+1))); err != nil {
							return err
						}
					}
					return ctx.Put([]byte("k"), []byte(strconv.Itoa(n[0]+1)))
				},
				Observer: state.Observer{Processed: func(string, *kgo.Record) { processed.Add(1) }},
			}
			in := func(v string) { c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte(v)}) }
			read := func(done <-chan error) [2]int {
				t.Helper()
				in("read")
				select {
				case n := <-reads:
					return n
				case err := <-done:
					t.Fatalf("Run returned %v", err)
				case <-time.After(20 * time.Second):
					t.Fatal("no read after 20s")
				}
				return [2]int{}
			}
			done, stop := c.run(cfg)
			in("1")
			require.Eventually(t, func() bool { return processed.Load() == 1 }, 20*time.Second, 10*time.Millisecond, "first record processed")
			held, land := c.holdNextWrite(state.ChangelogTopic("g", 0))
			leaves := c.countLeaves()
			in("2")
			waitFor(t, done, held, "changelog write of \"2\"")
			time.AfterFunc(tc.landAt, land)
			stop()
			require.NoError(t, <-done, "Run's error once its ctx was cancelled")
			require.Equal(t, tc.leaves, leaves.Load(), "LeaveGroup requests of the cancelled member")
			in("3")
			done, stop = c.run(cfg)
			require.Equal(t, [2]int{3, 1}, read(done), "k and j read by the next owner")
			land()
			stop()
			done, _ = c.run(cfg)
			require.Equal(t, [2]int{3, 1}, read(done), "k and j read by the owner after it")
		})
	}
}

// Cancelling Run's ctx while the broker answers none of the requests of
// the member's leave (the commit of what it processed, the LeaveGroup, a
// JoinGroup in flight; a broker hung with its connections open answers
// none at all) abandons them 2 s after the cancel (leaveGrace), as a crash
// would: Run returns. Before: it waited for kgo to give up on them, 10 s
// for the commit (its timeout), 29 s for the LeaveGroup (kgo retries it
// until its 30 s retry timeout), 44 s for the hung broker (both), and for a
// JoinGroup the rebalance timeout plus kgo.RequestTimeoutOverhead (17 s
// here; 70 s with kgo's defaults). Shutdown waits for such a leave, and
// Leave for a hand-over the broker never allows; a cancel then ends the
// wait alike (before: 43 s after the cancel that followed Shutdown, 54 s
// after the one that followed Leave). The state is unharmed: once the
// broker answers again, a new member restores the count exactly. A context
// of ClientOpts' own (kgo.WithContext) does not lengthen the leave; kgo
// takes a nil one for context.Background (before: Run panicked on it,
// "cannot create context from nil parent").
func TestCancelAbandonsUnansweredLeave(t *testing.T) {
	for _, tc := range []struct {
		name      string
		processed int64 // records processed when the fault begins: "1" and "2" are, or "1" only
		fault     func(*counter) (end func())
		stopping  func(*state.Runtime) // called once the fault began, a second before the cancel
		opts      []kgo.Opt            // the counter's ClientOpts
	}{
		// "2" is processed after the fault began: its commit is the
		// leave's.
		{"OffsetCommit", 1, func(c *counter) func() { return c.hangRequests(int16(kmsg.OffsetCommit), nil) }, nil, nil},
		{"LeaveGroup", 2, func(c *counter) func() { return c.hangRequests(int16(kmsg.LeaveGroup), nil) }, nil, nil},
		{"LeaveGroup, ClientOpts' context", 2, func(c *counter) func() { return c.hangRequests(int16(kmsg.LeaveGroup), nil) }, nil,
			[]kgo.Opt{kgo.WithContext(context.Background())}},
		{"LeaveGroup, ClientOpts' nil context", 2, func(c *counter) func() { return c.hangRequests(int16(kmsg.LeaveGroup), nil) }, nil,
			[]kgo.Opt{kgo.WithContext(nil)}}, //lint:ignore SA1012 kgo allows a nil context, and Run must too
		{"every request", 2, func(c *counter) func() { return c.hangRequests(-1, nil) }, nil, nil},
		{"every request, after Shutdown", 2, func(c *counter) func() { return c.hangRequests(-1, nil) }, (*state.Runtime).Shutdown, nil},
		{"every request, after Leave", 2, func(c *counter) func() { return c.hangRequests(-1, nil) }, func(rt *state.Runtime) { rt.Leave(time.Time{}) }, nil},
		{"JoinGroup", 2, func(c *counter) func() {
			// A second member joins; the broker answers its requests,
			// not the JoinGroup of the first (the member it had
			// heartbeating), which that join makes rejoin.
			var first atomic.Pointer[string]
			joining := make(chan struct{})
			c.c.ControlKey(int16(kmsg.Heartbeat), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				c.c.KeepControl()
				id := kr.(*kmsg.HeartbeatRequest).MemberID
				first.CompareAndSwap(nil, &id)
				return nil, nil, false
			})
			require.Eventually(c.t, func() bool { return first.Load() != nil }, 5*time.Second, 10*time.Millisecond, "first member's heartbeat")
			end := c.hangRequests(int16(kmsg.JoinGroup), func(kr kmsg.Request) bool {
				if kr.(*kmsg.JoinGroupRequest).MemberID != *first.Load() {
					return false
				}
				select {
				case <-joining:
				default:
					close(joining)
				}
				return true
			})
			c.run(c.cfg)
			waitFor(c.t, c.done, joining, "first member's JoinGroup")
			return end
		}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// -short (CI's run under the race detector) keeps the broker
			// hung whole, and the nil context that once panicked.
			if testing.Short() && tc.name != "every request" && tc.name != "LeaveGroup, ClientOpts' nil context" {
				t.Skip("-short runs two of these cases; go test without it runs them all")
			}
			c := newCounter(t, tc.opts...)
			if tc.processed == 2 {
				c.in("2")
				require.Eventually(t, func() bool { return c.processed.Load() == 2 }, 20*time.Second, 10*time.Millisecond, "records processed before the fault")
			}
			end := sync.OnceFunc(tc.fault(c))
			t.Cleanup(end) // before c's: a test failed early lets Run return
			if tc.processed == 1 {
				c.in("2")
				require.Eventually(t, func() bool { return c.processed.Load() == 2 }, 20*time.Second, 10*time.Millisecond, "records processed during the fault")
			}
			if tc.stopping != nil {
				tc.stopping(c.rt)
				select {
				case err := <-c.done:
					t.Fatalf("Run returned %v, though the broker answers nothing", err)
				case <-time.After(time.Second):
				}
			}
			took := c.cancelWithin("a broker that does not answer its leave")
			t.Logf("Run returned %v after its ctx was cancelled", took.Round(time.Millisecond))
			end()
			c.restart()
			require.Equal(t, 2, c.count(), "count after the abandoned leave")
		})
	}
}

// Cancelling Run's ctx while the broker answers none of the requests that
// close the member's clients, the LeaveGroup, the Fetch that ends a fetch
// session and the last client-metrics push (kgo gives each of the last two
// 1 s), bounds the restore client's close by the leave's grace too: Run
// returns 2 s after the cancel, not the grace plus the restore client's
// own close. The member runs a standby, so that its restore client holds
// a fetch session, beside a second member, which takes its tasks over with
// the count exact. Without the restore client's part of the grace
// (kgo.WithContext(closing) left out of its options), Run returned 4.0 s
// after the cancel: the grace, then 1 s for each of the restore client's
// two requests.
func TestCancelBoundsTheRestoreClientsClose(t *testing.T) {
	c := newCounterWith(t, func(cfg *state.Config) { cfg.Options.Standbys = 1 })
	c.run(c.cfg)
	require.Eventually(t, func() bool {
		s := c.rt.Status()
		return len(s.Active) == 1 && len(s.Standby) == 1 && len(s.Lag) == 1
	}, 20*time.Second, 10*time.Millisecond, "an active task and a listed standby on the first member")
	end := sync.OnceFunc(c.hangRequests(-1, func(kr kmsg.Request) bool {
		switch req := kr.(type) {
		case *kmsg.LeaveGroupRequest:
			return true
		case *kmsg.FetchRequest:
			return req.SessionID != 0 && req.SessionEpoch == -1 // the close of a session, not a fetch without one
		case *kmsg.PushTelemetryRequest:
			return req.Terminating
		}
		return false
	}))
	t.Cleanup(end) // before c's: a test failed early lets Run return
	took := c.cancelWithin("a broker that does not answer the close of its clients")
	t.Logf("Run returned %v after its ctx was cancelled", took.Round(time.Millisecond))
	require.Less(t, took, 3*time.Second, "Run's return after the cancel: the 2 s grace, which the restore client's close shares")
	end()
	require.Equal(t, 1, c.count(), "count on the second member")
}

// A stall report under way when Run's ctx is cancelled ends before Run
// returns: no Observer callback outlives Run (before: Run returned while
// Observer.Error ran, and a callback that used what its caller closes once
// Run returned, as the test's t.Log does, could fail).
func TestStallReportEndsBeforeRunReturns(t *testing.T) {
	c := newCounter(t, kgo.ProduceRequestTimeout(time.Second))
	t.Cleanup(c.hang(state.ChangelogTopic("g", 0)))
	entered, release := make(chan struct{}), make(chan struct{})
	var hold sync.Once
	hook := func(err error) {
		if errors.Is(err, state.ErrWriteStalled) {
			hold.Do(func() {
				close(entered)
				<-release
			})
		}
	}
	c.onError.Store(&hook)
	unhold := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unhold) // before c's: a test failed early lets Run return
	c.in("2")
	waitFor(t, c.done, entered, "stall report")
	stopped := c.cancel()
	select {
	case <-stopped:
		t.Fatal("Run returned while Observer.Error ran, 0.5s after its ctx was cancelled")
	case <-time.After(500 * time.Millisecond):
	}
	unhold()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Run still running 5s after the stall report returned")
	}
}

// Put refuses the keys a changelog cannot hold apart from the runtime's
// own, rather than write a record every later restore fails on.
func TestPutRefusesInvalidKeys(t *testing.T) {
	c := newCluster(t, "in")
	c.produce(&kgo.Record{Topic: "in", Partition: 0})
	errs := make(chan error, 3)
	c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process: func(ctx *state.Context, _ *kgo.Record) error {
			for _, key := range [][]byte{nil, {}, []byte("learner.position")} {
				errs <- ctx.Put(key, []byte("v"))
			}
			return nil
		},
	})
	for range 3 {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, state.ErrInvalidKey)
		case <-time.After(20 * time.Second):
			t.Fatal("Process never ran")
		}
	}
}

// Changing the bytes Get returned changes neither the state nor the
// changelog, from the batch's own writes ("set") or from the store
// ("scratch", produced once "set" ran, so in a later batch).
func TestGetReturnsACopy(t *testing.T) {
	c := newCluster(t, "in")
	got, set := make(chan string, 1), make(chan struct{}, 1)
	c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process: func(ctx *state.Context, rec *kgo.Record) error {
			v, _, err := ctx.Get([]byte("k"))
			if err != nil {
				return err
			}
			switch string(rec.Value) {
			case "set":
				if err := ctx.Put([]byte("k"), []byte("aaa")); err != nil {
					return err
				}
				v, _, err = ctx.Get([]byte("k")) // the batch's own write
				if err != nil {
					return err
				}
				v[0] = 'X'
				set <- struct{}{}
			case "scratch":
				v[0] = 'Y' // the store's value
			default:
				got <- string(v)
			}
			return nil
		},
	})
	c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("set")})
	select {
	case <-set:
	case <-time.After(20 * time.Second):
		t.Fatal("the set record was never processed")
	}
	c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("scratch")}, &kgo.Record{Topic: "in", Partition: 0, Value: []byte("check")})
	select {
	case v := <-got:
		require.Equal(t, "aaa", v, "Get(k) after Process changed the bytes Get returned")
	case <-time.After(20 * time.Second):
		t.Fatal("the check record was never processed")
	}
}

// An input record whose changes reach the changelog in two produce batches,
// the second refused, leaves the first record, which carries both changes:
// the state gets both or neither, never one with a position that says the
// record is done. Whoever runs the task next writes the missing record
// before anything else, so that the changelog holds it on its own: the
// writer itself if it survives, the next owner if it crashed.
func TestPartialChangelogWrite(t *testing.T) {
	big := make([]byte, 400)
	topology := []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}}
	// member runs the task with fresh stores: "write" puts A and B, in a
	// produce batch each, any other record reports whether A and B are in
	// the state.
	member := func(c *cluster, seen chan<- [2]bool, failed chan<- struct{}) (stop func()) {
		_, stop = c.run(state.Config{
			Subtopologies: topology,
			Process: func(ctx *state.Context, rec *kgo.Record) error {
				if string(rec.Value) == "write" {
					if err := ctx.Put([]byte("A"), big); err != nil {
						return err
					}
					return ctx.Put([]byte("B"), big)
				}
				_, a, err := ctx.Get([]byte("A"))
				if err != nil {
					return err
				}
				_, b, err := ctx.Get([]byte("B"))
				seen <- [2]bool{a, b}
				return err
			},
			ClientOpts: []kgo.Opt{kgo.ProducerBatchMaxBytes(1200)}, // A's record, with B's change, fits; A's and B's do not
			Observer: state.Observer{Error: func(err error) {
				t.Log(err)
				select {
				case failed <- struct{}{}:
				default:
				}
			}},
		})
		return stop
	}
	check := func(t *testing.T, c *cluster, seen <-chan [2]bool) {
		t.Helper()
		c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("read")})
		select {
		case s := <-seen:
			require.Equal(t, [2]bool{true, true}, s, "A and B in the state after the failed write")
		case <-time.After(20 * time.Second):
			t.Fatal("the read record was never processed")
		}
		require.Equal(t, []string{"A", "B"}, c.changelogKeys(state.ChangelogTopic("g", 0), 0), "keys of the changelog")
	}
	t.Run("WriterRecovers", func(t *testing.T) {
		c := newCluster(t, "in")
		c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("write")})
		c.failProduce(func(n int) bool { return n == 2 }) // the member's second: B's batch
		seen, failed := make(chan [2]bool, 1), make(chan struct{}, 1)
		member(c, seen, failed)
		awaitSignal(t, failed, "the refused write")
		check(t, c, seen)
	})
	t.Run("WriterCrashes", func(t *testing.T) {
		c := newCluster(t, "in")
		c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("write")})
		var down atomic.Bool
		down.Store(true)
		c.failProduce(func(n int) bool { return n >= 2 && down.Load() }) // B's batch and every later one
		seen, failed := make(chan [2]bool, 1), make(chan struct{}, 1)
		crash := member(c, seen, failed)
		awaitSignal(t, failed, "the refused write")
		crash()
		down.Store(false)
		member(c, seen, failed)
		check(t, c, seen)
	})
}

func awaitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s after 20s", what)
	}
}

// The changelog's all-or-nothing input records rely on the idempotent
// producer: a runtime whose ClientOpts disable it, let it fail a write
// kgo sent whose fate it does not know, or ask for fewer acks than it
// needs (kgo refuses that), refuses to run, with ErrInvalidConfig.
func TestIdempotentWritesRequired(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  kgo.Opt
		want string
	}{
		{"disabled", kgo.DisableIdempotentWrite(), "state: ClientOpts disable idempotent writes"},
		{"cancellable", kgo.AllowIdempotentProduceCancellation(), "state: ClientOpts allow idempotent produce cancellation"},
		{"acks=1", kgo.RequiredAcks(kgo.LeaderAck()), "idempotency requires acks=all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, "in")
			done, _ := c.run(state.Config{
				Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
				Process:       func(*state.Context, *kgo.Record) error { return nil },
				ClientOpts:    []kgo.Opt{tc.opt},
			})
			err := waitErr(t, done)
			require.ErrorIs(t, err, state.ErrInvalidConfig, "Run with ClientOpts %s", tc.name)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestNewRefusesBadConfig: every Config New cannot use gets an error that
// wraps ErrInvalidConfig and says what is wrong.
func TestNewRefusesBadConfig(t *testing.T) {
	process := func(*state.Context, *kgo.Record) error { return nil }
	subs := []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}}
	for _, tc := range []struct {
		cfg  state.Config
		want string
	}{
		{state.Config{Group: "g", Subtopologies: subs}, "state: Config.Process is nil"},
		{state.Config{Process: process, Subtopologies: subs}, "state: Config.Group is empty"},
		{state.Config{Group: "g", Process: process, Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}}}}, "0 partitions"},
		{state.Config{Group: "g", Process: process, Cooperative: true, Subtopologies: []kgolearner.Subtopology{{Topics: []string{"a", "b"}, Partitions: 1}}}, "Cooperative needs one"},
	} {
		_, err := state.New(tc.cfg)
		require.ErrorIs(t, err, state.ErrInvalidConfig, "New(%+v)", tc.cfg)
		require.ErrorContains(t, err, tc.want, "New(%+v)", tc.cfg)
	}
}

// TestRuntimeRunsOnce: Run on a Runtime not built with New, or called a
// second time, returns an error wrapping ErrInvalidConfig at once, and the
// zero Runtime's other methods do nothing (before: Run on the zero Runtime
// blocked for ever, and Status and Shutdown panicked).
func TestRuntimeRunsOnce(t *testing.T) {
	var zero state.Runtime
	err := zero.Run(context.Background())
	require.ErrorIs(t, err, state.ErrInvalidConfig, "Run on the zero Runtime")
	require.ErrorContains(t, err, "not built with New", "Run on the zero Runtime")
	require.Zero(t, zero.Status(), "Status of the zero Runtime")
	zero.Shutdown()
	zero.Leave(time.Time{})

	rt, err := state.New(state.Config{
		Group: "g", Process: func(*state.Context, *kgo.Record) error { return nil },
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 1, Stateful: true}},
		ClientOpts:    []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run returns during its start
	require.Error(t, rt.Run(ctx), "first Run, its ctx cancelled")
	err = rt.Run(context.Background())
	require.ErrorIs(t, err, state.ErrInvalidConfig, "second Run")
	require.ErrorContains(t, err, "runs once", "second Run")
}

// Changes too large for the producer (one input record's changes travel in
// one changelog record, see Put) stop Run with an error wrapping
// kerr.MessageTooLarge, before anything of the batch is written: retrying
// cannot help, as processing the record again makes the same changes.
func TestChangesTooLargeStopRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
		put  func(ctx *state.Context) error
	}{
		{"OneValue", nil, func(ctx *state.Context) error { return ctx.Put([]byte("k"), make([]byte, 1_000_000)) }},
		{"TwoValuesInOneRecord", nil, func(ctx *state.Context) error { // each fits, the first record carries both
			if err := ctx.Put([]byte("a"), make([]byte, 600_000)); err != nil {
				return err
			}
			return ctx.Put([]byte("b"), make([]byte, 600_000))
		}},
		{"ProducerBatchMaxBytes", []kgo.Opt{kgo.ProducerBatchMaxBytes(4096)}, func(ctx *state.Context) error {
			return ctx.Put([]byte("k"), make([]byte, 5000))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, "in", "out")
			c.produce(&kgo.Record{Topic: "in", Partition: 0})
			done, _ := c.run(state.Config{
				Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
				ClientOpts:    tc.opts,
				Process: func(ctx *state.Context, _ *kgo.Record) error {
					ctx.Emit(&kgo.Record{Topic: "out", Partition: 0, Value: []byte("out")})
					return tc.put(ctx)
				},
			})
			err := waitErr(t, done)
			require.ErrorIs(t, err, kerr.MessageTooLarge)
			require.ErrorContains(t, err, "task 0_0")
			ends := c.endOffsets(map[string][]int32{"out": {0}, state.ChangelogTopic("g", 0): {0}})
			require.Zero(t, ends["out"][0], "output records written")
			require.Zero(t, ends[state.ChangelogTopic("g", 0)][0], "changelog records written")
		})
	}
}

// A batch the broker refuses as too large (the topic's max.message.bytes
// below the producer's limit) stops Run too, for the same reason.
func TestChangesTooLargeForTheBrokerStopRun(t *testing.T) {
	c := newCluster(t, "in", "out")
	c.produce(&kgo.Record{Topic: "in", Partition: 0})
	// The member writes only its changelog (no output).
	c.refuseProduce(kerr.MessageTooLarge, func(int) bool { return true })
	done, _ := c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process:       func(ctx *state.Context, _ *kgo.Record) error { return ctx.Put([]byte("k"), []byte("v")) },
	})
	require.ErrorIs(t, waitErr(t, done), kerr.MessageTooLarge)
}

// A changelog write the broker refuses with a code retrying cannot fix
// stops Run with the broker's error, as at start: a member its ACLs deny
// Produce, or a record its validation refuses (a timestamp out of the
// topic's range, say), would meet the same refusal again. The member
// processed its batch again and again, several times a second, and emitted
// its output every time.
func TestChangelogWriteRefusedStopsRun(t *testing.T) {
	for _, code := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.InvalidRecord, kerr.InvalidTimestamp} {
		t.Run(code.Message, func(t *testing.T) {
			c := newCluster(t, "in", "out")
			c.produce(&kgo.Record{Topic: "in", Partition: 0})
			out := c.c.TopicInfo("out").TopicID
			c.c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				c.c.KeepControl()
				for _, rt := range kr.(*kmsg.ProduceRequest).Topics {
					if rt.Topic == "out" || rt.TopicID == out { // Produce v13 names topics by ID
						return nil, nil, false
					}
				}
				return state.RefusedProduce(kr, code.Code), nil, true
			})
			done, _ := c.run(state.Config{
				Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
				Process: func(ctx *state.Context, _ *kgo.Record) error {
					ctx.Emit(&kgo.Record{Topic: "out", Partition: 0, Value: []byte("out")})
					return ctx.Put([]byte("k"), []byte("v"))
				},
			})
			err := waitErr(t, done)
			require.ErrorIs(t, err, code)
			require.ErrorContains(t, err, "state: write: changelog: ")
			ends := c.endOffsets(map[string][]int32{"out": {0}})
			require.Equal(t, int64(1), ends["out"][0], "output records written for one input record")
		})
	}
}
