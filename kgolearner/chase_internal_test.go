package kgolearner

import (
	"context"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestChaseCountsSessionsInARow: a member rejoins for a learner task it
// reported ready and got back to learn (a deferred move) in maxChases
// sessions in a row, counted by chase; a session that rejoins anyway
// (another learner became ready) counts too, or a later deferral would go
// unchased, and one in which the task is no longer deferred starts the
// count again.
func TestChaseCountsSessionsInARow(t *testing.T) {
	b, err := New(Config{Subtopologies: testTopology})
	require.NoError(t, err)
	ctx := context.Background()
	session := func(as learner.Assignment, beforeStart func()) int {
		t.Helper()
		b.JoinGroupMetadata(nil, nil, 1)
		ka := kmsg.NewConsumerMemberAssignment()
		ka.UserData, err = b.codec.AppendAssignment(nil, as)
		require.NoError(t, err)
		_, err = b.ParseSyncAssignment(ka.AppendTo(nil))
		require.NoError(t, err)
		if beforeStart != nil {
			beforeStart()
		}
		b.PartitionsAssigned(ctx, nil, nil)
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.chased["0_0"]
	}
	learning := learner.Assignment{MemberID: workerID, Learning: []string{"0_0", "0_1"}}
	session(learning, nil)
	require.True(t, b.Ready("0_0"), "Ready(0_0)")
	assert.Equal(t, 1, session(learning, nil), "deferrals chased after the first join reporting 0_0 ready")
	// 0_1 becomes ready before the session starts: the member rejoins for
	// it (all its learners are ready), and 0_0's deferral counts all the same.
	assert.Equal(t, 2, session(learning, func() { b.Ready("0_1") }), "deferrals counted in a session that rejoins anyway")
	assert.Equal(t, 3, session(learning, nil), "deferrals counted")
	assert.Equal(t, 4, session(learning, nil), "deferrals counted past maxChases (not chased)")
	// 0_0 no longer comes back to learn (promoted, or stopped): its count
	// starts again.
	assert.Equal(t, 0, session(learner.Assignment{MemberID: workerID, Learning: []string{"0_1"}}, nil), "count once 0_0 is not deferred")
}
