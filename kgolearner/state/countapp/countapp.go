// Package countapp is the example application of the state runtime: a
// per-key counter over an input topic. Each input record's key is a word;
// the task of its partition counts it in its store and emits the new count
// to the output topic. The package also holds what checks such an
// application: a steady producer, and the counts a single sequential
// consumer computes from the input, to compare with the final state read
// back from the changelog topic.
package countapp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Topics of the application.
const (
	Input  = "words"
	Output = "counts"
)

// Topology returns the application's topology: one stateful subtopology
// reading Input with the given partitions.
func Topology(partitions int32) []kgolearner.Subtopology {
	return []kgolearner.Subtopology{{Topics: []string{Input}, Partitions: partitions, Stateful: true}}
}

// Count is the Processor: it adds one to the count of the record's key and
// emits the new count to Output, partition of the task.
func Count(ctx *state.Context, rec *kgo.Record) error {
	old, _, err := ctx.Get(rec.Key)
	if err != nil {
		return err
	}
	n, err := decode(old)
	if err != nil {
		return fmt.Errorf("countapp: key %q: %w", rec.Key, err)
	}
	v := binary.BigEndian.AppendUint64(nil, n+1)
	if err := ctx.Put(rec.Key, v); err != nil {
		return err
	}
	ctx.Emit(&kgo.Record{Topic: Output, Partition: ctx.Partition(), Key: rec.Key, Value: v})
	return nil
}

func decode(v []byte) (uint64, error) {
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("count of %d bytes, want 8", len(v))
}

// Ballast yields changelog records that give every task state of its own
// to restore: keysPerTask keys of valueBytes bytes, written straight to the
// changelog of group's subtopology 0 as the runtime would (with no input
// processed yet). Their keys start with "~" so that they never collide with
// counted words. The records are made as they are consumed: a slice of all
// of them took several GB at the sizes the measurement runs.
func Ballast(group string, partitions int32, keysPerTask, valueBytes int) iter.Seq[*kgo.Record] {
	topic := state.ChangelogTopic(group, 0)
	value := make([]byte, valueBytes)
	return func(yield func(*kgo.Record) bool) {
		for p := range partitions {
			for k := range keysPerTask {
				if !yield(state.ChangelogRecord(topic, p, fmt.Appendf(nil, "~%d-%d", p, k), value, map[string]int64{Input: 0})) {
					return
				}
			}
		}
	}
}

// Producer writes words to Input at a steady rate, and counts the
// acknowledged records.
type Producer struct {
	cl         *kgo.Client
	partitions int32
	words      int

	mu    sync.Mutex
	acked int
	ends  map[int32]int64 // partition -> acknowledged end offset
	err   error
}

// NewProducer returns a producer of words "w0".."w<words-1>" over the
// partitions of Input.
func NewProducer(opts []kgo.Opt, partitions int32, words int) (*Producer, error) {
	cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, err
	}
	return &Producer{cl: cl, partitions: partitions, words: words, ends: map[int32]int64{}}, nil
}

// Run produces perSecond records a second until ctx is done, then waits for
// the acknowledgements.
func (p *Producer) Run(ctx context.Context, perSecond int) error {
	const tick = 10 * time.Millisecond
	per := max(1, perSecond*int(tick)/int(time.Second))
	t := time.NewTicker(tick)
	defer t.Stop()
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return p.Flush()
		case <-t.C:
		}
		for range per {
			p.Send(i)
			i++
		}
	}
}

// Send produces record i: word w = i%words, to partition w%partitions (a
// word is counted by one task).
func (p *Producer) Send(i int) {
	w := i % p.words
	rec := &kgo.Record{Topic: Input, Partition: int32(w % int(p.partitions)), Key: fmt.Appendf(nil, "w%d", w)}
	p.cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.err = errors.Join(p.err, err)
			return
		}
		p.acked++
		p.ends[r.Partition] = max(p.ends[r.Partition], r.Offset+1)
	})
}

