package kgolearner_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnerassignor/learner/internal/testseed"
	"github.com/learnerassignor/learner/kgolearner/internal/grouprequest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
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
func TestRandomHistory(t *testing.T) { playHistories(t, 8, plain) }

// TestRandomFaultedHistory plays random histories as TestRandomHistory
// does, with one more kind of step: a fault, struck into a random member's
// next group request, of the kinds a real network or broker causes at any
// moment (see faultSet.inject). A fault that makes the coordinator drop a
// member (cut off from it past its session) makes its instances lost, and
// the tracker excuses what they processed twice.
//
// One history of 6 steps runs by default (3 to 10 s with -race on 2
// cores); LEARNER_LONG=1 runs 5 of 16, and LEARNER_SEED replays one.
func TestRandomFaultedHistory(t *testing.T) { playHistories(t, 6, faulted) }

// TestRandomChurnedHistory plays faulted histories with the kinds of steps
// TestRandomFaultedHistory leaves out, which a real group sees too: two
// members crash at once, a member (the leader, often) crashes between its
// JoinGroup and its SyncGroup, and kgo's offset fetch after a SyncGroup
// that adds partitions is faulted like the other group requests. It is
// apart from TestRandomFaultedHistory so that the seeds that test's
// failures named replay as they did.
//
// One history of 4 steps runs by default; LEARNER_LONG=1 runs 5 of 16, and
// LEARNER_SEED replays one.
func TestRandomChurnedHistory(t *testing.T) { playHistories(t, 4, churned) }

// TestRandomStaticHistory plays churned histories in which half of the
// members join static (kgo.InstanceID, their name as the instance ID), and
// a static member may restart: its client closes (committing its tasks, and
// leaving the group only if it owes a rejoin) and its next incarnation joins
// under the same instance ID at once, whether or not a rebalance is under
// way. kfake replaces the member and rebalances, since the new incarnation
// reports nothing it runs (Kafka would hand it the old assignment instead:
// restart_test.go plays that). A static member that crashes stays in the
// group, silent, until its session ends. Its faults include one more kind:
// a request whose answer is lost after the broker acted on it.
//
// One history of 4 steps runs by default; LEARNER_LONG=1 runs 5 of 16, and
// LEARNER_SEED replays one.
func TestRandomStaticHistory(t *testing.T) { playHistories(t, 4, static) }

// historyKind says which kinds of steps a random history draws.
type historyKind int

const (
	plain   historyKind = iota
	faulted             // plain's, and faults (faultSet.inject)
	churned             // faulted's, and the kinds TestRandomChurnedHistory names
	static              // churned's, with static members that restart
)

// playHistories plays one random history of steps steps of the kind's
// steps; 5 of 16 with LEARNER_LONG, or the one LEARNER_SEED names, each in
// a subtest named by its seed.
func playHistories(t *testing.T, steps int, kind historyKind) {
	histories := 1
	if testseed.Long() {
		histories, steps = 5, 16
	}
	testseed.Run(t, histories, func(t *testing.T, seed uint64) { playHistory(t, seed, steps, kind) })
}

