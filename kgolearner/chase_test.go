package kgolearner_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDeferredMoveOwnerSyncRefused: the owner of a task whose learner is
// ready misses the learned tag of every rebalance its receiver starts to
// chase the deferred move: each of its SyncGroups reaches the broker after
// the next rebalance began (held here until another member's JoinGroup),
// which refuses it, so it keeps the task and the leader defers the move
// again. The receiver chases three deferrals in a row at most; the owner
// then gets the tag in a session nobody chases, and the move still happens
// (before: the group stayed stable with the task on its owner, tagged
// learned, until a rebalance for another reason).
func TestDeferredMoveOwnerSyncRefused(t *testing.T) {
	g := newGroup(t, storyTopology)
	s1, s2 := g.add("S1", true), g.add("S2", true)
	g.waitStable(s1, s2)
	time.Sleep(5 * heartbeatInterval) // let follow-ups settle
	g.mu.Lock()
	owner := s2
	if g.leader == "S2" {
		owner = s1
	}
	g.mu.Unlock()

	// The owner's next SyncGroups wait until another member joins (or a
	// second passes, when nobody does): the broker refuses them.
	var mu sync.Mutex
	holds, joined := 8, make(chan struct{})
	g.cluster.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		if !strings.HasPrefix(req.(*kmsg.JoinGroupRequest).MemberID, owner.name+"-") {
			mu.Lock()
			select {
			case <-joined:
			default:
				close(joined)
			}
			mu.Unlock()
		}
		return nil, nil, false
	})
	g.cluster.ControlKey(int16(kmsg.SyncGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		g.cluster.KeepControl()
		mu.Lock()
		hold := holds > 0 && strings.HasPrefix(req.(*kmsg.SyncGroupRequest).MemberID, owner.name+"-")
		var wait chan struct{}
		if hold {
			holds--
			joined = make(chan struct{})
			wait = joined
		}
		mu.Unlock()
		if hold {
			g.cluster.SleepControl(func() {
				select {
				case <-wait:
				case <-time.After(time.Second):
				}
			})
		}
		return nil, nil, false
	})
	s3 := g.add("S3", true)
	g.waitStable(s1, s2, s3)
	mu.Lock()
	t.Logf("%d of the owner's SyncGroups held", 8-holds)
	mu.Unlock()
	require.Less(t, holds, 4, "the owner's SyncGroups held: too few to test the chase's cap")
	g.finish()
}
