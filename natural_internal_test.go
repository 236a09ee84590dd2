package learner

import (
	"cmp"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNaturalKeyOrder checks that natural keys order IDs as compareIDs
// does, on random IDs made mostly of digit runs with leading zeros and of
// the other bytes an ID may hold, and on Kafka-like IDs sharing a prefix.
func TestNaturalKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0000011123456789aZ_-."
	id := func() string {
		if r.IntN(4) == 0 {
			return "app-StreamThread-1-consumer-" + strings.Repeat("0", r.IntN(3)) + string(rune('0'+r.IntN(10))) + "f"
		}
		b := make([]byte, 1+r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 200_000 {
		a, b := id(), id()
		ka, kb := string(appendNaturalKey(nil, a)), string(appendNaturalKey(nil, b))
		got := cmp.Or(strings.Compare(ka, kb), strings.Compare(a, b))
		want := cmp.Compare(compareIDs(a, b), 0)
		require.Equal(t, want, got, "natural keys order %q and %q as %d (keys %q, %q), compareIDs as %d", a, b, got, ka, kb, want)
	}
	long := strings.Repeat("9", MaxIDLen)
	require.Equal(t, -1, strings.Compare(string(appendNaturalKey(nil, long[1:])), string(appendNaturalKey(nil, long))),
		"a run of %d digits must sort before one of %d", MaxIDLen-1, MaxIDLen)
}