// inject strikes m's next request of a random group key with a fault a
// real broker or network could cause at any moment, and keeps it in f for
// heal:
//
//   - delayed: the request reaches the broker up to three heartbeat
//     intervals late (a delayed SyncGroup of the leader holds the group in
//     CompletingRebalance, where the broker itself answers any commit
//     REBALANCE_IN_PROGRESS);
//   - cut: the connection drops before the broker reads it;
//   - coordinator moved: answered NOT_COORDINATOR or
//     COORDINATOR_NOT_AVAILABLE, as while the coordinator moves;
//   - cut off: every group request of the member is cut for longer than
//     its session, which expires: the coordinator drops it. (Not a late
//     JoinGroup: kfake would also expire the members waiting in theirs,
//     which a broker keeps, and answers none of them, so each waits out
//     its request deadline.)
//
// REBALANCE_IN_PROGRESS and ILLEGAL_GENERATION are not injected: a broker
// answers them only in the states kfake answers them in itself.
//
// A churned history also faults kgo's OffsetFetch (the one after a
// SyncGroup that adds partitions, sent with the member's ID), and has one
// more kind:
//
//   - crash at sync: the member crashes once its JoinGroup is answered,
//     before its SyncGroup reaches the broker (a leader that crashes there
//     has computed a round nobody gets), if another member stays; the
//     coordinator drops it when its session or the pending-sync timeout
//     runs out.
//
// A static history has one more:
//
//   - answer lost: the request reaches the broker, which acts on it, and
//     the connection closes before its answer comes back (kgo resends it).
//
// crashAtSync crashes m if another staying member remains, under the same
// lock as the history's own steps.
func (f *faultSet) inject(t *testing.T, g *group, rng *rand.Rand, m *member, kind historyKind, crashAtSync func(*member)) {
	id, _ := m.cl.GroupMetadata()
	if id == "" {
		// A fault aimed at the member ID "" would strike whichever
		// member joins next.
		t.Logf("step: no fault: %s has not joined yet", m.name)
		return
	}
	keys := []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit}
	kinds := 4
	if kind >= churned {
		keys = append(keys, kmsg.OffsetFetch)
		kinds++
	}
	if kind == static {
		kinds++
	}
	key := keys[rng.IntN(len(keys))]
	name := kmsg.NameForKey(int16(key))
	control := func(key kmsg.Key, fn func() (kmsg.Response, error, bool)) {
		g.cluster.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			if f.healed.Load() {
				g.cluster.DropControl()
				return nil, nil, false
			}
			g.cluster.KeepControl()
			if grouprequest.Member(req) != id {
				return nil, nil, false
			}
			g.cluster.DropControl()
			return fn()
		})
	}
	switch rng.IntN(kinds) {
	case 0:
		d := time.Duration(1+rng.IntN(3)) * heartbeatInterval
		t.Logf("step: fault: %s's next %s is %v late", m.name, name, d)
		control(key, func() (kmsg.Response, error, bool) {
			g.cluster.SleepControl(func() { time.Sleep(d) })
			return nil, nil, false
		})
	case 1:
		t.Logf("step: fault: %s's next %s is cut", m.name, name)
		control(key, func() (kmsg.Response, error, bool) {
			if key == kmsg.OffsetCommit {
				m.commitCut()
			}
			return nil, errors.New("connection cut"), true
		})
	case 2:
		err := []*kerr.Error{kerr.NotCoordinator, kerr.CoordinatorNotAvailable}[rng.IntN(2)]
		t.Logf("step: fault: %s's next %s is answered %v", m.name, name, err)
		// OffsetFetch v8 and later answer by group, where kfake checks a
		// fault that is not top-level first.
		h := g.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{key}, Err: err, TopLevel: key != kmsg.OffsetCommit && key != kmsg.OffsetFetch,
			When: func(req kmsg.Request) bool { return grouprequest.Member(req) == id }})
		f.mu.Lock()
		f.handles = append(f.handles, h)
		f.mu.Unlock()
	case 3:
		d := sessionTimeout + 500*time.Millisecond
		t.Logf("step: fault: %s is cut off from the coordinator for %v, past its session", m.name, d)
		// Until the coordinator has dropped the member too, a session
		// more at most: kfake renews a session at every answer, a
		// JoinGroup's too, and a member whose JoinGroup it answered after
		// the cut began outlived d, rejoined under its old member ID, and
		// was expired while it waited in that JoinGroup, which kfake
		// never answered (seed 5041534929253585895 of
		// TestRandomChurnedHistory: S1's JoinGroup unanswered for 12 s).
		var over atomic.Bool
		done := make(chan struct{})
		t.Cleanup(func() { <-done }) // before the cluster closes
		go func() {
			defer close(done)
			defer over.Store(true)
			wait := d
			for end := time.Now().Add(d + sessionTimeout); time.Now().Before(end); wait = heartbeatInterval {
				select {
				case <-t.Context().Done():
					return
				case <-time.After(wait):
				}
				info := g.cluster.GroupInfo("learner-e2e")
				if info == nil || !slices.ContainsFunc(info.Members, func(gm kfake.GroupMember) bool { return gm.MemberID == id }) {
					return
				}
			}
		}()
		for _, key := range append(keys, kmsg.LeaveGroup) {
			g.cluster.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
				if over.Load() { // heal leaves it be: see there
					g.cluster.DropControl()
					return nil, nil, false
				}
				g.cluster.KeepControl()
				if grouprequest.Member(req) != id {
					return nil, nil, false
				}
				if req.Key() == int16(kmsg.OffsetCommit) {
					m.commitCut()
				}
				return nil, errors.New("cut off"), true
			})
		}
	case 4:
		t.Logf("step: fault: %s crashes between its next JoinGroup and its SyncGroup", m.name)
		control(kmsg.SyncGroup, func() (kmsg.Response, error, bool) {
			go crashAtSync(m) // it calls into the cluster
			return nil, errors.New("crashed"), true
		})
	case 5:
		t.Logf("step: fault: %s's next %s reaches the broker, and its answer is lost", m.name, name)
		m.loseAnswer.Store(int32(key) + 1)
		f.mu.Lock()
		f.answers = append(f.answers, m)
		f.mu.Unlock()
	}
}

