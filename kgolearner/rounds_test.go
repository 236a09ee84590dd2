package kgolearner_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/learnerassignor/learner/kgolearner"
	"github.com/stretchr/testify/assert"
)

// rounds follows the leader rounds of a group, whoever leads them: it
// counts, for every promotion of a ready learner, the rounds from the first
// one in which the learner reported the task ready to the one that gave it
// the task (the learner runs it in that round's generation), and counts
// apart the rounds in which nothing moved.
type rounds struct {
	n            int
	prevOwner    map[string]string  // task -> member, as last sent
	prevLearning map[string]string  // task -> learner, as last sent
	readySince   map[string]readyAt // task -> its learner's first round reporting it ready
	promotions   []promotion
	// deferredAt holds the tasks deferred to the next round, with their
	// receiver; deferredMoves counts the rounds each took to move.
	deferredAt    map[string]readyAt
	deferredMoves []promotion
	// idle are the rounds in which no task changed owner and no learner
	// started or stopped: kgo's follow-up after a member revoked
	// partitions, or a rejoin that changed nothing.
	idle []int
}

type readyAt struct {
	learner  string
	round    int
	deferred bool // the leader deferred the task while its learner was ready
}

// promotion is a task's move to its learner (or, for a deferred task, its
// receiver), and the leader rounds it took.
type promotion struct {
	task, learner string
	rounds        int
	// deferred is set when the owner had not released the task in a round
	// its learner reported it ready: the owner's release failed, or its
	// SyncGroup with the learned tag was refused because the learner's
	// rejoin had already started the next rebalance.
	deferred bool
}

// add records a round and returns its number and a summary for the log.
func (r *rounds) add(round kgolearner.Round) (int, string) {
	r.n++
	if r.readySince == nil {
		r.readySince, r.deferredAt = map[string]readyAt{}, map[string]readyAt{}
	}
	for _, m := range round.Members {
		for _, t := range m.Ready {
			if at, ok := r.readySince[t]; !ok || at.learner != m.ID {
				r.readySince[t] = readyAt{m.ID, r.n, false}
			}
		}
	}
	owner, learning := map[string]string{}, map[string]string{}
	for _, a := range round.Assignments {
		for _, t := range a.Assigned {
			owner[t] = a.MemberID
		}
		for _, t := range a.Learning {
			learning[t] = a.MemberID
		}
	}
	var promoted []string
	for _, t := range slices.Sorted(maps.Keys(r.readySince)) {
		at := r.readySince[t]
		switch {
		case owner[t] == at.learner:
			r.promotions = append(r.promotions, promotion{t, at.learner, r.n - at.round + 1, at.deferred})
			promoted = append(promoted, fmt.Sprintf("%s to %s after %d round(s) from Ready", t, shortID(at.learner), r.n-at.round+1))
			delete(r.readySince, t)
		case learning[t] != at.learner:
			delete(r.readySince, t) // the learner is gone
		}
	}
	for _, t := range slices.Sorted(maps.Keys(r.deferredAt)) {
		at := r.deferredAt[t]
		switch {
		case owner[t] == at.learner:
			r.deferredMoves = append(r.deferredMoves, promotion{t, at.learner, r.n - at.round, true})
			promoted = append(promoted, fmt.Sprintf("deferred %s to %s after %d round(s)", t, shortID(at.learner), r.n-at.round))
			delete(r.deferredAt, t)
		case learning[t] != at.learner:
			delete(r.deferredAt, t) // the receiver is gone
		}
	}
	for _, t := range round.Deferred {
		if _, ok := r.deferredAt[t]; !ok {
			r.deferredAt[t] = readyAt{learning[t], r.n, true}
		}
		if at, ok := r.readySince[t]; ok {
			at.deferred = true
			r.readySince[t] = at
		}
	}
	moved := !maps.Equal(owner, r.prevOwner) || !maps.Equal(learning, r.prevLearning)
	r.prevOwner, r.prevLearning = owner, learning
	switch {
	case len(promoted) > 0:
		return r.n, fmt.Sprintf("promoted %v", promoted)
	case !moved:
		r.idle = append(r.idle, r.n)
		return r.n, "nothing moved"
	}
	return r.n, "moved"
}

// report logs the promotions and the idle rounds.
func (r *rounds) report(t *testing.T) {
	t.Helper()
	perPromotion, perDeferredPromotion := map[int]int{}, map[int]int{}
	for _, p := range r.promotions {
		if p.deferred {
			perDeferredPromotion[p.rounds]++
		} else {
			perPromotion[p.rounds]++
		}
	}
	perDeferred := map[int]int{}
	for _, p := range r.deferredMoves {
		perDeferred[p.rounds]++
	}
	t.Logf("%d leader rounds; promotions by rounds from Ready: %v, of deferred ones: %v; deferred moves by rounds after deferral: %v; %d rounds moved nothing (kgo's follow-ups): %v",
		r.n, perPromotion, perDeferredPromotion, perDeferred, len(r.idle), r.idle)
}

// checkDeferred checks that every deferred move took one round after its
// deferral, except when a member's SyncGroup was refused again: kgo's
// immediate follow-up rejoin after a member revokes partitions can start
// the next rebalance before a slow member's SyncGroup lands (seen under
// -race on a loaded machine), and the move waits one more round per
// refusal. Those are logged; a move that takes more than three rounds
// fails.
func (r *rounds) checkDeferred(t *testing.T) {
	t.Helper()
	for _, p := range r.deferredMoves {
		if p.rounds > 1 {
			t.Logf("deferred move of %s to %s took %d rounds: a SyncGroup was refused again", p.task, shortID(p.learner), p.rounds)
		}
		assert.LessOrEqual(t, p.rounds, 3, "leader rounds from deferring %s to %s running it", p.task, shortID(p.learner))
	}
}
