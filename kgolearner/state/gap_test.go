package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readKeys runs a member of topology "in" (2 partitions, stateful) with
// fresh stores until it processes a "read" record of partition 0, and
// returns the keys k0 to k9 its state holds then; any other record's value
// is a key it sets. The test fails if "read" is not processed in 20 s: the
// task never ran.
func readKeys(t *testing.T, c *cluster) []string {
	t.Helper()
	keys := make(chan []string, 1)
	_, stop := c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process: func(ctx *state.Context, rec *kgo.Record) error {
			if string(rec.Value) != "read" {
				return ctx.Put(rec.Value, []byte("x"))
			}
			var found []string
			for _, k := range []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"} {
				if _, ok, err := ctx.Get([]byte(k)); err != nil || ok {
					found = append(found, k)
				}
			}
			keys <- found
			return nil
		},
	})
	defer stop()
	c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte("read")})
	select {
	case found := <-keys:
		return found
	case <-time.After(20 * time.Second):
		t.Fatal("the read record was never processed: the task never caught up with its changelog")
		return nil
	}
}

// A changelog that ends with a transaction's control record (seeded by a
// transactional producer) has an end offset no data record reaches: the
// store restores the data records and must count the marker as restored,
// or an active task would wait for it forever.
func TestChangelogEndingWithControlRecord(t *testing.T) {
	changelog := state.ChangelogTopic("g", 0)
	c := newCluster(t, "in", changelog)
	seeder := c.transactionalProducer()
	ctx := context.Background()
	require.NoError(t, seeder.BeginTransaction())
	for _, k := range []string{"k1", "k2"} {
		require.NoError(t, seeder.ProduceSync(ctx, state.ChangelogRecord(changelog, 0, []byte(k), []byte("x"), map[string]int64{"in": 0})).FirstErr())
	}
	require.NoError(t, seeder.EndTransaction(ctx, kgo.TryCommit))
	ends, err := state.EndOffsets(ctx, seeder, map[string][]int32{changelog: {0}})
	require.NoError(t, err)
	require.Equal(t, int64(3), ends[changelog][0], "two records and the commit marker")

	require.Equal(t, []string{"k1", "k2"}, readKeys(t, c), "keys of the state seeded in a transaction")
}

// A changelog seeded by a transactional producer may hold the records of
// an aborted transaction: they never happened, and a restore must not
// apply them.
func TestChangelogWithAbortedTransaction(t *testing.T) {
	changelog := state.ChangelogTopic("g", 0)
	c := newCluster(t, "in", changelog)
	seeder := c.transactionalProducer()
	ctx := context.Background()
	for _, tx := range []struct {
		key    string
		commit kgo.TransactionEndTry
	}{{"k1", kgo.TryAbort}, {"k2", kgo.TryCommit}} {
		require.NoError(t, seeder.BeginTransaction())
		require.NoError(t, seeder.ProduceSync(ctx, state.ChangelogRecord(changelog, 0, []byte(tx.key), []byte("x"), map[string]int64{"in": 0})).FirstErr())
		require.NoError(t, seeder.EndTransaction(ctx, tx.commit))
	}

	require.Equal(t, []string{"k2"}, readKeys(t, c), "keys of the state: k1's transaction was aborted")
}

// A changelog whose records were all deleted (DeleteRecords, or retention
// on a topic created with cleanup.policy=compact,delete) starts and ends
// at the same offset: an empty store has nothing to restore, and must not
// wait for records below the changelog's start.
func TestChangelogDeletedToItsEnd(t *testing.T) {
	changelog := state.ChangelogTopic("g", 0)
	c := newCluster(t, "in", changelog)
	c.produce(state.ChangelogRecord(changelog, 0, []byte("k1"), []byte("x"), map[string]int64{"in": 0}),
		state.ChangelogRecord(changelog, 0, []byte("k2"), []byte("x"), map[string]int64{"in": 0}))
	require.Equal(t, int64(2), c.deleteRecords(changelog, 0, -1), "the changelog's start after deleting every record")

	require.Empty(t, readKeys(t, c), "keys of the state restored from an empty changelog")
}