// faultSet holds the faults a history has injected.
type faultSet struct {
	healed  atomic.Bool // read by control functions on the cluster goroutine
	mu      sync.Mutex
	handles []*kfake.FaultHandle
	answers []*member // armed to lose an answer
}

// heal disarms the faults that have not struck yet, as a network heals: the
// end of a history waits for the group to settle, and a member whose every
// rejoin is cut backs off longer each time, up to kgo's 5 s, so a few
// faults still waiting for its next JoinGroup would outlast any wait (seed
// 18094558174395455575, with LEARNER_LONG=1, cut seven of S1's group
// requests in a row, three of them struck after the history's end, and S1
// rejoined 18 s after the first). A cut-off under way has struck: it runs
// to its end, past the member's session. Ended early, it let the member
// rejoin under its old member ID before its session expired, and when that
// JoinGroup waited for a crashed member's session to end, kfake expired
// the joining member's session meanwhile and never answered it (seed
// 6441131440239239027 under -race: 3 failures in 6 runs, S2's JoinGroup
// unanswered for 15 s).
func (f *faultSet) heal() {
	f.healed.Store(true)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.handles {
		h.Remove()
	}
	for _, m := range f.answers {
		m.loseAnswer.Store(0)
	}
}

// maxLive bounds the live members of a random history: more would only
// slow the kfake group down.
const maxLive = 5

