package state_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/testseed"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCompactedRestores plays seeded random histories of a task whose
// input records each set, append to and delete 1 to 4 keys of a small key
// space, processed one at a time or several in a batch, while kfake's
// cleaner compacts the changelog at random points, a changelog write fails
// now and then (which may cut an input record's records short: the member
// restores what reached the changelog, writes the rest and goes on), and
// the member restarts, restoring from scratch or from the stores an
// earlier member kept (the last one's, or an older one's, which restore
// the records written since). Every read, after every restart among
// others, must find the sequential application of the input records:
// compaction must neither bring back a key nor lose or repeat a change.
// Appends read the value they extend, so that a record applied twice (a
// position restored behind the state) shows too.
//
// Half the histories set the changelog's delete.retention.ms to 0, so that
// the cleaner drops tombstones as soon as it reaches them. Those restore
// from scratch only, with one member: a store kept past a tombstone the
// cleaner dropped keeps the key (README, Restarts), as Kafka Streams' does,
// and a standby behind the cleaner is such a store.
//
// kfake's cleaner is close enough to a real broker's for this: it never
// cleans a partition's last batch (a broker never cleans the active
// segment, the one the last batch went to), and it drops a record only for
// a later one of the same key within the range it cleans, as a broker
// does. Where it differs, the test stays within what a broker does: kfake
// moves the partition's start offset to its first surviving batch, which a
// broker's cleaner never does, and a kept store below that start is reset
// and restores from scratch instead of from its checkpoint; so the
// histories that keep stores begin with a record that sets a key nothing
// changes again, whose changelog record keeps the start at zero. kfake
// also ignores min.compaction.lag.ms (0 by default on a broker too), and
// drops a tombstone at the first cleaning past delete.retention.ms, where
// a broker drops it in a later cleaning than the one that first reached
// it: an earlier drop than a broker's, which the runtime must survive too.
//
// LEARNER_LONG=1 plays many more histories; LEARNER_SEED=N replays one.
func TestCompactedRestores(t *testing.T) {
	histories, steps := 6, 10
	if testseed.Long() {
		histories, steps = 200, 25
	}
	testseed.Run(t, histories, func(t *testing.T, seed uint64) { playCompaction(t, seed, steps) })
}

// compactKeys are the keys the histories change, each history a prefix of
// them: few, so that records supersede each other often. Fewer in some
// histories than in others, and drawn with a bias towards the first (see
// input), so that the first record of an input record whose first key is
// seldom written outlives the records of its other keys, which the
// cleaner drops: the case a restore must not get wrong.
var compactKeys = []string{"k0", "k1", "k2", "k3", "k4", "k5"}

// anchorKey is the key the first input record of a history that keeps
// stores sets, and no record changes again (see TestCompactedRestores).
const anchorKey = "anchor"

// compactionHistory is the state of one history: the cluster, the member
// running, and the model of the task's state.
type compactionHistory struct {
	t         *testing.T
	rng       *rand.Rand
	c         *cluster
	stores    []*state.MemoryStores // those of every member so far, which a restart may keep
	processed chan string           // the values of the records processed
	reads     chan compactionRead
	members   []compactionMember
	died      chan error // the error of a member's Run that returned unstopped
	standbys  int        // learner.Options.Standbys: 1 with two members
	model     map[string]string
	inputs    int
	keys      []string // the history's prefix of compactKeys
	ops       string   // the operations input draws from, with their weights
	readsMade int      // reads produced so far

	mu       sync.Mutex
	failures []bool // the fate of the member's next changelog produce requests: true fails one
}

// compactionMember is a running member: its stores, and what stops it as a
// crash would.
type compactionMember struct {
	stores *state.MemoryStores
	stop   func()
}

// compactionRead is the state a read record found.
type compactionRead struct {
	read  string
	state map[string]string
}

