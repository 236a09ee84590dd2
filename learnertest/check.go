package learnertest

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/learnerassignor/learner"
)

// Violation is one broken rule.
type Violation struct {
	// Rule names the rule (see the package documentation).
	Rule string
	// Member and Task are the member and the task it concerns, "" for none.
	Member, Task string
	// Detail says what happened.
	Detail string
}

// String formats v as "rule: member \"S1\", task \"T1\": detail".
func (v Violation) String() string {
	return fmt.Sprintf("%s: member %q, task %q: %s", v.Rule, v.Member, v.Task, v.Detail)
}

// inputView is the checker's own reading of the members' reports, by member
// position in natural ID order and by task index.
type inputView struct {
	tasks   []learner.Task
	opts    learner.Options
	taskIdx map[string]int
	members []learner.MemberMetadata // natural ID order
	staying int

	held     []map[string]bool // Assigned ∪ Revoked, unknown tasks included
	owner    []int             // best claim by the documented rule, -1 if none
	learners [][]int           // reported learners of each task
	ready    []map[int]bool    // member -> its ready learner tasks
	lag      []map[int]int64   // member -> reported lag per task
	standby  [][]int           // members reporting a standby of each task
	// warm lists, per task, the members with local state for it: a
	// standby, a lag, or a claim that lost to another member's (it still
	// holds the state of a task it ran or revoked at join).
	warm [][]int
	// caught lists, per stateful task, the staying members with a caught-up
	// copy: running or revoked it, a standby of it with a lag within
	// AcceptableLag (or none reported), a ready learner of it.
	caught [][]int
}

// claimClass ranks a member's claim on a task by the documented owner rule:
// assigned beats revoked, then staying beats leaving. Higher wins; ties go
// to the first member in natural ID order.
func claimClass(assigned, leaving bool) int {
	c := 1
	if !leaving {
		c++
	}
	if assigned {
		c += 2
	}
	return c
}

func newInputView(tasks []learner.Task, opts learner.Options, in []learner.MemberMetadata) *inputView {
	v := &inputView{tasks: tasks, opts: opts, taskIdx: map[string]int{}}
	for i, t := range tasks {
		v.taskIdx[t.ID] = i
	}
	v.members = slices.Clone(in)
	slices.SortFunc(v.members, func(a, b learner.MemberMetadata) int { return learner.CompareIDs(a.ID, b.ID) })
	nt := len(tasks)
	v.owner = make([]int, nt)
	class := make([]int, nt)
	v.learners = make([][]int, nt)
	v.standby = make([][]int, nt)
	v.warm = make([][]int, nt)
	for t := range v.owner {
		v.owner[t] = -1
	}
	claim := func(t, m, c int) {
		if c > class[t] {
			v.owner[t], class[t] = m, c
		}
	}
	for m, mm := range v.members {
		if !mm.Leaving {
			v.staying++
		}
		held := map[string]bool{}
		for _, id := range mm.Assigned {
			held[id] = true
			if t, ok := v.taskIdx[id]; ok {
				claim(t, m, claimClass(true, mm.Leaving))
			}
		}
		for _, id := range mm.Revoked {
			held[id] = true
			if t, ok := v.taskIdx[id]; ok {
				claim(t, m, claimClass(false, mm.Leaving))
			}
		}
		v.held = append(v.held, held)
		lags := map[int]int64{}
		for _, l := range mm.Lag {
			if t, ok := v.taskIdx[l.Task]; ok {
				lags[t] = l.Lag
			}
		}
		ready := map[int]bool{}
		for _, id := range mm.Ready {
			if t, ok := v.taskIdx[id]; ok {
				ready[t] = true
			}
		}
		for _, id := range mm.Learning {
			if t, ok := v.taskIdx[id]; ok {
				v.learners[t] = append(v.learners[t], m)
				if lag, ok := lags[t]; ok && opts.AcceptableLag > 0 && lag <= opts.AcceptableLag {
					ready[t] = true
				}
			}
		}
		v.ready = append(v.ready, ready)
		v.lag = append(v.lag, lags)
		warm := map[int]bool{}
		for _, id := range mm.Standby {
			if t, ok := v.taskIdx[id]; ok {
				v.standby[t] = append(v.standby[t], m)
				warm[t] = true
			}
		}
		for t := range lags {
			warm[t] = true
		}
		for t := range warm {
			v.warm[t] = append(v.warm[t], m)
		}
	}
	for m, mm := range v.members {
		for _, id := range slices.Concat(mm.Assigned, mm.Revoked) {
			if t, ok := v.taskIdx[id]; ok && v.owner[t] != m && v.tasks[t].Stateful && !slices.Contains(v.warm[t], m) {
				v.warm[t] = append(v.warm[t], m)
				slices.Sort(v.warm[t])
			}
		}
	}
	v.caught = make([][]int, nt)
	for m, mm := range v.members {
		if mm.Leaving {
			continue
		}
		caught := map[int]bool{}
		for id := range v.held[m] {
			if t, ok := v.taskIdx[id]; ok {
				caught[t] = true
			}
		}
		for _, id := range mm.Standby {
			if t, ok := v.taskIdx[id]; ok {
				if lag, reported := v.lag[m][t]; !reported || lag <= opts.AcceptableLag {
					caught[t] = true
				}
			}
		}
		for t := range v.ready[m] {
			caught[t] = true
		}
		for t := range caught {
			if tasks[t].Stateful {
				v.caught[t] = append(v.caught[t], m)
			}
		}
	}
	return v
}

