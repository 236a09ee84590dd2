// Package sim is a discrete-event simulator of a stream-processing group
// under scaling. It runs one scripted Scenario (members join, announce that
// they leave, crash; the leader crashes) under several rebalancing
// strategies and measures each: downtime, rebalances, task moves, duplicate
// work, time until balanced and peak load.
//
// The learner strategies drive learner.Assignor and learner.Worker exactly as
// a real group would: every member keeps a Worker, joins with what it
// reports, and applies the leader's assignment. The other strategies model
// Kafka's classic assignors on the same engine.
//
// The model: each stateful task has a state size and each member a restore
// rate, so a task's state is restored on a member after size/rate (each task
// restores at the member's full rate). A task is down while no member
// processes it: its owner is restoring it, stopped it at a join, or crashed.
// A rebalance costs a fixed pause from the members' join to their
// assignment. Runs are deterministic: the only randomness, the task sizes, is
// drawn when a scenario is parsed, from the seed it names.
package sim

import (
	"fmt"
	"time"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// Strategy is a rebalancing strategy the simulator compares.
type Strategy int

const (
	// LearnerStable is this library with learner.RejoinStable.
	LearnerStable Strategy = iota
	// LearnerEager is this library with learner.RejoinEager.
	LearnerEager
	// StopTheWorld is the eager protocol with a sticky assignor: every
	// rebalance stops every task; tasks that changed owner restore first.
	StopTheWorld
	// Cooperative is the cooperative sticky assignor without learners: the
	// owner of a task that moves revokes it, a follow-up rebalance gives it
	// to its new owner, which restores it while the task is down.
	Cooperative
	// WarmUp is the KIP-441 approach: a task moves only to a member whose
	// warm-up replica has caught up, checked by probing rebalances.
	WarmUp
	// Coordinator is package coordinator: no rebalances; members heartbeat
	// a coordinator that moves each task when its learner is ready.
	Coordinator
)

// String returns the strategy's name as the table prints it.
func (s Strategy) String() string {
	if s < 0 || int(s) >= len(strategies) {
		return fmt.Sprintf("Strategy(%d)", int(s))
	}
	return strategies[s].name
}

// Strategies returns every strategy, in the order the table prints them.
func Strategies() []Strategy {
	all := make([]Strategy, len(strategies))
	for i := range all {
		all[i] = Strategy(i)
	}
	return all
}

// Cause is why a task is down.
type Cause uint8

// Causes of downtime, from the lightest to the weightiest: a task down for
// several reasons at once counts under the weightiest, and a crash keeps its
// cause until the task processes again.
const (
	// CauseJoin is a task stopped at a join and not handed to a ready
	// replica: stop-the-world's pause, a learned task whose learner is not
	// ready, a task waiting for a follow-up rebalance.
	CauseJoin Cause = iota + 1
	// CausePromotion is a hand-over to a caught-up replica: stopped at the
	// join that promotes it, then what is left of its ReplayLag.
	CausePromotion
	// CauseCold is a task restoring on a member that had not caught up.
	CauseCold
	// CauseCrash is a task whose owner died without notice, until it
	// processes again.
	CauseCrash
	numCauses
)

var causeNames = [...]string{CauseJoin: "join pause", CausePromotion: "promotion", CauseCold: "cold move", CauseCrash: "crash"}

// String returns the cause as the tables print it.
func (c Cause) String() string {
	if c == 0 || c >= numCauses {
		return fmt.Sprintf("Cause(%d)", int(c))
	}
	return causeNames[c]
}

// Causes returns every cause, lightest first.
func Causes() []Cause { return []Cause{CauseJoin, CausePromotion, CauseCold, CauseCrash} }

// Metrics are one strategy's measurements over a run. Task-time sums over
// tasks: two tasks down for a second are two task-seconds.
type Metrics struct {
	// Downtime is the task-time during which no member processed the task.
	Downtime time.Duration
	// DowntimeBy splits Downtime by Cause (index 0 is unused).
	DowntimeBy [numCauses]time.Duration
	// StatefulDown is Downtime of stateful tasks only: Kafka's "stateful
	// tasks not processing" measure.
	StatefulDown time.Duration
	// Cold counts cold hand-overs: a stateful task becoming active on a
	// member without a caught-up copy of it, which must restore it first.
	Cold int
	// ColdPlanned counts the cold hand-overs in planned scaling: the task's
	// last owner did not crash (it runs, or it left by announcing it).
	ColdPlanned int
	// ColdUnavoidable counts the cold hand-overs when no live member had a
	// caught-up copy of the task: no assignor could have avoided them then.
	ColdUnavoidable int
	// Processed is the task-time processed, summed over members; without
	// double processing Processed + Downtime = tasks x duration.
	Processed time.Duration
	// Rebalances counts rebalances started: triggered by events, by
	// rejoining learners, follow-ups and probing; aborted ones included.
	Rebalances int
	// Moves counts changes of a task's active owner.
	Moves int
	// Duplicate is the task-time learners and warm-up replicas replayed
	// beside an active that was processing the task.
	Duplicate time.Duration
	// Unbalanced is the time the group was not balanced: a rebalance under
	// way, a task down, a learner or warm-up in flight, a leaving member
	// holding a task, or staying members' active counts more than one apart.
	// Summed over the scenario's stories, it is their time until balanced.
	Unbalanced time.Duration
	// LongestUnbalanced is the longest stretch the group was unbalanced:
	// the worst time until balanced after a disturbance.
	LongestUnbalanced time.Duration
	// PeakActive is the most active tasks one member held at once.
	PeakActive int
	// PeakBusy is the most tasks one member held at once, learners,
	// warm-ups and standbys included (record counts every role).
	PeakBusy int

	// WarmHandovers counts tasks that became active on a member whose
	// learner or warm-up of it had caught up; HandoverWait sums, and
	// HandoverWaitMax is the longest, time from catching up (or from
	// becoming a learner, for a standby that was caught up) to taking over:
	// what the protocol adds to a planned move.
	WarmHandovers   int
	HandoverWait    time.Duration
	HandoverWaitMax time.Duration
	// Messages counts the requests members sent to run the group protocol:
	// heartbeats (every 3s, Kafka's heartbeat.interval.ms default, or a
	// third of a shorter session timeout, for every strategy), plus a JoinGroup and a SyncGroup per
	// member per rebalance. MemberTime is the time members spent in the
	// group, summed over members: Messages / MemberTime is the rate.
	Messages   int
	MemberTime time.Duration
}

// Round is one rebalance: what the members reported and what the leader
// assigned.
type Round struct {
	// Start and End are when the rebalance began and when the members had
	// their assignments (or it was aborted), from the start of the run.
	Start, End time.Duration
	// Reasons say what triggered it (a join, a leave, a ready learner...).
	Reasons []string
	// Leader is the member that assigned, and Joins what every member
	// reported at join, in the group's order.
	Leader string
	Joins  []learner.MemberMetadata
	// Assignments are nil when the round was aborted.
	Assignments []learner.Assignment
	// Withheld lists tasks revoked from their owner whose new owner gets
	// them in a follow-up rebalance (the cooperative protocol's two steps).
	Withheld []string
	// Aborted is true when the leader died before it assigned.
	Aborted bool
}

// Result is one strategy's run.
type Result struct {
	Strategy Strategy
	Metrics  Metrics // the run's totals, as the tables print them
	Rounds   []Round // every rebalance, in time order
	Timeline Timeline
}

// Timeline is what each member ran over time, for pictures.
type Timeline struct {
	End     time.Duration // the scenario's duration
	Members []MemberTimeline
	// Down is the number of tasks down, from each At until the next.
	Down []Count
	// Events are the scripted events, labelled like "join S9 S10".
	Events []Mark
}

// Mark labels an instant.
type Mark struct {
	At    time.Duration
	Label string
}

// MemberTimeline is one member's states, each valid from its At until the
// next one.
type MemberTimeline struct {
	ID     string
	Joined time.Duration
	Gone   time.Duration // -1 while it runs
	States []MemberState
}

// MemberState counts a member's tasks by what it does with them.
type MemberState struct {
	At       time.Duration
	Active   int // processing
	Down     int // active but not processing: restoring, or stopped at a join
	Learning int // learners and warm-up replicas
	Standby  int // standby replicas
}

func (s MemberState) sameCounts(o MemberState) bool {
	return s.Active == o.Active && s.Down == o.Down && s.Learning == o.Learning && s.Standby == o.Standby
}

// Count is the number of tasks down by Cause, valid from At.
type Count struct {
	At time.Duration
	N  [numCauses]int
}

// Total is the number of tasks down.
func (c Count) Total() int {
	n := 0
	for _, k := range c.N {
		n += k
	}
	return n
}

// Run simulates the scenario under one strategy.
func Run(sc *Scenario, s Strategy) (*Result, error) { return run(sc, s) }

// RunAll simulates the scenario under every strategy, in Strategies order.
func RunAll(sc *Scenario) ([]*Result, error) {
	var rs []*Result
	for _, s := range Strategies() {
		r, err := Run(sc, s)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// checkRound judges one round by the round-level rules every test of the
// library uses (learnertest.CheckRound): withheld tasks on nobody, every
// other task active once, no task in two roles. The learner strategies also
// judge Assign's own output by every rule (learnerStrategy.assign), before
// any withholding.
func checkRound(tasks []learner.Task, r Round) []learnertest.Violation {
	return learnertest.CheckRound(tasks, r.Joins, r.Assignments, r.Withheld)
}
