package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A commit of queued offsets that waits behind another commit while its
// task is revoked (the revoke commits the task's offsets, kgolearner's or
// the Cooperative one, the later offset 5 here) leaves the task's
// partition out: landing after the revoke's commit, it would move the
// group back to offset 3.
func TestStaleCommitAfterRevoke(t *testing.T) {
	r, c, prod := polledRuntime(t, false)
	tk := r.tasks["0_0"]
	tk.role = roleActive

	// The revoke's commit (offset 5) is held at the broker until the
	// queued commit waits behind it and the task stopped.
	held, release := make(chan struct{}), make(chan struct{})
	c.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.DropControl() // this request only
		close(held)
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	revoked := make(chan struct{})
	go func() {
		defer close(revoked)
		r.cl.CommitOffsetsSync(context.Background(), map[string]map[int32]kgo.EpochOffset{"in": {0: {Epoch: -1, Offset: 5}}}, nil)
	}()
	<-held
	r.mu.Lock()
	r.toCommit = map[string]map[int32]kgo.EpochOffset{"in": {0: {Epoch: -1, Offset: 3}}}
	r.mu.Unlock()
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		r.commitQueued(context.Background())
	}()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.toCommit) == 0
	}, 10*time.Second, time.Millisecond, "the commit loop took the queue")
	require.NoError(t, r.stopActive("0_0"))
	close(release)
	<-revoked
	<-queued

	require.Equal(t, int64(5), CommittedOffset(t, prod, "g", "in", 0), "the group's committed offset")
}

// A Cooperative revoke commits the offsets polled from the revoked
// partitions, unless the member rejoined under another member ID since
// its last assignment: what it ran under the old one may run elsewhere
// by now, with offsets committed further.
func TestCooperativeRevokeCommit(t *testing.T) {
	for _, rejoined := range []bool{false, true} {
		t.Run(fmt.Sprintf("rejoined=%v", rejoined), func(t *testing.T) {
			r, _, prod := polledRuntime(t, true)
			r.tasks["0_0"].role = roleActive
			r.assignedAs, _ = r.cl.GroupMetadata()
			if rejoined {
				r.assignedAs = "an earlier member ID"
			}
			r.revokeActive(context.Background(), r.cl, map[string][]int32{"in": {0}})
			require.Equal(t, roleNone, r.tasks["0_0"].role, "the revoked task's role")

			want := int64(6)
			if rejoined {
				want = -1 // nothing committed
			}
			require.Equal(t, want, CommittedOffset(t, prod, "g", "in", 0), "the group's committed offset")
		})
	}
}
