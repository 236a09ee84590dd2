package coordinator

import "testing"

// FuzzHistory runs a group history whose every choice (the group, the
// options, joins, leaves, crashes, capacity changes, failovers, network
// faults, the order of heartbeats, malformed heartbeats) comes from the fuzz
// input, with the property test's checks: no task ever active on two
// members, no live member fenced, no late heartbeat taking back newer news,
// no dead member back once dropped, every task owned and the group at
// Assign's fixed point within the bounds once the input runs out. The seed
// corpus is in testdata/fuzz/FuzzHistory.
func FuzzHistory(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{7, 3, 2, 1, 12, 4, 0, 5, 9, 200, 4, 4, 4, 4, 4, 4, 4, 4, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		ch := &byteChooser{b: b}
		h, _, err := runHistory(ch, nil, min(len(b)/4, 500)) // bounded: inputs run in milliseconds
		if err != nil {
			t.Fatalf("%v\nlast events:\n%s", err, h.trace())
		}
	})
}

// FuzzHistoryPerturbed runs the histories of FuzzHistory, the choices
// from the first input, perturbed (see history) by choices from the
// second: delayed heartbeats, late ones delivered between others, members
// sending Seq 0, a coordinator clock that steps back.
func FuzzHistoryPerturbed(f *testing.F) {
	f.Add([]byte{7, 3, 2, 1, 12, 4, 0, 5, 9, 200, 4, 4, 4, 4, 4, 4, 4, 4, 4}, []byte{0, 1, 0, 3, 0, 0, 2, 5, 1, 0, 0, 4})
	f.Fuzz(func(t *testing.T, b, p []byte) {
		h, _, err := runHistory(&byteChooser{b: b}, &byteChooser{b: p}, min(len(b)/4, 500))
		if err != nil {
			t.Fatalf("%v\nlast events:\n%s", err, h.trace())
		}
	})
}
