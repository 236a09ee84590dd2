package learner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	. "github.com/learnerassignor/learner"
)

func TestRoleConflicts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lists [][]string
		want  []RoleConflict
	}{
		{"disjoint", [][]string{{"T1", "T2"}, {"T3"}, nil, {"T4"}}, nil},
		{"no lists", nil, nil},
		{"two roles", [][]string{{"T1", "T2"}, {"T3"}, {"T2"}}, []RoleConflict{{Task: "T2", First: 0, List: 2, At: 0}}},
		{"repeat within a list", [][]string{{"T1", "T1"}}, []RoleConflict{{Task: "T1", First: 0, List: 0, At: 1}}},
		{"every repeat, in list order", [][]string{{"T1", "T2"}, {"T2", "T3", "T1"}, {"T1"}}, []RoleConflict{
			{Task: "T2", First: 0, List: 1, At: 0}, {Task: "T1", First: 0, List: 1, At: 2}, {Task: "T1", First: 0, List: 2, At: 0},
		}},
	} {
		assert.Equal(t, tc.want, RoleConflicts(tc.lists...), "RoleConflicts(%v): %s", tc.lists, tc.name)
	}
}
