package kgolearner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is how the leader reads the JoinGroup response: every member's
// kmsg.ConsumerMemberMetadata, read in place. kgo.NewConsumerBalancer
// decodes the same bytes into a kmsg struct per member, a string per topic
// and a slice per owned topic: at 1,000 members owning 100 topics each,
// 300,000 allocations, which cost more than Assign and made most of the
// leader's garbage (BenchmarkLeaderRebalance).

// joined is the group as its leader read it from the JoinGroup response:
// the kgo.GroupMemberBalancer that MemberBalancer returns.
type joined struct {
	b       *Balancer
	members []kmsg.JoinGroupResponseMember // the first of each member ID
	topics  map[string]struct{}            // every topic a member subscribes to
	claims  *claims                        // nil once balanced
	scratch *scratch                       // claims' memory, and the rest of the rebalance's
	// Per member: its status in the learner wire format (a view of its
	// bytes, as in kgo's decoded metadata) and its rack.
	userData [][]byte
	racks    []*string
}

// readJoin reads every member's metadata as kgo.NewConsumerBalancer does:
// the first of two members with one ID counts, and a member that claims
// version 1 but sends version 0 (a bug of some clients) is read as version
// 0.
func (b *Balancer) readJoin(members []kmsg.JoinGroupResponseMember) (*joined, error) {
	seen := make(map[string]struct{}, len(members))
	j := &joined{b: b, topics: map[string]struct{}{}}
	for _, m := range members {
		if _, dup := seen[m.MemberID]; !dup {
			seen[m.MemberID] = struct{}{}
			j.members = append(j.members, m)
		}
	}
	j.userData, j.racks = make([][]byte, len(j.members)), make([]*string, len(j.members))
	s := b.spare.Swap(nil)
	if s == nil {
		s = new(scratch)
	}
	cb := b.topo.newClaims(len(j.members), s)
	var last consumerMetadata // the last member read
	for i, m := range j.members {
		var meta consumerMetadata
		raw := m.ProtocolMetadata
		ok := len(raw) >= 2 && meta.read(raw[2:], int16(binary.BigEndian.Uint16(raw)), last.subscription)
		if !ok && len(raw) >= 2 && raw[0] == 0 && raw[1] == 1 {
			ok = meta.read(raw[2:], 0, last.subscription)
		}
		if !ok {
			b.spare.Store(s) // nothing of this group uses it any more
			return nil, fmt.Errorf("kgolearner: member %q: unable to read member metadata: %w", m.MemberID, errShortMetadata)
		}
		if !bytes.Equal(meta.subscription, last.subscription) { // the members of an application subscribe alike
			meta.eachTopic(func(topic []byte) {
				if _, ok := j.topics[string(topic)]; !ok {
					j.topics[string(topic)] = struct{}{}
				}
			})
		}
		last = meta
		cb.add(i, &meta)
		j.userData[i], j.racks[i] = meta.userData, meta.rack
	}
	j.claims, j.scratch = cb.finish(), s
	return j, nil
}

// errShortMetadata is why metadata does not read: kmsg's reader says the
// same ("not enough data") for every error of this format.
var errShortMetadata = errors.New("not enough data")

// consumerMetadata is what the leader uses of a kmsg.ConsumerMemberMetadata.
// The topics and owned partitions arrays stay bytes, walked by eachTopic and
// ownedPartitions.
type consumerMetadata struct {
	subscription []byte // the subscribed topics array: its length, then the topics
	topics       []byte // the subscribed topics array's elements
	userData     []byte
	owned        []byte // the owned partitions array's elements
	generation   int32
	rack         *string
}

// read reads the fields after the version as kmsg's ReadFrom does: each
// version adds fields at the end (1: owned partitions, 2: generation, 3:
// rack), a higher one reads as 3, bytes after the last field are ignored,
// a negative array length is an empty array, and an array that declares
// more elements than the bytes left could hold fails. It reports whether
// the bytes parse.
//
// subscription is the last member's: bytes that begin with it hold the
// same topics, already checked (members of one application subscribe
// alike, and walking every member's topics was a third of reading it).
func (m *consumerMetadata) read(src []byte, version int16, subscription []byte) bool {
	*m = consumerMetadata{generation: -1}
	r := kafkaReader{src: src}
	if len(subscription) > 0 && bytes.HasPrefix(src, subscription) {
		r.src = src[len(subscription):]
		m.subscription, m.topics = subscription, subscription[4:]
	} else {
		n, from := r.arrayLen(2), r.src
		for range n {
			r.str()
		}
		m.topics = r.since(from)
		m.subscription = r.since(src)
	}
	m.userData = r.nullableBytes()
	if version >= 1 {
		n := r.arrayLen(6)
		if size := ownedSize(r.src, n); size >= 0 {
			m.owned = r.span(size)
		} else {
			r.bad, r.src = true, nil
		}
	}
	if version >= 2 {
		m.generation = r.int32()
	}
	if version >= 3 {
		if rack := r.nullableBytes16(); rack != nil {
			s := string(rack)
			m.rack = &s
		}
	}
	return !r.bad
}

