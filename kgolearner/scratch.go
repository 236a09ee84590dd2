package kgolearner

// scratch is the working memory of a leader's rebalance: the arrays by task
// and by claim that it fills and drops when it is done. A Balancer keeps
// the last one (Balancer.spare) for its next rebalance, since a leader
// rebalances again and again: at 1,000 members and 100,000 tasks these
// arrays were 2 MB of the 10 to 14 MB a rebalance allocated, and the
// garbage collection that allocation causes was about a third of its CPU
// time (BenchmarkLeaderRebalance, GODEBUG=gctrace=1). The price is memory: a
// Balancer that led keeps about 25 bytes per task (2.5 MB at 100,000
// tasks). Nothing that leaves a rebalance (the assignments' bytes, the
// Round) points into it.
type scratch struct {
	task     []taskClaims // claims.task
	claimed  []int32      // claimsBuilder.claimed, then claims.whole
	by       []int32      // claims.by
	active   []int32      // activeIn.idx
	deferred []deferral   // handOff.deferred
}

// zeroed returns s with length n and every element zero, in s's memory if
// it is large enough.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// emptied returns s with length 0 and room for n, in s's memory if it is
// large enough.
func emptied[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}
