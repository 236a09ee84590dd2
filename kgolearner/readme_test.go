package kgolearner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runMember is the README's Kafka example: one member of a group, run until
// ctx ends. app is the application's side.
func runMember(ctx context.Context, brokers []string, app *App) error {
	var b *kgolearner.Balancer
	b, err := kgolearner.New(kgolearner.Config{
		// Partition p of orders and of payments is task "0_p"; every member declares the same list.
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"orders", "payments"}, Partitions: 6, Stateful: true}},
		Options:       learner.Options{Standbys: 1},
		Hooks: kgolearner.Hooks{
			StartActive:   app.Run,
			StopActive:    app.Stop,    // flush the task's state; the balancer then commits its offsets
			LoseActive:    app.Discard, // the session is gone: nothing can be committed
			StartLearning: func(task string) { app.Restore(task, func() { b.Ready(task) }) },
			StopLearning:  app.StopRestore,
		},
	})
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(b.Opts(), kgo.SeedBrokers(brokers...), kgo.ConsumerGroup("app"))...)
	if err != nil {
		return err
	}
	defer cl.Close() // stops and commits the tasks still running, then leaves the group
	b.Bind(cl)       // Ready and Leave make this client rejoin

	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			task, _ := b.TaskOf(r.Topic, r.Partition)
			app.Process(task, r)
		})
		cl.AllowRebalance() // this poll's records are processed: a rebalance may stop tasks now
	}
	return nil
}

// App is a toy application for the README's example: it counts the records
// each task processes and replays a learner's state in no time.
type App struct {
	mu      sync.Mutex
	running map[string]bool
	seen    map[string]int // "topic/partition@offset" -> times processed
	wrong   []string       // records of tasks the member does not run
}

func newApp() *App { return &App{running: map[string]bool{}, seen: map[string]int{}} }

func (a *App) Run(task string) { a.mu.Lock(); a.running[task] = true; a.mu.Unlock() }

func (a *App) Stop(task string) error {
	a.mu.Lock()
	delete(a.running, task)
	a.mu.Unlock()
	return nil
}

func (a *App) Discard(task string) { a.mu.Lock(); delete(a.running, task); a.mu.Unlock() }

func (a *App) Restore(task string, ready func()) { go ready() }

func (a *App) StopRestore(string) {}

func (a *App) Process(task string, r *kgo.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running[task] {
		a.wrong = append(a.wrong, fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset))
	}
	a.seen[fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset)]++
}

// TestReadmeExample runs the README's example: one member runs every task,
// a second joins, learns its share and takes it over; every record is
// processed exactly once, by the member running its task.
func TestReadmeExample(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "orders", "payments"))
	require.NoError(t, err)
	defer c.Close()
	p := startProducer(t, c, []kgolearner.Subtopology{{Topics: []string{"orders", "payments"}, Partitions: 6}})
	defer p.stop()

	apps := []*App{newApp(), newApp()}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	for i, app := range apps {
		if i > 0 {
			time.Sleep(time.Second) // the first member runs everything first
		}
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, runMember(ctx, c.ListenAddrs(), app)) }()
	}
	running := func(a *App) int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.running) }
	require.Eventually(t, func() bool { return running(apps[0]) == 3 && running(apps[1]) == 3 }, 15*time.Second, 20*time.Millisecond,
		"the second member to take over half the tasks")

	produced := p.stop()
	seen := func() (total, missing, twice int) {
		for _, a := range apps {
			a.mu.Lock()
		}
		defer func() {
			for _, a := range apps {
				a.mu.Unlock()
			}
		}()
		for key, n := range produced {
			for off := range n {
				k := fmt.Sprintf("%s@%d", key, off)
				times := apps[0].seen[k] + apps[1].seen[k]
				total++
				if times == 0 {
					missing++
				}
				if times > 1 {
					twice++
				}
			}
		}
		return total, missing, twice
	}
	require.Eventually(t, func() bool { _, missing, _ := seen(); return missing == 0 }, 15*time.Second, 20*time.Millisecond,
		"every record produced to be processed")
	total, _, twice := seen()
	t.Logf("%d records processed across the hand-over", total)
	assert.Zero(t, twice, "records processed twice")
	for i, a := range apps {
		a.mu.Lock()
		assert.Empty(t, a.wrong, "records member %d processed for tasks it does not run", i+1)
		a.mu.Unlock()
	}
}
