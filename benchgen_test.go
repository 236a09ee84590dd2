package learner_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/learnerassignor/learner"
)

// This file generates the benchmark inputs: one rebalance of a group that was
// balanced before one event happened. Everything is derived from a seeded
// generator, so every run of a benchmark sees the same input.
//
// The layout is what a sticky assignor converges to: task k of the topology
// is owned by member k mod M. With benchPartitions partitions per subtopology
// every member holds the same number of tasks and of each subtopology's
// tasks (to within one), so the stable layout is balanced in every sense and
// Assign has nothing to do on it. Every task is stateful: moving one goes
// through a learner, the assignor's expensive path (the stateless path is
// measured against franz-go in bench/franzgo).

// benchPartitions is the partition count of every subtopology, a typical
// source-topic size; the subtopology count grows with the task count.
const benchPartitions = 1000

// benchSeed seeds every generator; change it to see another input of the
// same shape.
const benchSeed = 0x1ea4e7

// benchEvent names what happened to the balanced group before the rebalance.
type benchEvent string

const (
	eventStable    benchEvent = "stable"     // nothing: the group is balanced
	eventScaleUp   benchEvent = "scale-up"   // 10% more members join, owning nothing
	eventScaleDown benchEvent = "scale-down" // 10% of the members report leaving
	eventCrash     benchEvent = "crash"      // one member is gone, its tasks orphaned
	eventPromote   benchEvent = "promote"    // 10% of the tasks have ready learners
	eventStandbys  benchEvent = "standbys=1" // Standbys: 1, every task's standby in place
)

var benchEvents = []benchEvent{eventStable, eventScaleUp, eventScaleDown, eventCrash, eventPromote, eventStandbys}

// benchTopology returns the topology of a benchmark: tasks "<sub>_<part>" in
// subtopology order, benchPartitions to a subtopology (the last one may be
// shorter).
func benchTopology(tasks int) []Task {
	ts := make([]Task, tasks)
	var buf []byte
	for k := range ts {
		buf = strconv.AppendInt(buf[:0], int64(k/benchPartitions), 10)
		buf = append(buf, '_')
		buf = strconv.AppendInt(buf, int64(k%benchPartitions), 10)
		ts[k] = Task{ID: string(buf), Stateful: true}
	}
	return ts
}

// benchOptions returns the options the event runs with.
func benchOptions(ev benchEvent) Options {
	if ev == eventStandbys {
		return Options{Standbys: 1}
	}
	return Options{}
}

