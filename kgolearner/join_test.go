package kgolearner

import (
	"encoding/binary"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzConsumerMetadata checks the leader's in-place reader of
// ConsumerMemberMetadata against kmsg's: the same bytes parse or fail alike,
// and parse to the same fields.
func FuzzConsumerMetadata(f *testing.F) {
	rack := "eu-1a"
	for version := range int16(5) {
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Version = version
		meta.Topics = []string{"clicks", "orders"}
		meta.UserData = []byte{1, 2, 3}
		meta.Generation = 7
		meta.Rack = &rack
		for _, topic := range meta.Topics {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic, op.Partitions = topic, []int32{0, 2, -1}
			meta.OwnedPartitions = append(meta.OwnedPartitions, op)
		}
		f.Add(meta.AppendTo(nil))
	}
	f.Add([]byte{0, 1, 0, 0, 0, 0, 255, 255, 255, 255}) // version 1 without owned partitions
	f.Add([]byte{0, 3, 255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := kmsg.NewConsumerMemberMetadata()
		wantErr := want.ReadFrom(raw)
		if wantErr != nil && len(raw) >= 2 && raw[0] == 0 && raw[1] == 1 { // kgo's fallback
			want = kmsg.NewConsumerMemberMetadata()
			wantErr = want.ReadFrom(append([]byte{0, 0}, raw[2:]...))
		}
		var got consumerMetadata
		ok := len(raw) >= 2 && got.read(raw[2:], int16(binary.BigEndian.Uint16(raw)), nil)
		if !ok && len(raw) >= 2 && raw[0] == 0 && raw[1] == 1 {
			got = consumerMetadata{}
			ok = got.read(raw[2:], 0, nil)
		}
		require.Equal(t, wantErr == nil, ok, "read(%x) = %v, kmsg's error %v", raw, ok, wantErr)
		if !ok {
			return
		}
		// The same bytes again, read with the last member's subscription.
		again := consumerMetadata{}
		require.True(t, again.read(raw[2:], int16(binary.BigEndian.Uint16(raw)), got.subscription) ||
			again.read(raw[2:], 0, got.subscription), "read(%x) with its own subscription", raw)
		assert.Equal(t, got, again, "read(%x) with its own subscription", raw)
		var topics []string
		got.eachTopic(func(topic []byte) { topics = append(topics, string(topic)) })
		assert.Equal(t, want.Topics, nilIfEmpty(topics), "topics of %x", raw)
		var owned []kmsg.ConsumerMemberMetadataOwnedPartition
		for it := got.ownedPartitions(); ; {
			topic, partitions, ok := it.next()
			if !ok {
				break
			}
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic = string(topic)
			for k := 0; k < len(partitions); k += 4 {
				op.Partitions = append(op.Partitions, int32(binary.BigEndian.Uint32(partitions[k:])))
			}
			owned = append(owned, op)
		}
		assert.Equal(t, want.OwnedPartitions, nilIfEmpty(owned), "owned partitions of %x", raw)
		assert.Equal(t, want.UserData, got.userData, "user data of %x", raw)
		assert.Equal(t, want.Generation, got.generation, "generation of %x", raw)
		assert.Equal(t, want.Rack, got.rack, "rack of %x", raw)
	})
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// TestReadJoinMatchesKgo checks readJoin against kgo.NewConsumerBalancer on
// a whole JoinGroup response: the members kept (the first of a repeated
// ID), the topics the leader asks metadata for, and each member's fields.
// Members that subscribe alike are read through the last member's
// subscription, and members that do not must still add their topics.
func TestReadJoinMatchesKgo(t *testing.T) {
	b := newTestBalancer(t, testTopology)
	rack := "eu-1a"
	member := func(id string, version int16, topics []string, owned map[string][]int32, userData []byte) kmsg.JoinGroupResponseMember {
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Version, meta.Topics, meta.UserData, meta.Generation, meta.Rack = version, topics, userData, 4, &rack
		for _, topic := range slices.Sorted(maps.Keys(owned)) {
			op := kmsg.NewConsumerMemberMetadataOwnedPartition()
			op.Topic, op.Partitions = topic, owned[topic]
			meta.OwnedPartitions = append(meta.OwnedPartitions, op)
		}
		m := kmsg.NewJoinGroupResponseMember()
		m.MemberID, m.ProtocolMetadata = id, meta.AppendTo(nil)
		return m
	}
	all := []string{"clicks", "orders", "payments"}
	v1AsV0 := member("S7", 0, []string{"clicks", "extra"}, nil, []byte{9}) // a client that claims v1 and sends v0
	v1AsV0.ProtocolMetadata[1] = 1
	members := []kmsg.JoinGroupResponseMember{
		member("S1", 3, all, map[string][]int32{"orders": {0, 1}, "payments": {0, 1}}, []byte{1}),
		member("S2", 3, all, map[string][]int32{"clicks": {1}}, nil),         // the same subscription
		member("S3", 1, []string{"clicks"}, nil, []byte{3}),                  // another
		member("S4", 2, all, map[string][]int32{"clicks": {0, 0}}, []byte{}), // back to the first
		member("S2", 3, []string{"other"}, nil, nil),                         // a repeated ID: the first counts
		member("S5", 0, []string{"orders", "zeta"}, nil, nil),
		member("S6", 4, []string{"orders", "zeta"}, map[string][]int32{"zeta": {3}}, []byte{6}),
		v1AsV0,
	}
	j, err := b.readJoin(members)
	require.NoError(t, err)
	cb, err := kgo.NewConsumerBalancer(nil, members)
	require.NoError(t, err)
	assert.Equal(t, cb.MemberTopics(), j.topics, "readJoin's topics")
	require.Len(t, j.members, len(cb.Members()), "readJoin's members")
	i := 0
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, want *kmsg.ConsumerMemberMetadata) {
		defer func() { i++ }()
		require.Equal(t, m.MemberID, j.members[i].MemberID, "member %d", i)
		var got consumerMetadata
		raw := m.ProtocolMetadata
		if !got.read(raw[2:], int16(binary.BigEndian.Uint16(raw)), nil) {
			require.True(t, got.read(raw[2:], 0, nil), "member %s reads as version 0", m.MemberID)
		}
		var topics []string
		got.eachTopic(func(topic []byte) { topics = append(topics, string(topic)) })
		assert.Equal(t, want.Topics, topics, "member %s: topics", m.MemberID)
		assert.Equal(t, want.UserData, j.userData[i], "member %s: user data", m.MemberID)
		assert.Equal(t, want.Rack, j.racks[i], "member %s: rack", m.MemberID)
		assert.Equal(t, want.Generation, j.claims.gen[i], "member %s: generation", m.MemberID)
	})
}
