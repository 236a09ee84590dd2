// Command example runs the counter application of package countapp on the
// state runtime: a few members count words from a steadily written input
// topic while the group scales up, then down with a leave deadline. It
// prints each member's progress every second and a line per rebalance, and
// at the end checks every word's count against a sequential count of the
// input.
//
// With no flags it starts an in-process Kafka (kfake) of its own:
//
//	go run ./example
//
// Against a real cluster (the topics "words" and "counts" must exist with
// -partitions partitions; the changelog topic is created):
//
//	go run ./example -brokers localhost:9092
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/learnerassignor/learner/kgolearner/state/countapp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

type config struct {
	brokers    string
	partitions int
	members    int
	rate       int
	phase      time.Duration
	group      string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.brokers, "brokers", "", "Kafka brokers, host:port[,host:port]; empty starts an in-process cluster")
	fs.IntVar(&c.partitions, "partitions", 12, "partitions of the input topic (tasks)")
	fs.IntVar(&c.members, "members", 2, "members at the start; one more joins, then one leaves")
	fs.IntVar(&c.rate, "rate", 2000, "input records per second")
	fs.DurationVar(&c.phase, "phase", 3*time.Second, "duration of each phase: start, scaled up, scaled down")
	fs.StringVar(&c.group, "group", "count", "consumer group")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.partitions < 1 || c.partitions > 10_000 || c.members < 1 || c.members > 100 || c.rate < 1 || c.rate > 1_000_000 || c.phase <= 0 {
		return fmt.Errorf("flags out of range: -partitions 1..10000, -members 1..100, -rate 1..1000000, -phase > 0")
	}
	brokers := strings.Split(c.brokers, ",")
	if c.brokers == "" {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(c.partitions), countapp.Input, countapp.Output))
		if err != nil {
			return err
		}
		defer cluster.Close()
		brokers = cluster.ListenAddrs()
		fmt.Fprintf(out, "in-process Kafka at %s\n", brokers[0])
	}
	return play(ctx, c, []kgo.Opt{kgo.SeedBrokers(brokers...)}, out)
}

// member is one running member of the group.
type member struct {
	name      string
	rt        *state.Runtime
	processed atomic.Int64
	done      chan error
}

func play(ctx context.Context, c config, opts []kgo.Opt, out io.Writer) error {
	var (
		mu         sync.Mutex
		members    []*member
		rebalances int
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	start := time.Now()
	stamp := func() string { return fmt.Sprintf("%5.1fs", time.Since(start).Seconds()) }
	add := func(name string) error {
		m := &member{name: name, done: make(chan error, 1)}
		rt, err := state.New(state.Config{
			Group:         c.group,
			Subtopologies: countapp.Topology(int32(c.partitions)),
			Options:       learner.Options{AcceptableLag: 100},
			Process:       countapp.Count,
			ClientOpts:    append(opts, kgo.ClientID(name), kgo.HeartbeatInterval(200*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond)),
			Observer: state.Observer{
				Processed: func(string, *kgo.Record) { m.processed.Add(1) },
				Rebalanced: func() {
					mu.Lock()
					rebalances++
					n := rebalances
					mu.Unlock()
					say("%s rebalance %d, led by %s", stamp(), n, name)
				},
				Running: func(task string, replayed int64) {
					if replayed > 0 {
						say("%s %s: task %s restored %d changelog records, processing", stamp(), name, task, replayed)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		m.rt = rt
		go func() { m.done <- rt.Run(ctx) }()
		mu.Lock()
		members = append(members, m)
		mu.Unlock()
		say("%s %s joins", stamp(), name)
		return nil
	}
	progress := func() {
		mu.Lock()
		defer mu.Unlock()
		var parts []string
		for _, m := range members {
			s := m.rt.Status()
			parts = append(parts, fmt.Sprintf("%s: %d active (%d restoring), %d learning, %d processed",
				m.name, len(s.Active), len(s.Restoring), len(s.Learning), m.processed.Load()))
		}
		fmt.Fprintf(out, "%s %s\n", stamp(), strings.Join(parts, " | "))
	}

	prod, err := countapp.NewProducer(opts, int32(c.partitions), 1000)
	if err != nil {
		return err
	}
	defer prod.Close()
	pctx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	produced := make(chan error, 1)
	go func() { produced <- prod.Run(pctx, c.rate) }()

	for i := range c.members {
		if err := add(fmt.Sprintf("m%d", i+1)); err != nil {
			return err
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	wait := func(d time.Duration) error {
		end := time.After(d)
		for {
			select {
			case <-end:
				return nil
			case <-tick.C:
				progress()
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if err := wait(c.phase); err != nil {
		return err
	}
	if err := add(fmt.Sprintf("m%d", c.members+1)); err != nil {
		return err
	}
	if err := wait(c.phase); err != nil {
		return err
	}
	mu.Lock()
	leaving := members[0]
	members = members[1:]
	mu.Unlock()
	say("%s %s leaves, deadline 10s", stamp(), leaving.name)
	leaving.rt.Leave(time.Now().Add(10 * time.Second))
	if err := <-leaving.done; err != nil {
		return fmt.Errorf("%s: %w", leaving.name, err)
	}
	say("%s %s has left", stamp(), leaving.name)
	if err := wait(c.phase); err != nil {
		return err
	}
	stopProducing()
	if err := <-produced; err != nil {
		return fmt.Errorf("producer: %w", err)
	}

	// Let the members finish the input, then check the counts.
	var total int64
	for total < int64(prod.Acked()) {
		if err := wait(500 * time.Millisecond); err != nil {
			return err
		}
		total = leaving.processed.Load()
		mu.Lock()
		for _, m := range members {
			total += m.processed.Load()
		}
		mu.Unlock()
	}
	for _, m := range members {
		m.rt.Shutdown()
		if err := <-m.done; err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	want, n, err := countapp.Sequential(ctx, opts, int32(c.partitions))
	if err != nil {
		return err
	}
	got, err := countapp.FromChangelog(ctx, opts, c.group, int32(c.partitions))
	if err != nil {
		return err
	}
	if diff := countapp.Diff(got, want, 5); len(diff) > 0 {
		return fmt.Errorf("counts differ from a sequential count of %d records: %s", n, strings.Join(diff, "; "))
	}
	say("%s counts exact: %d words over %d records, %d rebalances", stamp(), len(want), n, rebalances)
	return nil
}
