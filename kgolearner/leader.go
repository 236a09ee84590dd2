package kgolearner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncPlan is the leader's answer, one entry per member, sorted by member ID.
type syncPlan []kmsg.SyncGroupRequestGroupAssignment

func (p syncPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return p }

// plan decodes every member, assigns, defers what another member still
// owns, and encodes each member's partitions and tags.
//
// The leader handles every partition of the group a few times per
// rebalance, so its state lives in slices indexed by task, partition (see
// topology) and member (its position in the JoinGroup response), taken
// from the Balancer's scratch (scratch.go) or allocated once per
// rebalance, and tasks are indices from the members' bytes to the
// assignments' (DecodeIndexedMember, AssignIndexed, AppendIndexedAssignment):
// with maps keyed by IDs and lists built per member, the leader took 2-3
// times franz-go's cooperative-sticky balance on the same group, ten times
// Assign itself, and with task IDs that Assign looked up again, 0.18-0.26
// of it (BenchmarkLeaderRebalance). Task IDs are built only for the Round.
func (b *Balancer) plan(j *joined, topics map[string]int32) (syncPlan, error) {
	if j.claims == nil {
		return nil, errors.New("kgolearner: the group was balanced already: kgo balances each JoinGroup response once")
	}
	c, s := j.claims, j.scratch
	var round Round
	differs, topicsErr := b.topo.checkTopics(topics)
	round.Err = topicsErr
	members := make([]learner.IndexedMember, len(c.gen))
	position := make(map[string]int32, len(c.gen)) // learner ID -> member
	marks := taskMarks{n: len(b.topo.tasks)}
	in := activeIn{idx: emptied(s.active, len(c.whole)), at: make([]int32, len(c.gen)+1)}
	newest := int32(-1)
	for _, g := range c.gen {
		newest = max(newest, g)
	}
	for m := range c.gen {
		id := LearnerID(j.members[m].MemberID)
		position[id] = int32(m)
		mm, err := b.codec.DecodeIndexedMember(j.userData[m])
		if err != nil {
			// Another topology keeps what does not depend on it
			// (leaving, capacity, tasks sent by name); anything else
			// keeps nothing.
			if !errors.Is(err, wire.ErrTopologyMismatch) {
				mm = learner.IndexedMember{}
			}
			round.Undecoded++
			c.undecoded[m] = true
		}
		// Active tasks travel as the partitions the member owns (see
		// JoinGroupMetadata): it runs them, except those it gave up at
		// this join (Revoked) and stale claims.
		anyRevoked := len(mm.Revoked) > 0
		if anyRevoked {
			marks.reset()
			for _, t := range mm.Revoked {
				marks.set(int(t), listRevoked)
			}
		}
		from := len(in.idx)
		for _, t := range c.whole[c.wholeAt[m]:c.wholeAt[m+1]] {
			if anyRevoked {
				if _, revoked := marks.get(int(t)); revoked {
					continue
				}
			}
			if c.current(int32(m), int(t)) {
				in.idx = append(in.idx, t)
			}
		}
		in.at[m+1] = int32(len(in.idx))
		var active []int32
		if len(in.idx) > from {
			active = in.idx[from:len(in.idx):len(in.idx)]
		}
		reported := len(mm.Assigned) + len(mm.Revoked) + len(mm.Learning) + len(mm.Ready) + len(mm.Standby)
		mm.Assigned = append(active, mm.Assigned...)
		if reported > 0 {
			// Owned partitions alone cannot conflict: only user data can.
			mm = disjoint(mm, &marks)
		}
		if c.gen[m] < newest {
			mm = b.dropReadiness(mm)
		}
		mm.ID = id
		if rack := j.racks[m]; mm.Rack == "" && rack != nil && *rack != "" {
			mm.Rack = LearnerID(*rack)
		}
		members[m] = mm
	}

	if round.Err != nil {
		// Failing the rebalance would not stop the group: kgo takes the
		// leader's tasks from it (OnPartitionsLost) and rejoins, while the
		// others loop in their join without committing, until an operator
		// fixes the topics. The tasks of the subtopologies that differ stay
		// where they are instead (keepMismatched), the others follow
		// Assign's rules, and the error is logged on every rebalance until
		// then.
		b.logError(round.Err)
	}
	out, err := b.assignor.AssignIndexed(members)
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w", err)
	}
	if differs != nil {
		out = b.keepMismatched(out, members, position, differs)
	}
	if b.hooks.Rebalanced != nil {
		// Only the Round needs the reports and the plan by ID, and before
		// hand-over edits the plan's lists.
		if round.Members, err = byID(members, b.assignor.MemberByID); err != nil {
			return nil, err
		}
		if round.Planned, err = byID(out, b.assignor.AssignmentByID); err != nil {
			return nil, err
		}
	}
	memberOf := make([]int32, len(out)) // output -> member
	for i, as := range out {
		memberOf[i] = position[as.MemberID]
	}
	s.active = in.idx
	h := b.handOver(c, &in, memberOf, out, s)
	if round.FollowUp = b.followUpComing(c, memberOf, members, h); round.FollowUp {
		b.keepUnreadyLearned(&h, memberOf, members)
	}

	plan := make(syncPlan, 0, len(h.sent))
	w := assignmentWriter{t: b.topo}
	for i := range h.sent {
		userData, err := b.assignmentUserData(h.sent[i])
		if err != nil {
			return nil, fmt.Errorf("kgolearner: %w", err)
		}
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = j.members[memberOf[i]].MemberID
		// Each member's bytes in an allocation of their exact size: one
		// buffer for all grew by copying six times the group's bytes.
		sa.MemberAssignment = w.append(nil, h.sent[i].Assigned, userData)
		plan = append(plan, sa)
	}
	slices.SortFunc(plan, func(x, y kmsg.SyncGroupRequestGroupAssignment) int { return strings.Compare(x.MemberID, y.MemberID) })
	if b.hooks.Rebalanced != nil {
		if round.Assignments, err = byID(h.sent, b.assignor.AssignmentByID); err != nil {
			return nil, err
		}
		for t, task := range b.topo.tasks {
			if h.deferred[t] != notDeferred {
				round.Deferred = append(round.Deferred, task.ID)
			}
			if h.deferred[t] == withheld {
				round.Withheld = append(round.Withheld, task.ID)
			}
		}
		b.hooks.Rebalanced(round)
	}
	// Done with the claims and the scratch: the next rebalance may take it.
	j.claims, j.scratch = nil, nil
	b.spare.Store(s)
	return plan, nil
}

