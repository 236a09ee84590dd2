package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

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

// groupHeader carries, on the first changelog record of an input record
// that changed several keys, the other changes of that input record (see
// encodeChanges). The changelog is not transactional: a writer that fails
// or crashes in the middle of an input record's records leaves a prefix of
// them, and the idempotent producer guarantees no more than that (a failed
// batch fails every later one of its partition). Since the first record
// lands whenever any does, a restore applies the whole input record or
// none of it, and the position it records is never ahead of the state. The
// next owner writes the records a prefix lacks before it processes input
// (Runtime.complete), so that compaction of the first record cannot lose
// them. Compaction may also drop the others' own records while the first
// stays, with their old values: a restore deletes those keys when the group
// ends without them (task.track), since only a later record of the key can
// have superseded them, and that record may be a tombstone the cleaner has
// dropped as well.
const groupHeader = "learner.group"

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
	return changelogRecord(topic, partition, key, value, encodePosition(position))
}

// changelogRecord is ChangelogRecord with the position encoded.
func changelogRecord(topic string, partition int32, key, value, position []byte) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition, Key: key, Value: value,
		Headers: []kgo.RecordHeader{{Key: positionHeader, Value: position}}}
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
// (still encoded, checked), whether it is a marker (a position without a
// change), and the other changes of its input record if it is the first of
// several (groupHeader). Restoring parses only the position of a batch's
// last record: parsing every record's allocated a map per record and was a
// third of a restore's CPU.
func changeOf(r *kgo.Record) (ch Change, pos []byte, marker bool, others []Change, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s partition %d offset %d: %s", ErrBadChangelog, r.Topic, r.Partition, r.Offset, fmt.Sprintf(format, args...))
	}
	for _, h := range r.Headers {
		switch h.Key {
		case markerHeader:
			marker = true
		case positionHeader:
			if !validPositions(h.Value) {
				return Change{}, nil, false, nil, bad("header %s: %q is not a list of <topic>=<offset>", positionHeader, h.Value)
			}
			pos = h.Value
		case groupHeader:
			if others, err = decodeChanges(h.Value); err != nil {
				return Change{}, nil, false, nil, bad("header %s: %v", groupHeader, err)
			}
		}
	}
	switch {
	case pos == nil:
		return Change{}, nil, false, nil, bad("no %s header (was it written by this runtime?)", positionHeader)
	case len(r.Key) == 0:
		return Change{}, nil, false, nil, bad("no key")
	case marker && others != nil:
		return Change{}, nil, false, nil, bad("a position marker with a %s header", groupHeader)
	}
	return Change{Key: r.Key, Value: r.Value}, pos, marker, others, nil
}

// encodeChanges encodes changes for groupHeader: per change, the key (its
// length as a uvarint, then its bytes), then changeSet and the value
// likewise, or changeDelete.
func encodeChanges(changes []Change) []byte {
	var b []byte
	for _, ch := range changes {
		b = binary.AppendUvarint(b, uint64(len(ch.Key)))
		b = append(b, ch.Key...)
		if ch.Value == nil {
			b = append(b, changeDelete)
			continue
		}
		b = append(b, changeSet)
		b = binary.AppendUvarint(b, uint64(len(ch.Value)))
		b = append(b, ch.Value...)
	}
	return b
}

// The kinds of change in encodeChanges.
const (
	changeDelete = 0
	changeSet    = 1
)

// decodeChanges decodes what encodeChanges encodes, checking every length
// against the bytes left. The changes alias b.
func decodeChanges(b []byte) ([]Change, error) {
	var out []Change
	for len(b) > 0 {
		key, rest, ok := cutField(b)
		if !ok || len(key) == 0 || len(rest) == 0 {
			return nil, fmt.Errorf("change %d: no key, or nothing after it", len(out))
		}
		ch := Change{Key: key}
		switch kind := rest[0]; kind {
		case changeDelete:
			b = rest[1:]
		case changeSet:
			if ch.Value, b, ok = cutField(rest[1:]); !ok {
				return nil, fmt.Errorf("change %d: value length past the bytes left", len(out))
			}
		default:
			return nil, fmt.Errorf("change %d: kind %d is neither set nor delete", len(out), kind)
		}
		out = append(out, ch)
	}
	if len(out) == 0 {
		return nil, errors.New("no change")
	}
	return out, nil
}

