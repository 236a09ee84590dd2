package kgolearner_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/learnerassignor/learner/kgolearner"
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
	// idle are the rounds in which no task changed owner and no learner
	// started or stopped: kgo's follow-up after a member revoked
	// partitions, or a rejoin that changed nothing.
	idle []int
}

type readyAt struct {
	learner string
	round   int
}

type promotion struct {
	task, learner string
	rounds        int
}

// add records a round and returns its number and a summary for the log.
func (r *rounds) add(round kgolearner.Round) (int, string) {
	r.n++
	if r.readySince == nil {
		r.readySince = map[string]readyAt{}
	}
	for _, m := range round.Members {
		for _, t := range m.Ready {
			if at, ok := r.readySince[t]; !ok || at.learner != m.ID {
				r.readySince[t] = readyAt{m.ID, r.n}
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
			r.promotions = append(r.promotions, promotion{t, at.learner, r.n - at.round + 1})
			promoted = append(promoted, fmt.Sprintf("%s to %s after %d round(s) from Ready", t, shortID(at.learner), r.n-at.round+1))
			delete(r.readySince, t)
		case learning[t] != at.learner:
			delete(r.readySince, t) // the learner is gone
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
	perPromotion := map[int]int{}
	for _, p := range r.promotions {
		perPromotion[p.rounds]++
	}
	t.Logf("%d leader rounds; %d promotions by rounds from Ready: %v; %d rounds moved nothing (kgo's follow-ups): %v",
		r.n, len(r.promotions), perPromotion, len(r.idle), r.idle)
}
