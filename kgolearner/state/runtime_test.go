package state_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/learnerassignor/learner/kgolearner/state/boltstore"
	"github.com/learnerassignor/learner/kgolearner/state/countapp"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

const partitions = 6

// app is a counter application on an in-process cluster: its members, a
// producer, and the progress every member reports.
type app struct {
	t       *testing.T
	cluster *kfake.Cluster
	opts    []kgo.Opt
	group   string
	cfg     func(*state.Config)
	prod    *countapp.Producer

	mu        sync.Mutex
	processed map[int32]int64 // partition -> next offset processed, by anyone
	replayed  map[string]int64
	restored  map[string]map[string]int // member -> task -> changelog records
	running   map[string]int            // member -> tasks it started running
	members   map[string]*runningMember
}

type runningMember struct {
	rt   *state.Runtime
	stop context.CancelFunc
	done chan error
}

func newApp(t *testing.T, cfg func(*state.Config), opts ...kfake.Opt) *app {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100 * time.Millisecond),
		kfake.SeedTopics(partitions, countapp.Input, countapp.Output)}, opts...)...)
	require.NoError(t, err)
	a := &app{t: t, cluster: c, opts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, group: "count", cfg: cfg,
		processed: map[int32]int64{}, replayed: map[string]int64{}, restored: map[string]map[string]int{}, running: map[string]int{}, members: map[string]*runningMember{}}
	a.prod, err = countapp.NewProducer(a.opts, partitions, 50)
	require.NoError(t, err)
	t.Cleanup(func() {
		for name := range a.members {
			a.crash(name)
		}
		a.prod.Close()
		c.Close()
	})
	return a
}

