package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExample runs the example's whole history at its own time scale
// (about 32 s, mostly waiting) over real HTTP on loopback; also under
// -short, so that CI's race run covers the server and the workers. Not
// faster: at 0.3x a worker fences itself after 450 ms without an answer,
// which a loaded 2-core machine (other test binaries, the race detector)
// exceeds now and then; at 1x that takes a 1.5 s stall.
func TestExample(t *testing.T) {
	var out bytes.Buffer
	err := run(&out, 1)
	require.NoError(t, err, "run(1) failed; output:\n%s", out.String())
	for _, want := range []string{
		"W4: learns", "from its replayed state", // a hand-over through a learner
		"W2: stops everything and leaves", // the leaving member hands over and goes
		"session of W3 expired",           // the crash is noticed and its tasks move
		"recovery window over; members [W1 W4 W5 W6]",
		"W6: runs", // the member that joined during the window got tasks after it
		"12/12 tasks running at the end",
		"no task was ever active on two workers",
	} {
		assert.Contains(t, out.String(), want, "run(1) output lacks %q", want)
	}
}
