package kgolearner_test

import (
	"fmt"

	"github.com/learnerassignor/learner/kgolearner"
)

// Partition p of every co-partitioned topic of subtopology i is task
// "<i>_<p>".
func ExampleBalancer_TaskOf() {
	b, err := kgolearner.New(kgolearner.Config{Subtopologies: []kgolearner.Subtopology{
		{Topics: []string{"orders", "payments"}, Partitions: 4, Stateful: true},
		{Topics: []string{"clicks"}, Partitions: 2},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(b.TaskOf("payments", 3))
	fmt.Println(b.TaskOf("clicks", 1))
	fmt.Println(b.Partitions("0_2"))
	// Output:
	// 0_3 true
	// 1_1 true
	// map[orders:[2] payments:[2]]
}
