package learner

// The tests of this package live in package learner_test: they use
// learnertest, which imports this package, and a test inside package
// learner cannot import it back. This is the one internal they need.

// ParseSubtopologyID is parseSubtopologyID, the "<subtopology>_<partition>"
// form the assignor spreads by.
var ParseSubtopologyID = parseSubtopologyID