// dropReadiness withdraws the readiness of a report older than the newest
// generation in the group: its Ready and the lags that make a learner
// ready (Options.IndexedLearnerReady). Such a report is either a static
// member's that missed this rebalance's join, which a real broker lists
// with the metadata of its last JoinGroup while its session lasts, or the
// first join of a member back after missing one (or new: generation -1);
// the leader cannot tell which. Promoted on a stale report, a learner that
// is away would get its task while its owner released it, and the task
// would run nowhere until the member returned or its session expired
// (TestStaticLearnerMissesJoin: 3.6 s, all of the test's absence). So the
// task stays with its owner, and a member that is back and listed it
// ready gets its learner back, chases the move with a rejoin (see chase)
// and takes the task in the next rebalance, one rebalance late (one ready
// by its lag alone, at the next rebalance). Lags beyond AcceptableLag make
// no learner ready and stay, as do the other lists: an absent owner's
// claims keep its tasks from anyone else.
func (b *Balancer) dropReadiness(mm learner.IndexedMember) learner.IndexedMember {
	mm.Ready = nil
	if o := b.assignor.Options(); o.AcceptableLag > 0 {
		// A search per lag, not a scan: Learning is in topology order as
		// decoded, but for the tasks a member of another topology sent
		// by name (in the order sent), which a sorted copy puts right.
		learning := mm.Learning
		if !slices.IsSorted(learning) {
			learning = slices.Sorted(slices.Values(learning))
		}
		mm.Lag = slices.DeleteFunc(slices.Clone(mm.Lag), func(l learner.IndexedLag) bool {
			_, found := slices.BinarySearch(learning, l.Task)
			return l.Lag <= o.AcceptableLag && found
		})
	}
	return mm
}

