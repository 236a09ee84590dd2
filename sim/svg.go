package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"time"
)

// Picture geometry, in pixels.
const (
	svgWidth  = 1200
	svgLabel  = 70 // member labels on the left
	svgRight  = 10
	svgRow    = 12 // one member
	svgBar    = 10 // bar height within a row
	svgMarks  = 8  // rebalance marks above the rows
	svgDown   = 24 // the tasks-down row
	svgHeader = 18
	svgGap    = 14 // between panels
	svgBreak  = 14 // a cut-out stretch of nothing happening
)

// quiet is how long nothing must happen before the picture cuts the
// stretch out (marked and labelled with its length), so that minutes of
// hand-over stay visible on an axis of hours.
const quiet = 2 * time.Minute

// WriteSVG draws the results as a timeline: one panel per strategy, one row
// per member with its active (blue), restoring or stopped (red) and learning
// or warm-up (orange) tasks stacked over time, a mark per rebalance, and a
// row of the number of tasks down. All panels share one time axis.
func WriteSVG(w io.Writer, rs []*Result) error {
	if len(rs) == 0 {
		return fmt.Errorf("sim: no results to draw")
	}
	ax := newAxis(rs)
	load, down := 1, 1
	for _, r := range rs {
		load = max(load, r.Metrics.PeakBusy)
		for _, c := range r.Timeline.Down {
			down = max(down, c.Total())
		}
	}
	const top = 56 // title, time labels, two rows of event labels
	height := top + 10
	for _, r := range rs {
		height += svgHeader + svgMarks + svgRow*len(r.Timeline.Members) + svgDown + svgGap
	}
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="10">`+"\n", svgWidth, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="14" font-size="12">Per member: <tspan fill="#3b6fc4">active</tspan>, <tspan fill="#d9534f">active but down (restoring, or stopped at a join)</tspan>, <tspan fill="#e8a33d">learning / warm-up</tspan> (bar height: tasks, full = %d). Ticks: rebalances. Grey: member alive.</text>`+"\n", svgLabel, load)
	ax.draw(p, 30, height-10)
	drawEvents(p, ax, rs[0].Timeline.Events, 32, height-10)
	y := top
	for _, r := range rs {
		y = drawPanel(p, ax, r, y, load, down)
	}
	p("</svg>\n")
	return bw.Flush()
}

// drawEvents marks the scripted events with a dashed line through every
// panel, labelled at the top; labels of events close together share a line.
func drawEvents(p func(string, ...any), ax *axis, evs []Mark, top, bottom int) {
	lastX, row := -1000.0, 0
	for _, ev := range evs {
		x := ax.x(ev.At)
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#7a4fb0" stroke-dasharray="3,3" stroke-width="0.8"/>`, x, top, x, bottom)
		if x-lastX < 80 {
			row = 1 - row
		} else {
			row = 0
		}
		p(`<text x="%.1f" y="%d" font-size="9" fill="#7a4fb0">%s</text>`+"\n", x+2, top+8+10*row, html.EscapeString(ev.Label))
		lastX = x
	}
}

