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

// Picture geometry, in pixels. Text is at least svgFont px at 100% zoom.
const (
	svgWidth  = 1280
	svgLabel  = 96 // member IDs and strip labels on the left
	svgRight  = 16
	svgFont   = 12
	svgLine   = 16 // one line of text
	svgRow    = 16 // one member
	svgBar    = 13 // bar height within a row
	svgMarks  = 8  // rebalance marks above the rows
	svgStrip  = 56 // the tasks-down strip
	svgAxis   = 22 // a panel's time axis
	svgHeader = 20
	svgGap    = 16 // between panels
	svgBreak  = 18 // a cut-out stretch of nothing happening
	charWidth = 8  // a generous estimate of one character at svgFont px (DejaVu Sans: 7.6 for digits)
)

// quiet is how long nothing must happen before the picture cuts the
// stretch out (marked and labelled with its length), so that minutes of
// hand-over stay visible on an axis of hours.
const quiet = 2 * time.Minute

// Colours of what members run and of the causes of downtime.
const (
	colActive   = "#3b6fc4"
	colDown     = "#d9534f"
	colLearning = "#e8a33d"
	colStandby  = "#8cc084"
	colEvent    = "#7a4fb0"
)

var causeColours = [numCauses]string{CauseJoin: "#9e9e9e", CausePromotion: "#2a9d8f", CauseCold: "#f4a261", CauseCrash: "#8b1a1a"}

// WriteSVG draws the results as a timeline: one panel per strategy, with
// one row per member (its active, restoring or stopped, learning and standby
// tasks stacked over time), a mark per rebalance, a strip of the tasks down
// coloured by cause and scaled to the panel's own maximum, and a time axis.
// All panels share one time axis, on which quiet stretches are cut out;
// scripted events are dashed lines through every panel.
func WriteSVG(w io.Writer, rs []*Result) error {
	if len(rs) == 0 {
		return fmt.Errorf("sim: no results to draw")
	}
	ax := newAxis(rs)
	load := 1
	for _, r := range rs {
		load = max(load, r.Metrics.PeakBusy)
	}
	labels := layoutEvents(ax, rs[0].Timeline.Events)
	rows := 0
	for _, l := range labels {
		rows = max(rows, l.row+1)
	}
	top := 2*svgLine + 14 + rows*svgLine + 6 // title, legend, event labels
	height := top
	for _, r := range rs {
		height += panelHeight(r)
	}
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="%d">`+"\n", svgWidth, height, svgFont)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="8" y="16">Members: <tspan fill="%s">■</tspan> active  <tspan fill="%s">■</tspan> active but down (restoring, or stopped at a join)  <tspan fill="%s">■</tspan> learner / warm-up  <tspan fill="%s">■</tspan> standby   (bar full = %d tasks; grey: member running; ticks: rebalances)</text>`+"\n",
		colActive, colDown, colLearning, colStandby, load)
	p(`<text x="8" y="%d">Tasks down, by cause (each strip scaled to its own maximum):`, 16+svgLine)
	for _, c := range Causes() {
		p(`  <tspan fill="%s">■</tspan> %s`, causeColours[c], c)
	}
	p("</text>\n")
	evTop := 2*svgLine + 10
	for _, l := range labels {
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="3,3" stroke-width="1"/>`, l.x, evTop+l.row*svgLine+4, l.x, height-4, colEvent)
		p(`<text x="%.1f" y="%d" fill="%s">%s</text>`+"\n", l.x+3, evTop+(l.row+1)*svgLine, colEvent, html.EscapeString(l.text))
	}
	ax.drawCuts(p, top, height-4)
	y := top
	for _, r := range rs {
		y = drawPanel(p, ax, r, y, load)
	}
	p("</svg>\n")
	return bw.Flush()
}

func panelHeight(r *Result) int {
	return svgHeader + svgMarks + svgRow*len(r.Timeline.Members) + 4 + svgStrip + svgAxis + svgGap
}

// eventLabel is a scripted event's label, placed in the first row where it
// overlaps no other label.
type eventLabel struct {
	x    float64
	row  int
	text string
}

// layoutEvents places the event labels in rows so that none overlaps
// another: each goes to the first row whose last label ends left of it.
func layoutEvents(ax *axis, evs []Mark) []eventLabel {
	var ends []float64 // per row: where its last label ends
	var out []eventLabel
	for _, ev := range evs {
		l := eventLabel{x: ax.x(ev.At), text: ev.Label}
		width := textWidth(l.text) + 8
		for l.row < len(ends) && ends[l.row] > l.x {
			l.row++
		}
		if l.row == len(ends) {
			ends = append(ends, 0)
		}
		ends[l.row] = l.x + width
		out = append(out, l)
	}
	return out
}

func textWidth(s string) float64 { return float64(charWidth * len([]rune(s))) }

func drawPanel(p func(string, ...any), ax *axis, r *Result, y, load int) int {
	m := r.Metrics
	p(`<text x="8" y="%d" font-size="14" font-weight="bold">%s</text>`, y+15, html.EscapeString(r.Strategy.String()))
	p(`<text x="%d" y="%d">downtime %.0f task-s, %d rebalances, %d moves, %d cold hand-overs, duplicate %.0f task-s</text>`+"\n",
		svgLabel+120, y+15, m.Downtime.Seconds(), m.Rebalances, m.Moves, m.Cold, m.Duplicate.Seconds())
	y += svgHeader
	for _, rd := range r.Rounds {
		x0, x1 := ax.x(rd.Start), ax.x(rd.End)
		color := "#333"
		if rd.Aborted {
			color = colDown
		}
		p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`, x0, y, max(x1-x0, 1.5), svgMarks-2, color)
	}
	p("\n")
	y += svgMarks
	end := r.Timeline.End
	for _, mt := range r.Timeline.Members {
		gone := mt.Gone
		if gone < 0 {
			gone = end
		}
		p(`<text x="8" y="%d">%s</text>`, y+svgBar-1, html.EscapeString(mt.ID))
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
			}{{st.Active, colActive}, {st.Down, colDown}, {st.Learning, colLearning}, {st.Standby, colStandby}} {
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
	y += 4
	drawStrip(p, ax, r, y)
	y += svgStrip
	ax.drawTicks(p, y)
	return y + svgAxis + svgGap
}