// keepClaims is the plan for tasks the leader cannot assign (the cluster's
// topics do not match their subtopology; keepMismatched uses its plan for
// those tasks only): every member keeps what it reports, its active tasks
// (those it released at this join too), learners and standbys, and a task
// two members report active stays with the first.
// Nothing moves, and the hand-over still keeps from a member what another
// member owns. A learner reported ready stops: never promoted here, it would
// look to its member like a deferred move, which the member chases with a
// rejoin (PartitionsAssigned), and the group would rebalance every
// heartbeat interval until the topics are fixed. Its state stays with the
// member, reported by lag once the application calls SetLag.
func keepClaims(members []learner.IndexedMember, tasks int) []learner.IndexedAssignment {
	out := make([]learner.IndexedAssignment, len(members))
	kept := make([]bool, tasks)
	for m, mm := range members {
		as := learner.IndexedAssignment{MemberID: mm.ID, Stale: slices.SortedFunc(slices.Values(mm.Stale), learner.CompareIDs)}
		for _, t := range slices.Sorted(slices.Values(slices.Concat(mm.Assigned, mm.Revoked))) {
			if !kept[t] {
				kept[t] = true
				as.Assigned = append(as.Assigned, t)
			}
		}
		// disjoint left each task in one of the member's lists.
		for _, t := range slices.Sorted(slices.Values(mm.Learning)) {
			if !slices.Contains(mm.Ready, t) {
				as.Learning = append(as.Learning, t)
			}
		}
		as.Standby = slices.Sorted(slices.Values(mm.Standby))
		out[m] = as
	}
	return out
}

// keepMismatched gives the tasks of the subtopologies whose topics differ
// from the cluster's (differs, by subtopology) keepClaims' plan in out,
// Assign's plan: they stay with the members that claim them, and a task of
// theirs nobody claims stays unassigned, while every other task follows
// Assign's rules, so that a crashed member's tasks of the matching
// subtopologies move on. Each task takes all its roles from one of the two
// plans, so none is given twice. out[i] is the plan of members[position of
// its ID]. Assign balanced the members counting the kept tasks where it
// would have put them, so loads may be a few tasks off balance until the
// topics match. The lists are new: Assign's may be the members' own.
func (b *Balancer) keepMismatched(out []learner.IndexedAssignment, members []learner.IndexedMember, position map[string]int32, differs []bool) []learner.IndexedAssignment {
	kept := keepClaims(members, len(b.topo.tasks))
	merge := func(planned, keep []int32) []int32 {
		var l []int32
		for _, t := range planned {
			if !differs[b.topo.taskSub[t]] {
				l = append(l, t)
			}
		}
		for _, t := range keep {
			if differs[b.topo.taskSub[t]] {
				l = append(l, t)
			}
		}
		slices.Sort(l)
		return l
	}
	for i := range out {
		as, k := &out[i], &kept[position[out[i].MemberID]]
		as.Assigned = merge(as.Assigned, k.Assigned)
		as.Revoked = merge(as.Revoked, nil)
		as.Learning = merge(as.Learning, k.Learning)
		as.Learned = merge(as.Learned, nil)
		as.Standby = merge(as.Standby, k.Standby)
	}
	return out
}

// activeIn is every member's active tasks as Assign got them: member m's
// are idx[at[m]:at[m+1]] (the start of its report's Assigned), in topology
// order.
type activeIn struct {
	idx, at []int32
}