// ownedSize returns the size of the n owned-partitions elements (a topic,
// then an array of int32 partitions) that b begins with, or -1 if they do
// not fit in b or a topic's length is negative. A negative partition count
// is an empty array, as for kafkaReader.arrayLen. Every member owns
// partitions of every topic it consumes, so this loop runs once per topic
// per member: it reads with offsets into b rather than kafkaReader's
// methods, which write the reader's slice through a pointer at every read:
// while the collector runs each write is a write barrier, which took a
// quarter of readJoin (BenchmarkLeaderRebalance).
func ownedSize(b []byte, n int) int {
	at := 0
	for range n {
		if len(b)-at < 2 {
			return -1
		}
		topic := int(int16(binary.BigEndian.Uint16(b[at:])))
		at += 2
		if topic < 0 || len(b)-at < topic+4 {
			return -1
		}
		at += topic
		count := int(int32(binary.BigEndian.Uint32(b[at:])))
		at += 4
		if count > (len(b)-at)/4 {
			return -1
		}
		at += 4 * max(count, 0)
	}
	return at
}

// eachTopic calls fn with every subscribed topic; the bytes are a view.
func (m *consumerMetadata) eachTopic(fn func(topic []byte)) {
	r := kafkaReader{src: m.topics}
	for len(r.src) > 0 {
		fn(r.str())
	}
}

// ownedPartitions returns a reader of the owned partitions.
func (m *consumerMetadata) ownedPartitions() ownedReader { return ownedReader{m.owned} }

// ownedReader walks the owned partitions of a consumerMetadata. read
// checked their layout, so next reads without checks of its own (Go's
// bounds checks still hold).
type ownedReader struct{ b []byte }

// next returns the next owned topic and its partitions, big-endian int32s
// (views of the bytes), or false at the end.
func (o *ownedReader) next() (topic, partitions []byte, ok bool) {
	b := o.b
	if len(b) == 0 {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	topic, b = b[2:2+n], b[2+n:]
	count := max(int(int32(binary.BigEndian.Uint32(b))), 0) // null is empty
	partitions, o.b = b[4:4+4*count], b[4+4*count:]
	return topic, partitions, true
}

// kafkaReader reads Kafka's classic (non-flexible) encoding. The first
// error sticks: reads after it return zero values and empty views.
type kafkaReader struct {
	src []byte
	bad bool
}

func (r *kafkaReader) span(n int) []byte {
	if r.bad || n < 0 || n > len(r.src) {
		r.bad, r.src = true, nil
		return nil
	}
	s := r.src[:n:n]
	r.src = r.src[n:]
	return s
}

func (r *kafkaReader) int16() int16 {
	if b := r.span(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *kafkaReader) int32() int32 {
	if b := r.span(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

// str reads a string: an int16 length, then the bytes.
func (r *kafkaReader) str() []byte { return r.span(int(r.int16())) }

// nullableBytes reads bytes with an int32 length; negative is null.
func (r *kafkaReader) nullableBytes() []byte {
	if n := r.int32(); n >= 0 {
		return r.span(int(n))
	}
	return nil
}

// nullableBytes16 reads a nullable string's bytes: an int16 length,
// negative for null.
func (r *kafkaReader) nullableBytes16() []byte {
	if n := r.int16(); n >= 0 {
		return r.span(int(n))
	}
	return nil
}

// arrayLen reads an array length whose elements take at least size bytes
// each; negative (null) is empty.
func (r *kafkaReader) arrayLen(size int) int {
	n := r.int32()
	if !r.bad && int64(n)*int64(size) > int64(len(r.src)) {
		r.bad, r.src = true, nil
	}
	if r.bad || n < 0 {
		return 0
	}
	return int(n)
}

// since returns the bytes read since the reader was at from.
func (r *kafkaReader) since(from []byte) []byte {
	if r.bad {
		return nil
	}
	return from[:len(from)-len(r.src)]
}

// Balance implements kgo.GroupMemberBalancer; kgo calls BalanceOrError.
// It returns nil wherever BalanceOrError returns an error.
func (j *joined) Balance(topics map[string]int32) kgo.IntoSyncAssignment {
	plan, _ := j.BalanceOrError(topics)
	return plan
}

// BalanceOrError implements kgo.GroupMemberBalancerOrError. kgo calls it
// once; after a plan, the group's claims are gone (see scratch) and a
// second call fails.
func (j *joined) BalanceOrError(topics map[string]int32) (kgo.IntoSyncAssignment, error) {
	plan, err := j.b.plan(j, topics)
	if err != nil {
		return nil, err
	}
	return plan, nil
}
