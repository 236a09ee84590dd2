package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
)

var heartbeatSizes = []struct{ members, tasks int }{{100, 10_000}, {1_000, 100_000}}

// settledGroup returns a coordinator whose group has settled, the members'
// heartbeats and the time: built as a coordinator taking over would see it,
// members reporting task k on member k mod M, every task stateful.
func settledGroup(b *testing.B, members, tasks int) (*Coordinator, []Heartbeat, time.Time) {
	ts := make([]learner.Task, tasks)
	for i := range ts {
		ts[i] = learner.Task{ID: fmt.Sprintf("%d_%d", i/1000, i%1000), Stateful: true}
	}
	c, err := New(ts, Config{})
	if err != nil {
		b.Fatal(err)
	}
	hbs := make([]Heartbeat, members)
	for i := range hbs {
		hbs[i] = Heartbeat{MemberID: fmt.Sprintf("S%d", i), Epoch: 1}
	}
	for k, t := range ts {
		hbs[k%members].Active = append(hbs[k%members].Active, t.ID)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, hb := range hbs { // adopted in the recovery window
		if _, err := c.Heartbeat(now, hb); err != nil {
			b.Fatal(err)
		}
	}
	now = now.Add(c.Config().SessionTimeout)
	for range 2 { // the window is over: Assign runs, finds the group balanced
		for _, hb := range hbs {
			r, err := c.Heartbeat(now, hb)
			if err != nil || r.Epoch != 1 {
				b.Fatalf("settling: epoch %d, err %v", r.Epoch, err)
			}
		}
	}
	return c, hbs, now
}

// BenchmarkHeartbeat measures one heartbeat of a member of a settled group:
// the steady state, where nothing changes and Assign does not run.
func BenchmarkHeartbeat(b *testing.B) {
	for _, size := range heartbeatSizes {
		b.Run(fmt.Sprintf("members=%d/tasks=%d", size.members, size.tasks), func(b *testing.B) {
			c, hbs, now := settledGroup(b, size.members, size.tasks)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := c.Heartbeat(now, hbs[i%len(hbs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeartbeatRecompute measures a heartbeat that changes what Assign
// sees, so the coordinator runs Assign over the whole group: every
// readiness, leave, capacity or rack report costs this. Here one member
// moves between two racks, which moves no task (no standbys), so each
// heartbeat runs Assign once.
func BenchmarkHeartbeatRecompute(b *testing.B) {
	for _, size := range heartbeatSizes {
		b.Run(fmt.Sprintf("members=%d/tasks=%d", size.members, size.tasks), func(b *testing.B) {
			c, hbs, now := settledGroup(b, size.members, size.tasks)
			racks := [2]Heartbeat{hbs[0], hbs[0]}
			racks[0].Rack, racks[1].Rack = "r1", "r2"
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				hb := racks[i%2]
				hb.Seq = int64(i + 1)
				r, err := c.Heartbeat(now, hb)
				if err != nil || r.Epoch != 1 {
					b.Fatalf("epoch %d, err %v: the rack moved a task", r.Epoch, err)
				}
			}
		})
	}
}

// BenchmarkTickExpiry measures the Tick at which the sessions of 1,000 of
// 10,000 members expire at once (a rack lost): every tenth member has not
// heartbeated for a session timeout, the others half one. Each round's
// set-up joins the 10,000 members (in the recovery window, so Assign does
// not run) and takes longer than the Tick: run it with -benchtime=20x.
func BenchmarkTickExpiry(b *testing.B) {
	const members = 10_000
	hbs := make([]Heartbeat, members)
	for i := range hbs {
		hbs[i] = Heartbeat{MemberID: fmt.Sprintf("S%05d", i), Epoch: 1}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		b.StopTimer()
		c, err := New([]learner.Task{{ID: "T1"}}, Config{})
		if err != nil {
			b.Fatal(err)
		}
		session := c.Config().SessionTimeout
		for _, hb := range hbs {
			if _, err := c.Heartbeat(start, hb); err != nil {
				b.Fatal(err)
			}
		}
		for i, hb := range hbs {
			if i%10 != 0 {
				hb.Seq = 1
				if _, err := c.Heartbeat(start.Add(session/2), hb); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
		if gone := c.Tick(start.Add(session)); len(gone) != members/10 {
			b.Fatalf("%d sessions expired, want %d", len(gone), members/10)
		}
	}
}