// claims is who reports owning what, read from the members' owned
// partitions. Members are positions in the JoinGroup response.
type claims struct {
	gen []int32 // per member: the generation it last synced in
	// task has one entry per task, and one more that ends the last task's
	// claimers: by[task[t].at:task[t+1].at] are the members owning one of
	// task t's partitions, in member order.
	task []taskClaims
	by   []int32
	// whole[wholeAt[m]:wholeAt[m+1]] are the tasks all of whose partitions
	// member m owns, ascending.
	wholeAt, whole []int32
	// strays is set when a member owns a partition of no task (a topic or
	// partition the topology lacks): no assignment gives it back.
	strays bool
	// undecoded is, per member, whether the leader could not read its
	// user data (another topology or wire version, or no learner at all):
	// such a member does not read learned tags either, so it never
	// releases a task at a join.
	undecoded []bool
}

// taskClaims is one task's claims. Reading the claims touches each task
// once per partition; one struct keeps those touches on one cache line,
// and eight bytes a task keep the leader's memory small.
type taskClaims struct {
	at int32 // see claims.task; a count while the claims are read
	// seen is, while the claims are read, the last member to claim the
	// task (its position plus one).
	seen int32
}

// current reports whether member m's claim on task t (m claims t) is from
// the newest generation that claims t: a member that missed rebalances (a
// zombie) may still report partitions that have moved on since (KIP-792).
// Its claim blocks a hand-over all the same.
func (c *claims) current(m int32, t int) bool {
	cs := c.claimers(t)
	if len(cs) == 1 {
		return true // m's alone: no need to read who (a cache miss)
	}
	for _, o := range cs {
		if c.gen[o] > c.gen[m] {
			return false
		}
	}
	return true
}

// claimers returns the members owning one of task t's partitions.
func (c *claims) claimers(t int) []int32 { return c.by[c.task[t].at:c.task[t+1].at] }

// ownsWhole reports whether member m owns every partition of task t. A
// claim of some of them (members of another topology, which split the
// task's topics between tasks) says nothing of who owns the others.
func (c *claims) ownsWhole(m, t int32) bool {
	_, found := slices.BinarySearch(c.whole[c.wholeAt[m]:c.wholeAt[m+1]], t)
	return found
}

// claimsBuilder reads the members' owned partitions into claims, one
// member at a time. A partition reported twice by one member counts once,
// and partitions of no task are ignored.
type claimsBuilder struct {
	t *topology
	c *claims
	s *scratch
	// partSeen is, per partition of a subtopology of several topics, the
	// last member to report it (its position plus one): a repeat must not
	// count as another of the task's partitions. (A task of one topic has
	// one partition: taskClaims.seen says it all.) owned is, per task of
	// such a subtopology, how many of its partitions its last claimer owns.
	partSeen, owned []int32
	// Each member's claimed tasks, back to back; a claim of some of its
	// task's partitions only is the task's complement (^task, negative).
	claimed, claimedAt []int32
	partial            bool // some claim is partial
	// lastPos[k] is the position of the last member's k-th owned topic, -1
	// for none: members report their topics in the same order, so a
	// comparison with it mostly spares hashing the topic.
	lastPos []int
}

// newClaims returns a builder of the claims of members, in s's memory.
func (t *topology) newClaims(members int, s *scratch) *claimsBuilder {
	nt := len(t.tasks)
	s.task = zeroed(s.task, nt+1)
	c := &claims{gen: make([]int32, members), task: s.task, wholeAt: make([]int32, members+1), undecoded: make([]bool, members)}
	cb := &claimsBuilder{t: t, c: c, s: s, claimed: emptied(s.claimed, nt), claimedAt: make([]int32, members+1)}
	if t.nParts > nt {
		cb.partSeen, cb.owned = make([]int32, t.nParts), make([]int32, nt)
	}
	return cb
}

