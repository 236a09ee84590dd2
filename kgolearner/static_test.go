package kgolearner_test

import (
	"testing"
	"time"
)

// staticGroup starts a balanced group of static members S1 to S3
// (kgo.InstanceID), whose instance IDs are their names.
func staticGroup(t *testing.T) (g *group, s1, s2, s3 *member) {
	g = newGroup(t, storyTopology)
	for _, name := range []string{"S1", "S2", "S3"} {
		g.instance[name] = name
	}
	s1, s2, s3 = g.add("S1", true), g.add("S2", true), g.add("S3", true)
	g.waitStable(s1, s2, s3)
	return g, s1, s2, s3
}

// TestStaticMemberRestart: a static member restarts, as in a rolling
// upgrade. Its client closes (stopping and committing its tasks) and its
// next incarnation joins under the same instance ID before the session
// expires; the broker replaces the member without waiting for the session.
// The new incarnation reports nothing it runs, so kfake, which compares the
// new JoinGroup with the old one, rebalances: the tasks nobody runs get
// owners at once, and no record is processed twice. (Apache Kafka skips
// that rebalance and hands the new incarnation its old assignment: see
// docs/kafka.md, Limits.)
func TestStaticMemberRestart(t *testing.T) {
	g, s1, s2, s3 := staticGroup(t)
	s2.close()
	g.instance["S2b"] = "S2"
	s2b := g.add("S2b", true)
	g.waitStable(s1, s2b, s3)
	g.finishExactly()
}

// TestStaticMemberLeaves: a static member leaves the learner way (Leave):
// its tasks move to learners once they are ready, it shuts down with
// nothing left, and its client closes. The group ends balanced over the
// other two, with no record processed twice, whether or not the closing
// client sends a LeaveGroup (kgo's static members leave only when a
// rebalance is owed).
func TestStaticMemberLeaves(t *testing.T) {
	g, s1, s2, s3 := staticGroup(t)
	s2.b.Leave(time.Time{})
	g.waitFor("S2 to hand everything over and shut down", func() bool { return s2.shutdown })
	s2.close()
	g.waitStable(s1, s3)
	g.finishExactly()
}
