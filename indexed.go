package learner

import (
	"fmt"

	"github.com/learnerassignor/learner/internal/errtext"
)

// IndexedMember is a MemberMetadata whose tasks are named by their index in
// the Assignor's topology (their position in Tasks, as TaskIndex gives it)
// instead of by ID, for AssignIndexed. A leader whose reports arrive as
// indices (the wire format carries them so) skips building ID strings that
// Assign would look up again.
//
// The rules are MemberMetadata's: a task in at most one of Assigned,
// Revoked, Learning and Standby, once; Ready a subset of Learning; order
// within a list does not matter; nil and empty lists are the same. An index
// outside the topology is an error. Tasks the topology lacks cannot be
// named by index: those the member holds go in Stale, by ID; those it
// learns, has a standby or a lag for are left out (Assign drops them).
type IndexedMember struct {
	// ID identifies the member, as in MemberMetadata.
	ID string

	// Assigned, Revoked, Learning, Ready and Standby are
	// MemberMetadata's lists, by task index.
	Assigned, Revoked, Learning, Ready, Standby []int32
	// Stale lists, by ID, the tasks the member holds (runs or revoked at
	// this join) that the topology lacks, each a valid ID the topology
	// does not have, once. They come back in IndexedAssignment.Stale.
	Stale []string

	// Leaving, Capacity and Rack are as in MemberMetadata.
	Leaving  bool
	Capacity int
	Rack     string
	// Lag is MemberMetadata.Lag by task index.
	Lag []IndexedLag
}

// IndexedLag is a TaskLag whose task is named by its index in the topology.
type IndexedLag struct {
	Task int32
	Lag  int64
}

// IndexedAssignment is an Assignment whose tasks are named by their index
// in the topology: each list strictly increasing (the topology's order),
// nil when empty. The revoked tasks the topology lacks (the member's
// IndexedMember.Stale) are in Stale, by ID, in the order CompareIDs gives:
// an Assignment's Revoked is Revoked's IDs followed by Stale.
type IndexedAssignment struct {
	// MemberID is the ID of the member this assignment is for.
	MemberID string

	// Assigned, Revoked, Learning, Learned and Standby are Assignment's
	// lists, by task index.
	Assigned, Revoked, Learning, Learned, Standby []int32
	// Stale lists the member's revoked tasks that the topology lacks.
	Stale []string
}

// AssignIndexed is Assign for reports by task index: the same rules, the
// same assignments (by index), the same errors for the same malformed
// reports, from the same code. It returns one IndexedAssignment per
// member, in natural order of member ID; with no members, an empty slice.
// Like Assign it never mutates members and depends on nothing else, and
// it returns a list a member keeps as reported as that member's own slice,
// capped.
//
// Besides Assign's errors, an index outside the topology and a Stale task
// that is malformed, repeated or in the topology are errors wrapping
// ErrInvalidMember that name the member, the list and the task.
func (a *Assignor) AssignIndexed(members []IndexedMember) ([]IndexedAssignment, error) {
	g, s, err := a.assign(reports{byIndex: members})
	if err != nil {
		return nil, err
	}
	defer putScratch(&a.scratch, s, true) // the output shares no memory with s
	return g.outputIndexed(), nil
}

// assign runs the rules on one call's reports, in working memory s that
// the caller gives back (putScratch) once it has built its output from g.
func (a *Assignor) assign(in reports) (*group, *scratch, error) {
	if a.idAt == nil { // the zero Assignor: New always sets idAt
		return nil, nil, fmt.Errorf("learner: the Assignor was not built by New: %w", ErrInvalidTopology)
	}
	s := getScratch(&a.scratch)
	g, err := ingest(&a.topology, a.opts, in, s)
	if err != nil {
		// A malformed report may have reserved room for all it listed:
		// the pool must not keep that size.
		putScratch(&a.scratch, s, false)
		return nil, nil, err
	}
	g.resolveLearners()
	g.placeOrphans()
	g.handOverLeaving()
	g.balance()
	g.placeStandbys()
	return g, s, nil
}

// reports is one call's input: the members' reports by task ID (Assign)
// or by task index (AssignIndexed), at most one of the two set. ingest
// reads both through one reader, so both entry points keep every rule
// alike.
type reports struct {
	byID    []MemberMetadata
	byIndex []IndexedMember
}

func (in reports) len() int { return len(in.byID) + len(in.byIndex) }

// id returns the ID of the member at position i.
func (in reports) id(i int) string {
	if in.byID != nil {
		return in.byID[i].ID
	}
	return in.byIndex[i].ID
}

// MemberByID returns m as a report by task ID, as Assign takes it: each
// index as its task's ID, Stale after Revoked. With AssignmentByID it
// serves logs, hooks and code written against MemberMetadata. An index
// outside the topology is an error wrapping ErrInvalidMember.
func (a *Assignor) MemberByID(m IndexedMember) (MemberMetadata, error) {
	n := namer{topo: &a.topology, whose: "member " + errtext.Quote(m.ID)}
	out := MemberMetadata{ID: m.ID, Assigned: n.ids("assigned", m.Assigned), Revoked: n.ids("revoked", m.Revoked, m.Stale...),
		Learning: n.ids("learning", m.Learning), Ready: n.ids("ready", m.Ready), Standby: n.ids("standby", m.Standby),
		Leaving: m.Leaving, Capacity: m.Capacity, Rack: m.Rack}
	for _, l := range m.Lag {
		if id, ok := n.id("lag", l.Task); ok {
			out.Lag = append(out.Lag, TaskLag{Task: id, Lag: l.Lag})
		}
	}
	return out, n.err
}

// AssignmentByID returns as by task ID, as Assign gives it: each index as
// its task's ID, nil lists for empty ones, Stale after Revoked. An index
// outside the topology is an error wrapping ErrInvalidMember.
func (a *Assignor) AssignmentByID(as IndexedAssignment) (Assignment, error) {
	n := namer{topo: &a.topology, whose: "assignment of member " + errtext.Quote(as.MemberID)}
	out := Assignment{MemberID: as.MemberID, Assigned: n.ids("assigned", as.Assigned), Revoked: n.ids("revoked", as.Revoked, as.Stale...),
		Learning: n.ids("learning", as.Learning), Learned: n.ids("learned", as.Learned), Standby: n.ids("standby", as.Standby)}
	return out, n.err
}

// namer names tasks by ID for MemberByID and AssignmentByID; err keeps the
// first index outside the topology.
type namer struct {
	topo  *topology
	whose string
	err   error
}

// ids returns the IDs of the tasks at idx followed by more, nil for none.
func (n *namer) ids(list string, idx []int32, more ...string) []string {
	if len(idx)+len(more) == 0 {
		return nil
	}
	out := make([]string, 0, len(idx)+len(more))
	for _, t := range idx {
		if id, ok := n.id(list, t); ok {
			out = append(out, id)
		}
	}
	return append(out, more...)
}

func (n *namer) id(list string, t int32) (string, bool) {
	if t < 0 || int(t) >= n.topo.numTasks() {
		if n.err == nil {
			n.err = fmt.Errorf("learner: %s: task index %d in %s is outside the topology's %d tasks: %w", n.whose, t, list, max(n.topo.numTasks(), 0), ErrInvalidMember) // -1 for a zero Assignor's
		}
		return "", false
	}
	return n.topo.id(t), true
}
