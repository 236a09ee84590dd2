package kgolearner

import (
	"slices"

	"github.com/learnerassignor/learner"
)

// This file is the leader's part in kgo's follow-up rebalance. A
// cooperative kgo member that syncs an assignment lacking a partition of
// its last one revokes it and rejoins at once (diffAssigned, then revoke's
// "rejoin after revoking what we lost from a rebalance", in
// pkg/kgo/consumer_group.go of franz-go v1.22.3), so such a generation is
// followed by another rebalance, in which no learner that was not ready can
// be promoted. Owners release their learned tasks at every join, so
// without this a learned task whose learner was not ready would stop and
// resume at the follow-up's join for nothing.

// followUpComing reports whether kgo will follow the generation h starts
// with another rebalance: whether a member loses a partition of its last
// assignment. What a member last synced is what it reported at this join:
// its owned partitions (any generation's: a zombie's stale claims are in
// kgo's last assignment too) plus the partitions of the tasks it released
// (Revoked), which its join left out. A member whose user data does not
// decode may have released tasks the leader cannot see; for it the
// prediction may miss a follow-up, which costs what it did before: its
// learned tasks pause at the follow-up's join.
func (b *Balancer) followUpComing(c *claims, memberOf []int32, members []learner.IndexedMember, h handOff) bool {
	if c.strays {
		return true
	}
	// Every claim must be its task's only one, by the member that runs the
	// task in this generation: count the tasks run by their only claimer.
	// (Counting spares a table of every task's runner.)
	held := 0
	for i, as := range h.sent {
		for _, t := range as.Assigned {
			if cs := c.claimers(int(t)); len(cs) == 1 && cs[0] == memberOf[i] {
				held++
			}
		}
	}
	if held != len(c.by) {
		return true
	}
	outOf := make([]int32, len(memberOf)) // member -> output
	for i, m := range memberOf {
		outOf[m] = int32(i)
	}
	for m, mm := range members {
		if len(mm.Stale) > 0 {
			return true // it held a task the topology lacks: a partition of no task
		}
		for _, t := range mm.Revoked {
			if _, runs := slices.BinarySearch(h.sent[outOf[m]].Assigned, t); !runs {
				return true
			}
		}
	}
	return false
}

// keepUnreadyLearned drops the learned tag of every stateful task whose
// learner did not report it ready at this join: its owner keeps running it
// through kgo's follow-up, where the learner could not take it anyway, and
// the follow-up's assignment tags it again. Tags of stateless tasks and of
// ready learners' tasks (deferred moves, due at the follow-up) stay.
func (b *Balancer) keepUnreadyLearned(h *handOff, memberOf []int32, members []learner.IndexedMember) {
	learnerOf := make([]int32, len(b.topo.tasks)) // task -> its learner's member, plus one
	for i, as := range h.sent {
		for _, t := range as.Learning {
			learnerOf[t] = memberOf[i] + 1
		}
	}
	unready := func(t int32) bool {
		if !b.topo.tasks[t].Stateful {
			return false
		}
		return learnerOf[t] == 0 || !b.assignor.Options().IndexedLearnerReady(members[learnerOf[t]-1], t)
	}
	for i := range h.sent {
		h.sent[i].Learned = slices.DeleteFunc(h.sent[i].Learned, unready) // the leader's own list
	}
}