// cutField cuts a uvarint length and that many bytes from the front of b.
func cutField(b []byte) (field, rest []byte, ok bool) {
	n, size := binary.Uvarint(b)
	if size <= 0 || n > uint64(len(b)-size) {
		return nil, nil, false
	}
	b = b[size:]
	return b[:n:n], b[n:], true
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

// ErrChangelogTopic wraps Run's error about a changelog topic that exists
// with a configuration the runtime cannot use: another partition count
// than its subtopology's (a task's store would follow another partition's
// changes), or a cleanup.policy without "compact" (retention would delete
// the only record of a key not written for retention.ms, and a store
// restored from the changelog would lack it). "compact,delete" is
// accepted: bounded state is then the application's choice, and a store
// whose changelog lost records restores from its start. It also wraps
// Run's error about a changelog topic deleted and recreated while Run
// runs (another topic ID than Run listed as it started): the state the
// deleted topic held is lost, and the runtime does not go on with the new
// topic, which would hide that.
var ErrChangelogTopic = errors.New("state: changelog topic unusable")

// ensureTopics creates the changelog topics that are missing, compacted,
// with the given partitions each, and checks the partition count and the
// cleanup.policy of those that exist. A policy it cannot read (the
// member's ACLs may not allow DescribeConfigs, which the runtime needs for
// nothing else) goes to warn, and the topic is used as it is: refusing it
// would stop applications that ran before this check. A read that failed
// for a reason Run retries (startRetriable: the broker unreachable, say)
// is an error instead, so that the policy is checked once the broker is
// back. Run retries ensureTopics whole: every step of it may run again.
//
// It returns the topic ID of each topic, from the metadata of those that
// exist and from the creation's response of those it created; zero when
// the brokers do not say (before Kafka 2.8). A topic another client
// created first is an error wrapping kerr.UnknownTopicOrPartition, which
// Run retries: the next try checks it, and lists its ID, as one that
// exists.
func ensureTopics(ctx context.Context, cl *kgo.Client, partitions map[string]int32, warn func(error)) (map[string][16]byte, error) {
	resp, err := changelogMetadata(ctx, cl, slices.Sorted(maps.Keys(partitions)))
	if err != nil {
		return nil, err
	}
	found := map[string]kmsg.MetadataResponseTopic{}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			found[*t.Topic] = t
		}
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 30000
	var existing []string
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
			return nil, fmt.Errorf("state: changelog topic %q: %w", topic, err)
		case int32(len(t.Partitions)) != partitions[topic]:
			return nil, fmt.Errorf("state: changelog topic %q has %d partitions, its subtopology %d: %w", topic, len(t.Partitions), partitions[topic], ErrChangelogTopic)
		default:
			existing = append(existing, topic)
		}
	}
	if err := checkPolicies(ctx, cl, existing, warn); err != nil {
		return nil, err
	}
	ids := map[string][16]byte{}
	for _, topic := range existing {
		ids[topic] = found[topic].TopicID
	}
	if len(create.Topics) == 0 {
		return ids, nil
	}
	cresp, err := create.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("state: create changelog topics: %w", err)
	}
	for _, t := range cresp.Topics {
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.TopicAlreadyExists):
			// Another client created it since the metadata (members
			// starting together): its partitions, policy and ID are
			// those of the other client's request, which Run checks
			// and lists as a topic it found when it tries again, once
			// metadata lists the topic (UNKNOWN_TOPIC_OR_PARTITION, so
			// that Run retries without an Error event meanwhile).
			return nil, fmt.Errorf("state: changelog topic %q, created by another client since its metadata, is not listed yet: %w", t.Topic, kerr.UnknownTopicOrPartition)
		case err != nil:
			return nil, fmt.Errorf("state: create changelog topic %q: %w", t.Topic, err)
		}
		ids[t.Topic] = t.TopicID
	}
	return ids, nil
}

// changelogMetadata asks the brokers for the metadata of the changelog
// topics (partitions, topic IDs).
func changelogMetadata(ctx context.Context, cl *kgo.Client, topics []string) (*kmsg.MetadataResponse, error) {
	meta := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		meta.Topics = append(meta.Topics, mt)
	}
	resp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("state: changelog topics metadata: %w", err)
	}
	return resp, nil
}

