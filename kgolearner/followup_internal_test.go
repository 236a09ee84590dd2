package kgolearner

import (
	"slices"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLeaderPredictsKgoFollowUp checks the leader's reading of kgo's rule
// (a member that loses a partition of its last assignment rejoins at once)
// and what it does then: learned tags only for ready learners' tasks and
// stateless ones.
func TestLeaderPredictsKgoFollowUp(t *testing.T) {
	notStateless := map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {0, 1}}
	for _, c := range []struct {
		name        string
		opts        learner.Options
		s1Owned     map[string][]int32
		s1, s2      learner.MemberMetadata
		followUp    bool
		wantLearned []string // S1's learned tags
	}{
		{
			// S1 released 0_0 and 0_1; S2 is ready for 0_0 only: S1 loses
			// 0_0, and keeps 0_1 untagged through the follow-up.
			name:     "promotion",
			s1Owned:  map[string][]int32{"orders": {2}, "payments": {2}, "clicks": {0, 1}},
			s1:       learner.MemberMetadata{Revoked: []string{"0_0", "0_1"}},
			s2:       learner.MemberMetadata{Learning: []string{"0_0", "0_1"}, Ready: []string{"0_0"}},
			followUp: true, wantLearned: nil,
		},
		{
			// S2 is not ready: S1 gets 0_0 back and loses nothing; the
			// deferred stateless move loses nothing either.
			name: "nothing lost", s1Owned: notStateless,
			s1: learner.MemberMetadata{Revoked: []string{"0_0"}}, s2: learner.MemberMetadata{Learning: []string{"0_0"}},
			followUp: false, wantLearned: []string{"0_0", "1_0"},
		},
		{
			// S1 reports a partition no task has (orders has 3): kgo
			// drops it from S1's assignment, which is a loss.
			name:    "stray partition",
			s1Owned: map[string][]int32{"orders": {1, 2, 7}, "payments": {1, 2}, "clicks": {0, 1}},
			s1:      learner.MemberMetadata{Revoked: []string{"0_0"}}, s2: learner.MemberMetadata{Learning: []string{"0_0"}},
			followUp: true, wantLearned: []string{"1_0"},
		},
		{
			// S2's learner of 0_1 is within the acceptable lag, so Assign
			// moves 0_1 too; S1 still owns it, so it is deferred and keeps
			// its tag (its learner is ready by the lag rule).
			name:    "ready by lag",
			opts:    learner.Options{AcceptableLag: 10},
			s1Owned: map[string][]int32{"orders": {1, 2}, "payments": {1, 2}, "clicks": {0, 1}},
			s1:      learner.MemberMetadata{Revoked: []string{"0_0"}},
			s2: learner.MemberMetadata{Learning: []string{"0_0", "0_1"}, Ready: []string{"0_0"},
				Lag: []learner.TaskLag{{Task: "0_1", Lag: 5}}},
			followUp: true, wantLearned: []string{"0_1"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := New(Config{Subtopologies: testTopology, Options: c.opts})
			require.NoError(t, err)
			_, tags, round := b.balance(t, []kmsg.JoinGroupResponseMember{
				b.joinMember("S1", b.encodeMember(t, c.s1), c.s1Owned),
				b.joinMember("S2", b.encodeMember(t, c.s2), nil),
			}, testCounts)
			assert.Equal(t, c.followUp, round.FollowUp, "Round.FollowUp")
			assert.Equal(t, c.wantLearned, tags["S1"].Learned, "S1's learned tags (S1 runs %v)", tags["S1"].Assigned)
			if c.followUp && len(c.s2.Ready) > 0 {
				assert.Contains(t, tags["S2"].Assigned, "0_0", "S2 takes its ready learner's task in the round kgo follows up")
			}
			for _, id := range c.s2.Learning {
				if !slices.Contains(tags["S2"].Assigned, id) {
					assert.Contains(t, tags["S2"].Learning, id, "S2 still learns %s", id)
				}
			}
		})
	}
}
