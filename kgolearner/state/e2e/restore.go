package e2e

import (
	"maps"
	"time"
)

// This file times the bulk restores and the rebalances, the two figures the
// simulator takes from the e2e (sim/testdata/e2e.scenario).

// noteRestoring notes when each member's active tasks start restoring: a
// cold restore is timed from then to the task's Running. h.mu is not held:
// the runtime may call the observer, which takes h.mu, under its own lock.
func (h *harness) noteRestoring(now time.Time) {
	h.mu.Lock()
	members := maps.Clone(h.members)
	h.mu.Unlock()
	for name, m := range members {
		restoring := m.rt.Status().Restoring
		h.mu.Lock()
		for _, task := range restoring {
			if key := name + "/" + task; h.restoring[key].IsZero() {
				h.restoring[key] = now
			}
		}
		h.mu.Unlock()
	}
}

// endRestore ends member name's restore of task, which runs after
// replaying replayed changelog records, counting it if it was cold. h.mu
// is held.
func (h *harness) endRestore(name, task string, replayed int64, now time.Time) {
	key := name + "/" + task
	since := h.restoring[key]
	delete(h.restoring, key)
	if since.IsZero() || replayed <= int64(h.cfg.KeysPerTask/2) {
		return
	}
	h.rate.Restores++
	h.rate.Records += replayed
	h.rate.Took += now.Sub(since)
}

// joined notes a JoinGroup request: the first of a rebalance starts its
// clock, which the leader's assignment stops.
func (h *harness) joined(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.joinAt.IsZero() {
		h.joinAt = now
	}
}