func playCompaction(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed))
	changelog := state.ChangelogTopic("g", 0)
	h := &compactionHistory{t: t, rng: rng, c: newCluster(t, "in", changelog),
		processed: make(chan string, 1000), reads: make(chan compactionRead, 100), died: make(chan error, 1),
		model: map[string]string{}}
	h.keys = compactKeys[:2+rng.IntN(len(compactKeys)-1)]
	h.ops = []string{"ssaad", "sadd", "sd"}[rng.IntN(3)]
	dropTombstones := rng.IntN(2) == 0
	if dropTombstones {
		alterTopicConfig(t, h.c.admin(), changelog, "delete.retention.ms", "0")
	}
	t.Logf("keys %q, operations %q, delete.retention.ms=0: %v", h.keys, h.ops, dropTombstones)
	h.failWrites(changelog)
	// A second member, whose standby takes the task over when the first
	// stops. Not with tombstones dropped at once: a standby paused (an
	// active task of its member catching up) or slow to fetch may miss a
	// tombstone, as a store kept past one does.
	if !dropTombstones && rng.IntN(2) == 0 {
		h.standbys = 1
		h.start(h.newStores())
	}
	h.start(h.newStores())
	t.Logf("members: %d", len(h.members))
	if !dropTombstones {
		h.produce("0 s:" + anchorKey) // keeps kfake's start offset at zero
	}
	for range steps {
		recs := make([]string, 1+rng.IntN(4))
		for i := range recs {
			recs[i] = h.input()
		}
		failing := rng.IntN(4) == 0
		if failing {
			// One request fails, the first or the second; or up to 6
			// in a row pass or fail at random, so that the writes that
			// complete a group cut short may be cut short too.
			fates := []bool{true}
			if rng.IntN(2) == 0 {
				fates = []bool{false, true}
			}
			if rng.IntN(3) == 0 {
				fates = make([]bool, 6)
				for i := range fates {
					fates[i] = rng.IntN(2) == 0
				}
			}
			h.armFailures(fates)
		}
		if rng.IntN(2) == 0 {
			h.produce(recs...) // one poll, most likely: one batch
		} else {
			for _, rec := range recs {
				h.produce(rec)
			}
		}
		if failing || rng.IntN(3) == 0 { // after a failed write, only a read tells when the member is done
			h.read()
		}
		if rng.IntN(3) != 0 {
			h.compact()
		}
		if rng.IntN(2) == 0 {
			h.restart(!dropTombstones && rng.IntN(2) == 0)
		}
	}
	h.compact()
	h.restart(false)
	if !dropTombstones {
		h.restart(true)
	}
}

// input returns a new input record's value: its number, then 1 to 4
// operations "s:<key>" (set), "a:<key>" (append) or "d:<key>" (delete),
// drawn from h.ops, on keys of h.keys, the first ones the likeliest.
func (h *compactionHistory) input() string {
	h.inputs++
	ops := []string{strconv.Itoa(h.inputs)}
	for range 1 + h.rng.IntN(4) {
		key := h.keys[min(h.rng.IntN(len(h.keys)), h.rng.IntN(len(h.keys)))]
		ops = append(ops, string(h.ops[h.rng.IntN(len(h.ops))])+":"+key)
	}
	return strings.Join(ops, " ")
}

// applyInput applies an input record (see input) through get and put (a
// nil value deletes): the model and Process share it. Values are distinct:
// set writes "<record>.<operation>", append adds "+<record>.<operation>"
// to the key's value.
func applyInput(value string, get func(key string) (string, error), put func(key string, value []byte) error) error {
	fields := strings.Fields(value)
	for i, op := range fields[1:] {
		kind, key, _ := strings.Cut(op, ":")
		v := fmt.Sprintf("%s.%d", fields[0], i)
		switch kind {
		case "d":
			if err := put(key, nil); err != nil {
				return err
			}
			continue
		case "a":
			old, err := get(key)
			if err != nil {
				return err
			}
			v = old + "+" + v
		}
		if err := put(key, []byte(v)); err != nil {
			return err
		}
	}
	return nil
}

// start runs a member with stores.
func (h *compactionHistory) start(stores *state.MemoryStores) {
	done, stop := h.c.run(state.Config{
		Subtopologies: []kgolearner.Subtopology{{Topics: []string{"in"}, Partitions: 2, Stateful: true}},
		Options:       learner.Options{Standbys: h.standbys},
		Stores:        stores,
		Process: func(ctx *state.Context, rec *kgo.Record) error {
			if strings.HasPrefix(string(rec.Value), "read") {
				h.reads <- compactionRead{string(rec.Value), readState(ctx)}
				return nil
			}
			return applyInput(string(rec.Value), func(key string) (string, error) {
				v, _, err := ctx.Get([]byte(key))
				return string(v), err
			}, func(key string, value []byte) error { return ctx.Put([]byte(key), value) })
		},
		Observer: state.Observer{
			Processed: func(_ string, rec *kgo.Record) { h.processed <- string(rec.Value) },
			Running: func(task string, replayed int64) {
				h.t.Logf("task %s runs, %d changelog records replayed", task, replayed)
			},
			Error: func(err error) { h.t.Log(err) },
		},
	})
	var stopped atomic.Bool
	go func() {
		if err := <-done; !stopped.Load() {
			h.died <- err
		}
	}()
	h.members = append(h.members, compactionMember{stores, func() {
		stopped.Store(true)
		stop()
	}})
}

// readState returns the task's keys and values.
func readState(ctx *state.Context) map[string]string {
	got := map[string]string{}
	for _, key := range append(compactKeys, anchorKey) {
		if v, ok, err := ctx.Get([]byte(key)); err != nil {
			got[key] = "error: " + err.Error()
		} else if ok {
			got[key] = string(v)
		}
	}
	return got
}