func (a *app) start(name string, stores state.Stores) {
	a.t.Helper()
	cfg := state.Config{
		Group:         a.group,
		Subtopologies: countapp.Topology(partitions),
		Options:       learner.Options{AcceptableLag: 10},
		Stores:        stores,
		Process:       countapp.Count,
		ClientOpts:    slices.Concat(a.opts, []kgo.Opt{kgo.ClientID(name)}, memberTimings),
		Observer: state.Observer{
			Processed: func(_ string, rec *kgo.Record) {
				a.mu.Lock()
				a.processed[rec.Partition] = max(a.processed[rec.Partition], rec.Offset+1)
				a.mu.Unlock()
			},
			Running: func(task string, replayed int64) {
				a.mu.Lock()
				a.replayed[task] += replayed
				a.running[name]++
				a.mu.Unlock()
			},
			Restored: func(task, _ string, n int) {
				a.mu.Lock()
				a.restored[name][task] += n
				a.mu.Unlock()
			},
			Error: func(err error) { a.t.Logf("%s: %v", name, err) },
		},
	}
	if a.cfg != nil {
		a.cfg(&cfg)
	}
	a.mu.Lock()
	a.restored[name] = map[string]int{}
	a.running[name] = 0
	a.mu.Unlock()
	rt, err := state.New(cfg)
	require.NoError(a.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	m := &runningMember{rt: rt, stop: cancel, done: make(chan error, 1)}
	go func() { m.done <- rt.Run(ctx) }()
	a.members[name] = m
}

// leave hands the member's tasks over and waits for it to stop.
func (a *app) leave(name string, deadline time.Duration) {
	a.t.Helper()
	m := a.members[name]
	m.rt.Leave(time.Now().Add(deadline))
	select {
	case err := <-m.done:
		require.NoError(a.t, err, "member %s", name)
	case <-time.After(deadline + 10*time.Second):
		a.t.Fatalf("member %s did not stop within %v of its deadline", name, 10*time.Second)
	}
	m.stop()
	delete(a.members, name)
}

// crash stops a member at once.
func (a *app) crash(name string) {
	m := a.members[name]
	m.stop()
	<-m.done
	delete(a.members, name)
}

// produce sends n more records.
func (a *app) produce(from, n int) {
	for i := from; i < from+n; i++ {
		a.prod.Send(i)
	}
	require.NoError(a.t, a.prod.Flush())
}

// waitProcessed waits until every acknowledged input record is processed.
func (a *app) waitProcessed(total int) {
	a.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a.mu.Lock()
		var n int64
		for _, off := range a.processed {
			n += off
		}
		a.mu.Unlock()
		if n == int64(total) {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("processed %d of %d records after 30s", n, total)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkCounts compares the changelog's final state with a sequential count.
func (a *app) checkCounts() {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want, n, err := countapp.Sequential(ctx, a.opts, partitions)
	require.NoError(a.t, err)
	got, err := countapp.FromChangelog(ctx, a.opts, a.group, partitions)
	require.NoError(a.t, err)
	require.Empty(a.t, countapp.Diff(got, want, 10), "changelog counts vs a sequential count of %d records", n)
}

// A group that grows and shrinks under load keeps exact counts, and a
// member that leaves with a deadline hands its tasks to warm learners.
func TestScaleUpAndDown(t *testing.T) {
	a := newApp(t, nil)
	a.start("m1", nil)
	a.start("m2", nil)
	a.produce(0, 600)
	a.waitProcessed(600)
	a.start("m3", nil)
	a.produce(600, 600)
	a.waitProcessed(1200)
	a.leave("m1", 5*time.Second)
	a.produce(1200, 600)
	a.waitProcessed(1800)
	a.checkCounts()
}

// A crashed member's tasks restore cold elsewhere; a member that returns
// with its old stores reports them and catches up from its checkpoint.
func TestCrashAndReturn(t *testing.T) {
	a := newApp(t, nil)
	disk := &state.MemoryStores{}
	a.start("m1", disk)
	a.start("m2", nil)
	a.produce(0, 600)
	a.waitProcessed(600)
	a.crash("m1")
	a.produce(600, 600)
	a.waitProcessed(1200)
	a.start("m1", disk)
	a.produce(1200, 600)
	a.waitProcessed(1800)
	a.checkCounts()
}

// A member restarted on the same disk finds its stores, reports their lag
// at its first join and replays only the changelog written since.
func TestRestartOnSameDisk(t *testing.T) {
	a := newApp(t, nil)
	disk := boltstore.Stores{Dir: t.TempDir()}
	a.start("m1", disk)
	a.produce(0, 1200)
	a.waitProcessed(1200)
	a.crash("m1")
	a.start("m2", nil)
	a.produce(1200, 120)
	a.waitProcessed(1320)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	changelog := state.ChangelogTopic(a.group, 0)
	before, err := state.EndOffsets(ctx, a.admin(), map[string][]int32{changelog: {0, 1, 2, 3, 4, 5}})
	require.NoError(t, err)

	a.start("m1", disk)
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.running["m1"] > 0
	}, 20*time.Second, 10*time.Millisecond, "the restarted member never took a task back")
	a.produce(1320, 1200)
	a.waitProcessed(2520)
	a.checkCounts()

	a.mu.Lock()
	defer a.mu.Unlock()
	for task, n := range a.restored["m1"] {
		var p int32
		_, err := fmt.Sscanf(task, "0_%d", &p)
		require.NoError(t, err)
		// m1 had restored about 200 records of every task before it
		// stopped; it replays the 20 or so m2 wrote since, and what m2
		// writes while m1 catches up.
		end := before[changelog][p]
		require.Less(t, int64(n), end-100, "task %s: the restarted member replayed %d changelog records, %d before it restarted: want only the tail", task, n, end)
	}
	require.NotEmpty(t, a.restored["m1"], "the restarted member restored nothing")
}

// admin returns a client for one-off requests.
func (a *app) admin() *kgo.Client {
	cl, err := kgo.NewClient(a.opts...)
	require.NoError(a.t, err)
	a.t.Cleanup(cl.Close)
	return cl
}