// wantStandbys is the number of standbys task t must have when its output
// owner is owner and its output learner is learner (-1: none).
func (v *inputView) wantStandbys(t, owner, learner int) int {
	if !v.tasks[t].Stateful {
		return 0
	}
	avail := v.staying
	if owner >= 0 && !v.members[owner].Leaving {
		avail--
	}
	if learner >= 0 {
		avail--
	}
	return min(v.opts.Standbys, max(avail, 0))
}

// caughtKept counts the members of v.caught[t] that hold t in the output in
// any role; bound is what they must be at least (rule warm-copies):
// min(caught-up copies reported, Standbys+1).
func (c *checker) caughtKept(t int, o *outputView) (kept, bound int) {
	for _, m := range c.in.caught[t] {
		if o.owner[t] == m || o.learner[t] == m || slices.Contains(o.standbys[t], m) {
			kept++
		}
	}
	return kept, min(len(c.in.caught[t]), c.in.opts.Standbys+1)
}

// eligible reports whether member m may take on new work: staying members,
// or anyone when nobody stays.
func (v *inputView) eligible(m int) bool { return !v.members[m].Leaving || v.staying == 0 }

// outputView indexes an output by task: who runs, learns and stands by.
type outputView struct {
	// Per member: planned load (plannedLoad) and, for staying members, the
	// 0.5x-2x band around its expected load (the staying members' total
	// planned load shared by capacity), rounded outward to whole tasks:
	// floor(expected/2) and ceil(2·expected).
	load, bandLow, bandHigh []int64
	// Per member: standbys held and standby quota (standbyQuotas).
	nStandby, sbQuota []int64
	owner             []int   // -1: none
	learner           []int   // -1: none
	standbys          [][]int // members
	assigned          []map[int]bool
	learning          []map[int]bool
	standby           []map[int]bool
	learned           []map[int]bool
}

// Check returns every rule of the package documentation that out, Assign's
// answer to the members' reports in, breaks for an Assignor built with tasks
// and opts; nil when out keeps them all. It judges the output from the input
// alone, knowing nothing of how Assign works.
func Check(tasks []learner.Task, opts learner.Options, in []learner.MemberMetadata, out []learner.Assignment) []Violation {
	v := newInputView(tasks, opts, in)
	c := &checker{in: v}
	c.shape(out)
	if len(c.vs) > 0 && len(out) != len(v.members) {
		return c.vs // cannot line members up: everything else would be noise
	}
	o := c.index(out)
	c.tasksRules(out, o)
	c.memberRules(out, o)
	c.band(out, o)
	if !hasLearners(out) && freeToBalance(v) {
		if d := imbalance(in, out); d != "" {
			c.add("balanced", "", "", "learner-free output not balanced: %s", d)
		}
	}
	return c.vs
}