// drawStrip draws the tasks down over time, stacked by cause (the
// weightiest at the bottom), scaled to this panel's maximum, which it
// labels. A stretch too short to see is drawn 2 px wide.
func drawStrip(p func(string, ...any), ax *axis, r *Result, y int) {
	peak := 0
	for _, c := range r.Timeline.Down {
		peak = max(peak, c.Total())
	}
	bottom := float64(y + svgStrip - 2)
	p(`<text x="8" y="%d">tasks down</text>`, y+svgStrip/2)
	if peak == 0 {
		p(`<text x="8" y="%d">(none)</text>`, y+svgStrip/2+svgLine)
	} else {
		p(`<text x="8" y="%d">max %d</text>`, y+svgStrip/2+svgLine, peak)
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ccc" stroke-dasharray="2,3"/>`, svgLabel, y+2, svgWidth-svgRight, y+2)
	}
	end := r.Timeline.End
	for i, c := range r.Timeline.Down {
		t1 := end
		if i+1 < len(r.Timeline.Down) {
			t1 = r.Timeline.Down[i+1].At
		}
		x0, x1 := ax.x(c.At), ax.x(t1)
		if c.Total() == 0 || x1 <= x0 {
			continue
		}
		base := bottom
		for k := len(Causes()) - 1; k >= 0; k-- {
			cause := Causes()[k]
			if c.N[cause] == 0 {
				continue
			}
			h := float64(svgStrip-4) * float64(c.N[cause]) / float64(peak)
			base -= h
			p(`<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>`, x0, base, max(x1-x0, 2), h, causeColours[cause])
		}
	}
	p(`<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#999"/>`+"\n", svgLabel, bottom, svgWidth-svgRight, bottom)
}

// axis maps simulated time to x, cutting out quiet stretches: each is drawn
// svgBreak wide, the rest of the time linearly.
type axis struct {
	spans []span // in time order, covering [0, end]
	scale float64
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
	return &axis{spans: spans, scale: scale}
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

// drawCuts marks the cut-out stretches, hatched, from top to bottom.
func (a *axis) drawCuts(p func(string, ...any), top, bottom int) {
	for _, s := range a.spans {
		if s.cut {
			p(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f4f4f4" stroke="#ccc" stroke-dasharray="2,2"/>`+"\n", s.x0+2, top, s.x1-s.x0-4, bottom-top)
		}
	}
}

// niceSteps are the tick intervals the axis chooses from.
var niceSteps = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// tickLabel is one label of the time axis: a round time, or the length of
// a cut-out stretch ("+6m18s").
type tickLabel struct {
	x    float64
	text string
	tick bool // a time (with a tick mark), not a cut's length
}

// labels returns the axis labels, left to right, none overlapping: in each
// busy stretch the multiples of the smallest round step at least 80 px
// apart, and each cut's length where it fits.
func (a *axis) labels() []tickLabel {
	var all []tickLabel
	step := niceSteps[len(niceSteps)-1]
	for _, st := range niceSteps {
		if st.Seconds()*a.scale >= 80 {
			step = st
			break
		}
	}
	for _, s := range a.spans {
		if s.cut {
			all = append(all, tickLabel{x: (s.x0+s.x1)/2 - textWidth("+"+short(s.t1-s.t0))/2, text: "+" + short(s.t1-s.t0)})
			continue
		}
		for t := (s.t0 + step - 1) / step * step; t <= s.t1; t += step {
			all = append(all, tickLabel{x: a.x(t), text: short(t), tick: true})
		}
	}
	var out []tickLabel
	end := -1e9
	for _, l := range all {
		x0 := l.x
		if l.tick {
			x0 -= textWidth(l.text) / 2
		}
		if x0 < end+12 || x0+textWidth(l.text) > svgWidth {
			continue
		}
		out = append(out, l)
		end = x0 + textWidth(l.text)
	}
	return out
}

// drawTicks draws the time axis with its labels below y.
func (a *axis) drawTicks(p func(string, ...any), y int) {
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#666"/>`, svgLabel, y, svgWidth-svgRight, y)
	for _, l := range a.labels() {
		if l.tick {
			p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#666"/><text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`, l.x, y, l.x, y+4, l.x, y+4+svgFont, l.text)
		} else {
			p(`<text x="%.1f" y="%d" fill="#888">%s</text>`, l.x, y+4+svgFont, l.text)
		}
	}
	p("\n")
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