func drawPanel(p func(string, ...any), ax *axis, r *Result, y, load, down int) int {
	m := r.Metrics
	p(`<text x="4" y="%d" font-size="12" font-weight="bold">%s</text>`, y+13, html.EscapeString(r.Strategy.String()))
	p(`<text x="%d" y="%d" font-size="11">downtime %.0f task-s, %d rebalances, %d moves, duplicate %.0f task-s, unbalanced %.0f s</text>`+"\n",
		svgLabel+110, y+13, m.Downtime.Seconds(), m.Rebalances, m.Moves, m.Duplicate.Seconds(), m.Unbalanced.Seconds())
	y += svgHeader
	for _, rd := range r.Rounds {
		x0, x1 := ax.x(rd.Start), ax.x(rd.End)
		color := "#333"
		if rd.Aborted {
			color = "#d9534f"
		}
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`, x0, y, max(x1-x0, 1), svgMarks-2, color)
	}
	p("\n")
	y += svgMarks
	end := r.Timeline.End
	for _, mt := range r.Timeline.Members {
		gone := mt.Gone
		if gone < 0 {
			gone = end
		}
		p(`<text x="4" y="%d">%s</text>`, y+svgBar, html.EscapeString(mt.ID))
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#eee"/>`, ax.x(mt.Joined), y, ax.x(gone)-ax.x(mt.Joined), svgBar)
		for i, st := range mt.States {
			t1 := end
			if i+1 < len(mt.States) {
				t1 = mt.States[i+1].At
			}
			x0, x1 := ax.x(st.At), ax.x(t1)
			if x1 <= x0 {
				continue
			}
			base := float64(y + svgBar)
			for _, part := range []struct {
				n     int
				color string
			}{{st.Active, "#3b6fc4"}, {st.Down, "#d9534f"}, {st.Learning, "#e8a33d"}} {
				if part.n == 0 {
					continue
				}
				h := float64(svgBar) * float64(part.n) / float64(load)
				base -= h
				p(`<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`, x0, base, x1-x0, h, part.color)
			}
		}
		p("\n")
		y += svgRow
	}
	p(`<text x="4" y="%d">tasks down</text>`, y+svgDown-8)
	p(`<text x="4" y="%d" font-size="8">(full = %d)</text>`, y+svgDown+1, down)
	for i, c := range r.Timeline.Down {
		t1 := end
		if i+1 < len(r.Timeline.Down) {
			t1 = r.Timeline.Down[i+1].At
		}
		if c.Total() == 0 || ax.x(t1) <= ax.x(c.At) {
			continue
		}
		h := float64(svgDown-4) * float64(c.Total()) / float64(down)
		p(`<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#d9534f"/>`, ax.x(c.At), float64(y+svgDown-2)-h, max(ax.x(t1)-ax.x(c.At), 0.5), h)
	}
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`+"\n", svgLabel, y+svgDown-2, svgWidth-svgRight, y+svgDown-2)
	return y + svgDown + svgGap
}

// axis maps simulated time to x, cutting out quiet stretches: each is drawn
// svgBreak wide, the rest of the time linearly.
type axis struct {
	spans []span // in time order, covering [0, end]
}

type span struct {
	t0, t1 time.Duration
	x0, x1 float64
	cut    bool
}

func newAxis(rs []*Result) *axis {
	end := rs[0].Timeline.End
	times := []time.Duration{0, end}
	for _, r := range rs {
		for _, rd := range r.Rounds {
			times = append(times, rd.Start, rd.End)
		}
		for _, mt := range r.Timeline.Members {
			for _, st := range mt.States {
				times = append(times, st.At)
			}
		}
		for _, c := range r.Timeline.Down {
			times = append(times, c.At)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	// Busy stretches reach quiet/4 past their last change, so a change
	// stays visible; longer stretches of nothing are cut.
	var spans []span
	pad := quiet / 4
	for i := 0; i+1 < len(times); i++ {
		a, b := times[i], times[i+1]
		if b-a > quiet {
			spans = append(spans, span{t0: a, t1: a + pad}, span{t0: a + pad, t1: b - pad, cut: true}, span{t0: b - pad, t1: b})
		} else {
			spans = append(spans, span{t0: a, t1: b})
		}
	}
	var busy time.Duration
	cuts := 0
	for _, s := range spans {
		if s.cut {
			cuts++
		} else {
			busy += s.t1 - s.t0
		}
	}
	width := float64(svgWidth - svgLabel - svgRight)
	scale := (width - float64(cuts*svgBreak)) / max(busy.Seconds(), 1)
	x := float64(svgLabel)
	for i := range spans {
		s := &spans[i]
		s.x0 = x
		if s.cut {
			x += svgBreak
		} else {
			x += (s.t1 - s.t0).Seconds() * scale
		}
		s.x1 = x
	}
	return &axis{spans: spans}
}

func (a *axis) x(t time.Duration) float64 {
	i, _ := slices.BinarySearchFunc(a.spans, t, func(s span, t time.Duration) int {
		switch {
		case s.t1 < t:
			return -1
		case s.t0 > t:
			return 1
		}
		return 0
	})
	if i >= len(a.spans) {
		return float64(svgWidth - svgRight)
	}
	s := a.spans[i]
	if s.t1 == s.t0 {
		return s.x0
	}
	return s.x0 + (s.x1-s.x0)*float64(t-s.t0)/float64(s.t1-s.t0)
}

// draw marks the cut-out stretches (hatched, labelled with their length)
// and labels the time at the start of each busy stretch.
func (a *axis) draw(p func(string, ...any), top, bottom int) {
	lastLabel := -1000.0
	for i, s := range a.spans {
		if s.cut {
			p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f6f6f6" stroke="#ccc" stroke-dasharray="2,2"/>`, s.x0+2, top, s.x1-s.x0-4, bottom-top)
			p(`<text x="%.1f" y="%d" font-size="8" fill="#666" text-anchor="middle">+%s</text>`+"\n", (s.x0+s.x1)/2, bottom+8, short(s.t1-s.t0))
			continue
		}
		if (i == 0 || a.spans[i-1].cut) && s.x0-lastLabel > 45 && s.x0 < svgWidth-50 {
			p(`<text x="%.1f" y="%d" font-size="9" fill="#333">%s</text>`+"\n", s.x0, top-2, short(s.t0))
			lastLabel = s.x0
		}
	}
}

// short formats a duration compactly: 2h0m0s is "2h", 1m30s is "1m30s".
func short(d time.Duration) string {
	s := d.Round(time.Second).String()
	for _, z := range []string{"h0m0s", "m0s"} {
		if strings.HasSuffix(s, z) {
			s = s[:len(s)-len(z)+1]
		}
	}
	return s
}