// benchMembers returns the members' join reports for a group of m members
// over the topology's tasks after the event, in a shuffled order (join order
// is arbitrary; Assign must not depend on it).
func benchMembers(tasks []Task, m int, ev benchEvent) []MemberMetadata {
	rng := rand.New(rand.NewPCG(benchSeed, uint64(len(tasks))<<20|uint64(m)))
	total := m
	if ev == eventScaleUp {
		total += m / 10
	}
	ids := benchMemberIDs(rng, total)

	// lists[i] collects the task indices member i (in layout order)
	// reports, per list kind.
	type reports struct{ assigned, revoked, learning, standby []int }
	lists := make([]reports, total)
	per := (len(tasks) + m - 1) / m
	for i := range m {
		lists[i].assigned = make([]int, 0, per)
	}
	for k := range tasks {
		i := k % m
		lists[i].assigned = append(lists[i].assigned, k)
	}

	var leaving []bool
	switch ev {
	case eventScaleDown:
		leaving = make([]bool, total)
		for _, i := range rng.Perm(m)[:m/10] {
			leaving[i] = true
		}
	case eventPromote:
		// The members in newcomers joined last time and were given their
		// share of the layout as learners: the tasks went to them from
		// the other members in turn, which revoked them at this join.
		// Now every learner reports ready.
		isNew := make([]bool, m)
		for _, i := range rng.Perm(m)[:m/10] {
			isNew[i] = true
		}
		var olds []int
		for i := range m {
			if !isNew[i] {
				olds = append(olds, i)
			}
		}
		j := 0
		for i := range m {
			if !isNew[i] {
				continue
			}
			for _, k := range lists[i].assigned {
				o := olds[j%len(olds)]
				j++
				lists[o].revoked = append(lists[o].revoked, k)
			}
			lists[i].learning, lists[i].assigned = lists[i].assigned, nil
		}
		for i := range lists {
			slices.Sort(lists[i].revoked) // reports list tasks in topology order
		}
	case eventStandbys:
		// Each member keeps the standbys of its neighbour's tasks.
		for i := range m {
			lists[i].standby = lists[(i+1)%m].assigned
		}
	}

	crashed := -1
	if ev == eventCrash {
		crashed = rng.IntN(m)
	}
	out := make([]MemberMetadata, 0, total)
	for i := range total {
		if i == crashed {
			continue
		}
		r := &lists[i]
		md := MemberMetadata{
			ID:       ids[i],
			Assigned: benchIDs(tasks, r.assigned),
			Revoked:  benchIDs(tasks, r.revoked),
			Learning: benchIDs(tasks, r.learning),
			Standby:  benchIDs(tasks, r.standby),
			Leaving:  leaving != nil && leaving[i],
		}
		if ev == eventPromote {
			md.Ready = md.Learning
		}
		out = append(out, md)
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// benchMemberIDs returns n distinct member IDs shaped like Kafka's
// ("<client>-<random>"), so natural order is unrelated to the layout order.
func benchMemberIDs(rng *rand.Rand, n int) []string {
	ids := make([]string, n)
	seen := make(map[string]bool, n)
	for i := range ids {
		for {
			id := fmt.Sprintf("app-StreamThread-1-consumer-%016x", rng.Uint64())
			if !seen[id] {
				seen[id] = true
				ids[i] = id
				break
			}
		}
	}
	return ids
}

// benchIDs returns the IDs of the given tasks. Like a list decoded from a
// member's join request, the strings share one buffer of their own rather
// than the topology's strings, so no lookup gets a free pointer-equality
// shortcut.
func benchIDs(tasks []Task, ks []int) []string {
	if len(ks) == 0 {
		return nil
	}
	n := 0
	for _, k := range ks {
		n += len(tasks[k].ID)
	}
	buf := make([]byte, 0, n)
	for _, k := range ks {
		buf = append(buf, tasks[k].ID...)
	}
	all := string(buf)
	ids := make([]string, len(ks))
	off := 0
	for i, k := range ks {
		ids[i] = all[off : off+len(tasks[k].ID)]
		off += len(tasks[k].ID)
	}
	return ids
}

// TestBenchMembers checks that each event's input is the rebalance the
// benchmark names: a balanced layout, then exactly the event's change.
func TestBenchMembers(t *testing.T) {
	for _, size := range []benchSize{{100, 10_000}, {7, 1_001}} {
		tasks := benchTopology(size.tasks)
		for _, ev := range benchEvents {
			t.Run(fmt.Sprintf("members=%d/tasks=%d/event=%s", size.members, size.tasks, ev), func(t *testing.T) {
				checkBenchMembers(t, tasks, size.members, ev, benchMembers(tasks, size.members, ev))
			})
		}
	}
}

func checkBenchMembers(t *testing.T, tasks []Task, m int, ev benchEvent, members []MemberMetadata) {
	a, err := New(tasks, benchOptions(ev))
	require.NoError(t, err, "New(benchTopology(%d))", len(tasks))
	wantMembers := m
	switch ev {
	case eventScaleUp:
		wantMembers = m + m/10
	case eventCrash:
		wantMembers = m - 1
	}
	require.Len(t, members, wantMembers, "members")

	// Per task: the members holding it (assigned or revoked), learning it,
	// ready for it and keeping a standby of it.
	held, learning, ready, standby := make([][]int, len(tasks)), make([]int, len(tasks)), make([]int, len(tasks)), make([][]int, len(tasks))
	index := func(who int, id string) int {
		k := a.TaskIndex(id)
		require.True(t, k >= 0, "member %d lists %q, not a topology task", who, id)
		return k
	}
	ids := map[string]bool{}
	var empty, leaving int
	minAssigned, maxAssigned := len(tasks), 0
	for i, md := range members {
		require.True(t, ValidID(md.ID) && !ids[md.ID], "member %d: ID %q malformed or duplicate", i, md.ID)
		ids[md.ID] = true
		for _, id := range append(slices.Clip(md.Assigned), md.Revoked...) {
			k := index(i, id)
			held[k] = append(held[k], i)
		}
		for _, id := range md.Learning {
			learning[index(i, id)]++
		}
		for _, id := range md.Ready {
			ready[index(i, id)]++
		}
		for _, id := range md.Standby {
			k := index(i, id)
			standby[k] = append(standby[k], i)
		}
		if len(md.Assigned)+len(md.Revoked)+len(md.Learning)+len(md.Standby) == 0 {
			empty++
		}
		if md.Leaving {
			leaving++
		}
		if settled := len(md.Learning)+len(md.Revoked) == 0 && len(md.Assigned) > 0; settled {
			minAssigned = min(minAssigned, len(md.Assigned))
			maxAssigned = max(maxAssigned, len(md.Assigned))
		}
	}

	var orphans, learned int
	for k := range tasks {
		if len(held[k]) == 0 {
			orphans++
		}
		require.True(t, len(held[k]) <= 1, "task %s held by members %v, want one", tasks[k].ID, held[k])
		require.True(t, learning[k] == ready[k] && learning[k] <= 1, "task %s: %d learners, %d ready, want equal and at most 1", tasks[k].ID, learning[k], ready[k])
		learned += learning[k]
		wantStandbys := 0
		if ev == eventStandbys {
			wantStandbys = 1
		}
		require.True(t, len(standby[k]) == wantStandbys && (wantStandbys == 0 || standby[k][0] != held[k][0]),
			"task %s held by %v has standbys on %v, want %d elsewhere", tasks[k].ID, held[k], standby[k], wantStandbys)
	}

	share := len(tasks) / m // a member's share of the layout, +1 for some
	var wantOrphans, wantEmpty, wantLeaving, wantLearned int
	switch ev {
	case eventCrash:
		wantOrphans = share
	case eventScaleUp:
		wantEmpty = m / 10
	case eventScaleDown:
		wantLeaving = m / 10
	case eventPromote:
		wantLearned = m / 10 * share
	}
	assert.True(t, wantOrphans <= orphans && orphans <= wantOrphans+1, "%d orphaned tasks, want %d (+1)", orphans, wantOrphans)
	assert.Equal(t, wantEmpty, empty, "members that report nothing")
	assert.Equal(t, wantLeaving, leaving, "members leaving")
	assert.True(t, wantLearned <= learned && learned <= wantLearned+m/10, "%d tasks have ready learners, want %d (+%d)", learned, wantLearned, m/10)
	assert.LessOrEqual(t, maxAssigned-minAssigned, 1, "settled members hold %d to %d tasks, want a balanced layout", minAssigned, maxAssigned)
}

// TestBenchEventsWork checks that Assign does the work each benchmark event
// is named for, so no benchmark measures a shortcut: stable inputs are fixed
// points, new and leaving members lead to learners, orphans and ready
// learners get owners at once.
func TestBenchEventsWork(t *testing.T) {
	const m = 100
	tasks := benchTopology(10_000)
	for _, ev := range benchEvents {
		a, err := New(tasks, benchOptions(ev))
		require.NoError(t, err, "New(benchTopology(%d))", len(tasks))
		members := benchMembers(tasks, m, ev)
		out, err := a.Assign(members)
		require.NoError(t, err, "Assign(%s)", ev)
		in := map[string]*MemberMetadata{}
		for i := range members {
			in[members[i].ID] = &members[i]
		}
		var assigned, learning int
		for _, as := range out {
			md := in[as.MemberID]
			assigned += len(as.Assigned)
			learning += len(as.Learning)
			switch {
			case ev == eventStable || ev == eventStandbys:
				assert.True(t, slices.Equal(as.Assigned, md.Assigned) && slices.Equal(as.Standby, md.Standby) &&
					len(as.Revoked)+len(as.Learning)+len(as.Learned) == 0, "Assign(%s) = %+v for %s, want its input back", ev, as, md.ID)
			case ev == eventScaleUp && len(md.Assigned) == 0:
				assert.NotEmpty(t, as.Learning, "Assign(%s): new member %s learns nothing, want its share", ev, md.ID)
			case ev == eventScaleDown && md.Leaving:
				assert.Len(t, as.Learned, len(md.Assigned), "Assign(%s): leaving member %s, want all its tasks learned", ev, md.ID)
			case ev == eventPromote && len(md.Ready) > 0:
				assert.Equal(t, md.Ready, as.Assigned, "Assign(%s): ready learner %s, want its learners promoted", ev, md.ID)
			}
		}
		assert.Equal(t, len(tasks), assigned, "Assign(%s): tasks assigned, want all", ev)
		if ev == eventCrash || ev == eventPromote {
			assert.Zero(t, learning, "Assign(%s) places learners, want none (orphans and ready learners move at once)", ev)
		}
	}
}
