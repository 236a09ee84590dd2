package learnertest_test

import (
	"fmt"

	"github.com/learnerassignor/learner"
	"github.com/learnerassignor/learner/learnertest"
)

// Check judges an answer from the reports alone: here Assign's own answer,
// then a broken one that runs T2 on both members.
func ExampleCheck() {
	tasks := []learner.Task{{ID: "T1", Stateful: true}, {ID: "T2", Stateful: true}}
	a, err := learner.New(tasks, learner.Options{})
	if err != nil {
		panic(err)
	}
	in := []learner.MemberMetadata{{ID: "S1", Assigned: []string{"T1", "T2"}}, {ID: "S2"}}
	out, err := a.Assign(in)
	if err != nil {
		panic(err)
	}
	fmt.Printf("Assign: %d violations\n", len(learnertest.Check(tasks, a.Options(), in, out)))

	broken := []learner.Assignment{
		{MemberID: "S1", Assigned: []string{"T1", "T2"}},
		{MemberID: "S2", Assigned: []string{"T2"}},
	}
	fmt.Print(learnertest.FormatViolations(learnertest.Check(tasks, a.Options(), in, broken)))
	// Output:
	// Assign: 0 violations
	//   one-owner: member "S2", task "T2": active on both S1 and S2
}
