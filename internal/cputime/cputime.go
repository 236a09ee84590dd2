// Package cputime measures the CPU time benchmarks use. On a machine shared
// with other jobs, a benchmark's wall time includes the time it waits for a
// core, which can swing several-fold between runs; the process's CPU time
// does not, so it stays comparable across runs made under different loads.
// It still includes the garbage collector's work, which Assign's allocations
// cause.
package cputime

import (
	"testing"
	"time"
)

// Meter measures the CPU time of one benchmark's timed loop.
type Meter struct{ start time.Duration }

// Start starts a Meter; call it just before the b.Loop loop.
func Start() Meter { return Meter{start: now()} }

// Report reports the CPU time since Start per iteration as the metric
// "cpu-ns/op". Call it after the loop. Where the platform does not report
// CPU time it reports nothing.
func (m Meter) Report(b *testing.B) {
	used := now() - m.start
	if used <= 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
