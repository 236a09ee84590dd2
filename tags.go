package learner

// This file holds the learner-tag rules: which of several members learning
// one task keeps learning it, and which learners are promoted, kept or
// dropped at this join (rules 2 to 5 and 9). It runs on the state ingest
// read; nothing here looks at the reports themselves.

// better reports whether a learner with key k beats one with key o: staying
// first, then ready, then the warmer lag (reportedLag.compare, given
// Options.AcceptableLag). Members are offered in rank order, so the
// first-ranked member wins remaining ties.
func (k learnerKey) better(o learnerKey, acceptable int64) bool {
	if k.staying != o.staying {
		return k.staying
	}
	if k.ready != o.ready {
		return k.ready
	}
	return k.lag().compare(o.lag(), acceptable) < 0
}

// offerLearner records member rank as a learner of task t if it beats the
// learner seen so far.
func (g *group) offerLearner(t, rank int32, k learnerKey) {
	switch {
	case g.learner[t] == none:
		g.learner[t], g.keyAt[t] = rank, int32(len(g.learnerKeys))
		g.learnerKeys = append(g.learnerKeys, k)
	case k.better(g.learnerKeys[g.keyAt[t]], g.opts.AcceptableLag):
		g.learner[t], g.learnerKeys[g.keyAt[t]] = rank, k
	}
}

// learnerKey returns the key of t's learner as ingest found it.
func (g *group) learnerKey(t int32) learnerKey { return g.learnerKeys[g.keyAt[t]] }

// resolveLearners applies the learner rules to the winning learner of each
// task: a ready learner, or one of a stateless task, is promoted (rules 3
// and 9); a not-ready learner of an ownerless stateful task is left to
// placeOrphans, which gives the task to it or to a warmer copy (rule 5);
// any other learner keeps running beside the owner (rules 2 and 4).
// Leaving members learn nothing; their learners matter only when no member
// stays.
func (g *group) resolveLearners() {
	if g.keyAt == nil && !g.contested {
		// Nobody reported a learner, and each held task's owner is the
		// one member that reported holding it: a member plans its held
		// row, and a pass over every task is not needed.
		for m := range g.load {
			g.load[m] = int32(len(g.held.row(int32(m))))
		}
		return
	}
	if g.keyAt != nil { // nil: nobody reported a learner, so none to resolve
		g.resolveLearnerTags()
	}
	// Each member's load counts the tasks it plans (group.planned). The
	// arrays are in locals: through g, every increment of a load made the
	// loop load the three slices again (cachegrind of a stable group at
	// 1,000 members and 100,000 tasks: 25 instructions a task that way,
	// 17 this way).
	owner, learner, load := g.owner, g.learner, g.load
	for t, p := range learner {
		if p == none {
			p = owner[t]
		}
		if p != none {
			load[p]++
		}
	}
}

// resolveLearnerTags applies the rules above to every task with a learner.
func (g *group) resolveLearnerTags() {
	for t, l := range g.learner {
		if l == none {
			continue
		}
		k, ownerless := g.learnerKey(int32(t)), g.owner[t] == none
		switch {
		case !k.staying && !(ownerless && g.staying == 0):
			g.learner[t] = none
		case ownerless && !k.ready && g.isStateful(int32(t)):
			// placeOrphans gives it to this learner or to a warmer copy.
		case ownerless || k.ready || !g.isStateful(int32(t)):
			g.learner[t] = none
			g.setOwner(int32(t), l)
		default:
			g.learnersInFlight++
		}
	}
}

// canLearn reports whether the learner budget allows one more learner.
func (g *group) canLearn() bool {
	return g.opts.MaxLearners == 0 || g.learnersInFlight < g.opts.MaxLearners
}
