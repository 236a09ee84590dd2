package learner

import (
	"math/rand/v2"
	"testing"
)

// TestLevelQueuesMatchHeaps drives the level queues and heaps in the same
// orders through random loops of the kind balancing runs, and checks that
// they yield the same member at every step.
func TestLevelQueuesMatchHeaps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for round := range 300 {
		n := 1 + r.IntN(40)
		members := make([]int32, n)
		heapLoad, queueLoad, place := make([]int32, n), make([]int32, n), make([]int32, n)
		for m := range int32(n) {
			members[m] = m
			heapLoad[m] = int32(r.IntN(1 + r.IntN(50)))
			place[m] = m
		}
		r.Shuffle(n, func(i, j int) { place[i], place[j] = place[j], place[i] })
		copy(queueLoad, heapLoad)

		// Receivers: the top receives; now and then another member gains
		// too, and now and then a member two or more above the top gives
		// one (a donor: it stays above the level the top left).
		lighter := func(a, b int32) bool { return heapLoad[a] < heapLoad[b] || heapLoad[a] == heapLoad[b] && a < b }
		h, q := newMemberHeap(n, lighter), newRisingQueue(queueLoad, append([]int32(nil), members...))
		for _, m := range members {
			h.push(m)
		}
		for step := range 200 {
			want, got := h.top(), q.top()
			if want != got {
				t.Fatalf("round %d step %d: risingQueue.top() = %d, heap says %d (loads %v)", round, step, got, want, heapLoad)
			}
			level := heapLoad[want]
			for _, m := range []int32{want, int32(r.IntN(n))} {
				heapLoad[m]++
				queueLoad[m]++
				h.fix(m)
				q.fix(m)
				if r.IntN(3) > 0 {
					break
				}
			}
			if d := int32(r.IntN(n)); r.IntN(4) == 0 && heapLoad[d] >= level+2 {
				heapLoad[d]--
				queueLoad[d]--
				h.fix(d)
				q.fix(d)
			}
		}

		// Donors: the top gives one or leaves; now and then another leaves.
		for m := range int32(n) {
			heapLoad[m] = int32(r.IntN(1 + r.IntN(50)))
		}
		copy(queueLoad, heapLoad)
		heavier := func(a, b int32) bool {
			return heapLoad[a] > heapLoad[b] || heapLoad[a] == heapLoad[b] && place[a] < place[b]
		}
		dh, dq := newMemberHeap(n, heavier), newFallingQueue(queueLoad, place, append([]int32(nil), members...), make([]bool, n))
		for _, m := range members {
			dh.push(m)
		}
		for step := 0; ; step++ {
			want, got := dh.top(), dq.top()
			if want != got {
				t.Fatalf("round %d step %d: fallingQueue.top() = %d, heap says %d (loads %v)", round, step, got, want, heapLoad)
			}
			if want == none {
				break
			}
			switch x := r.IntN(10); {
			case x == 0:
				dh.remove(want)
				dq.remove(want)
			case x == 1:
				m := int32(r.IntN(n))
				dh.remove(m)
				dq.remove(m)
			default:
				heapLoad[want]--
				queueLoad[want]--
				dh.fix(want)
				dq.fix(want)
			}
		}
	}
}
