package learner_test

import (
	"fmt"

	"github.com/learnerassignor/learner"
)

// A member joins a running group: it learns a task first, and takes it over
// once it reports the learner ready.
func Example() {
	a, err := learner.New([]learner.Task{
		{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}, {ID: "T3", Stateful: true},
	}, learner.Options{})
	if err != nil {
		panic(err)
	}
	out, err := a.Assign([]learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"T1", "T2", "T3"}},
		{ID: "S2"}, // new member
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(learner.FormatAssignments(out))

	// S2 replayed T1 and rejoins ready; S1 revokes T1 at join (it was learned).
	out, _ = a.Assign([]learner.MemberMetadata{
		{ID: "S1", Assigned: []string{"T2", "T3"}, Revoked: []string{"T1"}},
		{ID: "S2", Learning: []string{"T1"}, Ready: []string{"T1"}},
	})
	fmt.Print(learner.FormatAssignments(out))
	// Output:
	// S1(assigned: [T1, T2, T3], revoked: [], learning: [], learned: [T1])
	// S2(assigned: [], revoked: [], learning: [T1])
	// S1(assigned: [T2, T3], revoked: [T1], learning: [])
	// S2(assigned: [T1], revoked: [], learning: [])
}

// The README's example: Kafka Streams style task IDs, one stateless task
// and one standby per stateful task.
func ExampleAssignor_Assign() {
	a, err := learner.New([]learner.Task{
		{ID: "0_0", Stateful: true}, {ID: "0_1", Stateful: true}, {ID: "1_0"}, // 1_0 is stateless
	}, learner.Options{Standbys: 1})
	if err != nil {
		panic(err)
	}
	out, err := a.Assign([]learner.MemberMetadata{
		{ID: "worker-1", Assigned: []string{"0_0", "0_1", "1_0"}},
		{ID: "worker-2"}, // just joined
	})
	if err != nil {
		panic(err)
	}
	for _, as := range out {
		fmt.Println(learner.FormatAssignment(as))
	}
	// Output:
	// worker-1(assigned: [0_0, 0_1], revoked: [1_0], learning: [])
	// worker-2(assigned: [1_0], revoked: [], learning: [], standby: [0_0, 0_1])
}

// A leader whose reports arrive as task indices (the wire package decodes
// them so) assigns without building task IDs.
func ExampleAssignor_AssignIndexed() {
	a, err := learner.New([]learner.Task{{ID: "0_0"}, {ID: "0_1"}, {ID: "0_2"}}, learner.Options{})
	if err != nil {
		panic(err)
	}
	out, err := a.AssignIndexed([]learner.IndexedMember{
		{ID: "S1", Assigned: []int32{0, 1, 2}, Stale: []string{"9_0"}}, // 9_0 is no longer a task
		{ID: "S2"},
	})
	if err != nil {
		panic(err)
	}
	for _, as := range out {
		fmt.Println(as.MemberID, as.Assigned, as.Revoked, as.Stale)
	}
	// Output:
	// S1 [1 2] [0] [9_0]
	// S2 [0] [] []
}
