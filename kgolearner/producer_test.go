package kgolearner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// producer writes one record to every partition of a topology every
// produceEvery, until stopped.
type producer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu       sync.Mutex
	produced map[string]int64 // "topic/partition" -> records acknowledged
}

func startProducer(t *testing.T, c *kfake.Cluster, topology []kgolearner.Subtopology) *producer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	p := &producer{cl: cl, cancel: cancel, done: make(chan struct{}), produced: map[string]int64{}}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(produceEvery)
		defer tick.Stop()
		for {
			for _, s := range topology {
				for _, topic := range s.Topics {
					for part := range s.Partitions {
						r := &kgo.Record{Topic: topic, Partition: part, Value: []byte("v")}
						cl.Produce(ctx, r, p.acked)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *producer) acked(r *kgo.Record, err error) {
	if err != nil {
		return // never acknowledged: no offset
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
	p.produced[key] = max(p.produced[key], r.Offset+1)
}

// stop stops producing and returns, by "topic/partition", how many records
// each partition holds. Later calls return the same.
func (p *producer) stop() map[string]int64 {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.cl.Flush(context.Background())
		p.cl.Close()
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.produced
}
