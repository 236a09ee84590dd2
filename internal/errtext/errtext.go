// Package errtext shortens what error messages quote, so that one bad token,
// however long, gives a one-line error of a readable length.
package errtext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Max bounds the quoted text of one token: Quote's result is at most Max+5
// bytes, the quotes and "..." included.
const Max = 40

// Quote quotes s with Go escapes, cut after Max bytes of quoted text and
// marked with "..." outside the quotes, where it cannot be mistaken for
// dots in an ID.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		q := strconv.Quote(s[i : i+size])
		q = q[1 : len(q)-1]
		if b.Len()-1+len(q) > Max {
			b.WriteString(`"...`)
			return b.String()
		}
		b.WriteString(q)
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// Clip cuts a well-formed ID (plain ASCII, nothing to escape) for a message
// that shows it unquoted, as the notation writes IDs.
func Clip(id string) string {
	if len(id) <= Max {
		return id
	}
	return id[:Max] + "..."
}
