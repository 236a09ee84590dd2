package sim

import (
	"slices"
	"time"

	"github.com/learnerassignor/learner"
)

// stickyStrategy models Kafka's classic assignors on one sticky balancing
// rule: stop-the-world (eager protocol), cooperative without learners, and
// warm-up replicas with probing rebalances (KIP-441).
type stickyStrategy struct {
	e     *engine
	kind  Strategy
	probe uint64 // bumped to cancel the scheduled probing rebalance
}

func newStickyStrategy(e *engine, s Strategy) (strategy, error) {
	return &stickyStrategy{e: e, kind: s}, nil
}

func (s *stickyStrategy) name() string                        { return s.kind.String() }
func (s *stickyStrategy) initial(*member, learner.Assignment) {}
func (s *stickyStrategy) joined(*member)                      {}
func (s *stickyStrategy) restored(*member, int)               {}
func (s *stickyStrategy) leave(m *member, _ time.Duration)    { s.e.depart(m, "leaves") }
func (s *stickyStrategy) apply(m *member, a learner.Assignment) {
	s.e.setRoles(m, a)
}

// join reports the member's active tasks, its warm-up replicas and
// standbys, and as lag the MB each replica and each task's state on disk
// still has to restore. The eager protocol stops every task.
func (s *stickyStrategy) join(m *member) learner.MemberMetadata {
	md := learner.MemberMetadata{ID: m.id}
	for _, t := range m.held {
		sl, id := m.slots[t], s.e.tasks[t].ID
		switch sl.role {
		case active:
			md.Assigned = append(md.Assigned, id)
			if s.kind == StopTheWorld {
				s.e.stop(m, t, CauseJoin)
			}
			continue
		case learning:
			md.Learning = append(md.Learning, id)
		case standby:
			md.Standby = append(md.Standby, id)
		}
		md.Lag = append(md.Lag, learner.TaskLag{Task: id, Lag: s.e.lag(m, t)})
	}
	return md
}

// settled asks for the follow-up rebalance that hands withheld tasks to
// their new owners. For warm-ups still catching up it schedules a probing
// rebalance an interval later; like Kafka, every assignment replaces the
// schedule of the one before.
func (s *stickyStrategy) settled(r Round) {
	if len(r.Withheld) > 0 {
		s.e.requestRebalance("follow-up for revoked tasks")
	}
	if s.kind != WarmUp {
		return
	}
	s.probe++
	for _, a := range r.Assignments {
		for _, id := range a.Learning {
			if !slices.Contains(r.Withheld, id) {
				probe := s.probe
				s.e.at(s.e.now+s.e.sc.ProbingInterval, func() {
					if s.probe == probe {
						s.e.requestRebalance("probing rebalance")
					}
				})
				return
			}
		}
	}
}

// assign is the leader. Every strategy first computes the same sticky
// balanced target; they differ in how they get there.
func (s *stickyStrategy) assign(joins []learner.MemberMetadata) ([]learner.Assignment, []string, error) {
	n, k := len(s.e.tasks), len(joins)
	as := make([]learner.Assignment, k)
	if k == 0 {
		return as, nil, nil
	}
	index := s.e.index
	cur := make([]int, n) // reported owner, -1 for none
	for t := range cur {
		cur[t] = -1
	}
	// lag[i][t]: MB member i still has to restore for t; 0 caught up,
	// -1 no local state.
	lag := make([][]float64, k)
	warmups := make([][]bool, k)
	for i, j := range joins {
		as[i].MemberID = j.ID
		lag[i] = make([]float64, n)
		warmups[i] = make([]bool, n)
		for t := range lag[i] {
			lag[i][t] = -1
		}
		for _, id := range j.Assigned {
			cur[index[id]], lag[i][index[id]] = i, 0
		}
		for _, l := range j.Lag {
			lag[i][index[l.Task]] = float64(l.Lag)
		}
		for _, id := range j.Learning {
			warmups[i][index[id]] = true
		}
	}
	target := s.target(cur, lag)

	if s.kind == WarmUp {
		s.orphansToCaughtUp(cur, target, lag)
	}
	var withheld []string
	nWarm := 0
	warm := make([]bool, n) // task has a warm-up kept or placed
	for t, task := range s.e.tasks {
		i, j := cur[t], target[t]
		switch {
		case i < 0 || i == j || s.kind == StopTheWorld:
			as[j].Assigned = append(as[j].Assigned, task.ID)
		case s.kind == Cooperative || !task.Stateful || lag[j][t] == 0:
			// The owner revokes it now; the follow-up assigns it. To a
			// caught-up replica that is a promotion.
			withheld = append(withheld, task.ID)
			if task.Stateful && lag[j][t] == 0 {
				s.e.setCause(t, CausePromotion)
			}
		default:
			// Warm-up: the active stays until j has caught up.
			as[i].Assigned = append(as[i].Assigned, task.ID)
		}
		if s.kind == WarmUp && warmups[j][t] && i >= 0 && i != j {
			warm[t] = true
			nWarm++
		}
	}
	if s.kind == WarmUp {
		// New warm-ups, in topology order, within the budget.
		for t := range s.e.tasks {
			if i, j := cur[t], target[t]; i >= 0 && i != j && !warm[t] && lag[j][t] != 0 && s.e.tasks[t].Stateful && nWarm < s.e.sc.MaxWarmups {
				warm[t] = true
				nWarm++
			}
		}
		for t, id := range s.e.tasks {
			if warm[t] {
				as[target[t]].Learning = append(as[target[t]].Learning, id.ID)
			}
		}
	}
	s.placeStandbys(as, joins, target, lag)
	// The member a withheld task goes to in the follow-up keeps the
	// state it has of it meanwhile, as a temporary standby: Kafka Streams
	// leaves a closed task's state directory on disk
	// (state.cleanup.delay.ms) and the follow-up restores only what it
	// lacks, where the model drops state a member is not assigned, which
	// turned a move to a caught-up member cold.
	for _, id := range withheld {
		if t, j := index[id], target[index[id]]; s.e.tasks[t].Stateful && lag[j][t] >= 0 && !slices.Contains(as[j].Learning, id) {
			as[j].Standby = append(as[j].Standby, id)
			slices.SortFunc(as[j].Standby, func(x, y string) int { return index[x] - index[y] })
		}
	}
	for i, j := range joins {
		for _, id := range j.Assigned {
			if !slices.Contains(as[i].Assigned, id) {
				as[i].Revoked = append(as[i].Revoked, id)
			}
		}
	}
	return as, withheld, nil
}

