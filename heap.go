package learner

// memberHeap is a binary heap of member ranks with positions tracked, so a
// member whose load changed is re-sifted in O(log n) instead of re-inserted.
// The balancing loops touch only the top members, which keeps them at
// O(moves · log members) instead of rescanning every member per move.
type memberHeap struct {
	items []int32
	pos   []int32 // rank -> index in items, none when absent
	less  func(a, b int32) bool
}

func newMemberHeap(members int, less func(a, b int32) bool) *memberHeap {
	h := &memberHeap{pos: make([]int32, members), less: less}
	for i := range h.pos {
		h.pos[i] = none
	}
	return h
}

func (h *memberHeap) len() int { return len(h.items) }

// top returns the first member, or none when the heap is empty.
func (h *memberHeap) top() int32 {
	if len(h.items) == 0 {
		return none
	}
	return h.items[0]
}

func (h *memberHeap) push(m int32) {
	h.pos[m] = int32(len(h.items))
	h.items = append(h.items, m)
	h.up(len(h.items) - 1)
}

// remove takes m out of the heap if it is there.
func (h *memberHeap) remove(m int32) {
	i := int(h.pos[m])
	if i == none {
		return
	}
	last := len(h.items) - 1
	h.swap(i, last)
	h.items = h.items[:last]
	h.pos[m] = none
	if i < last {
		h.fixAt(i)
	}
}

// fix restores the heap order after m's key changed.
func (h *memberHeap) fix(m int32) {
	if i := h.pos[m]; i != none {
		h.fixAt(int(i))
	}
}

func (h *memberHeap) fixAt(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *memberHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = int32(i)
	h.pos[h.items[j]] = int32(j)
}

func (h *memberHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *memberHeap) down(i int) bool {
	start := i
	for {
		c := 2*i + 1
		if c >= len(h.items) {
			break
		}
		if r := c + 1; r < len(h.items) && h.less(h.items[r], h.items[c]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
