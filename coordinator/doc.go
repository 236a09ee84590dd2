// Package coordinator is an embeddable group coordinator that runs the
// learner protocol without a rebalance barrier, in the style of Kafka's
// KIP-848 and KIP-1071: members heartbeat their status, the coordinator
// computes the group's target with learner.Assign and answers each member
// with its own next step. Nobody waits for anybody else, and a task pauses
// only while it passes from one owner to the next.
//
// The Coordinator is a pure state machine, like etcd's raft: events come in
// as method calls (Heartbeat, Tick, SetTopology), answers go out as return
// values; it does no I/O, reads no clock and starts no goroutine. The
// embedder owns the transport and the timers. Member is the matching member
// side; example/ serves both over HTTP.
//
// # Messages
//
// A member sends a Heartbeat every Response.HeartbeatInterval: its ID, the
// epoch of the last response it applied (0 to join), a sequence number that
// grows with every heartbeat, the tasks it runs active, its learners (with
// lag, or flagged ready), its standbys, whether it is leaving, its capacity
// and rack. The coordinator answers with a
// Response: the member's full target (active, learning, standby) at a
// member epoch. A member leaves with a last heartbeat whose Leave is set.
//
// # Epochs
//
// Each member has its own epoch. It grows by one whenever the coordinator
// changes that member's target, and only when the member has reported the
// current epoch, so a target is never more than one step ahead of what the
// member runs. Responses are whole targets: a lost one is repeated by the
// next, and a member applies a response only if its epoch is at least its
// own. The coordinator ignores a heartbeat older than one it has seen from
// the member (late or duplicated delivery): of a lower epoch, or of the same
// epoch and a lower sequence number (Heartbeat.Seq). Within one epoch a
// member's roles are fixed, but its readiness, lags, capacity and rack
// change, and a late heartbeat would carry older ones. A duplicate of the
// latest heartbeat is taken again, which reports nothing new. A heartbeat with
// an epoch the coordinator never issued, or from a member it dropped, gets
// ErrFenced: the member stops everything and joins again under a new ID.
// An ID is one incarnation: a member that lost its state never reuses it,
// and a join (epoch 0) under an ID the coordinator knows at a later epoch
// is fenced too, as is any heartbeat under the ID of a member that left or
// was dropped less than a session timeout ago (a late copy of its join
// would otherwise bring it back as a member that runs nothing). A member
// that would make the group larger than Config.MaxMembers is fenced too
// (ErrGroupFull).
//
// # The order of a hand-over
//
// The coordinator counts, for each task, the members that may run it active:
// those that report it, plus those whose last response lists it. A task is
// granted to a member only when no other member may run it. So a task is
// never active on two members, whatever the order of heartbeats.
//
//  1. A member heartbeats that its learner of T is ready (flag, or lag within
//     Options.AcceptableLag). The target changes: T's owner is the learner.
//  2. The owner's next response drops T. It stops T and heartbeats at once;
//     that heartbeat, at the new epoch and without T, releases T.
//  3. The learner's next heartbeat (it heartbeats every WaitInterval while it
//     waits) gets T active. It continues from the replayed state.
//
// T is down from step 2 to step 3: about one WaitInterval plus a round trip.
// From step 1 to step 3 takes up to one HeartbeatInterval more (until the
// owner's next heartbeat), while the owner keeps processing T.
// No other task pauses: an owner keeps running a learned task until its
// learner is ready, and tasks not being moved are never stopped. A task
// whose owner crashed or left has no one to wait for and is granted at
// once (to its warmest copy: its learner unless another member reports a
// smaller lag); a stateless task moves in the same
// two steps with no learner. Everything else is learner.Assign's rules:
// leaving members hand over through learners, standbys become learners,
// the learner budget holds for the target, the group settles at a balanced
// fixed point. (A learner promoted to owner leaves the target's learners but
// keeps replaying until its task is granted, so for that wait the members
// run one learner more than the budget per promotion; it has caught up and
// only tails the changelog. testdata/scripts/budget.txt plays it.)
//
// # Liveness and fencing
//
// The coordinator drops a member whose last heartbeat is SessionTimeout old
// and gives its tasks away; the embedder calls Tick often enough (say ten
// times a session timeout) for that to happen on time. That is safe only if
// the member has stopped them: a member must stop every task when it has had
// no response for its own timeout, measured from when it sent the
// heartbeat, shorter than the session timeout by more than clock-rate error.
// Member.Stop is that step; then it rejoins with a new ID. A process that
// restarts joins under a new ID naming the one it replaces (RestartOf,
// Heartbeat.Replaces, like Kafka's static membership): the coordinator drops
// the old incarnation at once, and its tasks can return warm.
//
// # What a coordinator must persist: nothing
//
// Every member reports its own status, so a new coordinator rebuilds the
// group from the members' next heartbeats. It adopts each member at the
// epoch the member reports, takes what it runs as its target, and grants
// nothing during a recovery window of one SessionTimeout from its first
// event: by then every member still running a task has either heartbeated
// or fenced itself, so no task it grants can be running elsewhere. The
// first heartbeat it gets from a member may be a late copy of an older one;
// within the window, a member that reports a higher epoch is adopted again
// at that epoch (the coordinator has issued no epoch of its own yet, and a
// member runs only what its newest epoch gave it). Tasks
// that run keep running through the window; moves and ownerless tasks wait
// for it to end. The old coordinator must have stopped answering before the
// new one starts (a lease, as any leader election gives). A coordinator that knows no coordinator ever granted tasks
// in the group (Config.FreshGroup) skips the window. There is no snapshot.
//
// The transport must give each member at most one heartbeat in flight and
// deliver to it only the response to its latest heartbeat (request and
// response, as HTTP does); heartbeats may reach the coordinator late or
// twice. All calls must be serialized.
package coordinator
