package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/learnerassignor/learner/kgolearner/internal/grouprequest"
	"github.com/learnerassignor/learner/kgolearner/state"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file strikes the faults of Config.Faults: what a real broker or
// network does to one member at any moment, none that kfake alone would
// allow and a broker refuse.

type faultKind int

const (
	faultCut     faultKind = iota // the member's group requests cut for a while
	faultDelay                    // one group request reaches the broker late
	faultWrite                    // changelog writes answered a retriable code
	faultCommit                   // a commit refused
	faultRestore                  // restore fetches answered an error code
	faultKinds
)

// fault is one fault of a script, drawn with it: a seed strikes the same
// faults at the same steps.
type fault struct {
	kind  faultKind
	key   kmsg.Key      // faultDelay: the request delayed
	d     time.Duration // faultCut: how long; faultDelay: how late
	err   *kerr.Error   // faultWrite, faultCommit, faultRestore
	count int           // faultWrite, faultRestore: requests answered err
}

// drawFault draws a fault:
//
//   - cut: every group request of the member fails with a network error
//     (kfake closes the connection before reading the request) for 0.1 to
//     1.5 s, under half the session. Not its writes: kgo treats a failed
//     JoinGroup as the loss of its partitions, the member may then be
//     dropped from the group (its session runs out while the loss waits
//     for its batch in flight), and a write held meanwhile lands after the
//     next owner's: a zombie's write, whose harm the README documents and
//     which TestRandomFaultedScript would report as wrong counts;
//   - delay: the member's next JoinGroup, SyncGroup, Heartbeat or
//     OffsetCommit reaches the broker 0.2 to 1 s late (a late SyncGroup of
//     the leader holds the group in CompletingRebalance, where the broker
//     itself refuses commits with REBALANCE_IN_PROGRESS);
//   - write: the next 1 to 3 writes to the changelog partitions of the
//     member's active tasks are answered NOT_ENOUGH_REPLICAS (refused) or
//     REQUEST_TIMED_OUT (appended, then answered so: kgo writes again, and
//     the idempotent producer's sequence makes the broker take it once);
//   - commit: the member's next OffsetCommit is answered
//     REBALANCE_IN_PROGRESS or COORDINATOR_LOAD_IN_PROGRESS (kgo answers
//     a commit's partitions REBALANCE_IN_PROGRESS itself when it drops
//     them while retrying, whatever the broker's state);
//   - restore: the next 1 to 3 fetches of the changelog partitions the
//     member restores (its learners, standbys and catching-up actives; else
//     its active tasks', whoever restores them next) are answered
//     NOT_LEADER_OR_FOLLOWER (kgo refreshes its metadata and fetches again)
//     or UNKNOWN_SERVER_ERROR (handed to the runtime, an Error event).
func drawFault(rng *rand.Rand) fault {
	f := fault{kind: faultKind(rng.IntN(int(faultKinds)))}
	switch f.kind {
	case faultCut:
		f.d = time.Duration(100+rng.IntN(1400)) * time.Millisecond
	case faultDelay:
		f.key = []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit}[rng.IntN(4)]
		f.d = time.Duration(200+rng.IntN(800)) * time.Millisecond
	case faultWrite:
		f.err, f.count = []*kerr.Error{kerr.NotEnoughReplicas, kerr.RequestTimedOut}[rng.IntN(2)], 1+rng.IntN(3)
	case faultCommit:
		f.err = []*kerr.Error{kerr.RebalanceInProgress, kerr.CoordinatorLoadInProgress}[rng.IntN(2)]
	case faultRestore:
		f.err, f.count = []*kerr.Error{kerr.NotLeaderForPartition, kerr.UnknownServerError}[rng.IntN(2)], 1+rng.IntN(3)
	}
	return f
}

func (f fault) describe(name string) string {
	switch f.kind {
	case faultCut:
		return fmt.Sprintf("fault: %s cut off for %v", name, f.d)
	case faultDelay:
		return fmt.Sprintf("fault: %s's next %s %v late", name, kmsg.NameForKey(int16(f.key)), f.d)
	case faultWrite:
		return fmt.Sprintf("fault: %s's next %d changelog writes answered %s", name, f.count, f.err.Message)
	case faultCommit:
		return fmt.Sprintf("fault: %s's next commit answered %s", name, f.err.Message)
	default:
		return fmt.Sprintf("fault: %s's next %d restore fetches answered %s", name, f.count, f.err.Message)
	}
}