// freeToBalance reports whether Assign may move any task of the input, so
// that an output without learners must be balanced (imbalance() == ""). A
// stateful task can always start moving through a learner, even one
// promoted or given to a warm member in the same call (when its owner has
// nothing else to give); a stateless task moves once per call, so none may
// be placed by something other than load: a stateless task with a learner
// (it goes to the learner), a stateless orphan with local state somewhere
// or a leaving member's stateless task (each goes to a warm member first).
func freeToBalance(v *inputView) bool {
	for t, o := range v.owner {
		switch {
		case v.tasks[t].Stateful:
		case len(v.learners[t]) > 0,
			o < 0 && len(v.warm[t]) > 0,
			o >= 0 && v.members[o].Leaving:
			return false
		}
	}
	return true
}

// settledInput reports whether nothing was under way at join: no learner,
// no leaving member holding tasks, no orphan with local state somewhere. A
// promotion leaves its old owner caught-up copies as extra standbys until
// the new ones catch up (warm-copies), which can take it past the band.
func settledInput(v *inputView) bool {
	for _, m := range v.members {
		if len(m.Learning) > 0 || m.Leaving && len(m.Assigned)+len(m.Revoked) > 0 {
			return false
		}
	}
	for t, o := range v.owner {
		if o < 0 && len(v.warm[t]) > 0 {
			return false
		}
	}
	return true
}

type checker struct {
	in *inputView
	vs []Violation
}

func (c *checker) add(rule, member, task, format string, args ...any) {
	c.vs = append(c.vs, Violation{rule, member, task, fmt.Sprintf(format, args...)})
}

func (c *checker) memberID(m int) string { return c.in.members[m].ID }

// shape checks the form of the output.
func (c *checker) shape(out []learner.Assignment) {
	v := c.in
	if len(out) != len(v.members) {
		c.add("shape", "", "", "%d assignments for %d members", len(out), len(v.members))
		return
	}
	for m, a := range out {
		if a.MemberID != v.members[m].ID {
			c.add("shape", a.MemberID, "", "assignment %d is for %q, want %q (natural ID order)", m, a.MemberID, v.members[m].ID)
			continue
		}
		c.lists(a)
		for _, l := range []struct {
			name string
			ids  []string
		}{{"assigned", a.Assigned}, {"revoked", a.Revoked}, {"learning", a.Learning}, {"learned", a.Learned}, {"standby", a.Standby}} {
			last := -1
			for _, id := range l.ids {
				if t, ok := v.taskIdx[id]; ok {
					if t < last {
						c.add("shape", a.MemberID, id, "%s not in topology order", l.name)
					}
					last = t
				}
			}
		}
	}
}

// lists checks what every assignment's lists must be, whoever computed it
// (shape, held-twice): topology tasks only, except that Revoked may hold
// tasks the topology no longer has; no task listed twice; one role per task
// (learner.RoleConflicts); Learned ⊆ Assigned.
func (c *checker) lists(a learner.Assignment) {
	roles := [...]string{"assigned", "learning", "standby"}
	for _, rc := range learner.RoleConflicts(a.Assigned, a.Learning, a.Standby) {
		if rc.List == rc.First {
			c.add("shape", a.MemberID, rc.Task, "listed twice in %s", roles[rc.List])
		} else {
			c.add("held-twice", a.MemberID, rc.Task, "in both %s and %s", roles[rc.First], roles[rc.List])
		}
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"revoked", a.Revoked}, {"learned", a.Learned}} {
		for _, rc := range learner.RoleConflicts(l.ids) {
			c.add("shape", a.MemberID, rc.Task, "listed twice in %s", l.name)
		}
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"assigned", a.Assigned}, {"learning", a.Learning}, {"learned", a.Learned}, {"standby", a.Standby}} {
		for _, id := range l.ids {
			if _, ok := c.in.taskIdx[id]; !ok {
				c.add("shape", a.MemberID, id, "%s holds a task the topology does not have", l.name)
			}
		}
	}
	for _, id := range a.Learned {
		if !slices.Contains(a.Assigned, id) {
			c.add("shape", a.MemberID, id, "learned but not assigned")
		}
	}
}

