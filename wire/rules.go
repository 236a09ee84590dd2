package wire

import (
	"fmt"

	"github.com/learnerassignor/learner/internal/errtext"
)

// kind is one kind of message: its kind byte, its name and task lists' names
// for errors, and the rules on its lists that both the encoder and the
// decoder check, so that neither end sends or accepts what the other would
// refuse (see the package doc).
type kind struct {
	code     byte
	what     string
	lists    [nLists]string
	disjoint []int // lists that share no task
	subset   int   // a list whose every task is in lists[of]
	of       int
}

var (
	// memberKind has the rules Assign enforces on one member's report.
	memberKind = kind{
		code: wireKindMember, what: "member metadata",
		lists:    [nLists]string{"assigned", "revoked", "learning", "ready", "standby"},
		disjoint: []int{listAssigned, listRevoked, listLearning, listStandby},
		subset:   listReady, of: listLearning,
	}
	// assignmentKind has the rules of Assign's output that a member relies
	// on; Worker.Apply refuses a task in two of its lists.
	assignmentKind = kind{
		code: wireKindAssignment, what: "assignment",
		lists:    [nLists]string{"assigned", "revoked", "learning", "learned", "standby"},
		disjoint: []int{listAssigned, listLearning, listStandby},
		subset:   listReady, of: listAssigned,
	}
)

// check returns the first rule of k that sets break, or nil. Each set must
// hold no task twice, with its indices sorted (as intern and the decoder
// leave them).
func (k *kind) check(c *Codec, sets *[nLists]taskset) error {
	if t, x, y, ok := sharedIndex(sets, k.disjoint); ok {
		return fmt.Errorf("task %s listed in both %s and %s", errtext.Quote(c.taskID(t)), k.lists[x], k.lists[y])
	}
	if name, x, y, ok := sharedName(sets, k.disjoint); ok {
		return fmt.Errorf("task %s listed in both %s and %s", errtext.Quote(name), k.lists[x], k.lists[y])
	}
	sub, of := &sets[k.subset], &sets[k.of]
	if t, ok := missingIndex(sub.idx, of.idx); ok {
		return fmt.Errorf("%s task %s is not in %s", k.lists[k.subset], errtext.Quote(c.taskID(t)), k.lists[k.of])
	}
	if len(sub.names) > 0 {
		in := make(map[string]bool, len(of.names))
		for _, name := range of.names {
			in[name] = true
		}
		for _, name := range sub.names {
			if !in[name] {
				return fmt.Errorf("%s task %s is not in %s", k.lists[k.subset], errtext.Quote(name), k.lists[k.of])
			}
		}
	}
	return nil
}

// sharedIndex finds a task index in two of the given lists, naming the
// lists in order. It merges the sorted lists: linear in their total length,
// with no allocation, since the leader checks every member of the group.
func sharedIndex(sets *[nLists]taskset, lists []int) (t int32, x, y int, ok bool) {
	// Members usually fill one or two lists (assigned, standby): those need
	// no merge across all the lists, which costs a pass over them per task.
	var full [nLists]int
	n := 0
	for _, l := range lists {
		if len(sets[l].idx) > 0 {
			full[n], n = l, n+1
		}
	}
	switch n {
	case 0, 1:
		return 0, 0, 0, false
	case 2:
		a, b := sets[full[0]].idx, sets[full[1]].idx
		for i, j := 0, 0; i < len(a) && j < len(b); {
			switch {
			case a[i] < b[j]:
				i++
			case a[i] > b[j]:
				j++
			default:
				return a[i], full[0], full[1], true
			}
		}
		return 0, 0, 0, false
	}
	var pos [nLists]int
	prev, prevList := int32(-1), -1
	for {
		best := -1 // the list whose next index is smallest; the first on a tie
		for _, l := range lists {
			if p := pos[l]; p < len(sets[l].idx) && (best < 0 || sets[l].idx[p] < sets[best].idx[pos[best]]) {
				best = l
			}
		}
		if best < 0 {
			return 0, 0, 0, false
		}
		t := sets[best].idx[pos[best]]
		if t == prev {
			return t, prevList, best, true
		}
		prev, prevList = t, best
		pos[best]++
	}
}

// sharedName finds a task sent by name in two of the given lists, naming
// the lists in order. Tasks the topology lacks are rare, so a map will do.
func sharedName(sets *[nLists]taskset, lists []int) (name string, x, y int, ok bool) {
	var in map[string]int
	for _, l := range lists {
		for _, name := range sets[l].names {
			if in == nil {
				in = map[string]int{}
			}
			if first, dup := in[name]; dup {
				return name, first, l, true
			}
			in[name] = l
		}
	}
	return "", 0, 0, false
}

// missingIndex returns the first index of the sorted sub that the sorted of
// lacks.
func missingIndex(sub, of []int32) (int32, bool) {
	j := 0
	for _, t := range sub {
		for j < len(of) && of[j] < t {
			j++
		}
		if j == len(of) || of[j] != t {
			return t, true
		}
	}
	return 0, false
}
