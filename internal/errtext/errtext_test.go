package errtext

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"T1", `"T1"`},
		{"a\"b", `"a\"b"`},
		{strings.Repeat("x", Max), `"` + strings.Repeat("x", Max) + `"`},
		{strings.Repeat("x", Max+1), `"` + strings.Repeat("x", Max) + `"...`},
		{strings.Repeat("\x00", 100), `"` + strings.Repeat(`\x00`, Max/4) + `"...`},
		{strings.Repeat("é", 100), `"` + strings.Repeat("é", Max/2) + `"...`},
	} {
		got := Quote(tc.in)
		assert.Equal(t, tc.want, got, "Quote(%.60q)", tc.in)
		assert.LessOrEqual(t, len(got), Max+5, "len(Quote(%.60q))", tc.in)
	}
}

func TestClip(t *testing.T) {
	assert.Equal(t, "S1", Clip("S1"))
	assert.Equal(t, strings.Repeat("s", Max)+"...", Clip(strings.Repeat("s", 255)))
}
