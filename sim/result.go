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
)

var strategyNames = [...]string{
	LearnerStable: "learner (stable)",
	LearnerEager:  "learner (eager)",
	StopTheWorld:  "stop-the-world",
	Cooperative:   "cooperative",
	WarmUp:        "warm-up+probing",
}

// String returns the strategy's name as the table prints it.
func (s Strategy) String() string {
	if s < 0 || int(s) >= len(strategyNames) {
		return fmt.Sprintf("Strategy(%d)", int(s))
	}
	return strategyNames[s]
}

// Strategies returns every strategy, in the order the table prints them.
func Strategies() []Strategy {
	return []Strategy{LearnerStable, LearnerEager, StopTheWorld, Cooperative, WarmUp}
}

// Metrics are one strategy's measurements over a run. Task-time sums over
// tasks: two tasks down for a second are two task-seconds.
type Metrics struct {
	// Downtime is the task-time during which no member processed the task.
	Downtime time.Duration
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
	// PeakBusy is the most tasks one member held at once, learners and
	// warm-ups included.
	PeakBusy int
}

// Round is one rebalance: what the members reported and what the leader
// assigned.
type Round struct {
	Start, End time.Duration
	Reasons    []string
	Leader     string
	Joins      []learner.MemberMetadata
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
	Metrics  Metrics
	Rounds   []Round
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
}

func (s MemberState) sameCounts(o MemberState) bool {
	return s.Active == o.Active && s.Down == o.Down && s.Learning == o.Learning
}

// Count is a number valid from At.
type Count struct {
	At time.Duration
	N  int
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

// checkRound judges one round by the rules every test of the library uses
// (learnertest). A learner strategy's round is Assign's output as it came,
// so every rule of learnertest.Check applies; the sticky strategies model
// other assignors, which keep only learnertest.CheckRound's.
func checkRound(tasks []learner.Task, strat strategy, r Round) []learnertest.Violation {
	if s, ok := strat.(*learnerStrategy); ok {
		return learnertest.Check(tasks, s.assignor.Options(), r.Joins, r.Assignments)
	}
	return learnertest.CheckRound(tasks, r.Joins, r.Assignments, r.Withheld)
}
