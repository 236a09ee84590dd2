package benchgroup

import (
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
