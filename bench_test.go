package learner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/internal/cputime"
)

// The benchmarks run Assign, and a floor pass for comparison, on every size
// and event of benchgen_test.go. Reproduce the README's table with
//
//	go test -run='^$' -bench=. -count=5
//
// Inputs are built inside each sub-benchmark, before b.Loop starts the timer;
// b.Loop runs the sub-benchmark's body once per -count, so they are built
// once. Building the largest inputs takes well under a second, so CI's
// -benchtime=1x run covers every size.
//
// Besides ns/op (wall time) each benchmark reports cpu-ns/op, the process's
// CPU time per op: on a machine shared with other jobs wall time swings with
// their load, CPU time much less (see internal/cputime).

// benchSize is a group size: members and topology tasks.
type benchSize struct{ members, tasks int }

var benchSizes = []benchSize{{100, 10_000}, {1_000, 100_000}, {10_000, 1_000_000}}

// forEachBenchInput runs body as one sub-benchmark per size and event, named
// members=M/tasks=T/event=E, with the Assignor and members of that input.
func forEachBenchInput(b *testing.B, body func(b *testing.B, a *Assignor, members []MemberMetadata)) {
	for _, size := range benchSizes {
		var tasks []Task // built on first use: -bench may skip a whole size
		for _, ev := range benchEvents {
			b.Run(fmt.Sprintf("members=%d/tasks=%d/event=%s", size.members, size.tasks, ev), func(b *testing.B) {
				if tasks == nil {
					tasks = benchTopology(size.tasks)
				}
				a, err := New(tasks, benchOptions(ev))
				require.NoError(b, err)
				body(b, a, benchMembers(tasks, size.members, ev))
			})
		}
	}
}

func BenchmarkAssign(b *testing.B) {
	forEachBenchInput(b, func(b *testing.B, a *Assignor, members []MemberMetadata) {
		cputime.Loop(b, func() error {
			_, err := a.Assign(members)
			return err
		})
	})
}

// BenchmarkFloor is the least any assignor must do with the same input: read
// every list of every member's report once, index each task with the
// core's interner and record one slot per task. Assign's time over Floor's
// is how far it is from that limit.
func BenchmarkFloor(b *testing.B) { benchFloor(b, true) }

// BenchmarkFloorRead is Floor without the slots: every listed ID read and
// looked up, nothing written. It is the part of the floor no assignor can
// skip, and it shows how the read alone grows with the input: at 1,000 x
// 100,000 the input fits the second-level cache between calls, at 10,000 x
// 1,000,000 it does not (bench/results/issue15-read).
func BenchmarkFloorRead(b *testing.B) { benchFloor(b, false) }

func benchFloor(b *testing.B, slots bool) {
	forEachBenchInput(b, func(b *testing.B, a *Assignor, members []MemberMetadata) {
		want := 0
		for i := range members {
			m := &members[i]
			want += len(m.Assigned) + len(m.Revoked) + len(m.Learning) + len(m.Ready) + len(m.Standby)
		}
		var got int
		tasks := len(a.Tasks())
		cputime.Loop(b, func() error {
			var slot []int32
			if slots {
				slot = make([]int32, tasks) // per call, as Assign's state must be
			}
			got = floorPass(a, slot, members)
			return nil
		})
		require.Equal(b, want, got, "floorPass indexed %d tasks, want %d (every listed ID is a topology task)", got, want)
	})
}

// floorPass indexes every task the members list, recording in slot (if not
// nil) the last member to list each, and returns how many it found in the
// topology.
func floorPass(a *Assignor, slot []int32, members []MemberMetadata) int {
	found := 0
	for r := range members {
		m := &members[r]
		for _, list := range [...][]string{m.Assigned, m.Revoked, m.Learning, m.Ready, m.Standby} {
			for _, id := range list {
				if t := a.TaskIndex(id); t >= 0 {
					if slot != nil { // always or never taken in a call: predicted
						slot[t] = int32(r)
					}
					found++
				}
			}
		}
	}
	return found
}

// rackBench is a group whose tasks have more copies (Standbys+1) than the
// group has racks, so rack spread cannot put every copy in its own rack.
type rackBench struct{ members, racks, tasks, standbys int }

var rackBenches = []rackBench{{24, 3, 400, 10}, {1_000, 3, 100_000, 2}}

// BenchmarkAssignRacks runs Assign on a group spread over a few racks with
// capacities 1 to 4: event=first places every task and standby from
// scratch, event=stable is that output reported back (a fixed point).
func BenchmarkAssignRacks(b *testing.B) {
	for _, rb := range rackBenches {
		tasks := benchTopology(rb.tasks)
		a, err := New(tasks, Options{Standbys: rb.standbys})
		require.NoError(b, err)
		first := make([]MemberMetadata, rb.members)
		for i := range first {
			first[i] = MemberMetadata{ID: fmt.Sprintf("m%05d", i), Rack: fmt.Sprintf("r%d", i%rb.racks), Capacity: 1 + i%4}
		}
		var stable []MemberMetadata // built on first use: -bench may skip it
		name := fmt.Sprintf("members=%d/racks=%d/tasks=%d/standbys=%d", rb.members, rb.racks, rb.tasks, rb.standbys)
		b.Run(name+"/event=first", func(b *testing.B) {
			cputime.Loop(b, func() error {
				_, err := a.Assign(first)
				return err
			})
		})
		b.Run(name+"/event=stable", func(b *testing.B) {
			if stable == nil {
				out, err := a.Assign(first)
				require.NoError(b, err)
				stable = slices.Clone(first)
				for _, as := range out {
					i := slices.IndexFunc(stable, func(m MemberMetadata) bool { return m.ID == as.MemberID })
					stable[i].Assigned, stable[i].Standby = as.Assigned, as.Standby
				}
			}
			cputime.Loop(b, func() error {
				_, err := a.Assign(stable)
				return err
			})
		})
	}
}
