package state_test

import (
	"fmt"

	"github.com/learnerassignor/learner/kgolearner/state"
)

// Each stateful subtopology's store has one changelog topic, partition p
// holding task "<subtopology>_<p>"'s changes.
func ExampleChangelogTopic() {
	fmt.Println(state.ChangelogTopic("count", 0))
	rec := state.ChangelogRecord(state.ChangelogTopic("count", 0), 3, []byte("w7"), []byte{0, 0, 0, 0, 0, 0, 0, 2},
		map[string]int64{"words": 41})
	fmt.Printf("%s partition %d, %s: %s\n", rec.Topic, rec.Partition, rec.Headers[0].Key, rec.Headers[0].Value)
	// Output:
	// count-0-changelog
	// count-0-changelog partition 3, learner.position: words=41
}

// A store's checkpoint names the changelog offset it reached, the ID of
// the changelog topic it read, and the input position its state reflects.
func ExampleCheckpoint_MarshalText() {
	id := [16]byte{0x3b, 0x8c, 0xd5, 0xaa, 0x1a, 0x27, 0xa7, 0x2d, 0x91, 0x86, 0x54, 0x8f, 0x4d, 0x30, 0xb1, 0x82}
	text, _ := state.Checkpoint{Changelog: 120, Input: map[string]int64{"words": 41}, ChangelogID: id}.MarshalText()
	fmt.Println(string(text))
	// Output:
	// 120@O4zVqhonpy2RhlSPTTCxgg;words=41
}
