package coordinator

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/errtext"
	"github.com/learnerassignor/learner/learnertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewConfig(t *testing.T) {
	tasks := []learner.Task{{ID: "T1", Stateful: true}}
	c, err := New(tasks, Config{})
	require.NoError(t, err, "New(zero Config)")
	assert.Equal(t, Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 10 * time.Second / 3, WaitInterval: 10 * time.Second / 30, MaxMembers: learner.MaxMembers},
		c.Config(), "New(zero Config).Config(): the documented defaults")
	for _, tc := range []struct {
		name  string
		tasks []learner.Task
		cfg   Config
		want  string
	}{
		{"negative session timeout", tasks, Config{SessionTimeout: -time.Second}, "session timeout -1s out of range"},
		{"session timeout too long", tasks, Config{SessionTimeout: 25 * time.Hour}, "session timeout 25h0m0s out of range"},
		{"heartbeat as long as the session", tasks, Config{SessionTimeout: time.Second, HeartbeatInterval: time.Second}, "heartbeat interval 1s not in (0, session timeout 1s)"},
		{"wait longer than heartbeat", tasks, Config{HeartbeatInterval: time.Second, WaitInterval: 2 * time.Second}, "wait interval 2s not in (0, heartbeat interval 1s]"},
		{"negative standbys", tasks, Config{Options: learner.Options{Standbys: -1}}, "standbys -1 is negative"},
		{"duplicate task", []learner.Task{{ID: "T1"}, {ID: "T1"}}, Config{}, `ID "T1" duplicates task 0`},
	} {
		_, err := New(tc.tasks, tc.cfg)
		require.ErrorIs(t, err, ErrInvalidConfig, "New(%s)", tc.name)
		assert.ErrorContains(t, err, tc.want, "New(%s)", tc.name)
		assert.ErrorContains(t, err, "coordinator: ", "New(%s): errors name the package", tc.name)
	}
}

func TestZeroMember(t *testing.T) {
	c, err := New([]learner.Task{{ID: "T1", Stateful: true}}, Config{})
	require.NoError(t, err)
	var m Member
	assert.Empty(t, m.Active(), "zero Member's Active()")
	_, err = c.Heartbeat(t0, m.Heartbeat())
	require.ErrorIs(t, err, ErrInvalidHeartbeat, "Heartbeat(zero Member's heartbeat)")
	assert.Equal(t, learner.Changes{Shutdown: true}, m.Stop(), "zero Member's Stop()")
}

