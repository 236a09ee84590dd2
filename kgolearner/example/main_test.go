package main

import (
	"io"
	"log"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestInterruptsEndTheMember runs the example as two members: the first,
// interrupted once, hands its tasks over and returns; the second,
// interrupted twice, returns at once. Each must return, not hang in Close.
func TestInterruptsEndTheMember(t *testing.T) {
	log.SetOutput(io.Discard)
	defer log.SetOutput(os.Stderr)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "orders", "payments"),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	require.NoError(t, err)
	defer cluster.Close()
	c := config{
		brokers: cluster.ListenAddrs(), group: "example", topics: []string{"orders", "payments"},
		partitions: 6, stateful: true, restore: 200 * time.Millisecond, leaveTimeout: 20 * time.Second,
		clientOpts: []kgo.Opt{kgo.HeartbeatInterval(200 * time.Millisecond), kgo.SessionTimeout(3 * time.Second)},
	}
	start := func() (chan os.Signal, chan error) {
		interrupt, ended := make(chan os.Signal, 2), make(chan error, 1)
		go func() { ended <- run(c, interrupt) }()
		return interrupt, ended
	}
	// returns waits for a member's run to end.
	returns := func(name string, ended chan error, within time.Duration) {
		t.Helper()
		select {
		case err := <-ended:
			require.NoError(t, err, "%s: run", name)
		case <-time.After(within):
			t.Fatalf("%s: run did not return within %v of its interrupt", name, within)
		}
	}

	first, firstEnded := start()
	time.Sleep(2 * time.Second) // the first member runs every task
	second, secondEnded := start()
	time.Sleep(3 * time.Second) // the second learns some and takes them over
	first <- os.Interrupt
	returns("the member left with one interrupt", firstEnded, 30*time.Second)
	second <- os.Interrupt
	second <- os.Interrupt
	returns("the member quit with two interrupts", secondEnded, 15*time.Second)
}
