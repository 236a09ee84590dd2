package state_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
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

// startRetryOpts shorten kgo's own retries of a request, so that a start
// step fails within a fraction of a second of the broker going away
// (kgo's defaults retry it for up to 30 s) and Run's retries show.
var startRetryOpts = []kgo.Opt{kgo.RequestRetries(2), kgo.RetryTimeout(time.Second),
	kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}

// startEvents records a member's Error events.
type startEvents struct {
	mu   sync.Mutex
	errs []error
}

func (e *startEvents) add(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

func (e *startEvents) all() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

// startDuringOutage starts member m1 of an app whose broker is unreachable
// from the start (o's outage begun before any connection) and waits until
// Run has reported n failed start attempts, failing the test if Run
// returns meanwhile. The broker drops every connection at its first
// request; with refuse, m1's dials are refused too, as when nothing
// listens on the broker's port. before, if not nil, prepares the app
// before the outage.
func startDuringOutage(t *testing.T, o *outage, events *startEvents, n int, refuse bool, before func(*app)) *app {
	t.Helper()
	a := newApp(t, func(cfg *state.Config) {
		cfg.ClientOpts = append(cfg.ClientOpts, startRetryOpts...)
		if refuse {
			cfg.ClientOpts = append(cfg.ClientOpts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
				if o.down.Load() {
					return nil, &net.OpError{Op: "dial", Net: network, Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
				}
				var d net.Dialer
				return d.DialContext(ctx, network, host)
			}))
		}
		cfg.Observer.Error = func(err error) {
			t.Logf("m1: %v", err)
			events.add(err)
		}
	}, kfake.ListenFn(o.conns.listen))
	if before != nil {
		before(a)
	}
	a.cluster.Control(o.control(a.cluster, nil))
	o.begin()
	a.start("m1", nil)
	m := a.members["m1"]
	deadline := time.Now().Add(20 * time.Second)
	for len(events.all()) < n {
		select {
		case err := <-m.done:
			delete(a.members, "m1") // stopped: the test's end must not wait for it
			t.Fatalf("Run returned during an outage at start, after %d Error events: %v", len(events.all()), err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Error events after 20s of an outage at start, want %d", len(events.all()), n)
		}
	}
	return a
}

// Run rides out brokers that are unreachable when it starts, as a
// restarting broker or a network blip makes them: every connection dropped
// at its first request (Dropped), or every dial refused (Refused). It
// retries the start's requests, reporting each failed attempt as an Error
// event, and the member joins and processes once the broker is back.
// (Before: Run returned the first error kgo gave up on, "state: changelog
// topics metadata: ...", at once for both, as kgo retries neither, and the
// application had to build a new Runtime.)
func TestRunStartRidesOutAnOutage(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(map[bool]string{false: "Dropped", true: "Refused"}[refuse], func(t *testing.T) {
			var o outage
			var events startEvents
			a := startDuringOutage(t, &o, &events, 3, refuse, nil)
			for _, err := range events.all() {
				require.ErrorContains(t, err, "state: changelog topics metadata")
				require.ErrorContains(t, err, "Run retries its start in")
			}
			o.down.Store(false)
			a.produce(0, 60)
			a.waitProcessed(60)
			select {
			case err := <-a.members["m1"].done:
				delete(a.members, "m1")
				t.Fatalf("m1 stopped: %v", err)
			default:
			}
			a.checkCounts()
		})
	}
}