func TestMemberApply(t *testing.T) {
	m := must(NewMember("S1"))
	_, err := m.Apply(Response{MemberID: "S2", Epoch: 1})
	require.ErrorIs(t, err, ErrInvalidResponse, "Apply(response for S2) on S1")
	_, err = m.Apply(Response{MemberID: "S1", Epoch: 1, Active: []string{"T1"}, Standby: []string{"T1"}})
	require.ErrorIs(t, err, ErrInvalidResponse, "Apply(T1 active and standby)")
	assert.Zero(t, m.Epoch(), "a refused response changes nothing")

	ch, err := m.Apply(Response{MemberID: "S1", Epoch: 2, Active: []string{"T1"}, Learning: []string{"T2"}, HeartbeatInterval: time.Second})
	require.NoError(t, err)
	assert.Equal(t, []string{"T1"}, ch.StartActive)
	assert.Equal(t, []string{"T2"}, ch.StartLearning)

	ch, err = m.Apply(Response{MemberID: "S1", Epoch: 1})
	require.NoError(t, err)
	assert.Equal(t, learner.Changes{}, ch, "Apply(older epoch) = %+v, want no changes", ch)
	assert.Equal(t, []string{"T1"}, m.Active(), "an older response changes nothing")

	require.True(t, m.Restored("T2"))
	assert.False(t, m.Restored("T1"), "Restored(active task) = true, want false")
	require.True(t, m.Unready("T2"))
	assert.Empty(t, m.Heartbeat().Ready, "Heartbeat().Ready after Unready(T2)")
	assert.False(t, m.Unready("T1"), "Unready(active task) = true, want false")
	require.True(t, m.Restored("T2"))
	assert.Equal(t, []string{"T2"}, m.Heartbeat().Ready, "Heartbeat().Ready after Restored(T2) again")
	ch, err = m.Apply(Response{MemberID: "S1", Epoch: 3, Active: []string{"T1", "T2"}, HeartbeatInterval: time.Second})
	require.NoError(t, err)
	assert.Equal(t, []string{"T2"}, ch.StartActive, "a promotion starts the task...")
	assert.Equal(t, []string{"T2"}, ch.StopLearning, "...and stops its learner")

	m.Leave(time.Time{})
	assert.True(t, m.Heartbeat().Leaving)
	ch, err = m.Apply(Response{MemberID: "S1", Epoch: 4, Shutdown: true, HeartbeatInterval: time.Second})
	require.NoError(t, err)
	assert.True(t, ch.Shutdown, "Apply(Shutdown) on a leaving member")
	stop := m.Stop()
	assert.Empty(t, stop.StopActive, "Stop after handing everything over stops nothing active")
	assert.Equal(t, Heartbeat{MemberID: "S1", Epoch: 4, Leave: true}, m.LeaveHeartbeat())
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// must returns the member NewMember or RestartOf built from values the test
// knows to be valid; an error is the test's own bug.
func must(m *Member, err error) *Member {
	if err != nil {
		panic(err)
	}
	return m
}

// TestMemberRefusesWhatHeartbeatRefuses: NewMember, RestartOf and SetCapacity
// refuse what the coordinator would refuse in every heartbeat of the member,
// with the coordinator's words, and accept what it accepts up to the bounds.
func TestMemberRefusesWhatHeartbeatRefuses(t *testing.T) {
	long := strings.Repeat("a", learner.MaxIDLen)
	// One past MaxCapacity, computed at run time: where int has 32 bits no
	// int is past it, and the sum wraps to the most negative int, refused
	// all the same.
	overCapacity := learner.MaxCapacity
	overCapacity++
	tests := []struct {
		name       string
		id, old    string // old: RestartOf's; "" for NewMember
		capacity   int
		rack       string
		refused    bool
		byCapacity bool // refused by SetCapacity, not the constructor
	}{
		{name: "valid", id: "S1"},
		{name: "longest ID, rack and capacity", id: long, capacity: learner.MaxCapacity, rack: long},
		{name: "restart", id: "S1.2", old: "S1"},
		{name: "empty ID", id: "", refused: true},
		{name: "over-long ID", id: long + "a", refused: true},
		{name: "ID with a space", id: "S 1", refused: true},
		{name: "restart with empty ID", id: "", old: "S1", refused: true},
		{name: "restart of an over-long ID", id: "S1.2", old: long + "a", refused: true},
		{name: "restart of itself", id: "S1", old: "S1", refused: true},
		{name: "negative capacity", id: "S1", capacity: -1, refused: true, byCapacity: true},
		{name: "capacity over the bound", id: "S1", capacity: overCapacity, refused: true, byCapacity: true},
		{name: "over-long rack", id: "S1", rack: long + "a", refused: true, byCapacity: true},
		{name: "malformed rack", id: "S1", rack: "rack/1", refused: true, byCapacity: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New([]learner.Task{{ID: "T1"}}, Config{FreshGroup: true})
			require.NoError(t, err)
			hb := Heartbeat{MemberID: tt.id, Replaces: tt.old, Capacity: tt.capacity, Rack: tt.rack}
			_, hbErr := c.Heartbeat(t0, hb)
			var m *Member
			if tt.old == "" {
				m, err = NewMember(tt.id)
			} else {
				m, err = RestartOf(tt.id, tt.old)
			}
			if err == nil {
				err = m.SetCapacity(tt.capacity, tt.rack)
				want := Heartbeat{MemberID: tt.id, Seq: 1, Replaces: tt.old}
				if err == nil {
					want.Capacity, want.Rack = tt.capacity, tt.rack
				}
				// A refused SetCapacity changes nothing.
				assert.Equal(t, want, m.Heartbeat(), "the member's heartbeat after SetCapacity(%d, %q)", tt.capacity, tt.rack)
			} else {
				assert.Nil(t, m, "the member built with an error")
				assert.False(t, tt.byCapacity, "the constructor refused %q: %v", tt.id, err)
			}
			if !tt.refused {
				assert.NoError(t, hbErr, "Heartbeat(%+v)", hb)
				assert.NoError(t, err, "the member of %+v", hb)
				return
			}
			require.ErrorIs(t, hbErr, ErrInvalidHeartbeat, "Heartbeat(%+v)", hb)
			require.ErrorIs(t, err, ErrInvalidHeartbeat, "the member of %+v", hb)
			// The same problem, in the same words: the coordinator's names
			// the heartbeat, the member's the member.
			hbProblem := strings.TrimPrefix(hbErr.Error(), fmt.Sprintf("coordinator: heartbeat of member %s: ", errtext.Quote(tt.id)))
			problem := strings.TrimPrefix(err.Error(), fmt.Sprintf("coordinator: member %s: ", errtext.Quote(tt.id)))
			assert.Equal(t, hbProblem, problem, "the member's error %q, the coordinator's %q", err, hbErr)
		})
	}
	// A heartbeat that replaces no one is a plain join; a restart of no one
	// is the caller's mistake.
	_, err := RestartOf("S1.2", "")
	assert.ErrorIs(t, err, ErrInvalidHeartbeat, `RestartOf("S1.2", "")`)
}

// beatApply sends m's heartbeat at now and applies the response.
func beatApply(t *testing.T, c *Coordinator, now time.Time, m *Member) {
	t.Helper()
	r, err := c.Heartbeat(now, m.Heartbeat())
	require.NoError(t, err, "%s heartbeats", m.ID())
	_, err = m.Apply(r)
	require.NoError(t, err, "%s applies %+v", m.ID(), r)
}