// orphansToCaughtUp is KIP-441's rule for a task nobody runs (its owner
// left or crashed) whose balanced target has not caught up: it becomes
// active on a caught-up member (a standby, state on disk), the least loaded
// one, and the target warms up to take it later. cur records that member
// as the owner.
func (s *stickyStrategy) orphansToCaughtUp(cur, target []int, lag [][]float64) {
	owned := make([]int, len(lag))
	for _, i := range cur {
		if i >= 0 {
			owned[i]++
		}
	}
	for t, task := range s.e.tasks {
		if cur[t] >= 0 || !task.Stateful || lag[target[t]][t] == 0 {
			continue
		}
		best := -1
		for i := range lag {
			if lag[i][t] == 0 && (best < 0 || owned[i] < owned[best]) {
				best = i
			}
		}
		if best >= 0 {
			cur[t] = best
			owned[best]++
		}
	}
}

// placeStandbys gives each stateful task min(Standbys, members that may
// hold one) standbys on members that neither run it, warm it up nor are to
// receive it: reported standbys stay where they are (Kafka's sticky standby
// placement), missing ones go to the member with the most state of the
// task, then the fewest tasks of any kind, then the first. Standbys never
// move to even out counts: the baselines keep every warm copy they have.
func (s *stickyStrategy) placeStandbys(as []learner.Assignment, joins []learner.MemberMetadata, target []int, lag [][]float64) {
	if s.e.sc.Standbys == 0 {
		return
	}
	k := len(as)
	load := make([]int, k)
	reported := make([][]bool, k)
	for i := range as {
		load[i] = len(as[i].Assigned) + len(as[i].Learning)
		reported[i] = s.e.taskSet(joins[i].Standby)
	}
	// takers lists, per task, the members that run it or warm it up:
	// searching every member's lists for every task cost tasks x tasks a
	// rebalance.
	takers := make([][]int, len(s.e.tasks))
	for i, a := range as {
		for _, id := range slices.Concat(a.Assigned, a.Learning) {
			takers[s.e.index[id]] = append(takers[s.e.index[id]], i)
		}
	}
	busy := make([]bool, k)
	for t, task := range s.e.tasks {
		if !task.Stateful {
			continue
		}
		for i := range as {
			busy[i] = i == target[t]
		}
		for _, i := range takers[t] {
			busy[i] = true
		}
		eligible := 0
		for _, b := range busy {
			eligible += b2i(!b)
		}
		want := min(s.e.sc.Standbys, eligible)
		place := func(i int) {
			as[i].Standby = append(as[i].Standby, task.ID)
			busy[i] = true
			load[i]++
			want--
		}
		for i := 0; i < k && want > 0; i++ {
			if reported[i][t] && !busy[i] {
				place(i)
			}
		}
		for want > 0 {
			best := -1
			for i := range k {
				if !busy[i] && (best < 0 || warmer(lag[i][t], lag[best][t]) || lag[i][t] == lag[best][t] && load[i] < load[best]) {
					best = i
				}
			}
			place(best)
		}
	}
}

// target is the sticky balanced assignment: member i keeps up to its quota
// of the tasks it owns (stateless ones are given away first, then the last
// in topology order), and every other task goes, in topology order, to the
// member below its quota with the most restored state of it, then the least
// loaded, then the first. Quotas are n/k, plus one for the n%k members that
// own the most tasks.
func (s *stickyStrategy) target(cur []int, lag [][]float64) []int {
	n, k := len(cur), len(lag)
	owned := make([][]int, k)
	for t, i := range cur {
		if i >= 0 {
			owned[i] = append(owned[i], t)
		}
	}
	byLoad := make([]int, k)
	for i := range byLoad {
		byLoad[i] = i
	}
	slices.SortStableFunc(byLoad, func(a, b int) int { return len(owned[b]) - len(owned[a]) })
	quota := make([]int, k)
	for r, i := range byLoad {
		quota[i] = n/k + b2i(r < n%k)
	}
	target := make([]int, n)
	load := make([]int, k)
	for t := range target {
		target[t] = -1
	}
	for i, ts := range owned {
		slices.SortStableFunc(ts, func(a, b int) int { return b2i(!s.e.tasks[a].Stateful) - b2i(!s.e.tasks[b].Stateful) })
		for _, t := range ts[:min(len(ts), quota[i])] {
			target[t] = i
			load[i]++
		}
	}
	for t := range target {
		if target[t] >= 0 {
			continue
		}
		best := -1
		for i := range k {
			if load[i] >= quota[i] {
				continue
			}
			if best < 0 || warmer(lag[i][t], lag[best][t]) || lag[i][t] == lag[best][t] && load[i] < load[best] {
				best = i
			}
		}
		target[t] = best
		load[best]++
	}
	return target
}

// warmer reports whether restore lag a (-1: no state) beats b.
func warmer(a, b float64) bool {
	switch {
	case a < 0:
		return false
	case b < 0:
		return true
	}
	return a < b
}
