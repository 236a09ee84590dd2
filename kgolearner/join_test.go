package kgolearner

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
