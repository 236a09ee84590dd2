// Package learner implements the learner-based incremental task assignor for
// stream-processing groups (the "learner" draft of Kafka's KIP-429).
//
// A member that is to take over a stateful task first runs it as a learner:
// it replays the task's state while the current owner keeps processing. When
// the learner is ready the member rejoins and the leader moves the task. The
// owner revokes tasks tagged learned at each join, so the move needs no extra
// rebalance. Every member reports its own status at join, so the leader keeps
// no history and a leader crash loses nothing.
//
// # The leader side
//
// An Assignor holds the topology's tasks and the Options; its Assign method is
// a pure function from the members' reports (MemberMetadata) to their next
// assignments (Assignment): no I/O, clocks, randomness, goroutines or package
// state, its input never mutated, the same output for the same reports in any
// order. An Assignor's tasks and Options never change once it is built, and
// it is safe for concurrent use; it reuses Assign's working memory from one
// call to the next, which changes no output.
//
// AssignIndexed is Assign for a leader whose reports arrive with tasks named
// by their index in the topology (IndexedMember; the wire package decodes
// them so): the same rules from the same code, answers by index
// (IndexedAssignment), and no task ID built or looked up. MemberByID and
// AssignmentByID turn either back into IDs, for logs and hooks.
//
// # The rules in brief
//
//  1. One owner: every task has exactly one active owner whenever the group
//     has a member; no member holds a task twice.
//  2. Learners keep running until promoted, their task disappears, their
//     member leaves or a warmer copy takes their ownerless task (rule 5); a
//     task being learned never moves elsewhere.
//  3. A ready learner is promoted; the former owner finds the task revoked.
//  4. A learner that is not ready waits: its task stays with (or returns to)
//     the owner, tagged learned again.
//  5. Ownerless tasks get an owner at once: the member with the warmest copy
//     (smallest reported lag, no lag ranking as AcceptableLag, caught up as
//     rule 13 counts it; on ties a member learning it, then a standby),
//     else the least loaded. A learner outrun by a warmer copy is
//     dropped.
//  6. Leaving members get nothing new; each of their tasks gets a learner on
//     a staying member, and a leaving member with no task left shuts down.
//  7. Balance: while a move narrows the gap (by capacity), the most loaded
//     staying member gives one task to the least loaded; once balanced with
//     no ready learner, Assign returns its input.
//  8. A standby of a task makes it the first to move to that member, and
//     the standby becomes the learner.
//  9. Stateless tasks move at once, without a learner.
//  10. Options.Standbys standbys per stateful task, kept in place, each
//     member's total within 0.5x-2x of its share.
//  11. Deterministic: the output depends only on the set of reports.
//  12. Stale or conflicting reports never lose or duplicate a task; malformed
//     ones are errors wrapping ErrInvalidMember that name the member and task.
//  13. Standbys move warm: a caught-up copy that standby placement drops
//     stays as an extra standby until its replacement reports caught up.
//
// The rules in full, the features beyond the design document (capacity,
// learner budget, lag-aware readiness, rack-aware standbys, subtopology
// spread) and the documented deviations from it are in docs/rules.md.
//
// # The member side
//
// A Worker keeps one member's status, pure and deterministic like Assign
// (time comes in as an argument). Join gives the report to send at join
// (learned tasks move to Revoked: stop them before joining); Apply turns an
// Assignment into the Changes the application makes; Restored or SetLag
// report a learner's progress, and Unready withdraws Restored when the
// learner's state is lost again; ShouldRejoin says when to rejoin (RejoinStable:
// when all learners are ready, fewer rebalances; RejoinEager: when any is);
// Leave announces "leaving soon" with an optional deadline, and ShouldShutdown
// says when the hand-over is done or the deadline passed. A crashed member
// rejoins as a new Worker and may report the state it finds on disk with
// SetLag.
//
// # The notation
//
// ParseRebalance, Rebalance.String, FormatMember and FormatAssignments read
// and print the design document's notation, as the golden scenarios and the
// learner command do: S1(assigned: [T1, T2], revoked: [], learning: []).
// docs/design.md describes it.
package learner