// faultSet holds the faults a script struck, for heal.
type faultSet struct {
	healed  atomic.Bool // read by controls on the cluster's goroutine
	mu      sync.Mutex
	handles []*kfake.FaultHandle
}

// heal disarms the faults that have not struck yet, as a network heals,
// so that the end of the script waits for a group the faults left alone.
func (f *faultSet) heal() {
	f.healed.Store(true)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.handles {
		h.Remove()
	}
}

func (f *faultSet) add(h *kfake.FaultHandle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handles = append(f.handles, h)
}

// strike arms f against member name. A fault that needs the member's ID
// or tasks and finds none (a member that just joined) is skipped, said in
// the log.
func (h *harness) strike(ctx context.Context, name string, f fault) error {
	var ids []string
	if f.kind == faultCut || f.kind == faultDelay || f.kind == faultCommit {
		var err error
		if ids, err = h.waitMemberIDs(ctx, name); err != nil {
			h.logf("%s: %s skipped: %v", h.s.Name, f.describe(name), err)
			return nil
		}
	}
	h.mu.Lock()
	m := h.members[name]
	h.mu.Unlock()
	st := m.rt.Status()
	var parts []int32
	switch f.kind {
	case faultWrite:
		parts = partitions(st.Active)
	case faultRestore:
		if parts = partitions(slices.Concat(st.Restoring, st.Learning, st.Standby)); len(parts) == 0 {
			parts = partitions(st.Active)
		}
	}
	if len(parts) == 0 && (f.kind == faultWrite || f.kind == faultRestore) {
		h.logf("%s: %s skipped: %s has no task", h.s.Name, f.describe(name), name)
		return nil
	}
	changelog := state.ChangelogTopic(group, 0)
	ofMember := func(req kmsg.Request) bool { return slices.Contains(ids, grouprequest.Member(req)) }
	switch f.kind {
	case faultCut:
		until := time.Now().Add(f.d)
		for _, key := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.LeaveGroup} {
			h.cluster.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
				if h.faults.healed.Load() || time.Now().After(until) {
					h.cluster.DropControl()
					return nil, nil, false
				}
				h.cluster.KeepControl()
				return nil, errors.New("cut"), ofMember(req)
			})
		}
	case faultDelay:
		h.cluster.ControlKey(int16(f.key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			if h.faults.healed.Load() {
				h.cluster.DropControl()
				return nil, nil, false
			}
			h.cluster.KeepControl()
			if !ofMember(req) {
				return nil, nil, false
			}
			h.cluster.DropControl()
			h.cluster.SleepControl(func() { time.Sleep(f.d) })
			return nil, nil, false
		})
	case faultWrite:
		h.faults.add(h.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: changelog, Partitions: parts, Err: f.err, Count: f.count}))
	case faultCommit:
		h.faults.add(h.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Err: f.err, When: ofMember}))
	case faultRestore:
		h.faults.add(h.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: changelog, Partitions: parts, Err: f.err, Count: f.count}))
	}
	return nil
}

// waitMemberIDs waits up to 5 s for member name to be in the group: a
// member started by the step before may not have joined yet.
func (h *harness) waitMemberIDs(ctx context.Context, name string) ([]string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ids, err := h.memberIDs(name)
		if err == nil || time.Now().After(deadline) {
			return ids, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// partitions returns the input partitions of tasks, which are also their
// changelog partitions.
func partitions(tasks []string) []int32 {
	var ps []int32
	for _, task := range tasks {
		if p, ok := taskPartition(task); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// taskPartition returns the input partition of a task of countapp's one
// subtopology: "0_3" is partition 3.
func taskPartition(task string) (int32, bool) {
	var p int32
	_, err := fmt.Sscanf(task, "0_%d", &p)
	return p, err == nil
}
