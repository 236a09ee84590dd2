package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/learnerassignor/learner"
)

// BenchmarkHeartbeat measures one heartbeat of a member of a settled group:
// the steady state, where nothing changes and Assign does not run. The
// group is built as a coordinator taking over would see it: members report
// task k on member k mod M, every task stateful.
func BenchmarkHeartbeat(b *testing.B) {
	for _, size := range []struct{ members, tasks int }{{100, 10_000}, {1_000, 100_000}} {
		b.Run(fmt.Sprintf("members=%d/tasks=%d", size.members, size.tasks), func(b *testing.B) {
			tasks := make([]learner.Task, size.tasks)
			for i := range tasks {
				tasks[i] = learner.Task{ID: fmt.Sprintf("%d_%d", i/1000, i%1000), Stateful: true}
			}
			c, err := New(tasks, Config{})
			if err != nil {
				b.Fatal(err)
			}
			hbs := make([]Heartbeat, size.members)
			for i := range hbs {
				hbs[i] = Heartbeat{MemberID: fmt.Sprintf("S%d", i), Epoch: 1}
			}
			for k, t := range tasks {
				hbs[k%size.members].Active = append(hbs[k%size.members].Active, t.ID)
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
