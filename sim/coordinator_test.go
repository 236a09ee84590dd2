package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/learnerassignor/learner"
)

// TestCoordinatorOneJoin checks the hand-over wait and the message count on
// TestOneJoin's scenario, worked out by hand there.
func TestCoordinatorOneJoin(t *testing.T) {
	sc := parse(t, `
duration 30m
pause 1s
tasks T1-T4 size 100
members S1 S2 rate 10
at 1m join S3 rate 10
handover one-round
`)
	m := mustRun(t, sc, Coordinator).Metrics
	assert.Equal(t, 1, m.WarmHandovers, "warm hand-overs")
	// Ready at 1m10.02s, running at 1m12.60s.
	assert.Equal(t, 2580*time.Millisecond, m.HandoverWait, "hand-over wait")
	assert.Equal(t, 89*time.Minute, m.MemberTime, "member time: S1 and S2 30m, S3 29m")
	// A heartbeat every 3s and a round trip, plus the ready report, the
	// owner's acknowledgement and S3's polls while it waited: a little
	// under 20 a minute.
	assert.InDelta(t, 89*60/3.02, m.Messages, 15, "messages")

	s := mustRun(t, sc, LearnerStable).Metrics
	// Heartbeats every 3s, and a JoinGroup and a SyncGroup per member in
	// each of the two rebalances (S3 joins; S3's learner is ready).
	assert.Equal(t, 89*60/3+2*3+2*3, s.Messages, "learner (stable) messages")
	assert.Equal(t, 1, s.WarmHandovers, "learner (stable) warm hand-overs")
	assert.Equal(t, time.Second, s.HandoverWait, "learner (stable): ready at 1m11s, promoted by the 1s rebalance")
}

// TestCoordinatorBeatsTheBarrier is the claim, on the default
// scenario: no join pause at all, less downtime than learner (stable).
func TestCoordinatorBeatsTheBarrier(t *testing.T) {
	sc := defaultScenario(t, Defaults)
	c, s := mustRun(t, sc, Coordinator).Metrics, mustRun(t, sc, LearnerStable).Metrics
	assert.Zero(t, c.DowntimeBy[CauseJoin], "coordinator: join pauses")
	assert.Zero(t, c.Rebalances, "coordinator: rebalances")
	assert.Less(t, c.Downtime, s.Downtime, "coordinator downtime, want less than learner (stable)'s")
}

// TestCoordinatorRestartIDs: a restarted member joins the coordinator under
// a new incarnation ID that is valid and used by no member of the scenario
// (S5.2 is one here, so S5's second incarnation cannot take it), also when
// the member's own ID is as long as an ID may be.
func TestCoordinatorRestartIDs(t *testing.T) {
	long := strings.Repeat("L", learner.MaxIDLen)
	sc := parse(t, `
duration 10m
tasks T1-T6 size 10
members S5 S5.2 S5.3x `+long+`
at 1m restart S5 after 5s
at 2m restart `+long+` after 5s
at 3m restart S5 after 5s
at 4m join S5.3
`)
	// The coordinator refuses a malformed ID and fences a second
	// incarnation under an ID in use: the run fails on either.
	mustRun(t, sc, Coordinator)
}

// TestHeartbeatsAlike: every strategy's members heartbeat at the same
// interval, so that messages/member/min compares the protocols' own
// requests. Under a session timeout below 9 s the coordinator strategy
// heartbeats every third of it, as Kafka requires (heartbeat.interval.ms
// below session.timeout.ms); the rebalancing strategies must too.
func TestHeartbeatsAlike(t *testing.T) {
	sc := parse(t, `
duration 30m
session-timeout 3s
tasks T1-T4 size 100
members S1 S2
`)
	// No event: no rebalance, nothing but heartbeats, one a second for
	// each of the two members.
	for _, s := range []Strategy{LearnerStable, StopTheWorld, Cooperative, WarmUp} {
		m := mustRun(t, sc, s).Metrics
		assert.Zero(t, m.Rebalances, "%v: rebalances", s)
		assert.Equal(t, 2*30*60, m.Messages, "%v: messages, want one a second a member", s)
	}
	// The coordinator's heartbeat takes a round trip more.
	m := mustRun(t, sc, Coordinator).Metrics
	assert.InDelta(t, 2*30*60/1.02, m.Messages, 5, "coordinator messages")
}
