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
// rebalance, and task IDs are the topology's own strings: with
// maps keyed by IDs and lists built per member, the leader took 2-3 times
// franz-go's cooperative-sticky balance on the same group, ten times
// Assign itself (BenchmarkLeaderRebalance).
func (b *Balancer) plan(j *joined, topics map[string]int32) (syncPlan, error) {
	if j.claims == nil {
		return nil, errors.New("kgolearner: the group was balanced already: kgo balances each JoinGroup response once")
	}
	for i, s := range b.topo.subs {
		for _, topic := range s.Topics {
			n, ok := topics[topic]
			if !ok {
				return nil, fmt.Errorf("kgolearner: topic %q of subtopology %d is not in the cluster's metadata", topic, i)
			}
			if n != s.Partitions {
				return nil, fmt.Errorf("kgolearner: topic %q of subtopology %d has %d partitions in the cluster, the topology declares %d",
					topic, i, n, s.Partitions)
			}
		}
	}

	c, s := j.claims, j.scratch
	round := Round{Members: make([]learner.MemberMetadata, len(c.gen))}
	position := make(map[string]int32, len(c.gen)) // learner ID -> member
	marks := taskMarks{n: len(b.topo.tasks)}
	in := activeIn{ids: make([]string, 0, len(c.whole)), idx: emptied(s.active, len(c.whole)), at: make([]int32, len(c.gen)+1)}
	for m := range c.gen {
		id := LearnerID(j.members[m].MemberID)
		position[id] = int32(m)
		mm, err := b.codec.DecodeMember(j.userData[m])
		if err != nil {
			// Another topology keeps what does not depend on it
			// (leaving, capacity, tasks sent by name); anything else
			// keeps nothing.
			if !errors.Is(err, wire.ErrTopologyMismatch) {
				mm = learner.MemberMetadata{}
			}
			round.Undecoded++
		}
		// Active tasks travel as the partitions the member owns (see
		// JoinGroupMetadata): it runs them, except those it gave up at
		// this join (Revoked) and stale claims.
		anyRevoked := len(mm.Revoked) > 0
		if anyRevoked {
			marks.reset()
			for _, r := range mm.Revoked {
				if t := b.assignor.TaskIndex(r); t >= 0 {
					marks.set(t, listRevoked)
				}
			}
		}
		from := len(in.ids)
		for _, t := range c.whole[c.wholeAt[m]:c.wholeAt[m+1]] {
			if anyRevoked {
				if _, revoked := marks.get(int(t)); revoked {
					continue
				}
			}
			if c.current(int32(m), int(t)) {
				in.ids, in.idx = append(in.ids, b.topo.tasks[t].ID), append(in.idx, t)
			}
		}
		in.at[m+1] = int32(len(in.ids))
		var active []string
		if len(in.ids) > from {
			active = in.ids[from:len(in.ids):len(in.ids)]
		}
		reported := len(mm.Assigned) + len(mm.Revoked) + len(mm.Learning) + len(mm.Ready) + len(mm.Standby)
		mm.Assigned = append(active, mm.Assigned...)
		if reported > 0 {
			// Owned partitions alone cannot conflict: only user data can.
			mm = b.disjoint(mm, &marks)
		}
		mm.ID = id
		if rack := j.racks[m]; mm.Rack == "" && rack != nil && *rack != "" {
			mm.Rack = LearnerID(*rack)
		}
		round.Members[m] = mm
	}

	out, err := b.assignor.Assign(round.Members)
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w", err)
	}
	round.Planned = out
	memberOf := make([]int32, len(out)) // output -> member
	for i, as := range out {
		memberOf[i] = position[as.MemberID]
	}
	s.active = in.idx
	h, err := b.handOver(c, &in, memberOf, out, s)
	if err != nil {
		return nil, err
	}
	if round.FollowUp = b.followUpComing(c, memberOf, round.Members, h); round.FollowUp {
		b.keepUnreadyLearned(&h, memberOf, round.Members)
	}

	plan := make(syncPlan, 0, len(h.sent))
	w := assignmentWriter{t: b.topo}
	for i, as := range h.sent {
		userData, err := b.assignmentUserData(h.learned[i], h.learning[i], as.Revoked, as.Standby)
		if err != nil {
			return nil, fmt.Errorf("kgolearner: %w", err)
		}
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = j.members[memberOf[i]].MemberID
		// Each member's bytes in an allocation of their exact size: one
		// buffer for all grew by copying six times the group's bytes.
		sa.MemberAssignment = w.append(nil, h.active[i], userData)
		plan = append(plan, sa)
	}
	slices.SortFunc(plan, func(x, y kmsg.SyncGroupRequestGroupAssignment) int { return strings.Compare(x.MemberID, y.MemberID) })
	if b.hooks.Rebalanced != nil {
		// Only the Round needs the sent active tasks as IDs: the members
		// get partitions.
		round.Assignments = b.assignments(h)
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

// activeIn is every member's active tasks as Assign got them: member m's
// are ids[at[m]:at[m+1]] (Round.Members' Assigned begins with them), in
// topology order, and idx[at[m]:at[m+1]] their indices.
type activeIn struct {
	ids     []string
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
	c := &claims{gen: make([]int32, members), task: s.task, wholeAt: make([]int32, members+1)}
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
// learned and learning tasks (indices, ascending), revoked and standby
// ones. The coordinator's member ID says whose it is, so it carries the
// placeholder workerID; the active tasks travel as partitions, so its
// assigned list holds only the learned ones (the wire format wants learned
// tasks among the assigned): for 100 tasks a member that saves 200 bytes
// in the group's stored metadata. ParseSyncAssignment rebuilds the list.
// Most members have no tags: they share one encoding, made by New.
func (b *Balancer) assignmentUserData(learned, learning []int32, revoked, standby []string) ([]byte, error) {
	if len(revoked)+len(learning)+len(learned)+len(standby) == 0 {
		return b.untagged, nil
	}
	as := learner.IndexedAssignment{MemberID: workerID, Assigned: learned, Learned: learned, Learning: learning}
	for _, id := range revoked { // in topology order, then the tasks the topology lacks
		if t := b.assignor.TaskIndex(id); t >= 0 {
			as.Revoked = append(as.Revoked, int32(t))
		} else {
			as.Stale = append(as.Stale, id)
		}
	}
	for _, id := range standby {
		as.Standby = append(as.Standby, int32(b.assignor.TaskIndex(id)))
	}
	return b.codec.AppendIndexedAssignment(nil, as)
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
// others stay as they are. marks is scratch space.
func (b *Balancer) disjoint(m learner.MemberMetadata, marks *taskMarks) learner.MemberMetadata {
	marks.reset()
	var names map[string]uint8 // tasks the topology lacks: rare
	role := func(id string) (uint8, bool) {
		if t := b.assignor.TaskIndex(id); t >= 0 {
			return marks.get(t)
		}
		r, ok := names[id]
		return r, ok
	}
	setRole := func(id string, r uint8) {
		if t := b.assignor.TaskIndex(id); t >= 0 {
			marks.set(t, r)
			return
		}
		if names == nil {
			names = map[string]uint8{}
		}
		names[id] = r
	}
	for i, l := range [...]*[]string{&m.Assigned, &m.Revoked, &m.Learning, &m.Standby} {
		var kept []string
		dropped := false
		for at, id := range *l {
			if _, dup := role(id); dup {
				if !dropped {
					kept, dropped = append([]string(nil), (*l)[:at]...), true
				}
				continue
			}
			setRole(id, uint8(i))
			if dropped {
				kept = append(kept, id)
			}
		}
		if dropped {
			*l = kept
		}
	}
	m.Ready = slices.DeleteFunc(slices.Clone(m.Ready), func(id string) bool {
		r, ok := role(id)
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

// handOff is handOver's result: per member of Assign's output, its active,
// learned and learning tasks by index, ascending, and its revoked and
// standby ones in sent; by task index, which tasks were deferred. The
// leader sends active tasks as partitions and the tags by index (building
// the IDs took a tenth of the leader's rebalance, and the encoder looked
// them up again, BenchmarkLeaderRebalance), so the indices are the truth:
// sent's other lists are Assign's, stale for the members whose lists
// changed (touched). assignments builds them for the Round.
type handOff struct {
	sent                      []learner.Assignment
	active, learned, learning [][]int32
	touched                   []bool // members whose lists differ from Assign's
	deferred                  []deferral
}

// assignments returns what h sends, with every list as IDs.
func (b *Balancer) assignments(h handOff) []learner.Assignment {
	for i, touched := range h.touched {
		if touched {
			as := &h.sent[i]
			as.Assigned, as.Learned, as.Learning = b.ids(h.active[i]), b.ids(h.learned[i]), b.ids(h.learning[i])
		}
	}
	return h.sent
}

// handOver applies Kafka's constraint to Assign's result: a partition goes
// to a member only when no other member reports owning it, since Kafka
// cannot make that member stop first. A task Assign moves away from a
// member that still owns it, by a claim from the newest generation that
// claims it, stays with that member for one more generation, tagged learned,
// and its new owner learns it (a stateless learner has nothing to replay);
// the owner releases it when the next rebalance begins, and that rebalance
// moves it. When only stale claims (a zombie, KIP-792) hold the task, nobody
// runs it for one generation: the zombie is told to revoke it. Either way
// the task is deferred. A member that owns a task by a current claim keeps
// it whoever else claims it: that creates no new overlap.
//
// memberOf maps out's positions to members. The lists of a member no
// deferral touches are Assign's own.
func (b *Balancer) handOver(c *claims, in *activeIn, memberOf []int32, out []learner.Assignment, s *scratch) (handOff, error) {
	outOf := make([]int32, len(c.gen)) // member -> output
	total := 0
	for i, as := range out {
		outOf[memberOf[i]] = int32(i)
		total += len(as.Assigned)
	}
	s.deferred = zeroed(s.deferred, len(b.topo.tasks))
	h := handOff{sent: slices.Clone(out), active: make([][]int32, len(out)), learned: make([][]int32, len(out)),
		learning: make([][]int32, len(out)), touched: make([]bool, len(out)), deferred: s.deferred}
	pool := emptied(s.pool, total)
	var keeps []keep
	for i, as := range out {
		mi, from := memberOf[i], len(pool)
		// Most of what Assign gives a member it got as active, and both
		// lists are in topology order: an ID equal to the next such
		// task's (the same string, so the comparison stops at the
		// pointer) needs no parsing. The member runs such a task by a
		// current claim, so it keeps it whoever else claims it: no claim
		// to read (a cache miss per task).
		next, end := in.at[mi], in.at[mi+1]
		for _, id := range as.Assigned {
			var t int
			switch {
			case next < end && in.ids[next] == id:
				t = int(in.idx[next])
			case next+1 < end && in.ids[next+1] == id: // one task moved away
				next++
				t = int(in.idx[next])
			default:
				if t = b.assignor.TaskIndex(id); t < 0 {
					return handOff{}, fmt.Errorf("kgolearner: Assign returned task %q, which is not in the topology", id)
				}
				for next < end && int(in.idx[next]) < t {
					next++
				}
			}
			pool = append(pool, int32(t))
			if next < end && int(in.idx[next]) == t {
				next++
				continue
			}
			cs := c.claimers(t)
			owns, other := false, false
			for _, m := range cs {
				if m == mi {
					owns = c.current(m, t)
				} else {
					other = true
				}
			}
			if owns || !other {
				continue
			}
			h.deferred[t], h.touched[i] = withheld, true // i learns the task instead of running it
			k := slices.IndexFunc(cs, func(m int32) bool { return m != mi && c.current(m, t) })
			if k < 0 {
				continue // only stale claims: withheld
			}
			j := outOf[cs[k]] // keeps running it, tagged learned, for one generation
			h.deferred[t], h.touched[j] = kept, true
			keeps = append(keeps, keep{j, int32(t)})
		}
		h.active[i] = pool[from:len(pool):len(pool)]
		var err error
		if h.learned[i], err = b.indices(as.Learned); err != nil {
			return handOff{}, err
		}
		if h.learning[i], err = b.indices(as.Learning); err != nil {
			return handOff{}, err
		}
		for _, l := range [...][]int32{h.active[i], h.learned[i], h.learning[i]} {
			if !slices.IsSorted(l) { // Assign documents topology order; the encodings rely on it
				slices.Sort(l)
			}
		}
	}
	s.pool = pool
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
		if h.touched[i] {
			mine := kept[at[i]:at[i+1]:at[i+1]] // the tasks i keeps
			slices.Sort(mine)
			b.redo(&h, i, mine)
		}
	}
	return h, nil
}

// keep is a task that its owner keeps one more generation (see handOver):
// keeper is its position in Assign's output.
type keep struct{ keeper, task int32 }

// redo rewrites member i's lists after its deferrals: the deferred tasks of
// its active ones move to its learning ones, and the tasks it keeps join
// its active and learned ones and leave Revoked and Standby. The lists of
// indices stay ascending; Revoked and Standby keep their order.
func (b *Balancer) redo(h *handOff, i int, keeps []int32) {
	as := &h.sent[i]
	// The tasks that stay are filtered in place: active is i's own
	// window of handOver's pool.
	stay := h.active[i][:0]
	var moved []int32
	for _, t := range h.active[i] {
		if h.deferred[t] == notDeferred {
			stay = append(stay, t)
		} else {
			moved = append(moved, t)
		}
	}
	h.active[i] = stay
	// Learned tasks are among i's assigned ones: a deferred one is i's to
	// learn. (learned and learning are i's own slices.)
	learned := slices.DeleteFunc(h.learned[i], func(t int32) bool { return h.deferred[t] != notDeferred })
	h.learned[i] = learned
	if len(keeps) > 0 {
		h.active[i], h.learned[i] = merge(stay, keeps), merge(learned, keeps)
	}
	if len(moved) > 0 {
		h.learning[i] = append(h.learning[i], moved...)
		slices.Sort(h.learning[i])
	}
	if len(keeps) > 0 {
		kept := func(id string) bool {
			_, found := slices.BinarySearch(keeps, int32(b.assignor.TaskIndex(id)))
			return found
		}
		as.Revoked = slices.DeleteFunc(slices.Clone(as.Revoked), kept)
		as.Standby = slices.DeleteFunc(slices.Clone(as.Standby), kept)
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

// indices returns the task indices of ids, which Assign returned, in a
// slice of their own.
func (b *Balancer) indices(ids []string) ([]int32, error) {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		t := b.assignor.TaskIndex(id)
		if t < 0 {
			return nil, fmt.Errorf("kgolearner: Assign returned task %q, which is not in the topology", id)
		}
		out = append(out, int32(t))
	}
	return out, nil
}

// ids returns the IDs of tasks (indices); empty is nil.
func (b *Balancer) ids(tasks []int32) []string {
	if len(tasks) == 0 {
		return nil
	}
	out := make([]string, len(tasks))
	for k, t := range tasks {
		out[k] = b.topo.tasks[t].ID
	}
	return out
}

// deferral is what handOver did with a task Assign moved.
type deferral uint8

const (
	notDeferred deferral = iota
	kept                 // its owner keeps it one more generation
	withheld             // nobody runs it for one generation (only stale claims)
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