// index builds the per-task view of out, reporting tasks active or learned
// on two members.
func (c *checker) index(out []learner.Assignment) *outputView {
	v := c.in
	nt := len(v.tasks)
	o := &outputView{owner: make([]int, nt), learner: make([]int, nt), standbys: make([][]int, nt)}
	for t := range nt {
		o.owner[t], o.learner[t] = -1, -1
	}
	set := func(ids []string) map[int]bool {
		s := map[int]bool{}
		for _, id := range ids {
			if t, ok := v.taskIdx[id]; ok {
				s[t] = true
			}
		}
		return s
	}
	var total, capTotal int64
	for m, a := range out {
		o.load = append(o.load, int64(plannedLoad(a)))
		if !v.members[m].Leaving {
			total += int64(plannedLoad(a))
			capTotal += capacityOf(v.members[m])
		}
	}
	var standbys int64
	for _, a := range out {
		o.nStandby = append(o.nStandby, int64(len(a.Standby)))
		standbys += int64(len(a.Standby))
	}
	o.bandLow, o.bandHigh = make([]int64, len(out)), make([]int64, len(out))
	for m, mm := range v.members {
		if scaled := total * capacityOf(mm); !mm.Leaving {
			o.bandLow[m], o.bandHigh[m] = scaled/(2*capTotal), (2*scaled+capTotal-1)/capTotal
		}
	}
	for m, a := range out {
		as, ls, ss := set(a.Assigned), set(a.Learning), set(a.Standby)
		o.assigned = append(o.assigned, as)
		o.learning = append(o.learning, ls)
		o.standby = append(o.standby, ss)
		o.learned = append(o.learned, set(a.Learned))
		for _, t := range sortedKeys(as) {
			if o.owner[t] >= 0 {
				c.add("one-owner", a.MemberID, v.tasks[t].ID, "active on both %s and %s", c.memberID(o.owner[t]), a.MemberID)
				continue
			}
			o.owner[t] = m
		}
		for _, t := range sortedKeys(ls) {
			if o.learner[t] >= 0 {
				c.add("one-learner", a.MemberID, v.tasks[t].ID, "learned by both %s and %s", c.memberID(o.learner[t]), a.MemberID)
				continue
			}
			o.learner[t] = m
		}
		for _, t := range sortedKeys(ss) {
			o.standbys[t] = append(o.standbys[t], m)
		}
	}
	// Quotas share the standbys the standby rule asks for: copies kept
	// beyond them while a standby moves (warm-copies) ride on top.
	for t := range nt {
		standbys -= int64(max(len(o.standbys[t])-v.wantStandbys(t, o.owner[t], o.learner[t]), 0))
	}
	active := make([]int64, len(out))
	for m, a := range out {
		active[m] = int64(len(a.Assigned) - len(a.Learned) + len(a.Learning))
	}
	o.sbQuota = standbyQuotas(v.members, standbys, active)
	return o
}

