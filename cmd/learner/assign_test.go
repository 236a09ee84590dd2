package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every scenario script replayed through learner assign gives back the
// file byte for byte: the command and the golden tests agree.
func TestAssignReplaysScenarios(t *testing.T) {
	files, err := filepath.Glob("../../testdata/scenarios/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		want, err := os.ReadFile(file)
		require.NoError(t, err)
		var stdout, stderr bytes.Buffer
		code := run([]string{"assign", file}, strings.NewReader(""), &stdout, &stderr)
		assert.Zero(t, code, "learner assign %s: exit status", file)
		assert.Empty(t, stderr.String(), "learner assign %s: stderr", file)
		assert.Equal(t, string(want), stdout.String(), "learner assign %s: stdout, want the file itself", file)
	}
}

// TestAssignInputTooLong: learner assign < /dev/zero fails with exit 2 once
// 64 MiB are in, four times the notation of 10,000 members and a million
// tasks (16 MB, which takes seconds to assign): a bound of 1 GiB took 20 s
// and 2 GB of memory to reject /dev/zero.
func TestAssignInputTooLong(t *testing.T) {
	r := &tapped{max: 128 << 20}
	var out, errb bytes.Buffer
	code := run([]string{"assign", "-"}, r, &out, &errb)
	assert.Equal(t, 2, code, "learner assign - < /dev/zero: exit code (stderr %q)", errb.String())
	assert.Empty(t, out.String(), "learner assign - < /dev/zero: stdout")
	assert.Equal(t, "learner assign: <standard input> is longer than 67108864 bytes\n", errb.String())
}

// tapped reads as /dev/zero does, but fails once max bytes are read.
type tapped struct{ n, max int }

func (z *tapped) Read(p []byte) (int, error) {
	if z.n >= z.max {
		return 0, fmt.Errorf("read past %d bytes", z.max)
	}
	p = p[:min(len(p), z.max-z.n)]
	clear(p)
	z.n += len(p)
	return len(p), nil
}
