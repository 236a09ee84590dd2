package kgolearner

import (
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUnreadyWithdrawsReady: a learner reported Ready, then Unready (its
// state was reset), is not reported ready at the next join, and a join that
// did report it does not make the member chase it with a rejoin.
func TestUnreadyWithdrawsReady(t *testing.T) {
	b, err := New(Config{Subtopologies: testTopology})
	require.NoError(t, err)
	join := func() learner.MemberMetadata {
		var meta kmsg.ConsumerMemberMetadata
		require.NoError(t, meta.ReadFrom(b.JoinGroupMetadata(nil, nil, 1)))
		m, err := b.codec.DecodeMember(meta.UserData)
		require.NoError(t, err)
		return m
	}
	join()
	userData, err := b.codec.AppendAssignment(nil, learner.Assignment{MemberID: workerID, Learning: []string{"0_0", "0_1"}})
	require.NoError(t, err)
	ka := kmsg.NewConsumerMemberAssignment()
	ka.UserData = userData
	_, err = b.ParseSyncAssignment(ka.AppendTo(nil))
	require.NoError(t, err)

	assert.True(t, b.Ready("0_0"), "Ready(0_0) of a learner task")
	assert.True(t, b.Ready("0_1"), "Ready(0_1) of a learner task")
	assert.Equal(t, []string{"0_0", "0_1"}, join().Ready, "Ready at the join after Ready")
	assert.True(t, b.Unready("0_0"), "Unready(0_0) of a learner task")
	assert.False(t, b.Unready("1_0"), "Unready(1_0) of a task it does not learn")
	assert.False(t, b.reportedReady["0_0"], "0_0 still counted as reported ready: a rejoin would chase it")
	assert.Equal(t, []string{"0_1"}, join().Ready, "Ready at the join after Unready(0_0)")
}

// TestSetLagRefusesMalformedID: a lag under a malformed task ID made the
// member's report impossible to encode, so every later join went out with
// no user data: no learner, standby or ready task reported.
func TestSetLagRefusesMalformedID(t *testing.T) {
	b, err := New(Config{Subtopologies: testTopology})
	require.NoError(t, err)
	b.JoinGroupMetadata(nil, nil, 1)
	userData, err := b.codec.AppendAssignment(nil, learner.Assignment{MemberID: workerID, Learning: []string{"0_0"}})
	require.NoError(t, err)
	ka := kmsg.NewConsumerMemberAssignment()
	ka.UserData = userData
	_, err = b.ParseSyncAssignment(ka.AppendTo(nil))
	require.NoError(t, err)

	assert.ErrorIs(t, b.SetLag("0_0 ", 3), learner.ErrInvalidMember, `SetLag("0_0 ", 3)`)
	require.NoError(t, b.SetLag("0_0", 3))
	var meta kmsg.ConsumerMemberMetadata
	require.NoError(t, meta.ReadFrom(b.JoinGroupMetadata(nil, nil, 1)))
	m, err := b.codec.DecodeMember(meta.UserData)
	require.NoError(t, err, "the join's user data %x", meta.UserData)
	assert.Equal(t, []string{"0_0"}, m.Learning, "learner tasks at the join after a malformed lag")
	assert.Equal(t, []learner.TaskLag{{Task: "0_0", Lag: 3}}, m.Lag, "lags at the join after a malformed lag")
}