// failWrites refuses the member's produce requests to the changelog that
// armFailures says to, as a broker failing a batch for a passing reason
// (see cluster.failProduce): the records before it stay, and the write may
// cut an input record's group short. The member restores what reached the
// changelog and processes the rest again.
func (h *compactionHistory) failWrites(changelog string) {
	id := topicID(h.t, h.c.admin(), changelog) // Produce v13 names topics by ID
	h.c.c.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		h.c.c.KeepControl()
		if !slices.ContainsFunc(kr.(*kmsg.ProduceRequest).Topics, func(rt kmsg.ProduceRequestTopic) bool { return rt.Topic == changelog || rt.TopicID == id }) {
			return nil, nil, false
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.failures) == 0 {
			return nil, nil, false
		}
		fail := h.failures[0]
		h.failures = h.failures[1:]
		if !fail {
			return nil, nil, false
		}
		return state.RefusedProduce(kr, kerr.UnknownServerError.Code), nil, true
	})
}

// armFailures sets the fates of the member's next changelog produce
// requests, until the next read: true fails one.
func (h *compactionHistory) armFailures(fates []bool) {
	h.t.Logf("fates of the next changelog writes (true fails): %v", fates)
	h.mu.Lock()
	h.failures = fates
	h.mu.Unlock()
}

// produce writes input records to partition 0 of "in", in one produce
// call, applies them to the model, and, unless a failure is armed, waits
// until the member processed them: after a failed write it skips those
// whose changes reached the changelog, and only a read tells that it is
// done.
func (h *compactionHistory) produce(values ...string) {
	h.t.Helper()
	h.t.Logf("input %q", values)
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: "in", Partition: 0, Value: []byte(v)}
		require.NoError(h.t, applyInput(v, func(key string) (string, error) { return h.model[key], nil }, func(key string, value []byte) error {
			if value == nil {
				delete(h.model, key)
			} else {
				h.model[key] = string(value)
			}
			return nil
		}))
	}
	// Checked before the records go: a failure that strikes their write
	// is armed by then.
	h.mu.Lock()
	armed := len(h.failures) > 0
	h.mu.Unlock()
	h.c.produce(recs...)
	if !armed {
		h.waitProcessed(values[len(values)-1])
	}
}

// waitProcessed waits until the member processed the record of value.
func (h *compactionHistory) waitProcessed(value string) {
	h.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case v := <-h.processed:
			if v == value {
				return
			}
		case err := <-h.died:
			h.t.Fatalf("Run returned %v waiting for the processing of %s", err, value)
		case <-timeout:
			h.t.Fatalf("no processing of %s after 20s", value)
		}
	}
}

// read has the member read its state, which must be the model's, and
// disarms a failure that has not struck. A read processed again after a
// failed write reads again: every read must find the model's state.
func (h *compactionHistory) read() {
	h.t.Helper()
	h.readsMade++
	value := fmt.Sprintf("read %d", h.readsMade)
	h.c.produce(&kgo.Record{Topic: "in", Partition: 0, Value: []byte(value)})
	h.waitProcessed(value)
	h.mu.Lock()
	h.failures = nil
	h.mu.Unlock()
	found := false
	for len(h.reads) > 0 {
		r := <-h.reads
		if r.read == value {
			found = true
			require.Equal(h.t, h.model, r.state, "the state %s found", value)
		}
	}
	require.True(h.t, found, "%s was processed without reading", value)
}

// compact runs kfake's cleaner over the changelog.
func (h *compactionHistory) compact() {
	h.t.Helper()
	h.c.c.Compact()
	h.t.Logf("compacted: changelog keys %q", h.c.changelogKeys(state.ChangelogTopic("g", 0), 0))
}

// restart stops a member as a crash would and starts another, whose
// state must be the model's: with the stores of an earlier member if keep,
// the last one's or an older one's, or else with fresh ones (a restore
// from scratch). With two members, the one stopped may be the standby.
func (h *compactionHistory) restart(keep bool) {
	h.t.Helper()
	i := h.rng.IntN(len(h.members))
	h.t.Logf("stop member %d of %d", i+1, len(h.members))
	h.members[i].stop()
	h.members = slices.Delete(h.members, i, i+1)
	idle := slices.DeleteFunc(slices.Clone(h.stores), func(s *state.MemoryStores) bool {
		return slices.ContainsFunc(h.members, func(m compactionMember) bool { return m.stores == s })
	})
	if keep {
		i := h.rng.IntN(len(idle))
		h.t.Logf("restart with the stores of member %d of %d", slices.Index(h.stores, idle[i])+1, len(h.stores))
		h.start(idle[i])
	} else {
		h.t.Log("restart with fresh stores")
		h.start(h.newStores())
	}
	h.read()
}

// newStores returns fresh stores, which a later restart may keep.
func (h *compactionHistory) newStores() *state.MemoryStores {
	s := &state.MemoryStores{}
	h.stores = append(h.stores, s)
	return s
}
