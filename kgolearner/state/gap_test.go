package state_test

import (
	"context"
	"testing"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// A key that one input record set along with others, and a later one
// deleted, stays deleted once compaction has run: a real broker's cleaner
// drops the key's own record (its tombstone supersedes it) and, after the
// topic's delete.retention.ms, the tombstone too, while the input record's
// first changelog record stays (its own key is still live) and still
// carries the deleted key's old value in its group header. A restore from
// an empty store reads that header, and the key must not come back.
func TestCompactedTombstoneStaysDeleted(t *testing.T) {
	changelog := state.ChangelogTopic("g", 0)
	c := newCluster(t, "in", changelog)
	alterTopicConfig(t, c.admin(), changelog, "delete.retention.ms", "0") // tombstones go at the first cleaning
	processed := make(chan struct{}, 1)
	done, stop := c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Process: func(ctx *state.Context, rec *kgo.Record) error {
			switch string(rec.Value) {
			case "k1+k2":
				if err := ctx.Put([]byte("k1"), []byte("x")); err != nil {
					return err
				}
				return ctx.Put([]byte("k2"), []byte("x"))
			case "-k2":
				return ctx.Delete([]byte("k2"))
			}
			return ctx.Put(rec.Value, []byte("x"))
		},
		Observer: state.Observer{Processed: func(string, *kgo.Record) { processed <- struct{}{} }},
	})
	// One record at a time: each lands in a changelog batch of its own,
	// and kfake never cleans a partition's last batch (the active
	// segment), which the last record's batch then is.
	for _, v := range []string{"k1+k2", "-k2", "k3"} {
		c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte(v)})
		waitFor(t, done, processed, "processing of "+v)
	}
	stop()
	require.Equal(t, []string{"k1", "k2", "k2", "k3"}, c.changelogKeys(changelog, 0), "changelog keys before compaction")
	c.c.Compact()
	require.Equal(t, []string{"k1", "k3"}, c.changelogKeys(changelog, 0), "changelog keys once compaction dropped k2's value and its tombstone")

	require.Equal(t, []string{"k1", "k3"}, readKeys(t, c), "keys of the state restored from the compacted changelog")
}

// alterTopicConfig sets a topic's config.
func alterTopicConfig(t *testing.T, cl *kgo.Client, topic, name, value string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = name, kmsg.StringPtr(value)
	rr.Configs = append(rr.Configs, rc)
	alter.Resources = append(alter.Resources, rr)
	resp, err := alter.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Resources[0].ErrorCode), "set %s of %s", name, topic)
}
