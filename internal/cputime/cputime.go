// Package cputime measures the CPU time benchmarks use. On a machine shared
// with other jobs, a benchmark's wall time includes the time it waits for a
// core, which can swing several-fold between runs; the process's CPU time
// does not, so it stays comparable across runs made under different loads.
// It still includes the garbage collector's work, which Assign's allocations
// cause.
package cputime

import "testing"

// Loop runs op as the benchmark's timed loop (b.Loop) and fails b if op
// returns an error. It reports allocations and, besides ns/op, the CPU time
// per op as "cpu-ns/op" (nothing where the platform does not report CPU
// time).
func Loop(b *testing.B, op func() error) {
	b.ReportAllocs()
	start := now()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if used := now() - start; used > 0 && b.N > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
