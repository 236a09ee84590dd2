package coordinator_test

import (
	"fmt"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/coordinator"
)

// A second member joins a group of one and takes over a stateful task
// through a learner: the owner keeps running it until the learner is ready,
// stops it, and the learner takes it over.
func Example() {
	c, err := coordinator.New([]learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}},
		coordinator.Config{FreshGroup: true})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s1, err := coordinator.NewMember("S1")
	if err != nil {
		panic(err)
	}
	s2, err := coordinator.NewMember("S2")
	if err != nil {
		panic(err)
	}
	beat := func(m *coordinator.Member) {
		r, err := c.Heartbeat(now, m.Heartbeat())
		if err != nil {
			panic(err)
		}
		ch, err := m.Apply(r)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s epoch %d: active %v learning %v (start %v, stop %v, learn %v)\n",
			m.ID(), r.Epoch, r.Active, r.Learning, ch.StartActive, ch.StopActive, ch.StartLearning)
	}
	beat(s1) // S1 joins and gets both tasks at once: nobody else may run them
	beat(s2) // S2 joins and learns T1
	beat(s1) // S1 keeps T1 running while S2 replays it
	s2.Restored("T1")
	beat(s2) // S2 reports its learner ready
	beat(s1) // S1 stops T1...
	beat(s1) // ...and acknowledges at once
	beat(s2) // S2 runs T1
	// Output:
	// S1 epoch 1: active [T1 T2] learning [] (start [T1 T2], stop [], learn [])
	// S2 epoch 1: active [] learning [T1] (start [], stop [], learn [T1])
	// S1 epoch 1: active [T1 T2] learning [] (start [], stop [], learn [])
	// S2 epoch 1: active [] learning [T1] (start [], stop [], learn [])
	// S1 epoch 2: active [T2] learning [] (start [], stop [T1], learn [])
	// S1 epoch 2: active [T2] learning [] (start [], stop [], learn [])
	// S2 epoch 2: active [T1] learning [] (start [T1], stop [], learn [])
}