// add reads member m's report; members come in order.
func (cb *claimsBuilder) add(m int, meta *consumerMetadata) {
	t, c := cb.t, cb.c
	c.gen[m] = meta.generation
	stamp := int32(m + 1)
	// The list grows in a local: an append to a field of cb writes a slice
	// through a pointer, a write barrier while the collector runs.
	claimed, whole := cb.claimed, int32(0)
	owned := meta.ownedPartitions()
	for k := 0; ; k++ {
		topic, partitions, ok := owned.next()
		if !ok {
			break
		}
		if k == len(cb.lastPos) {
			cb.lastPos = append(cb.lastPos, -1)
		}
		pos := cb.lastPos[k]
		if pos < 0 || t.topics[pos] != string(topic) {
			if pos, ok = t.byTopic[string(topic)]; !ok {
				c.strays = c.strays || len(partitions) > 0
				continue
			}
			cb.lastPos[k] = pos
		}
		sub := t.topicSub[pos]
		np, nTopics, first := t.subs[sub].Partitions, int32(len(t.subs[sub].Topics)), t.first[sub]
		for at := 0; at < len(partitions); at += 4 {
			p := int32(binary.BigEndian.Uint32(partitions[at:]))
			if p < 0 || p >= np {
				c.strays = true
				continue
			}
			task := first + int(p)
			tc := &c.task[task]
			if nTopics == 1 {
				if tc.seen != stamp {
					tc.seen = stamp
					claimed = append(claimed, int32(task))
					tc.at++
					whole++
				}
				continue
			}
			if cb.partSeen[t.partBase[pos]+int(p)] == stamp {
				continue
			}
			cb.partSeen[t.partBase[pos]+int(p)] = stamp
			if tc.seen != stamp {
				tc.seen, cb.owned[task] = stamp, 0
				claimed = append(claimed, int32(task))
				tc.at++
			}
			if cb.owned[task]++; cb.owned[task] == nTopics {
				whole++
			}
		}
	}
	if cb.partSeen != nil { // a subtopology has several topics: mark the partial claims
		for k := cb.claimedAt[m]; k < int32(len(claimed)); k++ {
			task := claimed[k]
			if n := int32(len(t.subs[t.taskSub[task]].Topics)); n > 1 && cb.owned[task] < n {
				claimed[k], cb.partial = ^task, true
			}
		}
	}
	cb.claimed = claimed
	cb.claimedAt[m+1] = int32(len(claimed))
	c.wholeAt[m+1] = c.wholeAt[m] + whole
}

// finish returns the claims of every member added.
func (cb *claimsBuilder) finish() *claims {
	c, nt := cb.c, len(cb.t.tasks)
	// at holds claim counts: turn them into the end of each task's claims,
	// then fill back to front, so that each task's claimers come in member
	// order and at ends where they begin.
	for task := 1; task < nt; task++ {
		c.task[task].at += c.task[task-1].at
	}
	c.task[nt].at = int32(len(cb.claimed))
	cb.s.claimed = cb.claimed
	c.by = zeroed(cb.s.by, len(cb.claimed))
	cb.s.by = c.by
	var partial []bool // per claim in by
	if cb.partial {
		partial = make([]bool, len(cb.claimed))
	}
	for m := len(c.gen) - 1; m >= 0; m-- {
		for _, task := range cb.claimed[cb.claimedAt[m]:cb.claimedAt[m+1]] {
			whole := task >= 0
			if !whole {
				task = ^task
			}
			c.task[task].at--
			c.by[c.task[task].at] = int32(m)
			if !whole {
				partial[c.task[task].at] = true
			}
		}
	}
	// Members report their partitions by topic name, not in task order:
	// reading the whole claims back by task lists each member's ascending,
	// in a pass over the claims instead of a sort per member (which was a
	// third of reading the claims, BenchmarkLeaderRebalance). They fill
	// claimed's memory, free now that by holds the claims.
	c.whole = cb.claimed[:c.wholeAt[len(c.gen)]]
	next := slices.Clone(c.wholeAt)
	for task := range nt {
		for k := c.task[task].at; k < c.task[task+1].at; k++ {
			if partial == nil || !partial[k] {
				m := c.by[k]
				c.whole[next[m]] = int32(task)
				next[m]++
			}
		}
	}
	return c
}

