package learner

// The tests of this package live in package learner_test: they use
// learnertest, which imports this package, and a test inside package
// learner cannot import it back. These are the internals they need.

// ParseSubtopologyID is parseSubtopologyID, the "<subtopology>_<partition>"
// form the assignor spreads by.
var ParseSubtopologyID = parseSubtopologyID

// AssignWritingEveryTask is Assign with output's copies of reported lists
// turned off (outLayout.asListed, group.standbysAsListed): fill then writes
// every list task by task, the general way the copies must agree with.
func (a *Assignor) AssignWritingEveryTask(members []MemberMetadata) ([]Assignment, error) {
	g, s, err := a.assign(reports{byID: members})
	if err != nil {
		return nil, err
	}
	defer putScratch(&a.scratch, s, true)
	g.noCopies()
	return g.output(), nil
}

// AssignIndexedWritingEveryTask is AssignWritingEveryTask for
// AssignIndexed.
func (a *Assignor) AssignIndexedWritingEveryTask(members []IndexedMember) ([]IndexedAssignment, error) {
	g, s, err := a.assign(reports{byIndex: members})
	if err != nil {
		return nil, err
	}
	defer putScratch(&a.scratch, s, true)
	g.noCopies()
	return g.outputIndexed(), nil
}

// noCopies turns output's copies of reported lists off.
func (g *group) noCopies() {
	clear(g.assignedAsListed)
	g.standbysAsListed = false
}
