package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// positionHeader is the header every changelog record carries: the input
// position the task had reached once the record's input record was
// processed, as ";"-separated "<topic>=<offset>" items. Restoring the
// changelog thus restores the input position with the state, which is what
// lets a new owner skip input whose effects its state already holds,
// whatever offset the group had committed.
const positionHeader = "learner.position"

// ErrBadChangelog wraps an error about a changelog record the runtime cannot
// apply (a record some other writer produced, or a corrupt one).
var ErrBadChangelog = errors.New("state: bad changelog record")

// ChangelogTopic returns the changelog topic of a subtopology's store:
// "<group>-<subtopology>-changelog", Kafka Streams' naming.
func ChangelogTopic(group string, subtopology int) string {
	return group + "-" + strconv.Itoa(subtopology) + "-changelog"
}

// ChangelogRecord returns a changelog record as the runtime writes it: the
// change of key to value (nil deletes) in the store of the task of
// partition, and the input position (topic -> next offset) the state
// reaches with it. Seeding state (a migration, a benchmark) with such
// records gives tasks state the runtime restores like its own.
func ChangelogRecord(topic string, partition int32, key, value []byte, position map[string]int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition, Key: key, Value: value,
		Headers: []kgo.RecordHeader{{Key: positionHeader, Value: encodePosition(position)}}}
}

func encodePosition(pos map[string]int64) []byte {
	var b []byte
	for i, topic := range slices.Sorted(maps.Keys(pos)) {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, topic...)
		b = append(b, '=')
		b = strconv.AppendInt(b, pos[topic], 10)
	}
	return b
}

// changeOf decodes a changelog record: the change, its input position
// (still encoded, checked), and whether it is a marker (a position without
// a change). Restoring parses only the position of a batch's last record:
// parsing every record's allocated a map per record and was a third of a
// restore's CPU.
func changeOf(r *kgo.Record) (ch Change, pos []byte, marker bool, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s partition %d offset %d: %s", ErrBadChangelog, r.Topic, r.Partition, r.Offset, fmt.Sprintf(format, args...))
	}
	for _, h := range r.Headers {
		switch h.Key {
		case markerHeader:
			marker = true
		case positionHeader:
			if !validPositions(h.Value) {
				return Change{}, nil, false, bad("header %s: %q is not a list of <topic>=<offset>", positionHeader, h.Value)
			}
			pos = h.Value
		}
	}
	switch {
	case pos == nil:
		return Change{}, nil, false, bad("no %s header (was it written by this runtime?)", positionHeader)
	case len(r.Key) == 0:
		return Change{}, nil, false, bad("no key")
	}
	return Change{Key: r.Key, Value: r.Value}, pos, marker, nil
}

// validPositions reports whether b holds at least one "<topic>=<offset>"
// item, items joined by ';': what parsePositions accepts, without
// allocating.
func validPositions(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for item := range bytes.SplitSeq(b, []byte(";")) {
		topic, off, ok := bytes.Cut(item, []byte("="))
		if _, isOffset := parseOffset(off); !ok || len(topic) == 0 || !isOffset {
			return false
		}
	}
	return true
}

// ensureTopics creates the changelog topics that are missing, compacted,
// with the given partitions each, and checks the partition count of those
// that exist.
func ensureTopics(ctx context.Context, cl *kgo.Client, partitions map[string]int32) error {
	meta := kmsg.NewPtrMetadataRequest()
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		meta.Topics = append(meta.Topics, mt)
	}
	resp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("state: changelog topics metadata: %w", err)
	}
	found := map[string]kmsg.MetadataResponseTopic{}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			found[*t.Topic] = t
		}
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 30000
	for _, topic := range slices.Sorted(maps.Keys(partitions)) {
		t, ok := found[topic]
		var err error
		if ok {
			err = kerr.ErrorForCode(t.ErrorCode)
		}
		switch {
		case !ok || errors.Is(err, kerr.UnknownTopicOrPartition):
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic = topic
			ct.NumPartitions = partitions[topic]
			ct.ReplicationFactor = -1 // the broker's default
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = "cleanup.policy", kmsg.StringPtr("compact")
			ct.Configs = append(ct.Configs, cfg)
			create.Topics = append(create.Topics, ct)
		case err != nil:
			return fmt.Errorf("state: changelog topic %q: %w", topic, err)
		case int32(len(t.Partitions)) != partitions[topic]:
			return fmt.Errorf("state: changelog topic %q has %d partitions, its subtopology %d", topic, len(t.Partitions), partitions[topic])
		}
	}
	if len(create.Topics) == 0 {
		return nil
	}
	cresp, err := create.RequestWith(ctx, cl)

	if err != nil {
		return fmt.Errorf("state: create changelog topics: %w", err)
	}
	for _, t := range cresp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("state: create changelog topic %q: %w", t.Topic, err)
		}
	}
	return nil
}

// EndOffsets returns the end offset (high watermark) of each partition,
// by topic and partition.
func EndOffsets(ctx context.Context, cl *kgo.Client, parts map[string][]int32) (map[string]map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, topic := range slices.Sorted(maps.Keys(parts)) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range parts[topic] {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = -1 // latest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("%s partition %d: %w", t.Topic, p.Partition, err)
			}
			if out[t.Topic] == nil {
				out[t.Topic] = map[int32]int64{}
			}
			out[t.Topic][p.Partition] = p.Offset
		}
	}
	return out, nil
}
