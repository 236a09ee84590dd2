package sim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/default.txt and testdata/default.svg")

// TestDefaultGolden keeps the table (README.md) and the picture
// (docs/simulator.md) of the default scenario (testdata/default.txt,
// testdata/default.svg) equal to what the simulator prints: after a change
// to the simulator or the assignor, review `go test ./sim -update` and
// commit the new files.
func TestDefaultGolden(t *testing.T) {
	sc := defaultScenario(t, Defaults)
	rs, err := RunAll(sc)
	require.NoError(t, err)
	var table, svg bytes.Buffer
	WriteTable(&table, sc, rs)
	require.NoError(t, WriteSVG(&svg, rs))
	for name, got := range map[string][]byte{"default.txt": table.Bytes(), "default.svg": svg.Bytes()} {
		path := filepath.Join("testdata", name)
		if *update {
			require.NoError(t, os.WriteFile(path, got, 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./sim -update to create it")
		shown := got
		if name != "default.txt" {
			shown = nil
		}
		assert.True(t, bytes.Equal(got, want), "default scenario output differs from %s (review, then rerun with -update):\n%s", path, shown)
	}
}

// TestSVGLegible checks the picture's layout rules on the default scenario:
// no text under 12 px, event labels that never overlap, axis labels that
// never overlap, and a tasks-down strip labelled with each panel's maximum.
func TestSVGLegible(t *testing.T) {
	rs, err := RunAll(defaultScenario(t, Defaults))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteSVG(&b, rs))
	svg := b.String()
	for _, m := range regexp.MustCompile(`font-size="(\d+)"`).FindAllStringSubmatch(svg, -1) {
		size, _ := strconv.Atoi(m[1])
		assert.GreaterOrEqual(t, size, 12, "font-size %s px", m[1])
	}
	ax := newAxis(rs)
	// Many events close together: labels must spread over rows.
	var evs []Mark
	for i := range 12 {
		evs = append(evs, Mark{At: rs[0].Timeline.Events[0].At + time.Duration(i)*time.Second, Label: fmt.Sprintf("join S%d S%d", 20+i, 40+i)})
	}
	for _, set := range [][]Mark{rs[0].Timeline.Events, evs} {
		ls := layoutEvents(ax, set)
		for i, a := range ls {
			for _, b := range ls[:i] {
				overlap := a.row == b.row && a.x < b.x+textWidth(b.text)+8 && b.x < a.x+textWidth(a.text)+8
				assert.False(t, overlap, "event labels %q and %q overlap in row %d", a.text, b.text, a.row)
			}
		}
	}
	ticks := ax.labels()
	require.NotEmpty(t, ticks)
	for i := 1; i < len(ticks); i++ {
		prevEnd := ticks[i-1].x + textWidth(ticks[i-1].text)
		if ticks[i-1].tick {
			prevEnd -= textWidth(ticks[i-1].text) / 2
		}
		start := ticks[i].x
		if ticks[i].tick {
			start -= textWidth(ticks[i].text) / 2
		}
		assert.Less(t, prevEnd, start, "axis labels %q and %q overlap", ticks[i-1].text, ticks[i].text)
	}
	for _, r := range rs {
		peak := 0
		for _, c := range r.Timeline.Down {
			peak = max(peak, c.Total())
		}
		assert.Contains(t, svg, fmt.Sprintf(">max %d</text>", peak), "%v: strip maximum label", r.Strategy)
	}
}