func playHistory(t *testing.T, seed uint64, steps int, kind historyKind) {
	rng := rand.New(rand.NewPCG(seed, seed))
	g := newGroup(t, mixedTopology)
	if kind >= churned {
		// Under the session timeout, so that kfake answers a member
		// waiting in its SyncGroup for a leader that crashed: at the
		// rebalance timeout it drops the members that never synced and
		// answers the others REBALANCE_IN_PROGRESS, as Kafka does once
		// the crashed leader's session ends. A waiting member whose own
		// session ends first kfake drops instead, unlike Kafka, and never
		// answers (seed 2140979368082846541 with LEARNER_LONG=1 and a 5 s
		// timeout: the follower ran its two tasks on for 15 s while the
		// others took them over).
		g.rebalanceTimeout = 2 * time.Second
	}
	joined := 0
	// add starts the next member, static under instance if not "".
	add := func(instance string) *member {
		joined++
		name := fmt.Sprintf("S%d", joined)
		if instance != "" {
			g.mu.Lock() // nameLocked reads it
			g.instance[name] = instance
			g.mu.Unlock()
		}
		return g.add(name, rng.IntN(2) == 0)
	}
	join := func() {
		instance := ""
		if kind == static && rng.IntN(2) == 0 {
			instance = fmt.Sprintf("S%d", joined+1)
		}
		m := add(instance)
		t.Logf("step: %s joins (ready at once: %v, instance ID %q)", m.name, m.autoReady, instance)
	}
	leaving := map[*member]bool{} // guarded by g.mu: a crash at sync reads it
	var injected faultSet
	// staying returns the live members that are not leaving, by name.
	staying := func() []*member {
		g.mu.Lock()
		defer g.mu.Unlock()
		return slices.DeleteFunc(g.liveLocked(), func(m *member) bool { return leaving[m] })
	}
	// step is held by each step, from the draw of the staying members to
	// the end of its action, and by a crash at sync, so that the two never
	// take the last staying members between them.
	var step sync.Mutex
	crashAtSync := func(m *member) {
		step.Lock()
		defer step.Unlock()
		others := slices.DeleteFunc(staying(), func(o *member) bool { return o == m })
		g.mu.Lock()
		dead := m.dead
		g.mu.Unlock()
		if dead || len(others) == 0 {
			t.Logf("fault: %s's SyncGroup is cut, and it does not crash: it is dead, or no other member stays", m.name)
			return
		}
		t.Logf("fault: %s crashes at its SyncGroup", m.name)
		m.crash()
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
		step.Lock()
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
		if kind >= faulted {
			actions = append(actions, "fault", "fault")
		}
		if kind >= churned && len(live) > 2 {
			actions = append(actions, "crash two")
		}
		statics := slices.DeleteFunc(slices.Clone(live), func(m *member) bool { return g.instance[m.name] == "" })
		if len(statics) > 0 {
			actions = append(actions, "restart")
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
			g.mu.Lock()
			leaving[m] = true
			g.mu.Unlock()
			t.Logf("step: %s leaves, handing its tasks over", m.name)
			m.b.Leave(time.Time{})
		case "leave by a deadline":
			d := time.Duration(500+rng.IntN(1000)) * time.Millisecond
			g.mu.Lock()
			leaving[m] = true
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
		case "crash two":
			o := live[rng.IntN(len(live)-1)]
			if o == m {
				o = live[len(live)-1]
			}
			t.Logf("step: %s and %s crash at once", m.name, o.name)
			done := make(chan struct{})
			go func() { defer close(done); o.crash() }()
			m.crash()
			<-done
		case "restart":
			m := statics[rng.IntN(len(statics))]
			instance := g.instance[m.name]
			t.Logf("step: %s restarts under its instance ID %q", m.name, instance)
			m.close()
			n := add(instance)
			t.Logf("step: %s is its next incarnation (ready at once: %v)", n.name, n.autoReady)
		case "fault":
			injected.inject(t, g, rng, m, kind, crashAtSync)
		}
		step.Unlock()
		time.Sleep(time.Duration(rng.IntN(600)) * time.Millisecond)
		g.check()
	}
	t.Log("end: the faults not struck yet are disarmed, and every learner is made ready")
	injected.heal()
	g.mu.Lock()
	live := g.liveLocked()
	g.mu.Unlock()
	for _, m := range live {
		m.readyAll()
	}
	// Reap from now on, while waiting: a member that shut down at its
	// deadline during a rebalance never announced it was leaving, and
	// its learners hold the tasks of another leaving member until it
	// closes.
	stopReaping, reaped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(reaped)
		for {
			select {
			case <-stopReaping:
				return
			case <-time.After(50 * time.Millisecond):
				reap()
			}
		}
	}()
	defer func() { close(stopReaping); <-reaped }() // also if the wait fails
	g.waitFor("every leaving member to shut down", func() bool {
		for m := range leaving {
			if !m.dead && !m.shutdown {
				return false
			}
		}
		return true
	})
	g.waitFor("a balanced group of the survivors", func() bool { return g.stableLocked(g.liveLocked()...) })
	g.finish()
	g.mu.Lock()
	g.rounds.report(t)
	if g.idle.task != "" {
		t.Logf("longest a task ran nowhere: %s, %v, from %s to %s", g.idle.task, g.idle.d.Round(time.Millisecond), g.idle.from, g.idle.to)
	}
	g.mu.Unlock()
}
