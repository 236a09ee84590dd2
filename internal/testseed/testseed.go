// Package testseed reads the two environment variables the randomized
// tests of every module of this repository share: LEARNER_LONG, which asks
// for their long runs, and LEARNER_SEED, which replays the seed a failure
// printed.
package testseed

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// Long reports whether LEARNER_LONG is set: the randomized tests then run
// their long sizes.
func Long() bool { return os.Getenv("LEARNER_LONG") != "" }

// Seed returns LEARNER_SEED, and true, when it is set; else a fresh random
// seed and false. A LEARNER_SEED that is not an unsigned 64-bit decimal
// fails the test. The caller prints the seed (in a log line or a subtest's
// name), so that a failing run says how to replay it.
func Seed(tb testing.TB) (seed uint64, replay bool) {
	tb.Helper()
	s := os.Getenv("LEARNER_SEED")
	if s == "" {
		return rand.Uint64(), false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		tb.Fatalf("LEARNER_SEED=%q: want an unsigned 64-bit decimal: %v", s, err)
	}
	return n, true
}

// Run runs play in n subtests named seed=N, with seeds counting up from
// Seed's, or in the one LEARNER_SEED names: a failing subtest's name is
// what replays it.
func Run(t *testing.T, n int, play func(t *testing.T, seed uint64)) {
	t.Helper()
	seed, replay := Seed(t)
	if replay {
		n = 1
	}
	for i := range n {
		seed := seed + uint64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { play(t, seed) })
	}
}
