package kgolearner

import (
	"slices"
	"strings"
	"testing"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzLeader runs the leader on groups built from the fuzzer's bytes: up to
// six members, each owning random partitions (of the topology's topics, of
// a topic it lacks, out of range, parts of tasks), in random generations,
// with random reports (assigned, revoked, learning, ready and standby
// tasks, leaving), in a cluster whose partition counts sometimes differ
// from the topology's (one topic of either subtopology has another count,
// or is missing). Whatever the members report, the leader must answer
// without an error, keep the shared checker's rules (when the topics match;
// when they do not, CheckRound's, except that a task of the subtopology
// that differs may have no owner, and goes only to a member that claims
// it, while the other subtopology follows Assign's plan),
// send no member a partition another member owns, and send every member an
// assignment its Worker applies (one it refuses fails the member's
// SyncGroup, and kgo drops its session).
func FuzzLeader(f *testing.F) {
	f.Add([]byte{3, 1, 0, 1, 2, 0, 0, 2, 0, 0}, uint8(2))
	// A member keeping a deferred task that Assign had made it learn (see
	// TestLeaderKeeperDoesNotLearn), under a topics mismatch.
	f.Add([]byte("X00000000222000010819200"), uint8('\\'))
	// A partition added to one topic of a subtopology of two, whose task
	// 0_0 one member claims by user data and the other by a partition of
	// it: the claimer keeps it (see handOver).
	f.Add([]byte("9000000720122001081100F1"), uint8('C'))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		b, err := New(Config{Subtopologies: testTopology, Options: learner.Options{Standbys: 1}})
		if err != nil {
			t.Fatal(err)
		}
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			c := data[0]
			data = data[1:]
			return int(c)
		}
		tasks := b.Tasks()
		task := func() string { return tasks[next()%len(tasks)].ID }
		topics := []string{"orders", "payments", "clicks", "other"}
		var members []kmsg.JoinGroupResponseMember
		ownedBy := map[string]map[string][]int32{} // member ID -> its owned partitions
		for i := range int(n%6) + 1 {
			owned := map[string][]int32{}
			for range next() % 6 {
				topic := topics[next()%len(topics)]
				owned[topic] = append(owned[topic], int32(next()%5)-1)
			}
			var m learner.MemberMetadata
			for range next() % 4 {
				switch next() % 5 {
				case 0:
					m.Assigned = append(m.Assigned, task())
				case 1:
					m.Revoked = append(m.Revoked, task())
				case 2:
					m.Learning = append(m.Learning, task())
				case 3:
					m.Standby = append(m.Standby, task())
				case 4:
					if len(m.Learning) > 0 {
						m.Ready = append(m.Ready, m.Learning[0])
					}
				}
			}
			m.Leaving = next()%5 == 0
			m.ID = workerID
			userData, err := b.codec.AppendMember(nil, m)
			if err != nil { // a report the wire format refuses: bytes of no report
				userData = []byte{byte(next()), byte(next())}
			}
			ownedBy[string(rune('A'+i))] = owned
			members = append(members, b.joinMemberAt(string(rune('A'+i)), int32(next()%4), userData, owned))
		}
		counts := map[string]int32{"orders": 3, "payments": 3, "clicks": 2}
		differs := "" // the prefix of the tasks of the subtopology whose topics differ
		if next()%7 == 0 {
			switch next() % 3 {
			case 0:
				counts["clicks"], differs = 3, "1_" // a partition added
			case 1:
				counts["orders"], differs = 4, "0_" // a partition added to one of two topics
			case 2:
				delete(counts, "payments") // a topic missing
				differs = "0_"
			}
		}
		mismatch := differs != ""

		var round Round
		b.hooks.Rebalanced = func(r Round) { round = r }
		gb, _, err := b.MemberBalancer(members)
		if err != nil {
			t.Fatal(err)
		}
		into, err := gb.(kgo.GroupMemberBalancerOrError).BalanceOrError(counts)
		if err != nil {
			t.Fatalf("BalanceOrError: %v", err)
		}
		if mismatch {
			// The differing subtopology's tasks stay with members that claim them.
			for _, as := range round.Assignments {
				var m learner.MemberMetadata
				if i := slices.IndexFunc(round.Members, func(m learner.MemberMetadata) bool { return m.ID == as.MemberID }); i >= 0 {
					m = round.Members[i]
				}
				for _, task := range as.Assigned {
					if strings.HasPrefix(task, differs) && !slices.Contains(m.Assigned, task) && !slices.Contains(m.Revoked, task) && !b.topo.touches(task, ownedBy[as.MemberID]) {
						t.Fatalf("%s sent %s, a task of the subtopology whose topics differ, which it did not claim (report %+v)", as.MemberID, task, m)
					}
				}
			}
			// The rest of CheckRound's rules hold: one role per task on a
			// member, one owner per task, and every task of the subtopology
			// whose topics match has one, unless withheld (a task of the
			// other that nobody claims stays unassigned).
			for _, v := range learnertest.CheckRound(tasks, round.Members, round.Assignments, round.Withheld) {
				if v.Rule == "one-owner" && strings.HasPrefix(v.Task, differs) && strings.HasPrefix(v.Detail, "active on [],") {
					continue
				}
				t.Fatalf("learnertest.CheckRound of what was sent: %v", v)
			}
			// The subtopology whose topics match follows Assign's plan.
			assigned, err := b.assignor.Assign(round.Members)
			if err != nil {
				t.Fatal(err)
			}
			matching := func(l []string) []string {
				return slices.DeleteFunc(slices.Clone(l), func(task string) bool { return strings.HasPrefix(task, differs) })
			}
			for i, as := range round.Planned {
				w := assigned[i]
				if as.MemberID != w.MemberID || !slices.Equal(matching(as.Assigned), matching(w.Assigned)) || !slices.Equal(matching(as.Learning), matching(w.Learning)) ||
					!slices.Equal(matching(as.Learned), matching(w.Learned)) || !slices.Equal(matching(as.Standby), matching(w.Standby)) || !slices.Equal(matching(as.Revoked), matching(w.Revoked)) {
					t.Fatalf("planned %+v, Assign's plan of the subtopology whose topics match %+v", as, w)
				}
			}
		} else { // the topics match: Assign's plan and what was sent keep every rule
			if vs := learnertest.Check(tasks, b.assignor.Options(), round.Members, round.Planned); len(vs) > 0 {
				t.Fatalf("learnertest.Check of Assign's plan: %v", vs)
			}
			if vs := learnertest.CheckRound(tasks, round.Members, round.Assignments, round.Withheld); len(vs) > 0 {
				t.Fatalf("learnertest.CheckRound of what was sent: %v", vs)
			}
		}
		if overlaps := newOverlaps(t, members, into.IntoSyncAssignment()); len(overlaps) > 0 {
			t.Fatalf("partitions sent to a member while another member owns them: %v", overlaps)
		}
		for _, sa := range into.IntoSyncAssignment() {
			member, err := New(Config{Subtopologies: testTopology})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := member.ParseSyncAssignment(sa.MemberAssignment); err != nil {
				t.Fatalf("member %s applies its assignment: %v", sa.MemberID, err)
			}
		}
	})
}