// recreated returns what says that the changelog topic known by the ID
// was now has the ID is: it was deleted and recreated, and its offsets
// restarted at zero. It returns "" if the IDs are the same, or if either
// is zero, which is unknown (a checkpoint written before the runtime
// recorded IDs, brokers before Kafka 2.8): nothing then tells the topic
// from a recreated one. A store kept from the earlier topic is reset when
// it opens (Runtime.open); a topic recreated under the running member
// stops Run (Runtime.checkRecreated).
func recreated(topic string, was, is [16]byte) string {
	if was == noTopicID || is == noTopicID || was == is {
		return ""
	}
	return fmt.Sprintf("topic ID %s of %s, whose ID is now %s (the topic was deleted and recreated)", formatTopicID(was), topic, formatTopicID(is))
}

// checkPolicies refuses, with ErrChangelogTopic, the first of topics
// whose cleanup.policy lacks "compact"; a policy it cannot read goes to
// warn, unless Run retries the error (see ensureTopics).
func checkPolicies(ctx context.Context, cl *kgo.Client, topics []string, warn func(error)) error {
	if len(topics) == 0 {
		return nil
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, topic := range topics {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		rr.ConfigNames = []string{"cleanup.policy"}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		if ctx.Err() != nil || startRetriable(err) {
			return fmt.Errorf("state: describe changelog topics: %w", err)
		}
		warn(fmt.Errorf("state: changelog topics %q: cleanup.policy not checked: %w", topics, err))
		return nil
	}
	for _, rr := range resp.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			if startRetriable(err) {
				return fmt.Errorf("state: describe changelog topic %q: %w", rr.ResourceName, err)
			}
			warn(fmt.Errorf("state: changelog topic %q: cleanup.policy not checked: %w", rr.ResourceName, err))
			continue
		}
		for _, c := range rr.Configs {
			if c.Name != "cleanup.policy" || c.Value == nil {
				continue
			}
			if !slices.Contains(strings.Split(strings.ReplaceAll(*c.Value, " ", ""), ","), "compact") {
				return fmt.Errorf("state: changelog topic %q has cleanup.policy %q, which lacks \"compact\": retention would delete state (alter it to compact): %w",
					rr.ResourceName, *c.Value, ErrChangelogTopic)
			}
		}
	}
	return nil
}

// EndOffsets returns the end offset (high watermark) of each partition,
// by topic and partition. A partition the response leaves out, or gives a
// negative offset, is an error: read as zero, it would say a store is not
// behind. Errors wrap kgo's or the broker's (a kerr.Error, such as
// kerr.UnknownTopicOrPartition).
func EndOffsets(ctx context.Context, cl *kgo.Client, parts map[string][]int32) (map[string]map[int32]int64, error) {
	return listOffsets(ctx, cl, parts, -1, "end")
}

// startOffsets is EndOffsets for the start offsets (log start offsets).
func startOffsets(ctx context.Context, cl *kgo.Client, parts map[string][]int32) (map[string]map[int32]int64, error) {
	return listOffsets(ctx, cl, parts, -2, "start")
}

// listOffsets lists the offsets of timestamp, -1 for the end, -2 for the
// start; what names them in errors.
func listOffsets(ctx context.Context, cl *kgo.Client, parts map[string][]int32, timestamp int64, what string) (map[string]map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, topic := range slices.Sorted(maps.Keys(parts)) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range parts[topic] {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = timestamp
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("state: list %s offsets: %w", what, err)
	}
	out := map[string]map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("state: %s offset of %s partition %d: %w", what, t.Topic, p.Partition, err)
			}
			if p.Offset < 0 {
				// Lags and resets subtract and compare it.
				return nil, fmt.Errorf("state: %s offset of %s partition %d is %d, not an offset", what, t.Topic, p.Partition, p.Offset)
			}
			if out[t.Topic] == nil {
				out[t.Topic] = map[int32]int64{}
			}
			out[t.Topic][p.Partition] = p.Offset
		}
	}
	for topic, ps := range parts {
		for _, p := range ps {
			if _, ok := out[topic][p]; !ok {
				return nil, fmt.Errorf("state: ListOffsets response without %s partition %d", topic, p)
			}
		}
	}
	return out, nil
}
