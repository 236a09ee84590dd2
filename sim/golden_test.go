package sim

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/default.txt and testdata/default.svg")

// TestDefaultGolden keeps the README's table and picture of the default
// scenario (testdata/default.txt, testdata/default.svg) equal to what the
// simulator prints: after a change to the simulator or the assignor, review
// `go test ./sim -update` and commit the new files.
func TestDefaultGolden(t *testing.T) {
	sc := defaultScenario(t, Defaults)
	rs, err := RunAll(sc)
	if err != nil {
		t.Fatal(err)
	}
	var table, svg bytes.Buffer
	WriteTable(&table, sc, rs)
	if err := WriteSVG(&svg, rs); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"default.txt": table.Bytes(), "default.svg": svg.Bytes()} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./sim -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			shown := got
			if name != "default.txt" {
				shown = nil
			}
			t.Errorf("default scenario output differs from %s (review, then rerun with -update):\n%s", path, shown)
		}
	}
}