// TestLateJoinAfterLeave: a late copy of a departed member's join is fenced,
// not taken for a new member that would be given tasks it never runs.
func TestLateJoinAfterLeave(t *testing.T) {
	tasks := []learner.Task{{ID: "T1"}, {ID: "T2"}}
	c, err := New(tasks, Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
	require.NoError(t, err)
	s1, s2 := must(NewMember("S1")), must(NewMember("S2"))
	now := t0
	beatApply(t, c, now, s1)
	join := s2.Heartbeat()
	_, err = c.Heartbeat(now, join)
	require.NoError(t, err, "S2 joins")
	_, err = c.Heartbeat(now, s2.LeaveHeartbeat())
	require.NoError(t, err, "S2 leaves")
	for range 3 {
		beatApply(t, c, now, s1)
	}
	lateJoinRefused(t, c, now.Add(time.Second), join, s1)
}

// lateJoinRefused delivers a late copy of an incarnation's join at now and
// checks that it is fenced, and that for the next 9 s the survivor, the
// group's one member, keeps running both tasks: none goes to a ghost.
func lateJoinRefused(t *testing.T, c *Coordinator, now time.Time, join Heartbeat, survivor *Member) {
	t.Helper()
	_, err := c.Heartbeat(now, join)
	require.ErrorIs(t, err, ErrFenced, "a late copy of %s's join, after its incarnation ended", join.MemberID)
	assert.ErrorContains(t, err, "coordinator: ")
	assert.Equal(t, []string{survivor.ID()}, c.Members(), "the late join must not bring %s back", join.MemberID)
	for range 9 {
		now = now.Add(time.Second)
		c.Tick(now)
		beatApply(t, c, now, survivor)
	}
	assert.Equal(t, []string{"T1", "T2"}, survivor.Active(), "%s runs every task: none went to a ghost (target %v)", survivor.ID(), c.Target())
}

// twoTaskCoordinator returns a coordinator of two stateful tasks, T1 and
// T2 (10 s sessions, 3 s heartbeats), of a fresh group or, after a
// failover, of one it recovers.
func twoTaskCoordinator(t *testing.T, fresh bool) *Coordinator {
	t.Helper()
	c, err := New([]learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}},
		Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: fresh})
	require.NoError(t, err)
	return c
}

// TestRecoveryAdoptsHighestEpoch: in the recovery window, a delayed older
// heartbeat that arrives before a member's current one does not get the
// current one fenced: the member is adopted again at the higher epoch.
func TestRecoveryAdoptsHighestEpoch(t *testing.T) {
	c := twoTaskCoordinator(t, true)
	s1, s2 := must(NewMember("S1")), must(NewMember("S2"))
	now := t0
	beatApply(t, c, now, s1)
	stale := s1.Heartbeat()
	beatApply(t, c, now, s2)
	require.True(t, s2.Restored("T1"), "S2 learns T1")
	beatApply(t, c, now, s2)
	beatApply(t, c, now, s1)
	beatApply(t, c, now, s1)
	beatApply(t, c, now, s2)
	require.Greater(t, s1.Epoch(), stale.Epoch, "S1 moved on from the delayed heartbeat's epoch")

	c2 := twoTaskCoordinator(t, false) // the first one failed over
	now = now.Add(time.Second)
	_, err := c2.Heartbeat(now, stale)
	require.NoError(t, err, "the delayed heartbeat, first to reach the new coordinator")
	r, err := c2.Heartbeat(now, s1.Heartbeat())
	require.NoError(t, err, "S1's current heartbeat, after a delayed older copy")
	assert.Equal(t, s1.Epoch(), r.Epoch, "S1 adopted at the epoch it reports")
	assert.Equal(t, s1.Active(), r.Active, "S1 adopted with what it runs")
	r, err = c2.Heartbeat(now, stale)
	require.NoError(t, err, "the delayed heartbeat again")
	assert.Equal(t, s1.Epoch(), r.Epoch, "a heartbeat older than the adopted one changes nothing")
	beatApply(t, c2, now, s2)

	// Once the window ends, the group goes on from what the members run:
	// T1, which S1 gave to S2, is never active on both.
	for range 12 {
		now = now.Add(time.Second)
		c2.Tick(now)
		beatApply(t, c2, now, s1)
		beatApply(t, c2, now, s2)
		for _, task := range s1.Active() {
			assert.NotContains(t, s2.Active(), task, "%s active on both members", task)
		}
	}
	assert.Equal(t, []string{"S1", "S2"}, c2.Members())
}

