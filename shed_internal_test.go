package learner

import (
	"math/rand/v2"
	"testing"
)

// TestFirstAfter checks firstAfter against a linear scan on segments with
// subtopologies spread evenly, in clusters and with big gaps, where its
// interpolated first guess is far off.
func TestFirstAfter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var segs []segment
		sub := int32(r.IntN(5))
		for range r.IntN(40) {
			segs = append(segs, segment{sub: sub})
			if r.IntN(4) == 0 {
				sub += 1 + int32(r.IntN(1000)) // a gap
			} else {
				sub += 1 + int32(r.IntN(3))
			}
		}
		q := min(int32(r.IntN(int(sub)+10))-3, sub) // -1 (none) up to the bound
		want := 0
		for want < len(segs) && segs[want].sub <= q {
			want++
		}
		if got := firstAfter(segs, q, sub+1); got != want {
			t.Fatalf("firstAfter(%v, %d) = %d, want %d", segs, q, got, want)
		}
	}
}
