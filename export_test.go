package learner

// The tests of this package live in package learner_test: they use
// learnertest, which imports this package, and a test inside package
// learner cannot import it back. These are the internals they need.

// ParseSubtopologyID is parseSubtopologyID, the "<subtopology>_<partition>"
// form the assignor spreads by.
var ParseSubtopologyID = parseSubtopologyID

// AssignWritingEveryTask is Assign with output's reuse of reported lists
// turned off (outLayout.asListed, group.standbysAsListed): fill then writes
// every list task by task, the general way the reuse must agree with.
func (a *Assignor) AssignWritingEveryTask(members []MemberMetadata) ([]Assignment, error) {
	return writingEveryTask(a, reports{byID: members}, (*group).output)
}

// AssignIndexedWritingEveryTask is AssignWritingEveryTask for
// AssignIndexed.
func (a *Assignor) AssignIndexedWritingEveryTask(members []IndexedMember) ([]IndexedAssignment, error) {
	return writingEveryTask(a, reports{byIndex: members}, (*group).outputIndexed)
}

// writingEveryTask is the call both share: assign, the reuse off, output.
func writingEveryTask[T any](a *Assignor, in reports, output func(*group) []T) ([]T, error) {
	g, s, err := a.assign(in)
	if err != nil {
		return nil, err
	}
	defer putScratch(&a.scratch, s, true)
	clear(g.assignedAsListed)
	g.standbysAsListed = false
	return output(g), nil
}
