package state_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Cooperative member that a rebalance takes a partition from commits, in
// its revoke, what it processed of it: the group's committed offset is the
// member's processed one, and the partition's next owner processes none of
// those records again (a stateless task would emit their output twice).
// The first member's own commits (its commit loop's) are refused until
// every offset it processed was refused once, so that at the revoke it
// holds processed offsets it never committed, as a member does between
// its last batch's commit and a revoke.
func TestCooperativeRevokeCommitsProcessed(t *testing.T) {
	c := newCluster(t, "in")
	const n = 5 // records a partition before the second member joins
	var recs []*kgo.Record
	for p := range int32(2) {
		for range n {
			recs = append(recs, &kgo.Record{Topic: "in", Partition: p})
		}
	}
	c.produce(recs...)

	var mu sync.Mutex
	refusing, refused := true, map[int32]int64{} // partition -> highest offset refused
	c.c.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if !refusing {
			return nil, nil, false
		}
		req := kr.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				refused[rp.Partition] = max(refused[rp.Partition], rp.Offset)
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.OffsetMetadataTooLarge.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})

	processed := map[string][][2]int64{} // member -> (partition, offset) in order
	start := func(name string) *state.Runtime {
		rt, err := state.New(state.Config{
			Group:         "g",
			Cooperative:   true,
			Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2}},
			Process:       func(*state.Context, *kgo.Record) error { return nil },
			ClientOpts:    slices.Concat(c.opts, memberTimings, []kgo.Opt{kgo.ClientID(name)}),
			Observer: state.Observer{
				Processed: func(_ string, rec *kgo.Record) {
					mu.Lock()
					processed[name] = append(processed[name], [2]int64{int64(rec.Partition), rec.Offset})
					mu.Unlock()
				},
				Error: func(err error) { t.Logf("%s: %v", name, err) },
			},
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := rt.Run(ctx); err != nil {
				t.Errorf("%s: Run: %v", name, err)
			}
		}()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		return rt
	}

	start("m1")
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if refused[0] == n && refused[1] == n {
			refusing = false
			return true
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "m1's commits of offset %d of both partitions", n)
	mu.Lock()
	require.Len(t, processed["m1"], 2*n, "records m1 processed")
	mu.Unlock()

	m2 := start("m2")
	var active []string
	require.Eventually(t, func() bool {
		active = m2.Status().Active
		return len(active) > 0
	}, 30*time.Second, 10*time.Millisecond, "m2 never got a task")
	require.Len(t, active, 1, "m2's active tasks")
	moved := map[string]int32{"0_0": 0, "0_1": 1}[active[0]]

	// m1 revoked the partition, and its revoke returned, before the
	// rebalance that gave it to m2; m2 has nothing to process (and
	// commit) until the next record, unless it starts before offset n.
	admin := c.admin()
	require.Equal(t, int64(n), state.CommittedOffset(t, admin, "g", "in", moved), "the group's committed offset of partition %d, which m2 took from m1", moved)

	// One more record a partition: once m2 processed its partition's,
	// it processed whatever it would have of the records before it.
	c.produce(&kgo.Record{Topic: "in", Partition: 0}, &kgo.Record{Topic: "in", Partition: 1})
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(processed["m2"], [2]int64{int64(moved), n})
	}, 30*time.Second, 10*time.Millisecond, "m2 never processed offset %d of partition %d", n, moved)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, [][2]int64{{int64(moved), n}}, processed["m2"], "records m2 processed: (partition, offset)")
}