// TestLateHeartbeatSameEpoch: a heartbeat delivered late within its epoch
// does not take back what a newer one of the same epoch reported.
func TestLateHeartbeatSameEpoch(t *testing.T) {
	tasks := []learner.Task{{ID: "T1"}, {ID: "T2"}, {ID: "T3"}, {ID: "T4"}}
	c, err := New(tasks, Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
	require.NoError(t, err)
	s1, s2 := must(NewMember("S1")), must(NewMember("S2"))
	now := t0
	for range 4 {
		beatApply(t, c, now, s1)
		beatApply(t, c, now, s2)
	}
	old := s2.Heartbeat()
	require.NoError(t, s2.SetCapacity(3, ""))
	now = now.Add(time.Second)
	beatApply(t, c, now, s2)
	require.Equal(t, old.Epoch, s2.Epoch(), "the late heartbeat is of the current epoch")
	before := fmt.Sprint(c.Target())
	_, err = c.Heartbeat(now.Add(time.Second), old)
	require.NoError(t, err, "the late heartbeat")
	beatApply(t, c, now.Add(time.Second), s1)
	assert.Equal(t, before, fmt.Sprint(c.Target()), "a late older heartbeat changed the target")
}

// TestSetTopologyForgetsTasks: a coordinator that lives through many
// topologies keeps only the tasks of the current one and those a member
// still runs, not every task it ever saw.
func TestSetTopologyForgetsTasks(t *testing.T) {
	topo := func(gen int) []learner.Task {
		return []learner.Task{{ID: fmt.Sprintf("G%d_0", gen), Stateful: true}, {ID: fmt.Sprintf("G%d_1", gen), Stateful: true}}
	}
	c, err := New(topo(0), Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
	require.NoError(t, err)
	s1 := must(NewMember("S1"))
	now := t0
	for range 3 {
		beatApply(t, c, now, s1)
	}
	require.Equal(t, []string{"G0_0", "G0_1"}, s1.Active())
	for gen := 1; gen <= 100; gen++ {
		require.NoError(t, c.SetTopology(topo(gen)))
	}
	// S1 has not heartbeated since: it still runs G0's tasks, which count.
	assert.Equal(t, 4, len(c.tasks), "interned tasks after 100 topologies while S1 runs the first one's")
	for range 3 {
		now = now.Add(time.Second)
		beatApply(t, c, now, s1)
	}
	assert.Equal(t, []string{"G100_0", "G100_1"}, s1.Active(), "S1 runs the latest topology's tasks")
	require.NoError(t, c.SetTopology(topo(100)))
	assert.Equal(t, 2, len(c.tasks), "interned tasks once nobody runs G0's")
	assert.Equal(t, 2, len(c.index), "index entries once nobody runs G0's")
}

// TestRestartBuriesUnknownIncarnation: a restarted process's join names the
// incarnation it replaces; if the coordinator never heard of that one (its
// join was still on its way, or the coordinator failed over since), a late
// heartbeat of it is fenced all the same, not taken for a member that is
// given tasks it never runs.
func TestRestartBuriesUnknownIncarnation(t *testing.T) {
	tasks := []learner.Task{{ID: "T1"}, {ID: "T2"}}
	c, err := New(tasks, Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
	require.NoError(t, err)
	join := must(NewMember("S1")).Heartbeat() // delayed in the network; S1's process dies
	s2 := must(RestartOf("S1.2", "S1"))
	now := t0
	for range 3 {
		beatApply(t, c, now, s2)
	}
	require.Equal(t, []string{"T1", "T2"}, s2.Active())
	lateJoinRefused(t, c, now.Add(time.Second), join, s2)
}

// TestTickDropsOnTime: Tick drops each member exactly a session timeout
// after its last heartbeat, however the ticks, heartbeats and joins
// interleave with the bound Tick keeps to skip its scans, a group that
// emptied and a late join's burial included.
func TestTickDropsOnTime(t *testing.T) {
	c, err := New([]learner.Task{{ID: "T1"}}, Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
	require.NoError(t, err)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	s1, s2 := must(NewMember("S1")), must(NewMember("S2"))
	beatApply(t, c, sec(0), s1)
	assert.Empty(t, c.Tick(sec(1)), "nothing is due at 1 s")
	beatApply(t, c, sec(5), s2)
	beatApply(t, c, sec(8), s1) // S1's expiry moves from 10 s to 18 s
	assert.Empty(t, c.Tick(sec(9.9)))
	assert.Empty(t, c.Tick(sec(10)), "S1 heartbeat at 8 s")
	assert.Empty(t, c.Tick(sec(14.9)))
	assert.Equal(t, []string{"S2"}, c.Tick(sec(15)), "S2 last heartbeat at 5 s")
	assert.Empty(t, c.Tick(sec(17.9)))
	assert.Equal(t, []string{"S1"}, c.Tick(sec(18)), "S1 last heartbeat at 8 s")
	assert.Empty(t, c.Members())

	// The group is empty: a new member's expiry is the only one.
	s3 := must(NewMember("S3"))
	beatApply(t, c, sec(30), s3)
	assert.Empty(t, c.Tick(sec(39.9)))
	assert.Equal(t, []string{"S3"}, c.Tick(sec(40)), "S3 last heartbeat at 30 s")

	// S1's burial ended at 28 s: its ID may join again.
	_, err = c.Heartbeat(sec(41), must(NewMember("S1")).Heartbeat())
	require.NoError(t, err, "S1 joins after its burial ended")
	assert.Equal(t, []string{"S1"}, c.Members())
}

// TestApplyRefusesResponseItCannotReport: a response whose epoch or task
// IDs the member's next heartbeat could not carry is refused, wrapping
// ErrInvalidResponse and naming the member, and changes nothing. Applied,
// it made every later heartbeat invalid (ErrInvalidHeartbeat, not
// ErrFenced), so the member could neither go on nor learn to start over.
func TestApplyRefusesResponseItCannotReport(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Response
	}{
		{"epoch", Response{MemberID: "S1", Epoch: MaxEpoch + 1, HeartbeatInterval: time.Second}},
		{"malformed", Response{MemberID: "S1", Epoch: 1, Active: []string{"T 1"}, HeartbeatInterval: time.Second}},
		{"empty ID", Response{MemberID: "S1", Epoch: 1, Learning: []string{"T1"}, Standby: []string{""}, HeartbeatInterval: time.Second}},
		{"repeated active", Response{MemberID: "S1", Epoch: 1, Active: []string{"T1", "T1"}, HeartbeatInterval: time.Second}},
		// A heartbeat of epoch 0 is a join, and a joining member runs nothing.
		{"tasks at epoch 0", Response{MemberID: "S1", Epoch: 0, Learning: []string{"T1"}, HeartbeatInterval: time.Second}},
		// Not about the next heartbeat's report but when it goes: zero
		// would heartbeat in a busy loop.
		{"no heartbeat interval", Response{MemberID: "S1", Epoch: 1, Active: []string{"T1"}}},
		{"heartbeat interval over 24h", Response{MemberID: "S1", Epoch: 1, HeartbeatInterval: 25 * time.Hour}},
	} {
		r := c.r
		t.Run(c.name, func(t *testing.T) {
			m := must(NewMember("S1"))
			_, err := m.Apply(r)
			require.ErrorIs(t, err, ErrInvalidResponse, "Apply(%+v)", r)
			assert.ErrorContains(t, err, `coordinator: response to member "S1" at epoch`)
			assert.Equal(t, int64(0), m.Epoch(), "a refused response changes nothing")
			assert.Empty(t, m.Active())
			assert.NoError(t, validate(m.Heartbeat()), "after Apply(%+v), the member's heartbeat", r)
		})
	}
}

// TestMaxMembers: a heartbeat that would add a member to a full group is
// fenced with ErrGroupFull and changes nothing; a restart that replaces a
// member, and a join after a member left, still get in.
func TestMaxMembers(t *testing.T) {
	_, err := New([]learner.Task{{ID: "T1"}}, Config{MaxMembers: learner.MaxMembers + 1})
	require.ErrorIs(t, err, ErrInvalidConfig, "New with MaxMembers over learner.MaxMembers")
	_, err = New([]learner.Task{{ID: "T1"}}, Config{MaxMembers: -1})
	require.ErrorIs(t, err, ErrInvalidConfig, "New with negative MaxMembers")

	c, err := New([]learner.Task{{ID: "T1"}, {ID: "T2"}}, Config{SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true, MaxMembers: 2})
	require.NoError(t, err)
	s1, s2 := must(NewMember("S1")), must(NewMember("S2"))
	beatApply(t, c, t0, s1)
	beatApply(t, c, t0, s2)
	_, err = c.Heartbeat(t0, must(NewMember("S3")).Heartbeat())
	require.ErrorIs(t, err, ErrGroupFull, "S3 joins a group of MaxMembers 2")
	require.ErrorIs(t, err, ErrFenced, "S3 joins a group of MaxMembers 2")
	assert.Equal(t, []string{"S1", "S2"}, c.Members(), "members after a refused join")

	beatApply(t, c, t0.Add(time.Second), must(RestartOf("S2-b", "S2")))
	assert.Equal(t, []string{"S1", "S2-b"}, c.Members(), "members after S2 restarts as S2-b")

	r, err := c.Heartbeat(t0.Add(2*time.Second), s1.LeaveHeartbeat())
	require.NoError(t, err)
	require.True(t, r.Shutdown)
	beatApply(t, c, t0.Add(2*time.Second), must(NewMember("S3")))
	assert.Equal(t, []string{"S2-b", "S3"}, c.Members(), "members after S1 left and S3 joined")
}

// TestUnreadyWithdrawsReadiness: a learner that reported ready and then
// fell behind again (Member.Unready) is not promoted on the strength of its
// older report. A failover's recovery window holds the promotion back, so
// the withdrawal comes in before the coordinator acts on the readiness.
func TestUnreadyWithdrawsReadiness(t *testing.T) {
	c := twoTaskCoordinator(t, true)
	s1, s2 := must(NewMember("S1")), must(NewMember("S2"))
	now := t0
	beatApply(t, c, now, s1)
	beatApply(t, c, now, s2)
	beatApply(t, c, now, s2)
	learning := s2.Heartbeat().Learning
	require.Len(t, learning, 1, "S2 learns one of S1's tasks")
	task := learning[0]

	c2 := twoTaskCoordinator(t, false) // the first one failed over
	beatApply(t, c2, now, s1)
	require.True(t, s2.Restored(task))
	beatApply(t, c2, now, s2) // ready, but the window grants nothing
	require.True(t, s2.Unready(task))
	beatApply(t, c2, now, s2) // not ready after all
	for range 15 {
		now = now.Add(time.Second)
		c2.Tick(now)
		beatApply(t, c2, now, s1)
		beatApply(t, c2, now, s2)
	}
	assert.Contains(t, s1.Active(), task, "S1 keeps %s: its learner on S2 withdrew its readiness (target %v)", task, c2.Target())
	assert.Equal(t, []string{task}, s2.Heartbeat().Learning, "S2 still learns %s", task)
}

// TestHeartbeatCapacity: a heartbeat may report any capacity
// learner.MemberMetadata takes (Heartbeat.Capacity refers to it), up to
// learner.MaxCapacity, and one beyond it is refused with its range.
func TestHeartbeatCapacity(t *testing.T) {
	c := twoTaskCoordinator(t, true)
	s1 := must(NewMember("S1"))
	require.NoError(t, s1.SetCapacity(learner.MaxCapacity, ""))
	beatApply(t, c, t0, s1)
	beatApply(t, c, t0, s1)
	assert.Equal(t, []string{"T1", "T2"}, s1.Active(), "S1 of capacity learner.MaxCapacity runs the tasks")

	for _, capacity := range append(learnertest.OutOfRangeCapacities, -1) {
		hb := must(NewMember("S2")).Heartbeat()
		hb.Capacity = capacity
		_, err := c.Heartbeat(t0, hb)
		require.ErrorIs(t, err, ErrInvalidHeartbeat, "capacity %d", capacity)
		assert.ErrorContains(t, err, fmt.Sprintf("capacity %d out of range [0, %d]", capacity, learner.MaxCapacity))
	}
	assert.Equal(t, []string{"S1"}, c.Members(), "a refused heartbeat adds no member")
}

// TestUnknownBurialsBounded: Leave and Replaces naming IDs never heard of
// bury them, so that their late joins are fenced, but anyone can send new
// ones: the burials stop growing at Config.MaxMembers, while a member
// that does leave is still buried.
func TestUnknownBurialsBounded(t *testing.T) {
	c, err := New([]learner.Task{{ID: "T1", Stateful: true}}, Config{MaxMembers: 3, FreshGroup: true})
	require.NoError(t, err)
	for i := range 100 {
		_, err := c.Heartbeat(t0, Heartbeat{MemberID: fmt.Sprintf("L%d", i), Leave: true})
		require.NoError(t, err, "Leave of a stranger")
		_, err = c.Heartbeat(t0, Heartbeat{MemberID: fmt.Sprintf("J%d", i), Replaces: fmt.Sprintf("R%d", i)})
		require.NoError(t, err, "join replacing a stranger")
		_, err = c.Heartbeat(t0, Heartbeat{MemberID: fmt.Sprintf("J%d", i), Leave: true})
		require.NoError(t, err, "Leave of a member")
	}
	assert.LessOrEqual(t, len(c.buriedUntil), 3+100, "burials after 100 strangers' Leaves and Replaces, and 100 members' Leaves")
	_, err = c.Heartbeat(t0, Heartbeat{MemberID: "J99"})
	assert.ErrorIs(t, err, ErrFenced, "a late join of a member that left")
}

// rackedGroup returns a coordinator of two stateful tasks with opts, S1 and
// S2 on rack a and S3 on rack b, none of them heartbeating yet.
func rackedGroup(t *testing.T, opts learner.Options) (c *Coordinator, s1, s2, s3 *Member) {
	t.Helper()
	c, err := New([]learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}},
		Config{Options: opts, SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
	require.NoError(t, err)
	s1, s2, s3 = must(NewMember("S1")), must(NewMember("S2")), must(NewMember("S3"))
	require.NoError(t, s1.SetCapacity(0, "a"))
	require.NoError(t, s2.SetCapacity(0, "a"))
	require.NoError(t, s3.SetCapacity(0, "b"))
	return c, s1, s2, s3
}

// TestStandbyMovesWarm: when Assign moves a task's standby to a member
// that has no copy (here to a new member on another rack), the old copy
// stays, an extra standby, until the new one reports caught up (rule 13 of
// docs/rules.md), then goes. The new copy is only in the target until its
// member applies it, and a standby Assign is told of with no lag counts as
// caught up: the old copy must not go before the new one is even started.
func TestStandbyMovesWarm(t *testing.T) {
	c, s1, s2, s3 := rackedGroup(t, learner.Options{Standbys: 1, AcceptableLag: 10})
	now := t0
	// beat heartbeats the members in turn, learners ready at once; S3
	// reports lag of each of its standbys, the others none (caught up).
	beat := func(lag int64, ms ...*Member) {
		for range 4 {
			now = now.Add(time.Second)
			for _, m := range ms {
				hb := m.Heartbeat()
				for _, task := range hb.Learning {
					m.Restored(task)
				}
				if m == s3 {
					for _, task := range hb.Standby {
						require.NoError(t, m.SetLag(task, lag))
					}
				}
				beatApply(t, c, now, m)
			}
		}
	}
	// copies returns the members that run or keep a standby of each task.
	copies := func() map[string][]string {
		out := map[string][]string{}
		for _, m := range []*Member{s1, s2, s3} {
			hb := m.Heartbeat()
			for _, task := range append(hb.Active, hb.Standby...) {
				out[task] = append(out[task], m.ID())
			}
		}
		return out
	}
	beat(0, s1, s2)
	require.Equal(t, map[string][]string{"T1": {"S1", "S2"}, "T2": {"S1", "S2"}}, copies(), "S1 and S2 each run a task and keep the other's standby")

	beat(1000, s1, s2, s3) // S3's standbys replay
	moved := s3.Heartbeat().Standby
	require.Len(t, moved, 1, "one standby moves to S3, on the other rack")
	assert.Len(t, copies()[moved[0]], 3, "%s's standby moved to S3, which has replayed little: its old copy stays (copies %v, target %v)", moved[0], copies(), c.Target())

	beat(5, s1, s2, s3) // caught up
	assert.Len(t, copies()[moved[0]], 2, "S3's standby of %s has caught up: the old copy goes (copies %v)", moved[0], copies())
}

// TestOrphanGoesToWarmStandbyNotUnstarted: a standby moved to a member
// that has not started it yet must not outrank the copy it replaces, kept
// and caught up, when the task's owner goes: here S3 joins on another rack
// and is given a standby whose owner has already crashed (its session ends
// before S3 heartbeats again). The old standby's member reports no lag (it
// is caught up), so the task must go to it, not to S3, which has no state.
func TestOrphanGoesToWarmStandbyNotUnstarted(t *testing.T) {
	// play runs the history, S1 or S2 (crash, if not "") heartbeating for
	// the last time just before S3 joins; it returns the task whose
	// standby moved to S3, its owner then, and the target once crash's
	// session has ended.
	play := func(crash string) (moved, owner string, target []learner.Assignment) {
		c, s1, s2, s3 := rackedGroup(t, learner.Options{Standbys: 1})
		now := t0
		for range 4 {
			now = now.Add(time.Second)
			for _, m := range []*Member{s1, s2} {
				for _, task := range m.Heartbeat().Learning {
					m.Restored(task)
				}
				beatApply(t, c, now, m)
			}
		}
		crashed := now
		now = now.Add(5 * time.Second)
		for _, m := range []*Member{s1, s2} {
			if m.ID() != crash {
				beatApply(t, c, now, m)
			}
		}
		beatApply(t, c, now, s3)
		moved = s3.Heartbeat().Standby[0]
		for _, a := range c.Target() {
			if slices.Contains(a.Assigned, moved) {
				owner = a.MemberID
			}
		}
		if crash != "" {
			require.Equal(t, []string{crash}, c.Tick(crashed.Add(10*time.Second)), "%s's session ends", crash)
			for _, m := range []*Member{s1, s2} {
				if m.ID() != crash {
					beatApply(t, c, crashed.Add(10*time.Second), m)
				}
			}
		}
		return moved, owner, c.Target()
	}
	moved, owner, _ := play("")
	require.Contains(t, []string{"S1", "S2"}, owner)
	_, _, target := play(owner)
	warm := map[string]string{"S1": "S2", "S2": "S1"}[owner]
	for _, a := range target {
		if slices.Contains(a.Assigned, moved) {
			assert.Equal(t, warm, a.MemberID, "%s, orphaned, goes to %s, whose standby of it is caught up, not to S3, which has not started its own (target %v)", moved, warm, target)
			return
		}
	}
	t.Fatalf("%s is not assigned: %v", moved, target)
}

// TestStandbyOfLearnedTaskMovesWarm: a standby moved while another member
// learns its task moves warm too (rule 13). Here S3 (rack b) joins and
// learns T2, and S4 (rack c) joins and is given the standby of T2 that S2
// keeps: S2's copy must stay until S4's, which replays, reports caught up.
// Told of S4's unstarted standby with no lag, Assign counted it caught up
// and released S2's at once; then, when T2's owner went, T2 went cold to
// S2, which had dropped its copy.
func TestStandbyOfLearnedTaskMovesWarm(t *testing.T) {
	c, err := New([]learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}, {ID: "T3", Stateful: true}},
		Config{Options: learner.Options{Standbys: 1, AcceptableLag: 10}, SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
	require.NoError(t, err)
	s1, s2, s3, s4 := must(NewMember("S1")), must(NewMember("S2")), must(NewMember("S3")), must(NewMember("S4"))
	for m, rack := range map[*Member]string{s1: "c", s2: "c", s3: "b", s4: "c"} {
		require.NoError(t, m.SetCapacity(0, rack))
	}
	all := []*Member{s1, s2, s3, s4}
	// warm returns, by task, the members with a caught-up copy: running
	// it, a ready learner, a standby with no lag or one within 10.
	warm := func() map[string][]string {
		out := map[string][]string{}
		for _, m := range all {
			hb := m.Heartbeat()
			for _, task := range slices.Concat(hb.Active, hb.Ready) {
				out[task] = append(out[task], m.ID())
			}
			for _, task := range hb.Standby {
				i := slices.IndexFunc(hb.Lag, func(l learner.TaskLag) bool { return l.Task == task })
				if i < 0 || hb.Lag[i].Lag <= 10 {
					out[task] = append(out[task], m.ID())
				}
			}
		}
		return out
	}
	// beat heartbeats ms in turn, S1 and S2 reporting their standbys
	// caught up (lag 0), S4 replaying (lag 1000); ready makes learners
	// ready at once.
	now := t0
	beat := func(ready bool, ms ...*Member) {
		now = now.Add(time.Second)
		for _, m := range ms {
			hb := m.Heartbeat()
			if ready {
				for _, task := range hb.Learning {
					m.Restored(task)
				}
			}
			for _, task := range hb.Standby {
				require.NoError(t, m.SetLag(task, map[*Member]int64{s4: 1000}[m]))
			}
			beatApply(t, c, now, m)
		}
	}
	for range 4 {
		beat(true, s1, s2)
	}
	before := warm()
	require.Equal(t, map[string][]string{"T1": {"S1", "S2"}, "T2": {"S1", "S2"}, "T3": {"S1", "S2"}}, before, "S1 and S2 run the tasks, each keeping the other's standbys")
	// S3 and S4 join; S3's learners are not ready yet.
	for range 3 {
		for _, m := range []*Member{s3, s4, s1, s2} {
			beat(false, m)
			after := warm()
			for task, had := range before {
				require.GreaterOrEqual(t, len(after[task]), min(len(had), 2), "after %s's heartbeat, %s's caught-up copies are %v, were %v (target %v)", m.ID(), task, after[task], had, c.Target())
			}
		}
	}
	require.Equal(t, []string{"T2"}, s3.Heartbeat().Learning, "S3 learns T2")
	require.Equal(t, []string{"T2"}, s4.Heartbeat().Standby, "S4 keeps T2's standby")
	require.Equal(t, []string{"T2", "T3"}, s1.Active(), "S1 runs T2")

	// S1 crashes: T2 goes to a member with a caught-up copy, S2's.
	atCrash := warm()
	crashed := now
	now = now.Add(4 * time.Second)
	beat(false, s2, s3, s4)
	require.Equal(t, []string{"S1"}, c.Tick(crashed.Add(10*time.Second)), "S1's session ends")
	beat(false, s2, s3, s4)
	for _, a := range c.Target() {
		if slices.Contains(a.Assigned, "T2") {
			assert.Contains(t, atCrash["T2"], a.MemberID, "T2, orphaned, goes to %s, want a member with a caught-up copy (copies when S1 crashed %v, target %v)", a.MemberID, atCrash, c.Target())
		}
	}
}

// TestOrphanGoesToLearnerNotUnstartedStandby: an unstarted standby goes to
// Assign as not caught up (the largest lag), but must not outrank a learner
// of its task that reports no lag, which has replayed part of the state:
// here S2 learns T1 and S3 is given T1's first standby; S1, T1's owner,
// crashes before S3 heartbeats again, so T1 must go to S2, not to S3. At
// the largest AcceptableLag every lag is acceptable, and the learner must
// not be promoted before it is ready.
func TestOrphanGoesToLearnerNotUnstartedStandby(t *testing.T) {
	for _, acceptable := range []int64{0, 10, math.MaxInt64} {
		c, err := New([]learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}},
			Config{Options: learner.Options{Standbys: 1, AcceptableLag: acceptable}, SessionTimeout: 10 * time.Second, HeartbeatInterval: 3 * time.Second, FreshGroup: true})
		require.NoError(t, err)
		s1, s2, s3 := must(NewMember("S1")), must(NewMember("S2")), must(NewMember("S3"))
		sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
		beatApply(t, c, sec(0), s1)
		beatApply(t, c, sec(5), s1) // S1's last heartbeat
		beatApply(t, c, sec(5), s2)
		beatApply(t, c, sec(9), s3)
		beatApply(t, c, sec(10), s2)
		require.Equal(t, []string{"T1"}, s2.Heartbeat().Learning, "acceptable lag %d: S2 learns T1", acceptable)
		require.Equal(t, []string{"T1"}, c.Target()[1].Learning, "acceptable lag %d: S2, not ready, still learns T1 in the target %v", acceptable, c.Target())
		require.Equal(t, []string{"T1"}, s3.Heartbeat().Standby, "acceptable lag %d: S3 keeps T1's standby", acceptable)
		require.Equal(t, []string{"S1"}, c.Tick(sec(15)), "S1's session ends")
		beatApply(t, c, sec(15), s2)
		i := slices.IndexFunc(c.Target(), func(a learner.Assignment) bool { return slices.Contains(a.Assigned, "T1") })
		require.GreaterOrEqual(t, i, 0, "acceptable lag %d: T1 is not assigned: %v", acceptable, c.Target())
		assert.Equal(t, "S2", c.Target()[i].MemberID, "acceptable lag %d: T1, orphaned, goes to %s, want S2, its learner, not S3, whose standby has not started (target %v)", acceptable, c.Target()[i].MemberID, c.Target())
	}
}
