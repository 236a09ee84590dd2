package kgolearner

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/wire"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leader is the balancer's logic on the member that leads the group.
type leader struct{ b *Balancer }

// Balance implements kgo.ConsumerBalancerBalance. kgo calls it through
// ConsumerBalancer.BalanceOrError, which returns the error set here.
func (l leader) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	plan, err := l.b.plan(cb, topics)
	if err != nil {
		cb.SetError(err)
		return nil
	}
	return plan
}

// syncPlan is the leader's answer, one entry per member, sorted by member ID.
type syncPlan []kmsg.SyncGroupRequestGroupAssignment

func (p syncPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment { return p }

// plan decodes every member, assigns, defers what another member still
// owns, and encodes each member's partitions and tags.
func (b *Balancer) plan(cb *kgo.ConsumerBalancer, topics map[string]int32) (syncPlan, error) {
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

	// Per-task state lives in slices indexed by task rather than maps: a
	// rebalance of 100,000 tasks touches every task a few times, and map
	// hashing dominated BenchmarkLeaderBalance.
	nt := len(b.topo.tasks)

	// The newest generation claiming each task: a member that missed
	// rebalances (a zombie) may still report partitions that have moved
	// on since (KIP-792). Its claim blocks a hand-over all the same.
	newest := make([]int32, nt)
	for t := range newest {
		newest[t] = math.MinInt32
	}
	cb.EachMember(func(_ *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		for _, op := range meta.OwnedPartitions {
			for _, p := range op.Partitions {
				if t := b.topo.taskOf(op.Topic, p); t >= 0 {
					newest[t] = max(newest[t], meta.Generation)
				}
			}
		}
	})

	round := Round{}
	kafkaIDs := map[string]string{} // learner ID -> coordinator's member ID
	claims := make([][]claim, nt)   // task index -> members owning one of its partitions
	cb.EachMember(func(km *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		id := LearnerID(km.MemberID)
		kafkaIDs[id] = km.MemberID
		owned := map[string][]int32{}
		for _, op := range meta.OwnedPartitions {
			owned[op.Topic] = append(owned[op.Topic], op.Partitions...)
			for _, p := range op.Partitions {
				if t := b.topo.taskOf(op.Topic, p); t >= 0 && !slices.ContainsFunc(claims[t], func(c claim) bool { return c.id == id }) {
					claims[t] = append(claims[t], claim{id: id, current: meta.Generation >= newest[t]})
				}
			}
		}
		m, err := b.codec.DecodeMember(meta.UserData)
		if err != nil {
			// Another topology keeps what does not depend on it
			// (leaving, capacity, tasks sent by name); anything else
			// keeps nothing.
			if !errors.Is(err, wire.ErrTopologyMismatch) {
				m = learner.MemberMetadata{}
			}
			round.Undecoded++
		}
		// Active tasks travel as the partitions the member owns (see
		// JoinGroupMetadata): it runs them, except those it gave up at
		// this join (Revoked) and stale claims.
		var active []string
		for _, t := range b.topo.tasksOf(owned) {
			if !slices.Contains(m.Revoked, t) && meta.Generation >= newest[b.topo.index[t]] {
				active = append(active, t)
			}
		}
		m.Assigned = append(active, m.Assigned...)
		m = disjoint(m)
		m.ID = id
		if m.Rack == "" && meta.Rack != nil && *meta.Rack != "" {
			m.Rack = LearnerID(*meta.Rack)
		}
		round.Members = append(round.Members, m)
	})

	out, err := b.assignor.Assign(round.Members)
	if err != nil {
		return nil, fmt.Errorf("kgolearner: %w", err)
	}

	round.Planned = out
	sent, deferred := b.handOver(out, claims)
	round.Assignments = sent
	plan := make(syncPlan, 0, len(sent))
	for _, as := range sent {
		ka := kmsg.NewConsumerMemberAssignment()
		ka.Topics = b.partitionsOf(as.Assigned)
		kafkaID := kafkaIDs[as.MemberID]
		if ka.UserData, err = b.assignmentUserData(as); err != nil {
			return nil, fmt.Errorf("kgolearner: %w", err)
		}
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = kafkaID
		sa.MemberAssignment = ka.AppendTo(nil)
		plan = append(plan, sa)
	}
	slices.SortFunc(plan, func(x, y kmsg.SyncGroupRequestGroupAssignment) int { return strings.Compare(x.MemberID, y.MemberID) })
	for t, task := range b.topo.tasks {
		if deferred[t] != notDeferred {
			round.Deferred = append(round.Deferred, task.ID)
		}
		if deferred[t] == withheld {
			round.Withheld = append(round.Withheld, task.ID)
		}
	}
	if b.hooks.Rebalanced != nil {
		b.hooks.Rebalanced(round)
	}
	return plan, nil
}

// assignmentUserData encodes the tags of a member's assignment. The
// coordinator's member ID says whose it is, so it carries the placeholder
// workerID; the active tasks travel as partitions, so its assigned list
// holds only the learned ones (the wire format wants learned tasks among
// the assigned): for 100 tasks a member that saves 200 bytes in the
// group's stored metadata. ParseSyncAssignment rebuilds the list.
func (b *Balancer) assignmentUserData(as learner.Assignment) ([]byte, error) {
	as.MemberID, as.Assigned = workerID, as.Learned
	return b.codec.AppendAssignment(nil, as)
}

// disjoint drops the tasks a member lists twice (a report from a buggy or
// hostile member, or owned partitions that contradict its user data), so
// that one bad report cannot fail the whole rebalance: a task keeps its
// first role in the order assigned, revoked, learning, standby, and Ready
// keeps only learner tasks.
func disjoint(m learner.MemberMetadata) learner.MemberMetadata {
	if cs := learner.RoleConflicts(m.Assigned, m.Revoked, m.Learning, m.Standby); len(cs) > 0 {
		// cs is in list order: one pass per list drops its repeats.
		k := 0
		for i, l := range [...]*[]string{&m.Assigned, &m.Revoked, &m.Learning, &m.Standby} {
			var kept []string
			for at, id := range *l {
				if k < len(cs) && cs[k].List == i && cs[k].At == at {
					k++
					continue
				}
				kept = append(kept, id)
			}
			*l = kept
		}
	}
	m.Ready = slices.DeleteFunc(slices.Clone(m.Ready), func(id string) bool { return !slices.Contains(m.Learning, id) })
	return m
}

// claim is a member's report that it owns a task's partitions.
type claim struct {
	id      string // learner ID
	current bool   // from the newest generation that claims the task
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
// It returns what to send each member and, by task index, which tasks it
// deferred.
func (b *Balancer) handOver(out []learner.Assignment, claims [][]claim) ([]learner.Assignment, []deferral) {
	pos := make(map[string]int, len(out))
	sent := make([]learner.Assignment, len(out))
	for i, as := range out {
		pos[as.MemberID] = i
		sent[i] = learner.Assignment{MemberID: as.MemberID, Assigned: slices.Clone(as.Assigned), Revoked: slices.Clone(as.Revoked),
			Learning: slices.Clone(as.Learning), Learned: slices.Clone(as.Learned), Standby: slices.Clone(as.Standby)}
	}
	deferred := make([]deferral, len(b.topo.tasks))
	touched := map[int]bool{} // members whose lists a deferral changed
	for i, as := range out {
		for _, id := range as.Assigned {
			t := b.topo.index[id]
			owns := slices.ContainsFunc(claims[t], func(c claim) bool { return c.id == as.MemberID && c.current })
			other := slices.ContainsFunc(claims[t], func(c claim) bool { return c.id != as.MemberID })
			if owns || !other {
				continue
			}
			deferred[t] = withheld
			touched[i] = true
			to := &sent[i] // learns the task instead of running it
			to.Assigned, to.Learned = remove(to.Assigned, id), remove(to.Learned, id)
			to.Learning = append(to.Learning, id)
			k := slices.IndexFunc(claims[t], func(c claim) bool { return c.id != as.MemberID && c.current })
			if k < 0 {
				continue // only stale claims: withheld
			}
			j, ok := pos[claims[t][k].id]
			if !ok {
				continue
			}
			deferred[t] = kept
			touched[j] = true
			from := &sent[j] // keeps running it, tagged learned, for one generation
			from.Assigned, from.Learned = append(from.Assigned, id), append(from.Learned, id)
			from.Revoked, from.Standby = remove(from.Revoked, id), remove(from.Standby, id)
		}
	}
	// Assign's lists are in topology order; only the ones a deferral
	// appended to need sorting again (a sort is two map lookups a
	// comparison, for every list of every member otherwise).
	for i := range touched {
		for _, l := range []*[]string{&sent[i].Assigned, &sent[i].Learning, &sent[i].Learned} {
			b.sort(*l)
		}
	}
	return sent, deferred
}

// deferral is what handOver did with a task Assign moved.
type deferral uint8

const (
	notDeferred deferral = iota
	kept                 // its owner keeps it one more generation
	withheld             // nobody runs it for one generation (only stale claims)
)

// remove returns ids without id.
func remove(ids []string, id string) []string {
	return slices.DeleteFunc(ids, func(x string) bool { return x == id })
}

// partitionsOf returns the partitions of tasks, by topic in name order.
func (b *Balancer) partitionsOf(tasks []string) []kmsg.ConsumerMemberAssignmentTopic {
	byTopic := map[string][]int32{}
	for _, id := range tasks {
		b.topo.partitions(b.topo.index[id], func(topic string, p int32) { byTopic[topic] = append(byTopic[topic], p) })
	}
	var out []kmsg.ConsumerMemberAssignmentTopic
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = topic, byTopic[topic]
		slices.Sort(at.Partitions)
		out = append(out, at)
	}
	return out
}

// LearnerID turns a coordinator's member ID (or a rack) into a learner ID:
// letters, digits, '_' and '-' stay, every other byte (including '.')
// becomes '.' and two hex digits, so distinct IDs stay distinct. IDs that
// would grow past 255 bytes are cut and suffixed with a hash.
func LearnerID(kafkaID string) string {
	var sb strings.Builder
	for i := 0; i < len(kafkaID); i++ {
		c := kafkaID[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' {
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
