package coordinator

import "slices"

// set is a sorted list of interned task indices without repeats. Members hold
// tens to thousands of tasks, so sorted slices beat maps here: no hashing,
// deterministic iteration, and cheap merges.
type set []int32

func (s set) has(t int32) bool {
	_, ok := slices.BinarySearch(s, t)
	return ok
}

func newSet(ts []int32) set {
	s := slices.Clone(ts)
	slices.Sort(s)
	return slices.Compact(s)
}

// union returns a ∪ b as a fresh set.
func union(a, b set) set {
	out := make(set, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// minus returns the elements of a that are not in b, as a fresh set.
func minus(a, b set) set {
	out := make(set, 0, len(a))
	for _, t := range a {
		if !b.has(t) {
			out = append(out, t)
		}
	}
	return out
}

// intersect returns a ∩ b as a fresh set.
func intersect(a, b set) set {
	out := make(set, 0, min(len(a), len(b)))
	for _, t := range a {
		if b.has(t) {
			out = append(out, t)
		}
	}
	return out
}
