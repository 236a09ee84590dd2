package kgolearner_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/learnerassignor/learner/internal/testseed"
)

// TestRandomHistory plays seeded random group histories on the real client
// path, where the stories above play one each: members join (half of them
// slow to report their learners ready), report their learners ready, leave
// through a hand-over (with or without a deadline), close without one, and
// crash, in any order and at any time, while the producer writes and the
// tracker checks every invariant as it happens. At the end every learner is
// made ready: the leaving members must hand over and shut down, the
// survivors settle balanced, and every record produced is processed, twice
// only by an instance that was lost.
//
// One history of 8 steps runs by default (about 15 s with -race on 2
// cores); LEARNER_LONG=1 runs 5 histories of 16 steps, and LEARNER_SEED
// replays the history a failure names (its subtest is seed=N):
//
//	LEARNER_LONG=1 go test -run RandomHistory -v
//	LEARNER_SEED=N go test -run RandomHistory -v
func TestRandomHistory(t *testing.T) {
	histories, steps := 1, 8
	if testseed.Long() {
		histories, steps = 5, 16
	}
	seed, replay := testseed.Seed(t)
	if replay {
		histories = 1
	}
	for h := range histories {
		seed := seed + uint64(h)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { playHistory(t, seed, steps) })
	}
}

// maxLive bounds the live members of a random history: more would only
// slow the kfake group down.
const maxLive = 5

func playHistory(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed))
	g := newGroup(t, mixedTopology)
	joined := 0
	join := func() {
		joined++
		m := g.add(fmt.Sprintf("S%d", joined), rng.IntN(2) == 0)
		t.Logf("step: %s joins (ready at once: %v)", m.name, m.autoReady)
	}
	leaving := map[*member]bool{}
	// staying returns the live members that are not leaving, by name.
	staying := func() []*member {
		g.mu.Lock()
		defer g.mu.Unlock()
		return slices.DeleteFunc(g.liveLocked(), func(m *member) bool { return leaving[m] })
	}
	// reap closes the members that shut down after handing over or at
	// their deadline, as their application does.
	reap := func() {
		g.mu.Lock()
		var done []*member
		for _, m := range g.liveLocked() {
			if m.shutdown {
				done = append(done, m)
			}
		}
		g.mu.Unlock()
		for _, m := range done {
			t.Logf("step: %s shut down: it closes", m.name)
			m.close()
		}
	}
	join()
	join()
	for range steps {
		reap()
		live := staying()
		// A member may go only while another stays to take its tasks.
		actions := []string{"wait", "ready"}
		if len(live) < maxLive {
			actions = append(actions, "join")
		}
		if len(live) > 1 {
			actions = append(actions, "leave", "leave by a deadline", "close", "crash")
		}
		m := live[rng.IntN(len(live))]
		switch actions[rng.IntN(len(actions))] {
		case "wait":
			t.Logf("step: nothing happens")
		case "join":
			join()
		case "ready":
			g.mu.Lock()
			learning := m.learningLocked()
			g.mu.Unlock()
			t.Logf("step: %s reports its learners %v ready", m.name, learning)
			for _, task := range learning {
				m.ready(task)
			}
		case "leave":
			leaving[m] = true
			t.Logf("step: %s leaves, handing its tasks over", m.name)
			m.b.Leave(time.Time{})
		case "leave by a deadline":
			leaving[m] = true
			d := time.Duration(500+rng.IntN(1000)) * time.Millisecond
			g.mu.Lock()
			m.deadline = true
			g.mu.Unlock()
			t.Logf("step: %s leaves with a deadline in %v", m.name, d)
			m.b.Leave(time.Now().Add(d))
		case "close":
			t.Logf("step: %s closes without handing over", m.name)
			m.close()
		case "crash":
			t.Logf("step: %s crashes", m.name)
			m.crash()
		}
		time.Sleep(time.Duration(rng.IntN(600)) * time.Millisecond)
		g.check()
	}
	t.Log("end: every learner is made ready")
	g.mu.Lock()
	live := g.liveLocked()
	g.mu.Unlock()
	for _, m := range live {
		m.readyAll()
	}
	g.waitFor("every leaving member to shut down", func() bool {
		for m := range leaving {
			if !m.dead && !m.shutdown {
				return false
			}
		}
		return true
	})
	reap()
	g.waitFor("a balanced group of the survivors", func() bool { return g.stableLocked(g.liveLocked()...) })
	g.finish()
	g.mu.Lock()
	g.rounds.report(t)
	g.mu.Unlock()
}
