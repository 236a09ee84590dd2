package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The example, as a user runs it with no broker: every phase happens, and
// the counts come out exact.
func TestExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"-phase", "1500ms", "-rate", "1000", "-partitions", "6"}, &out)
	require.NoError(t, err, "output:\n%s", out.String())
	for _, want := range []string{"in-process Kafka at", "m1 joins", "m3 joins", "rebalance 1, led by", "m1 leaves, deadline 10s", "m1 has left", "counts exact:"} {
		require.Contains(t, out.String(), want)
	}
	require.Regexp(t, `m2: \d+ active \(\d+ restoring\), \d+ learning, \d+ processed`, out.String())
	t.Log(lastLine(out.String()))
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-members", "0"}, &out)
	require.ErrorContains(t, err, "flags out of range")
	err = run(context.Background(), []string{"-nope"}, &out)
	require.ErrorContains(t, err, "flag provided but not defined: -nope")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
