package learner

// The tests of this package live in package learner_test: they use
// learnertest, which imports this package, and a test inside package
// learner cannot import it back. These are the few internals they need.

// LookupTask returns the index the Assignor's interner gives id, or -1: the
// floor benchmark measures the same interner Assign uses.
func LookupTask(a *Assignor, id string) int32 { return a.index.lookup(id) }

// ParseSubtopologyID is parseSubtopologyID, the "<subtopology>_<partition>"
// form the assignor spreads by.
var ParseSubtopologyID = parseSubtopologyID

// ValidID is validID, the rule for member, task and rack IDs.
var ValidID = validID