// assignmentUserData encodes the tags of a member's assignment: its
// learned, learning, revoked and standby tasks. The coordinator's member
// ID says whose it is, so it carries the placeholder workerID; the active
// tasks travel as partitions, so its assigned list holds only the learned
// ones (the wire format wants learned tasks among the assigned): for 100
// tasks a member that saves 200 bytes in the group's stored metadata.
// ParseSyncAssignment rebuilds the list. Most members have no tags: they
// share one encoding, made by New.
func (b *Balancer) assignmentUserData(as learner.IndexedAssignment) ([]byte, error) {
	if len(as.Revoked)+len(as.Learning)+len(as.Learned)+len(as.Standby)+len(as.Stale) == 0 {
		return b.untagged, nil
	}
	return b.codec.AppendIndexedAssignment(nil, learner.IndexedAssignment{MemberID: workerID, Assigned: as.Learned, Learned: as.Learned,
		Learning: as.Learning, Revoked: as.Revoked, Standby: as.Standby, Stale: as.Stale})
}

// The lists of a member's report in the order disjoint gives them
// precedence.
const (
	listAssigned uint8 = iota
	listRevoked
	listLearning
	listStandby
)

// disjoint drops the tasks a member lists twice (a report from a buggy or
// hostile member, or owned partitions that contradict its user data), so
// that one bad report cannot fail the whole rebalance: a task keeps its
// first role in the order assigned, revoked, learning, standby, and Ready
// keeps only learner tasks. A list loses its repeats in a new slice; the
// others stay as they are. (Stale cannot conflict: the wire format refuses
// a task sent by name twice, and it has no index.) marks is scratch space.
func disjoint(m learner.IndexedMember, marks *taskMarks) learner.IndexedMember {
	marks.reset()
	for i, l := range [...]*[]int32{&m.Assigned, &m.Revoked, &m.Learning, &m.Standby} {
		var kept []int32
		dropped := false
		for at, t := range *l {
			if _, dup := marks.get(int(t)); dup {
				if !dropped {
					kept, dropped = append([]int32(nil), (*l)[:at]...), true
				}
				continue
			}
			marks.set(int(t), uint8(i))
			if dropped {
				kept = append(kept, t)
			}
		}
		if dropped {
			*l = kept
		}
	}
	m.Ready = slices.DeleteFunc(slices.Clone(m.Ready), func(t int32) bool {
		r, ok := marks.get(int(t))
		return !ok || r != listLearning
	})
	return m
}

// taskMarks is a map from task index to a small value that empties in
// constant time: an entry counts only when its stamp is the current one.
// It allocates on first use.
type taskMarks struct {
	n     int // tasks
	stamp []uint32
	val   []uint8
	cur   uint32
}

func (s *taskMarks) reset() {
	if s.stamp == nil {
		s.stamp, s.val = make([]uint32, s.n), make([]uint8, s.n)
	}
	s.cur++
}

func (s *taskMarks) set(t int, v uint8) { s.stamp[t], s.val[t] = s.cur, v }

func (s *taskMarks) get(t int) (uint8, bool) {
	if s.stamp[t] != s.cur {
		return 0, false
	}
	return s.val[t], true
}

// handOff is handOver's result: per member of Assign's output, what it is
// sent (Assign's plan with the deferrals applied, every list by index,
// ascending), and by task index, which tasks were deferred. The leader
// sends active tasks as partitions and the tags by index: task IDs are
// built only for the Round (byID).
type handOff struct {
	sent     []learner.IndexedAssignment
	deferred []deferral
}