// Flush waits for every record sent and returns the first error.
func (p *Producer) Flush() error {
	if err := p.cl.Flush(context.Background()); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Acked returns how many records were acknowledged.
func (p *Producer) Acked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked
}

// Ends returns the acknowledged end offset of every partition written.
func (p *Producer) Ends() map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.ends)
}

// Close closes the producer's client.
func (p *Producer) Close() { p.cl.Close() }

// Counts is a count per word.
type Counts map[string]uint64

// Sequential counts Input from the start as a single consumer would, up
// to each partition's end offset now.
func Sequential(ctx context.Context, opts []kgo.Opt, partitions int32) (Counts, int, error) {
	out := Counts{}
	n, err := readAll(ctx, opts, Input, partitions, func(r *kgo.Record) error {
		out[string(r.Key)]++
		return nil
	})
	return out, n, err
}

// FromChangelog returns the final state of group's counters: the last
// value of every word in the changelog topic.
func FromChangelog(ctx context.Context, opts []kgo.Opt, group string, partitions int32) (Counts, error) {
	out := Counts{}
	_, err := readAll(ctx, opts, state.ChangelogTopic(group, 0), partitions, func(r *kgo.Record) error {
		if len(r.Key) == 0 || r.Key[0] != 'w' {
			return nil // ballast and position markers
		}
		if r.Value == nil {
			delete(out, string(r.Key))
			return nil
		}
		n, err := decode(r.Value)
		if err != nil {
			return fmt.Errorf("countapp: changelog %s partition %d offset %d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		out[string(r.Key)] = n
		return nil
	})
	return out, err
}

// Diff describes the words whose counts differ, at most max of them.
func Diff(got, want Counts, limit int) []string {
	var out []string
	for _, w := range slices.Sorted(maps.Keys(want)) {
		if got[w] != want[w] {
			out = append(out, fmt.Sprintf("%s: %d, want %d", w, got[w], want[w]))
		}
	}
	for _, w := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[w]; !ok {
			out = append(out, fmt.Sprintf("%s: %d, want none", w, got[w]))
		}
	}
	if len(out) > limit {
		out = append(out[:limit], fmt.Sprintf("and %d more", len(out)-limit))
	}
	return out
}

// readAll reads every partition of topic up to its end offset now.
func readAll(ctx context.Context, opts []kgo.Opt, topic string, partitions int32, fn func(*kgo.Record) error) (int, error) {
	cl, err := kgo.NewClient(append(slices.Clone(opts), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	all := map[string][]int32{topic: nil}
	for p := range partitions {
		all[topic] = append(all[topic], p)
	}
	byTopic, err := state.EndOffsets(ctx, cl, all)
	if err != nil {
		return 0, fmt.Errorf("countapp: end offsets of %s: %w", topic, err)
	}
	ends := byTopic[topic]
	left := 0
	for _, e := range ends {
		if e > 0 {
			left++
		}
	}
	n := 0
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("countapp: reading %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return n, ferr
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			end := ends[r.Partition]
			if r.Offset >= end {
				continue
			}
			if err := fn(r); err != nil {
				return n, err
			}
			n++
			if r.Offset == end-1 {
				left--
			}
		}
	}
	return n, nil
}

// Duplicates counts the output records that repeat an earlier one (the
// same count of the same word): input records processed twice. It returns
// those produced before since and those produced from since on.
func Duplicates(ctx context.Context, opts []kgo.Opt, partitions int32, since time.Time) (before, after int, err error) {
	seen := map[string]bool{}
	_, err = readAll(ctx, opts, Output, partitions, func(r *kgo.Record) error {
		k := string(r.Key) + "\x00" + string(r.Value)
		switch {
		case !seen[k]:
		case r.Timestamp.Before(since):
			before++
		default:
			after++
		}
		seen[k] = true
		return nil
	})
	return before, after, err
}
