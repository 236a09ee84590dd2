package kgolearner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFollowUpKeepsUnreadyLearnedTasks: S3 joins S1 and S2 and learns two
// tasks, A and B, and reports only A ready. The round that promotes A makes
// A's owner lose its partitions, so kgo follows it with another rebalance,
// in which B's learner still cannot be promoted: the leader leaves B
// untagged, and B's owner keeps running it through the follow-up's join
// instead of releasing it for nothing. A later rebalance tags B again, and
// its owner releases it at that join, as the design says; once S3 reports
// B ready, B moves.
func TestFollowUpKeepsUnreadyLearnedTasks(t *testing.T) {
	g := newGroup(t, storyTopology)
	s1, s2, s3 := g.addLearner()
	g.mu.Lock()
	learning := s3.learningLocked()
	g.mu.Unlock()
	a, b := learning[0], learning[1]

	// The round that promotes A, and its follow-up. S3's rejoin policy
	// waits for all its learners: the test makes it rejoin.
	s3.ready(a)
	s3.cl.ForceRebalance()
	var promotion int // 1-based
	g.waitFor(fmt.Sprintf("S3 to run %s and kgo's follow-up to be computed", a), func() bool {
		if _, ok := s3.active[a]; !ok {
			return false
		}
		promotion = slices.IndexFunc(g.history, func(r kgolearner.Round) bool { return runs(r, "S3", a) }) + 1
		return promotion > 0 && len(g.history) > promotion
	})
	g.mu.Lock()
	r := g.history[promotion-1]
	owner := ownerIn(r, b)
	require.True(t, r.FollowUp, "round %d, which promotes %s: FollowUp = false, want true (%s's owner loses it)", promotion, a, a)
	assert.False(t, slices.Contains(assignmentOf(r, owner).Learned, b), "round %d tags %s learned on %s; want it untagged while S3 is not ready", promotion, b, owner)
	assert.True(t, slices.Contains(assignmentOf(r, "S3").Learning, b), "round %d: S3 no longer learns %s", promotion, b)
	for _, rel := range g.releases {
		if rel.task == b && rel.round == promotion {
			assert.Failf(t, "released at kgo's follow-up", "%s released %s at the join of round %d, kgo's follow-up of round %d", rel.member, b, promotion+1, promotion)
		}
	}
	g.mu.Unlock()

	// Any later rebalance tags B learned again and releases it at the
	// following join (the design's trade-off), then gives it back.
	s1.cl.ForceRebalance()
	g.waitFor(fmt.Sprintf("%s to be released at a later join", b), func() bool {
		return slices.ContainsFunc(g.releases, func(rel release) bool { return rel.task == b && rel.round > promotion })
	})

	s3.ready(b)
	g.waitStable(s1, s2, s3)
	g.finishExactly()
}

// runs reports whether round r gives member (a short ID) task.
func runs(r kgolearner.Round, member, task string) bool {
	return slices.Contains(assignmentOf(r, member).Assigned, task)
}

// ownerIn returns the member (short ID) round r gives task to.
func ownerIn(r kgolearner.Round, task string) string {
	for _, as := range r.Assignments {
		if slices.Contains(as.Assigned, task) {
			return shortID(as.MemberID)
		}
	}
	return ""
}

// assignmentOf returns what round r sent member (a short ID).
func assignmentOf(r kgolearner.Round, member string) learner.Assignment {
	for _, as := range r.Assignments {
		if shortID(as.MemberID) == member {
			return as
		}
	}
	return learner.Assignment{}
}