// byID converts the Round's reports and plans to task IDs with the
// Assignor's own conversion (MemberByID, AssignmentByID). The indices come
// from AssignIndexed, which checked them: an error here is a bug.
func byID[T, U any](in []T, conv func(T) (U, error)) ([]U, error) {
	out := make([]U, len(in))
	for i, x := range in {
		var err error
		if out[i], err = conv(x); err != nil {
			return nil, fmt.Errorf("kgolearner: %w", err)
		}
	}
	return out, nil
}

// handOver applies Kafka's constraint to Assign's result: a partition goes
// to a member only when no other member reports owning it, since Kafka
// cannot make that member stop first. A task Assign moves away from a
// member that still owns it, by a claim from the newest generation that
// claims it, stays with that member for one more generation, tagged learned,
// and its new owner learns it (a stateless learner has nothing to replay);
// the owner releases it when the next rebalance begins, and that rebalance
// moves it. The keeper must own all the task's partitions, or be its only
// claimer: one owning some of them would be sent the others, which another
// member may own (members of another topology split a task's topics between
// tasks). A member whose user data the leader could not read cannot keep
// it either: it ignores the learned tag and would never release the task,
// and a learner reported ready and deferred again at every rebalance makes
// its member rejoin at once, a rebalance after another through a rolling
// upgrade. When no member can keep the task (only stale claims of a zombie,
// KIP-792, claims of some of its partitions by several members, or claims
// of undecoded members hold it), nobody runs it for one generation: its
// claimers lose its partitions (kgo's cooperative revoke, which commits
// them), and kgo's follow-up rebalance assigns it. Either way the task is
// deferred. A member that owns
// a whole task by a current claim keeps it whoever else claims it: that
// creates no new overlap; so does a member given a task that nobody else
// claims.
//
// memberOf maps out's positions to members. The lists of out are edited in
// place: they are the leader's own.
func (b *Balancer) handOver(c *claims, in *activeIn, memberOf []int32, out []learner.IndexedAssignment, s *scratch) handOff {
	outOf := make([]int32, len(c.gen)) // member -> output
	for i := range out {
		outOf[memberOf[i]] = int32(i)
	}
	s.deferred = zeroed(s.deferred, len(b.topo.tasks))
	h := handOff{sent: out, deferred: s.deferred}
	touched := make([]bool, len(out)) // members whose lists a deferral changes
	var keeps []keep
	for i, as := range out {
		mi := memberOf[i]
		// Most of what Assign gives a member it got as active, and both
		// lists are in topology order: a merge finds them. The member runs
		// such a task by a current claim, so it keeps it whoever else
		// claims it: no claim to read (a cache miss per task).
		mine, next := in.idx[in.at[mi]:in.at[mi+1]], 0
		for _, t := range as.Assigned {
			for next < len(mine) && mine[next] < t {
				next++
			}
			if next < len(mine) && mine[next] == t {
				next++
				continue
			}
			cs := c.claimers(int(t))
			owns, other := false, false
			for _, m := range cs {
				if m == mi {
					owns = c.current(m, int(t)) && c.ownsWhole(m, t)
				} else {
					other = true
				}
			}
			if owns || !other {
				continue
			}
			h.deferred[t], touched[i] = withheld, true // i learns the task instead of running it
			k := slices.IndexFunc(cs, func(m int32) bool {
				return m != mi && !c.undecoded[m] && c.current(m, int(t)) && (c.ownsWhole(m, t) || len(cs) == 1)
			})
			if k < 0 {
				continue // nobody can keep it: withheld
			}
			j := outOf[cs[k]] // keeps running it, tagged learned, for one generation
			h.deferred[t], touched[j] = kept, true
			keeps = append(keeps, keep{j, t})
		}
	}
	// The kept tasks by keeper, placed by counting rather than sorted
	// (the sort was a tenth of handOver, BenchmarkLeaderRebalance): each
	// keeper's are kept[at[j]:at[j+1]], a few tasks to sort.
	at := make([]int32, len(out)+1)
	for _, k := range keeps {
		at[k.keeper+1]++
	}
	for j := range out {
		at[j+1] += at[j]
	}
	kept, next := make([]int32, len(keeps)), slices.Clone(at)
	for _, k := range keeps {
		kept[next[k.keeper]] = k.task
		next[k.keeper]++
	}
	for i := range out {
		if touched[i] {
			mine := kept[at[i]:at[i+1]:at[i+1]] // the tasks i keeps
			slices.Sort(mine)
			h.redo(i, mine)
		}
	}
	return h
}

