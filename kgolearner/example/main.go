// Command example runs one member of a consumer group balanced by the
// learner assignor and prints every callback as it fires.
//
// Create the input topics with the same number of partitions, then start
// the example in a few terminals:
//
//	go run ./example -brokers localhost:9092 -topics orders,payments -partitions 6
//
// The first member runs every task; each newcomer learns tasks (it replays
// their state for -restore), reports them ready and takes them over. Press
// Ctrl-C once to leave gracefully: the member hands its tasks to learners
// on the others and exits when it has none left or after -leave-timeout.
// Press Ctrl-C again to quit at once.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "localhost:9092", "Kafka brokers, comma separated")
	group := flag.String("group", "learner-example", "consumer group")
	topics := flag.String("topics", "orders,payments", "co-partitioned input topics, comma separated")
	partitions := flag.Int("partitions", 6, "partitions of each input topic")
	stateless := flag.Bool("stateless", false, "tasks are stateless: they move without learners")
	standbys := flag.Int("standbys", 0, "standby replicas of each task")
	eager := flag.Bool("eager", false, "rejoin as soon as any learner is ready, not when all are")
	restore := flag.Duration("restore", 5*time.Second, "how long a learner takes to replay a task's state")
	leaveTimeout := flag.Duration("leave-timeout", time.Minute, "how long a leaving member waits for its learners")
	flag.Parse()

	interrupt := make(chan os.Signal, 2)
	signal.Notify(interrupt, os.Interrupt)
	if err := run(config{
		brokers: strings.Split(*brokers, ","), group: *group, topics: strings.Split(*topics, ","),
		partitions: int32(*partitions), stateful: !*stateless, standbys: *standbys, eager: *eager,
		restore: *restore, leaveTimeout: *leaveTimeout,
	}, interrupt); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	brokers, topics       []string
	group                 string
	partitions            int32
	stateful, eager       bool
	standbys              int
	restore, leaveTimeout time.Duration
	clientOpts            []kgo.Opt // more client options (the test's shorter heartbeats)
}

// run runs one member until it has handed its tasks over after the first
// interrupt, or at once after the second.
func run(c config, interrupt <-chan os.Signal) error {
	var b *kgolearner.Balancer
	done := make(chan struct{})
	var once sync.Once
	var timers sync.Map // task -> *time.Timer of its simulated replay
	policy := learner.RejoinStable
	if c.eager {
		policy = learner.RejoinEager
	}
	b, err := kgolearner.New(kgolearner.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: c.topics, Partitions: c.partitions, Stateful: c.stateful}},
		Options:       learner.Options{Standbys: c.standbys},
		Policy:        policy,
		Hooks: kgolearner.Hooks{
			StartActive: func(task string) { log.Printf("start active   %s %v", task, b.Partitions(task)) },
			StopActive: func(task string) error {
				log.Printf("stop active    %s (the balancer commits its offsets next)", task)
				return nil
			},
			StartLearning: func(task string) {
				log.Printf("start learning %s (ready in %v)", task, c.restore)
				timers.Store(task, time.AfterFunc(c.restore, func() {
					log.Printf("ready          %s", task)
					b.Ready(task)
				}))
			},
			StopLearning: func(task string) {
				if t, ok := timers.LoadAndDelete(task); ok {
					t.(*time.Timer).Stop()
				}
				log.Printf("stop learning  %s", task)
			},
			StartStandby: func(task string) { log.Printf("start standby  %s", task) },
			StopStandby:  func(task string) { log.Printf("stop standby   %s", task) },
			Shutdown: func() {
				log.Printf("shutdown: tasks handed over (or the leave deadline passed)")
				once.Do(func() { close(done) })
			},
			Rebalanced: func(r kgolearner.Round) {
				log.Printf("leader: rebalanced %d members, deferred %v", len(r.Members), r.Deferred)
				for _, m := range r.Members {
					log.Printf("  join  %s", learner.FormatMember(m))
				}
				for _, a := range r.Assignments {
					log.Printf("  sent  %s", learner.FormatAssignment(a))
				}
			},
		},
	})
	if err != nil {
		return err
	}
	opts := append(b.Opts(), kgo.SeedBrokers(c.brokers...), kgo.ConsumerGroup(c.group))
	cl, err := kgo.NewClient(append(opts, c.clientOpts...)...)
	if err != nil {
		return err
	}
	// The loop below may return between a poll and its AllowRebalance: a
	// plain Close would then wait for the rebalance it blocks, for ever.
	defer cl.CloseAllowingRebalance()
	b.Bind(cl)

	go func() {
		<-interrupt
		log.Printf("leaving: handing tasks over (Ctrl-C again to quit now)")
		b.Leave(time.Now().Add(c.leaveTimeout))
		<-interrupt
		once.Do(func() { close(done) })
	}()

	// The poll loop: a real application hands each record to its task.
	for {
		pollCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		select {
		case <-done:
			return nil
		default:
		}
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				log.Printf("fetch %s/%d: %v", topic, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			task, _ := b.TaskOf(r.Topic, r.Partition)
			log.Printf("record         %s %s/%d@%d", task, r.Topic, r.Partition, r.Offset)
		})
		// This poll's records are processed: a rebalance may stop tasks now.
		cl.AllowRebalance()
	}
}
