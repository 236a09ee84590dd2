package learner

import "strings"

// compareIDs orders IDs the way people read them: runs of digits compare as
// numbers, so "S2" sorts before "S10". IDs equal as numbers ("S01", "S1")
// fall back to byte order, so the order is total.
func compareIDs(a, b string) int {
	if c := naturalCompare(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func naturalCompare(a, b string) int {
	// Skip the common prefix (Kafka member IDs share a long one), backing up
	// to the start of a digit run so that runs still compare as numbers.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	for p > 0 && isDigit(a[p-1]) {
		p--
	}
	a, b = a[p:], b[p:]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			na := strings.TrimLeft(a[si:i], "0")
			nb := strings.TrimLeft(b[sj:j], "0")
			if len(na) != len(nb) {
				return len(na) - len(nb)
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if a[i] != b[j] {
			return int(a[i]) - int(b[j])
		}
		i++
		j++
	}
	return (len(a) - i) - (len(b) - j)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// appendNaturalKey appends to key a string whose byte order is the natural
// order of valid IDs (compareIDs, less its byte-order tie-break): every run
// of digits becomes '0', the number of its digits without leading zeros (one
// byte: IDs are at most 255 bytes), then those digits. Runs then compare by
// magnitude, then digit by digit, as naturalCompare compares them, and a
// run's first byte '0' compares with the letters, '-', '.' and '_' around
// it as any digit does. Sorting by keys costs one byte comparison per pair
// (memcmp, many bytes at a time) instead of naturalCompare's walk, which
// matters for a thousand members sharing a long ID prefix.
func appendNaturalKey(key []byte, id string) []byte {
	for i := 0; i < len(id); {
		if !isDigit(id[i]) {
			key = append(key, id[i])
			i++
			continue
		}
		j := i
		for j < len(id) && id[j] == '0' {
			j++
		}
		k := j
		for k < len(id) && isDigit(id[k]) {
			k++
		}
		key = append(key, '0', byte(k-j))
		key = append(key, id[j:k]...)
		i = k
	}
	return key
}
