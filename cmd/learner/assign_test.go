package main

import (
	"bytes"
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
