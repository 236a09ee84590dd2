package kgolearner_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDelayedRejoinDroppedAfterAJoin: a member that must rejoin (here it
// announces Leave) right after its session began waits one heartbeat
// interval first (see the Balancer's rejoin). When a rebalance happens
// meanwhile, its join already reported the news, so the delayed rejoin is
// dropped: the group rebalances once, not twice.
func TestDelayedRejoinDroppedAfterAJoin(t *testing.T) {
	const settle = 1500 * time.Millisecond // the heartbeat interval: how long a rejoin waits
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100 * time.Millisecond)}
	for _, s := range storyTopology {
		opts = append(opts, kfake.SeedTopics(s.Partitions, s.Topics...))
	}
	c, err := kfake.NewCluster(opts...)
	require.NoError(t, err)
	defer c.Close()

	var mu sync.Mutex
	var rounds []kgolearner.Round
	started := make(chan struct{}, 1)
	b, err := kgolearner.New(kgolearner.Config{Subtopologies: storyTopology, Hooks: kgolearner.Hooks{
		Rebalanced: func(r kgolearner.Round) { mu.Lock(); rounds = append(rounds, r); mu.Unlock() },
		StartActive: func(string) {
			select {
			case started <- struct{}{}:
			default:
			}
		},
	}})
	require.NoError(t, err)
	cl, err := kgo.NewClient(append(b.Opts(), kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("rejoin"),
		kgo.HeartbeatInterval(settle), kgo.SessionTimeout(4*settle), kgo.WithLogger(testLogger{t, "S1"}))...)
	require.NoError(t, err)
	defer cl.Close()
	b.Bind(cl)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if cl.PollFetches(ctx).IsClientClosed() {
				return
			}
			cl.AllowRebalance()
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(rounds) }

	select {
	case <-started: // the first session began: a rejoin now waits
	case <-time.After(waitTimeout):
		require.FailNow(t, "the member never started a task")
	}
	require.Equal(t, 1, count(), "rounds before Leave")
	b.Leave(time.Time{}) // delayed: the session began under settle ago
	cl.ForceRebalance()  // a rebalance meanwhile, which reports the Leave
	deadline := time.Now().Add(waitTimeout)
	for count() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 2, count(), "rounds after the forced rebalance")
	mu.Lock()
	leaving := rounds[1].Members[0].Leaving
	mu.Unlock()
	assert.True(t, leaving, "the forced rebalance's join reports the member leaving")
	time.Sleep(2 * settle) // past the delayed rejoin
	assert.Equal(t, 2, count(), "rounds once the delayed rejoin is due; want none after the forced one")
}