// startHanging starts a member of group "g" whose first attempt at its
// changelog topic's metadata fails (the broker drops the connection) and
// whose next one the broker never answers, and returns once that one is
// in flight: kgo would wait for its answer for over 5 s (the request
// timeout overhead of memberTimings).
func startHanging(t *testing.T, events *startEvents) (rt *state.Runtime, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	c := newCluster(t, "in")
	changelog := state.ChangelogTopic("g", 0)
	hung := make(chan struct{})
	var once sync.Once
	c.c.ControlKey(int16(kmsg.Metadata), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		if !slices.ContainsFunc(kr.(*kmsg.MetadataRequest).Topics, func(mt kmsg.MetadataRequestTopic) bool { return mt.Topic != nil && *mt.Topic == changelog }) {
			return nil, nil, false
		}
		if len(events.all()) == 0 {
			return nil, errors.New("dropped"), true // kfake closes the connection
		}
		once.Do(func() { close(hung) })
		return nil, nil, true // kfake answers nothing
	})
	rt, err := state.New(state.Config{Group: "g", Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process:    func(*state.Context, *kgo.Record) error { return nil },
		ClientOpts: slices.Concat(startRetryOpts, c.opts, memberTimings),
		Observer:   state.Observer{Error: func(err error) { t.Log(err); events.add(err) }}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errs, finished := make(chan error, 1), make(chan struct{})
	go func() {
		errs <- rt.Run(ctx)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	select {
	case <-hung:
	case err := <-errs:
		t.Fatalf("Run returned before its start hung: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no unanswered metadata request after 20s")
	}
	return rt, cancel, errs
}

// Cancelling ctx while Run retries its start makes it return at once, the
// attempt in flight abandoned, with an error wrapping ctx's and the last
// failure.
func TestRunStartCancelledDuringAnOutage(t *testing.T) {
	var events startEvents
	_, cancel, done := startHanging(t, &events)
	cancelled := time.Now()
	cancel()
	err := waitErr(t, done)
	require.Less(t, time.Since(cancelled), 2*time.Second, "Run's return after ctx was cancelled")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "; last failure: state: changelog topics metadata: ")
	require.Len(t, events.all(), 1, "Error events")
}

// Shutdown while Run retries its start makes it return nil at once, as
// Shutdown does at any other time, the attempt in flight abandoned; so
// does Leave, since a member still starting has nothing to hand over.
func TestRunStartShutdownDuringAnOutage(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(*state.Runtime)
	}{
		{"Shutdown", (*state.Runtime).Shutdown},
		// A member that has joined no group has nothing to hand over.
		{"Leave", func(rt *state.Runtime) { rt.Leave(time.Time{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var events startEvents
			rt, _, done := startHanging(t, &events)
			stopped := time.Now()
			c.stop(rt)
			require.NoError(t, waitErr(t, done))
			require.Less(t, time.Since(stopped), 2*time.Second, "Run's return after %s", c.name)
		})
	}
}

// What retrying cannot fix still stops Run at once, also after an outage
// at start: here a changelog topic that exists with a cleanup.policy the
// runtime refuses, found once the broker is back.
func TestRunStartOutageThenMisconfiguredTopic(t *testing.T) {
	var o outage
	var events startEvents
	a := startDuringOutage(t, &o, &events, 2, false, func(a *app) { a.createChangelog("delete") })
	o.down.Store(false)
	err := a.runErr("m1")
	require.ErrorIs(t, err, state.ErrChangelogTopic)
	for _, e := range events.all() {
		require.NotErrorIs(t, e, state.ErrChangelogTopic, "an Error event: ErrChangelogTopic was retried")
	}
}

// An authorization error at start stops Run at once, without retrying:
// here the changelog topic's metadata, denied.
func TestRunStartDeniedFailsAtOnce(t *testing.T) {
	c := newCluster(t, "in")
	refuseChangelogMetadata(c, kerr.TopicAuthorizationFailed, func(int32) bool { return true })
	var events startEvents
	done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process:  func(*state.Context, *kgo.Record) error { return nil },
		Observer: state.Observer{Error: events.add}})
	err := waitErr(t, done)
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.Empty(t, events.all(), "Error events: the denied request was retried")
}

// refuseChangelogMetadata answers with err the metadata requests for group
// g's changelog topic of subtopology 0 for which fail(n) is true, n
// counting them from 1.
func refuseChangelogMetadata(c *cluster, err *kerr.Error, fail func(n int32) bool) {
	changelog := state.ChangelogTopic("g", 0)
	var n atomic.Int32
	c.c.ControlKey(int16(kmsg.Metadata), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		req := kr.(*kmsg.MetadataRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic == nil || *req.Topics[0].Topic != changelog || !fail(n.Add(1)) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr(changelog), err.Code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
}

// A broker's UNKNOWN_SERVER_ERROR, its answer to any unexpected failure,
// passing ones too, is retried at start, as a fetch's is once Run runs:
// Kafka marks the code not retriable, and one such answer to the changelog
// topic's metadata stopped Run.
func TestRunStartRetriesUnknownServerError(t *testing.T) {
	c := newCluster(t, "in")
	refuseChangelogMetadata(c, kerr.UnknownServerError, func(n int32) bool { return n <= 2 })
	var events startEvents
	processed := make(chan struct{}, 1)
	done, _ := c.run(state.Config{Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process: func(*state.Context, *kgo.Record) error {
			select {
			case processed <- struct{}{}:
			default: // a record processed again after a rebalance
			}
			return nil
		},
		Observer: state.Observer{Error: events.add}})
	c.produce(&kgo.Record{Topic: "in", Partition: 0})
	waitFor(t, done, processed, "record processed")
	require.NotEmpty(t, events.all(), "Error events: the refused requests")
	require.ErrorIs(t, events.all()[0], kerr.UnknownServerError)
}

// A member whose creation of its changelog topic another client beat
// (TOPIC_ALREADY_EXISTS, as when members start together) uses the topic as
// one it found, once metadata lists it: its stores record the topic's ID,
// which the checks of a topic deleted and recreated compare. (Before: it
// used the topic unchecked, and its checkpoints had no ID.)
func TestChangelogTopicCreatedByAnother(t *testing.T) {
	var events startEvents
	a := newApp(t, func(cfg *state.Config) { cfg.Observer.Error = events.add })
	var fired atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	a.cluster.ControlKey(int16(kmsg.CreateTopics), func(kmsg.Request) (kmsg.Response, error, bool) {
		if fired.Swap(true) {
			return nil, nil, false // the test's own, while the member's waits
		}
		close(held)
		a.cluster.SleepControl(func() { <-release })
		a.cluster.DropControl()
		return nil, nil, false
	})
	stores := &state.MemoryStores{}
	a.start("m1", stores)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the member never created its changelog topic")
	}
	a.createChangelog("compact")
	close(release)
	a.produce(0, 60)
	a.waitProcessed(60)
	a.crash("m1")
	id := topicID(t, a.admin(), state.ChangelogTopic(a.group, 0))
	for p := range int32(partitions) {
		s, err := stores.Open(fmt.Sprintf("0_%d", p))
		require.NoError(t, err)
		cp, err := s.Checkpoint()
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.Positive(t, cp.Changelog, "changelog offset of task 0_%d's store", p)
		require.Equal(t, id, cp.ChangelogID, "changelog ID of task 0_%d's store, the topic's %s", p, kafkaID(id))
	}
	require.Empty(t, events.all(), "Error events")
}
