// Package learnertest is the test harness of package learner, like raft's
// rafttest: the one place that states the assignor's rules as code, a
// generator of groups that break them in every way a group can, and a
// driver of whole group histories. The core's tests, the simulator, the
// Kafka end-to-end tests and the franz-go comparison all judge assignments
// with it, so every place checks the same rules.
//
// It imports no test framework: checks return Violations (a rule, the
// member, the task, what happened), and the history driver returns an
// error, so any test style and non-test code can use them.
//
// # Rules
//
// Check judges one Assign call from its input and output alone; it knows
// nothing of how Assign works. Every violation names one of these rules:
//
//	shape         one Assignment per member in natural ID order; lists hold
//	              topology tasks (Revoked may also hold unknown ones), in
//	              topology order, without repeats; Learned ⊆ Assigned
//	one-owner     every topology task is active on exactly one member
//	              (whenever there is a member)
//	held-twice    no member holds a task in two of active/learning/standby
//	one-learner   at most one learner per task, only for stateful tasks,
//	              only on staying members, and a task has a learner exactly
//	              when its owner's Learned lists it
//	leaving-gains a leaving member gains no active, learning or standby
//	              task, except that with no staying member at all an orphan
//	              still needs an owner
//	hand-over     with a staying member and no learner budget, a leaving
//	              member keeps no stateless task and every stateful task it
//	              keeps has a learner; a new learner of its task is the
//	              member with the most of the task's state, if any has some
//	              (smallest reported lag, ranked as for rule orphan, then a
//	              standby, then other state: a lag reported, or a claim to
//	              the task that lost)
//	keep-learner  a not-ready learner of a staying member is kept, or its
//	              task is now active there (unless the task had no owner:
//	              rule orphan decides)
//	promote       a ready learner of a staying member owns its task
//	              (keep-learner and promote exempt tasks that several
//	              members reported learning, and stateless tasks, which
//	              move at once anyway); whatever the competition, no
//	              member learns a task whose learner it reported ready (a
//	              Worker rejoins only for learners ready since its join)
//	stateful-move a stateful task with an owner in the input stays with that
//	              owner (the best claim: assigned beats revoked, staying
//	              beats leaving, then natural ID order) or goes to a ready
//	              learner of it; it never jumps to a third member
//	revoked       Revoked is exactly what the member held (Assigned or
//	              Revoked at join, unknown tasks included) minus its new
//	              Assigned
//	orphan        a stateful task nobody held goes to its warmest eligible
//	              copy, if any member has one: the smallest reported lag
//	              (a ready learner counts as 0; no report ranks as
//	              AcceptableLag, after a reported AcceptableLag: caught up,
//	              as warm-copies counts a standby), then a learner, then a
//	              standby; so its learner takes it unless another
//	              member's copy ranks warmer. A stateless
//	              one goes to an eligible learner of it if any, else the
//	              same way
//	standby       each stateful task has min(Standbys, eligible) standbys,
//	              on staying members other than its owner and learner;
//	              stateless tasks have none; more only as warm-copies
//	              allows
//	warm-copies   with Standbys > 0, a stateful task keeps, in any role,
//	              min(its caught-up copies, Standbys+1) of the caught-up
//	              copies its staying members reported (running or revoked
//	              it, a standby with a lag within AcceptableLag or none
//	              reported, a ready learner); standbys beyond the standby
//	              rule's count are such kept copies, each one needed for
//	              that bound: a standby moves warm, its old copy released
//	              once the new one reports caught up
//	racks         where every staying member has a rack, a task's copies
//	              (planned owner and standbys) are not all in one rack while
//	              a member in another rack has room for a standby
//	budget        with MaxLearners = N, the group holds more than N
//	              learners only if none of them is new
//	band          each staying member's planned load within 0.5x-2x of its
//	              expected load, where the band is a promise Assign can
//	              keep: a learner-free output of a group Assign was free
//	              to balance, equal capacities and no racks when there are
//	              standbys, at least Standbys+2 staying members, an
//	              expected load of at least 2 tasks
//	balanced      an output without learners is balanced (no single move
//	              of a task lowers the sum of load²/capacity), where Assign
//	              was free to move every task: no stateless task learned,
//	              held by a leaving member, or ownerless with local state
//	              somewhere (a stateless task moves once per call)
//
// CheckAssign adds the rules that need more calls to Assign (error,
// mutated, deterministic, permutation, fixed-point). CheckRound checks the
// subset every round of a group must keep whoever computed it (shape,
// held-twice, one-owner), for assignors other than this library's and for
// rounds whose delivery held tasks back. The History driver adds
// convergence and the fixed-point rules (fixed-point-balance,
// fixed-point-leaving, fixed-point-spread).
//
// # Generated groups
//
// Generate draws one rebalance from a seeded generator (no dependency; each
// group is reproducible from one seed), Traits says which situations it
// contains, and Shrink reduces a failing group to a small one to print.
// Spec.Extreme draws capacities, lags and options from the edges of their
// ranges (ExtremeCapacities, ExtremeLags), so that overflow is searched
// for; OutOfRangeCapacities are the capacities Assign must reject.
package learnertest
