package learner

import (
	"cmp"
	"math/rand/v2"
	"slices"
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

// TestRankMembersOrder checks that rankMembers orders members as sorting
// their IDs with compareIDs does, on groups whose IDs share prefixes that
// end inside, before or after a run of digits, with long runs of digits
// and of zeros (which shrink the natural key past the 16 bytes naturalHead
// reads first).
func TestRankMembersOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "00000000111234567899aZ_-."
	prefixes := []string{"", "app-StreamThread-1-consumer-", "m1", "x00", "12", "a-"}
	for range 3000 {
		prefix := prefixes[r.IntN(len(prefixes))]
		seen := map[string]bool{}
		var in []MemberMetadata
		for range 1 + r.IntN(30) {
			b := make([]byte, 1+r.IntN(24))
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			if id := prefix + string(b); !seen[id] {
				seen[id] = true
				in = append(in, MemberMetadata{ID: id})
			}
		}
		byRank, err := rankMembers(reports{byID: in}, new(scratch))
		require.NoError(t, err)
		got := make([]string, len(byRank))
		for r, p := range byRank {
			got[r] = in[p].ID
		}
		want := make([]string, len(in))
		for i := range in {
			want[i] = in[i].ID
		}
		slices.SortFunc(want, compareIDs)
		require.Equal(t, want, got, "rankMembers orders %q", want)
	}
}