// keep is a task that its owner keeps one more generation (see handOver):
// keeper is its position in Assign's output.
type keep struct{ keeper, task int32 }

// redo rewrites member i's lists after its deferrals: the deferred tasks of
// its active ones move to its learning ones, and the tasks it keeps join
// its active and learned ones and leave Revoked, Learning and Standby
// (Assign may have planned the keeper as the task's learner: a Worker
// refuses an assignment that both runs and learns a task). Every list
// stays ascending. Assigned and Standby may be the lists the member
// reported (AssignIndexed returns those it keeps), so they are filtered
// into new slices, never in place.
func (h *handOff) redo(i int, keeps []int32) {
	as := &h.sent[i]
	stay := make([]int32, 0, len(as.Assigned))
	var moved []int32
	for _, t := range as.Assigned {
		if h.deferred[t] == notDeferred {
			stay = append(stay, t)
		} else {
			moved = append(moved, t)
		}
	}
	// Learned tasks are among i's assigned ones: a deferred one is i's to
	// learn.
	learned := slices.DeleteFunc(as.Learned, func(t int32) bool { return h.deferred[t] != notDeferred })
	as.Assigned, as.Learned = stay, learned
	if len(keeps) > 0 {
		as.Assigned, as.Learned = merge(stay, keeps), merge(learned, keeps)
		kept := func(t int32) bool {
			_, found := slices.BinarySearch(keeps, t)
			return found
		}
		as.Revoked = slices.DeleteFunc(as.Revoked, kept)
		as.Standby = slices.DeleteFunc(slices.Clone(as.Standby), kept)
		as.Learning = slices.DeleteFunc(slices.Clone(as.Learning), kept)
	}
	if len(moved) > 0 {
		as.Learning = merge(as.Learning, moved)
	}
}

// merge returns the ascending x and y, disjoint, merged in a new slice.
func merge(x, y []int32) []int32 {
	out := make([]int32, 0, len(x)+len(y))
	for len(x) > 0 && len(y) > 0 {
		if x[0] < y[0] {
			out, x = append(out, x[0]), x[1:]
		} else {
			out, y = append(out, y[0]), y[1:]
		}
	}
	return append(append(out, x...), y...)
}

// deferral is what handOver did with a task Assign moved.
type deferral uint8

const (
	notDeferred deferral = iota
	kept                 // its owner keeps it one more generation
	withheld             // nobody runs it for one generation (nobody can keep it)
)

// LearnerID turns a coordinator's member ID (or a rack) into a learner ID:
// letters, digits, '_' and '-' stay, every other byte (including '.')
// becomes '.' and two hex digits, so distinct IDs stay distinct. IDs that
// would grow past 255 bytes are cut and suffixed with a hash.
func LearnerID(kafkaID string) string {
	if len(kafkaID) <= 255 && kafkaID != "" && strings.IndexFunc(kafkaID, func(r rune) bool { return !learnerIDByte(r) }) < 0 {
		return kafkaID // kgo's own member IDs: nothing to escape, nothing to allocate
	}
	var sb strings.Builder
	for i := 0; i < len(kafkaID); i++ {
		c := kafkaID[i]
		if learnerIDByte(rune(c)) {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, ".%02x", c)
		}
	}
	id := sb.String()
	if len(id) > 255 || id == "" {
		h := fnv.New64a()
		h.Write([]byte(kafkaID))
		id = fmt.Sprintf("%.200s-%016x", id, h.Sum64())
	}
	return id
}

// learnerIDByte reports whether LearnerID keeps c as it is.
func learnerIDByte(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}