func sortedKeys(s map[int]bool) []int {
	ks := make([]int, 0, len(s))
	for k := range s {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// tasksRules checks the rules about one task at a time.
func (c *checker) tasksRules(out []learner.Assignment, o *outputView) {
	v := c.in
	for t, task := range v.tasks {
		id := task.ID
		owner, learner := o.owner[t], o.learner[t]
		if owner < 0 {
			if len(v.members) > 0 {
				c.add("one-owner", "", id, "no active owner")
			}
		}
		c.learnerRules(t, o)
		if learner >= 0 && owner >= 0 && !o.learned[owner][t] {
			c.add("one-learner", c.memberID(owner), id, "learned by %s but not tagged learned on its owner", c.memberID(learner))
		}
		for m := range out {
			if o.learned[m][t] && (m != owner || learner < 0) {
				c.add("one-learner", c.memberID(m), id, "tagged learned without being active there with a learner")
			}
		}

		inOwner := v.owner[t]
		switch {
		case inOwner < 0 && owner >= 0:
			c.orphanRules(t, owner)
		case inOwner >= 0 && owner >= 0 && v.staying == 0 && owner != inOwner:
			c.add("stateful-move", c.memberID(owner), id, "moved from %s although every member is leaving", c.memberID(inOwner))
		case inOwner >= 0 && owner >= 0 && task.Stateful && owner != inOwner:
			if !slices.Contains(v.learners[t], owner) || !v.ready[owner][t] || v.members[owner].Leaving {
				c.add("stateful-move", c.memberID(owner), id, "moved from %s without being its ready learner", c.memberID(inOwner))
			}
		}

		if owner >= 0 && v.members[owner].Leaving && v.staying > 0 && v.opts.MaxLearners == 0 {
			switch {
			case !task.Stateful:
				c.add("hand-over", c.memberID(owner), id, "stateless task left on a leaving member")
			case learner < 0:
				c.add("hand-over", c.memberID(owner), id, "stateful task of a leaving member has no learner")
			}
		}
		if owner >= 0 && v.members[owner].Leaving && learner >= 0 && !slices.Contains(v.learners[t], learner) {
			var warm []int
			for _, m := range v.warm[t] {
				if v.eligible(m) && m != owner {
					warm = append(warm, m)
				}
			}
			if len(warm) > 0 && !v.warmest(t, learner, warm) {
				c.add("hand-over", c.memberID(learner), id, "new learner of a leaving member's task is not the member with the most of its state (%s)",
					c.memberID(v.warmestOf(t, warm)))
			}
		}

		want, got := v.wantStandbys(t, owner, learner), len(o.standbys[t])
		if got < want {
			c.add("standby", "", id, "%d standbys, want %d", got, want)
		}
		if v.opts.Standbys > 0 {
			kept, bound := c.caughtKept(t, o)
			if kept < bound {
				c.add("warm-copies", "", id, "%d of the %d caught-up copies kept, want %d (Standbys+1 at most)", kept, len(v.caught[t]), bound)
			}
			// Standbys beyond want are caught-up copies kept while new ones
			// replay: each must be needed for the bound, and caught up.
			extra := got - want
			sbCaught := 0
			for _, m := range o.standbys[t] {
				if slices.Contains(v.caught[t], m) {
					sbCaught++
				}
			}
			switch {
			case extra > 0 && kept-extra >= bound:
				c.add("standby", "", id, "%d standbys, want %d: %d caught-up copies without the extra ones, enough for %d", got, want, kept-extra, bound)
			case extra > sbCaught:
				c.add("standby", "", id, "%d standbys, want %d: an extra one has not caught up", got, want)
			}
		} else if got != want {
			c.add("standby", "", id, "%d standbys, want %d", got, want)
		}
		for _, m := range o.standbys[t] {
			if v.members[m].Leaving {
				c.add("standby", c.memberID(m), id, "standby on a leaving member")
			}
		}
		c.racks(t, o)
	}
	c.budget(o)
}

// learnerRules checks what became of the task's learners and its output learner.
func (c *checker) learnerRules(t int, o *outputView) {
	v := c.in
	id := v.tasks[t].ID
	if l := o.learner[t]; l >= 0 {
		switch {
		case !v.tasks[t].Stateful:
			c.add("one-learner", c.memberID(l), id, "learner of a stateless task")
		case v.members[l].Leaving:
			c.add("one-learner", c.memberID(l), id, "learner on a leaving member")
		}
	}
	if l := o.learner[t]; l >= 0 && v.ready[l][t] {
		// Whatever the competition: a Worker rejoins only for learners
		// ready since its last join, so this one would never be promoted.
		c.add("promote", c.memberID(l), id, "learner reported ready left learning")
	}
	if len(v.learners[t]) != 1 || !v.tasks[t].Stateful {
		return // competing learners or a stateless task: no promise
	}
	m := v.learners[t][0]
	if v.members[m].Leaving {
		return
	}
	active := o.assigned[m][t]
	switch {
	case v.ready[m][t] && !active:
		c.add("promote", c.memberID(m), id, "ready learner not promoted")
	case !v.ready[m][t] && !active && !o.learning[m][t] && v.owner[t] >= 0:
		// (An ownerless task goes to its warmest copy, maybe not its
		// learner: the orphan rule judges that.)
		c.add("keep-learner", c.memberID(m), id, "not-ready learner dropped")
	}
}

// orphanRules checks where a task nobody held went: to the warmest of its
// eligible copies (copyKey), its learner on ties; a stateless task to a
// learner of it if it has one (stateless tasks have no state to be warm).
func (c *checker) orphanRules(t, owner int) {
	v := c.in
	var learners, copies []int
	for _, m := range v.learners[t] {
		if v.eligible(m) {
			learners = append(learners, m)
		}
	}
	for _, m := range slices.Concat(learners, v.warm[t]) {
		if v.eligible(m) && !slices.Contains(copies, m) {
			copies = append(copies, m)
		}
	}
	switch {
	case !v.tasks[t].Stateful && len(learners) > 0:
		if !slices.Contains(learners, owner) {
			c.add("orphan", c.memberID(owner), v.tasks[t].ID, "stateless orphan given to %s, not to its learner %s", c.memberID(owner), c.memberID(learners[0]))
		}
	case len(copies) > 0 && !v.warmest(t, owner, copies):
		c.add("orphan", c.memberID(owner), v.tasks[t].ID, "orphan given to %s, not to the warmest copy of it (%s)",
			c.memberID(owner), c.memberID(v.warmestOf(t, copies)))
	}
}

// copyKey orders member m's copy of task t by the documented rule, warmest
// first: the smallest reported lag (a ready learner counts as lag 0), a copy
// that reports no lag ranking as one at AcceptableLag, after those that
// report it (rule 13 counts it caught up: it ranks before every copy
// reporting a larger lag); then a learner, then a standby, then state left
// on disk. The second element is 1 when no lag is reported.
func (v *inputView) copyKey(t, m int) [3]int64 {
	learning := slices.Contains(v.learners[t], m)
	lag, ok := v.lag[m][t]
	if learning && v.ready[m][t] {
		lag, ok = 0, true
	}
	key := [3]int64{lag, 0, 2}
	if !ok {
		key[0], key[1] = v.opts.AcceptableLag, 1
	}
	switch {
	case learning:
		key[2] = 0
	case slices.Contains(v.standby[t], m):
		key[2] = 1
	}
	return key
}

// warmest reports whether m is among the warmest of the candidates (copyKey).
func (v *inputView) warmest(t, m int, candidates []int) bool {
	km := v.copyKey(t, m)
	for _, o := range candidates {
		if ko := v.copyKey(t, o); slices.Compare(ko[:], km[:]) < 0 {
			return false
		}
	}
	return slices.Contains(candidates, m)
}

// warmestOf returns the first of the warmest candidates, for messages.
func (v *inputView) warmestOf(t int, candidates []int) int {
	best := candidates[0]
	for _, o := range candidates[1:] {
		if ko, kb := v.copyKey(t, o), v.copyKey(t, best); slices.Compare(ko[:], kb[:]) < 0 {
			best = o
		}
	}
	return best
}

// racks checks issue 4's rack rule where every staying member has a rack:
// a task's copies (its planned owner, the learner if there is one, else the
// owner, and its standbys) are never all in one rack while a member in
// another rack has room: eligible and below its standby quota, docs/rules.md's
// limit. (Spreading over more than two racks is "where possible", not
// checked.)
func (c *checker) racks(t int, o *outputView) {
	v := c.in
	planned := o.owner[t]
	if o.learner[t] >= 0 {
		planned = o.learner[t]
	}
	if planned < 0 || len(o.standbys[t]) == 0 {
		return
	}
	for _, m := range v.members {
		if !m.Leaving && m.Rack == "" {
			return
		}
	}
	rack := v.members[planned].Rack
	for _, m := range o.standbys[t] {
		if v.members[m].Rack != rack {
			return
		}
	}
	for m, mm := range v.members {
		if !mm.Leaving && m != o.owner[t] && m != o.learner[t] && mm.Rack != rack && o.nStandby[m] < o.sbQuota[m] {
			c.add("racks", mm.ID, v.tasks[t].ID, "every copy in rack %s while %s in rack %s has room (%d standbys, quota %d)",
				rack, mm.ID, mm.Rack, o.nStandby[m], o.sbQuota[m])
			return
		}
	}
}

// standbyQuotas returns each member's standby quota as docs/rules.md defines
// it: for staying members, their share of all standbys by capacity, rounded
// so that the quotas add up to the total (largest remainders first; among
// equal ones the member with the least active load, active[m], per
// capacity, then ID order); 0 for leaving members. members are in natural
// ID order.
func standbyQuotas(members []learner.MemberMetadata, standbys int64, active []int64) []int64 {
	quota := make([]int64, len(members))
	var capTotal int64
	var staying []int
	for m, mm := range members {
		if !mm.Leaving {
			capTotal += capacityOf(mm)
			staying = append(staying, m)
		}
	}
	if capTotal == 0 {
		return quota
	}
	left := standbys
	for _, m := range staying {
		quota[m] = standbys * capacityOf(members[m]) / capTotal
		left -= quota[m]
	}
	rem := func(m int) int64 { return standbys * capacityOf(members[m]) % capTotal }
	// (2·active+1)/capacity, the cost of one more task: the lighter first.
	cost := func(a, b int) int64 {
		return (2*active[a]+1)*capacityOf(members[b]) - (2*active[b]+1)*capacityOf(members[a])
	}
	slices.SortStableFunc(staying, func(a, b int) int {
		if c := cmp.Compare(rem(b), rem(a)); c != 0 {
			return c
		}
		return cmp.Compare(cost(a, b), 0)
	})
	for _, m := range staying[:left] {
		quota[m]++
	}
	return quota
}

// budget checks learner.Options.MaxLearners.
func (c *checker) budget(o *outputView) {
	v := c.in
	n := v.opts.MaxLearners
	if n == 0 {
		return
	}
	total, fresh := 0, ""
	for t, l := range o.learner {
		if l < 0 {
			continue
		}
		total++
		if !slices.Contains(v.learners[t], l) && fresh == "" {
			fresh = v.tasks[t].ID
		}
	}
	if total > n && fresh != "" {
		c.add("budget", "", fresh, "new learner placed with %d learners in flight, budget %d", total, n)
	}
}

// memberRules checks the rules about one member at a time.
func (c *checker) memberRules(out []learner.Assignment, o *outputView) {
	v := c.in
	for m, a := range out {
		mm := v.members[m]
		// revoked: exactly held minus kept.
		want := map[string]bool{}
		for id := range v.held[m] {
			if t, ok := v.taskIdx[id]; !ok || !o.assigned[m][t] {
				want[id] = true
			}
		}
		got := map[string]bool{}
		for _, id := range a.Revoked {
			got[id] = true
			if !want[id] {
				if v.held[m][id] {
					c.add("revoked", mm.ID, id, "revoked but still assigned")
				} else {
					c.add("revoked", mm.ID, id, "revoked but not held at join")
				}
			}
		}
		for id := range want {
			if !got[id] {
				c.add("revoked", mm.ID, id, "held at join, not kept, but not revoked")
			}
		}

		if !mm.Leaving {
			continue
		}
		was := func(ids []string) map[string]bool {
			s := map[string]bool{}
			for _, id := range ids {
				s[id] = true
			}
			return s
		}
		learning, standby := was(mm.Learning), was(mm.Standby)
		for _, id := range a.Assigned {
			t := v.taskIdx[id]
			if !v.held[m][id] && !(v.staying == 0 && v.owner[t] < 0) {
				c.add("leaving-gains", mm.ID, id, "leaving member gained an active task")
			}
		}
		for _, id := range a.Learning {
			if !learning[id] {
				c.add("leaving-gains", mm.ID, id, "leaving member gained a learner")
			}
		}
		for _, id := range a.Standby {
			if !standby[id] {
				c.add("leaving-gains", mm.ID, id, "leaving member gained a standby")
			}
		}
	}
}

// plannedLoad is what a member will run once its learners finish, plus its
// standbys: active tasks not learned away, learners and standbys.
func plannedLoad(a learner.Assignment) int {
	return len(a.Assigned) - len(a.Learned) + len(a.Learning) + len(a.Standby)
}

// band checks the 0.5x-2x band of the design's standby section where it is
// meaningful (bandApplies).
func (c *checker) band(out []learner.Assignment, o *outputView) {
	v := c.in
	if !bandApplies(v, out) {
		return
	}
	for m, a := range out {
		if !v.members[m].Leaving && (o.load[m] < o.bandLow[m] || o.load[m] > o.bandHigh[m]) {
			c.add("band", a.MemberID, "", "planned load %d outside 0.5x-2x of its expected load: [%d, %d]", o.load[m], o.bandLow[m], o.bandHigh[m])
		}
	}
}

// minBandExpected is the smallest expected load the band is checked at:
// below it one task more or less already leaves the band (1 task against
// an expected 0.6), so only the integers are being tested.
const minBandExpected = 2

// bandApplies says where the 0.5x-2x band is a promise Assign can keep:
//   - the output has no learners (a balanced stage): while a task is being
//     learned its owner may not hold a standby of it and its learner is
//     not yet its owner, so during a hand-over of most of one member's
//     tasks no placement keeps every member in the band;
//   - Assign was free to balance (freeToBalance): a stateless task placed
//     other than by load is not moved again in the same call;
//   - nothing was under way at join (settledInput);
//   - all staying members of equal capacity, or no standbys (with unequal
//     capacities the standbys of a big member's tasks can only go to small
//     ones);
//   - no racks, or no standbys (rack spread comes before load: with racks
//     a, b, c and three copies of each task, rack a's members share the
//     rack-a copies whatever their load);
//   - at least Standbys+2 staying members (otherwise every standby
//     placement is forced);
//   - every staying member's expected load is at least minBandExpected.
//
// The band itself is rounded outward to whole tasks (see outputView).
func bandApplies(v *inputView, out []learner.Assignment) bool {
	if hasLearners(out) || !freeToBalance(v) || !settledInput(v) || v.staying < v.opts.Standbys+2 {
		return false
	}
	var total, capTotal, minCap, maxCap int64
	for m, mm := range v.members {
		if mm.Leaving {
			continue
		}
		cp := capacityOf(mm)
		total += int64(plannedLoad(out[m]))
		capTotal += cp
		if minCap == 0 || cp < minCap {
			minCap = cp
		}
		maxCap = max(maxCap, cp)
	}
	racks := slices.ContainsFunc(v.members, func(m learner.MemberMetadata) bool { return m.Rack != "" })
	if v.opts.Standbys > 0 && (minCap != maxCap || racks) {
		return false
	}
	return capTotal > 0 && total*minCap >= minBandExpected*capTotal
}

// imbalance describes the first pair of staying members whose active loads
// are not balanced, or returns "". Balanced means no single move of a task
// lowers the sum over members of load²/capacity, i.e. for every pair h, l:
// (2·load(h)−1)/cap(h) <= (2·load(l)+1)/cap(l). With equal capacities this
// is "loads differ by at most one".
func imbalance(in []learner.MemberMetadata, out []learner.Assignment) string {
	v := newInputView(nil, learner.Options{}, in)
	for h, a := range out {
		for l, b := range out {
			if v.members[h].Leaving || v.members[l].Leaving {
				continue
			}
			ch, cl := capacityOf(v.members[h]), capacityOf(v.members[l])
			lh, ll := int64(len(a.Assigned)), int64(len(b.Assigned))
			if (2*lh-1)*cl > (2*ll+1)*ch {
				return fmt.Sprintf("%s runs %d tasks (capacity %d), %s runs %d (capacity %d)", a.MemberID, lh, ch, b.MemberID, ll, cl)
			}
		}
	}
	return ""
}

func capacityOf(m learner.MemberMetadata) int64 {
	if m.Capacity <= 0 {
		return 1
	}
	return int64(m.Capacity)
}

// warmMoveInFlight reports whether out keeps extra standbys (rule
// warm-copies): a standby move whose new copy is still replaying. Reporting
// such an output back releases the old copies, so it is no fixed point.
func warmMoveInFlight(tasks []learner.Task, opts learner.Options, in []learner.MemberMetadata, out []learner.Assignment) bool {
	v := newInputView(tasks, opts, in)
	if len(out) != len(v.members) {
		return false
	}
	o := (&checker{in: v}).index(out)
	for t := range tasks {
		if len(o.standbys[t]) > v.wantStandbys(t, o.owner[t], o.learner[t]) {
			return true
		}
	}
	return false
}
