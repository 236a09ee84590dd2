package learner

import "sync"

// scratch is the working memory of one Assign call: the group's per-task
// and per-member arrays, reused by later calls of the same Assignor.
//
// Why: a call at a million tasks fills tens of megabytes of arrays it drops
// when it returns, and the garbage collector runs once per heap's worth of
// allocation, each cycle marking the caller's live data (the reports, the
// topology). Allocating the arrays afresh made collection a quarter of
// Assign's time. Reusing them leaves Assign allocating little more than
// its output.
//
// The trade-off is memory: a scratch as large as the largest recent call
// stays reachable from the Assignor's pool between calls. sync.Pool drops
// it after two garbage collections without a call, so a group that
// rebalances now and then holds it only briefly; concurrent calls each
// take their own. Every array is handed out zeroed, as make would, or
// empty to append to, so a call sees nothing of an earlier one.
type scratch struct {
	int32s    arena[int32]
	uint32s   arena[uint32]
	bools     arena[bool]
	segments  arena[segment]
	subCounts arena[subCount]
	dealt     arena[dealtTask]
}

// getScratch takes a scratch from pool, or a new one.
func getScratch(pool *sync.Pool) *scratch {
	if s, ok := pool.Get().(*scratch); ok {
		return s
	}
	return new(scratch)
}

// putScratch readies s for the next call and returns it to pool, sized
// for a call like the finished one if grow is set (a failed call's sizes
// say nothing about the next). Nothing of the finished call may still use
// s's arrays.
func putScratch(pool *sync.Pool, s *scratch, grow bool) {
	s.int32s.reset(grow)
	s.uint32s.reset(grow)
	s.bools.reset(grow)
	s.segments.reset(grow)
	s.subCounts.reset(grow)
	s.dealt.reset(grow)
	pool.Put(s)
}

// arena hands out slices of one backing array, front to back, within one
// call. A request that does not fit is allocated on its own; reset then
// grows the array to what the whole call asked for, so that from the
// second call of a given size on every request fits.
type arena[T any] struct {
	buf  []T
	used int // taken from buf by this call
	need int // asked for by this call
}

// make returns a zeroed slice of length and capacity n: appending beyond n
// reallocates instead of overwriting the next slice handed out.
func (a *arena[T]) make(n int) []T {
	a.need += n
	if n > len(a.buf)-a.used {
		return make([]T, n)
	}
	s := a.buf[a.used : a.used+n : a.used+n]
	a.used += n
	clear(s)
	return s
}

// room returns an empty slice with capacity n, to append to. Its elements
// are not cleared: append writes each before anything reads it.
func (a *arena[T]) room(n int) []T {
	a.need += n
	if n > len(a.buf)-a.used {
		return make([]T, 0, n)
	}
	s := a.buf[a.used : a.used : a.used+n]
	a.used += n
	return s
}

// reset frees every slice handed out and, if grow is set, sizes buf for a
// call like the last.
func (a *arena[T]) reset(grow bool) {
	if grow && a.need > len(a.buf) {
		a.buf = make([]T, a.need)
	}
	a.used, a.need = 0, 0
}
