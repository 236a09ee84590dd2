package benchgroup

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNew checks the group each event describes: every partition owned
// once before the event, 10% more members (owning nothing) after scale-up,
// 10% leaving after scale-down, members sorted by ID.
func TestNew(t *testing.T) {
	for _, ev := range Events {
		g := New(100, 10_000, 7, ev, strconv.Itoa)
		owned := 0
		joined, fresh := 0, 0
		for i, m := range g.Members {
			if i > 0 {
				assert.Less(t, g.Members[i-1].ID, m.ID, "%s: members sorted by ID", ev)
			}
			for _, ps := range m.Owned {
				owned += len(ps)
			}
			if m.Generation() < 0 {
				fresh++
			}
		}
		joined = len(g.Joined())
		assert.Equal(t, 10_000, owned, "%s: partitions owned", ev)
		assert.Equal(t, int32(10_000/7+10_000%7), g.Counts["6"], "%s: the last topic takes the rest", ev)
		switch ev {
		case Stable:
			assert.Equal(t, []int{100, 100, 0}, []int{len(g.Members), joined, fresh}, "%s: members, joined, new", ev)
		case ScaleUp:
			assert.Equal(t, []int{110, 110, 10}, []int{len(g.Members), joined, fresh}, "%s: members, joined, new", ev)
		case ScaleDown:
			assert.Equal(t, []int{100, 90, 0}, []int{len(g.Members), joined, fresh}, "%s: members, joined, new", ev)
		}
	}
}

// TestNewRejectsEmptyShapes checks that a group without members, or with a
// topic of no partitions, is refused by name rather than by a division by
// zero.
func TestNewRejectsEmptyShapes(t *testing.T) {
	for _, c := range []struct{ m, tasks, topics int }{{0, 10, 1}, {4, 2, 3}, {4, 10, 0}} {
		assert.PanicsWithValue(t,
			fmt.Sprintf("benchgroup: New(%d members, %d tasks, %d topics): want m >= 1 and tasks >= topics >= 1", c.m, c.tasks, c.topics),
			func() { New(c.m, c.tasks, c.topics, Stable, strconv.Itoa) }, "New(%d, %d, %d, ...)", c.m, c.tasks, c.topics)
	}
}
