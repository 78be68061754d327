package report

import (
	"bytes"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/mqfault/mqfault/pkg/sim"
)

// The page's colours come in three sets that no two colours are alike
// across (TestReportPalettes holds them at least 15 CIE76 units apart): the
// strategies' lines are saturated colours of middle or low lightness, the
// brokers' fills (fault windows, shares of the attempts) light tints, and
// the timeline's states greys. So a broker's colour is never read as a
// strategy's or a state's.

// strategyPalette holds the strategies' line colours (colour-blind safe:
// Okabe and Ito's first five, then after Paul Tol's muted scheme and
// ColorBrewer's dark ones), one for each strategy of a run with every
// ablation: five strategies, thirteen ablations and one of the user's.
var strategyPalette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x33, 0x22, 0x88, 0xff}, // indigo
	{0x88, 0x22, 0x55, 0xff}, // wine
	{0x99, 0x99, 0x33, 0xff}, // olive
	{0x44, 0xAA, 0x99, 0xff}, // teal
	{0x66, 0x33, 0x00, 0xff}, // brown
	{0xCC, 0x66, 0x77, 0xff}, // rose
	{0x11, 0x77, 0x33, 0xff}, // green
	{0xAA, 0x44, 0x99, 0xff}, // purple
	{0xEE, 0x33, 0x77, 0xff}, // magenta
	{0x99, 0x77, 0x00, 0xff}, // gold
	{0x6A, 0x3D, 0x9A, 0xff}, // violet
	{0x66, 0xA6, 0x1E, 0xff}, // leaf green
	{0x00, 0x99, 0xBB, 0xff}, // cyan
	{0x8C, 0x51, 0x0A, 0xff}, // ochre
}

// strategyColor returns the line colour of the strategy at index i of the
// report.
func strategyColor(i int) color.RGBA { return strategyPalette[i%len(strategyPalette)] }

// brokerPalette holds the brokers' fill colours: light tints (after
// ColorBrewer's Set3), each dark enough to show on white.
var brokerPalette = []color.RGBA{
	{0x8D, 0xD3, 0xC7, 0xff}, // mint
	{0xBE, 0xBA, 0xDA, 0xff}, // lavender
	{0xFB, 0x80, 0x72, 0xff}, // salmon
	{0x80, 0xB1, 0xD3, 0xff}, // light blue
	{0xFD, 0xB4, 0x62, 0xff}, // light orange
	{0xB3, 0xDE, 0x69, 0xff}, // light green
	{0xFC, 0xCD, 0xE5, 0xff}, // pink
	{0xFF, 0xED, 0x6F, 0xff}, // yellow
}

// brokerColor returns the colour of the broker at index i of the scenario.
func brokerColor(i int) color.RGBA { return brokerPalette[i%len(brokerPalette)] }

// The timeline's states and the fault bands, in greys.
var (
	faultBand      = color.RGBA{0xdd, 0xdd, 0xdd, 0xff} // some broker has a fault window
	laneFault      = color.RGBA{0xe4, 0xe4, 0xe4, 0xff} // this broker's fault window
	isolatedColor  = color.RGBA{0x5C, 0x5C, 0x5C, 0xff} // mid grey
	unreachableCol = color.RGBA{0x1F, 0x1F, 0x1F, 0xff} // near black
	releaseColor   = color.RGBA{0xff, 0xff, 0xff, 0xff} // a white cut through the isolated bar
)

// secondTicks labels the time axis every 1, 2, 5 or 10 s (or a coarser
// round step for long runs), the finest step that gives at most 12 steps,
// with a minor tick between labels when the step is even.
func secondTicks(seconds int) plot.ConstantTicks {
	steps := []int{1, 2, 5, 10, 30, 60, 300, 600, 1800, 3600}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if seconds/s <= 12 {
			step = s
			break
		}
	}
	for seconds/step > 12 { // longer than 12 hours
		step *= 2
	}
	var ticks plot.ConstantTicks
	for t := 0; t <= seconds; t += step {
		ticks = append(ticks, plot.Tick{Value: float64(t), Label: strconv.Itoa(t)})
		if half := t + step/2; step%2 == 0 && half <= seconds {
			ticks = append(ticks, plot.Tick{Value: float64(half)})
		}
	}
	return ticks
}

// logTicks marks 1 to 9 times each power of ten inside the axis' range and
// labels 1, 2 and 5 of each decade (only 1 when the range spans more than
// four decades), so a 20 ms baseline reads off the axis. A range inside
// one decade labels every mark. Only ticks inside the range are returned:
// gonum/plot reserves room for the labels of ticks beyond it.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	wide := math.Log10(hi/lo) > 4
	var ticks []plot.Tick
	labelled := 0
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = fmtTick(v)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if labelled < 2 {
		for i := range ticks {
			ticks[i].Label = fmtTick(ticks[i].Value)
		}
	}
	return ticks
}

func fmtTick(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// countTicks labels a count axis in whole numbers: every 1, 2 or 5 times a
// power of ten, the finest such step that gives at most six labels, with a
// mark between two labels when the step is even. Only ticks inside the
// range are returned.
type countTicks struct{}

func (countTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := int64(1) // 1, 2, 5, 10, 20, 50, ...
	for k := 0; float64(step)*5 < hi-lo; k++ {
		if k%3 == 1 {
			step = step / 2 * 5
		} else {
			step *= 2
		}
	}
	var ticks []plot.Tick
	for v := int64(math.Ceil(lo/float64(step))) * step; float64(v) <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: strconv.FormatInt(v, 10)})
		if half := float64(v) + float64(step)/2; step%2 == 0 && half <= hi {
			ticks = append(ticks, plot.Tick{Value: half})
		}
	}
	return ticks
}

// percentTicks labels a share axis from 0 to 1 in percent, every 25%.
type percentTicks struct{}

func (percentTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for p := 0; p <= 100; p += 25 {
		if v := float64(p) / 100; v >= lo && v <= hi {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.Itoa(p) + "%"})
		}
	}
	return ticks
}

// Chart sizes: every chart is chartWidth wide; line charts are lineHeight
// high, lane charts laneHeight per lane plus the axis.
const (
	chartWidth = 7.5 * vg.Inch
	lineHeight = 2.2 * vg.Inch
	laneHeight = 0.26 * vg.Inch
	laneAxis   = 0.62 * vg.Inch
	// maxLanes bounds a lane chart; the page says which brokers it left out.
	maxLanes = 40
)

// chart is one plot of the page and its height. The page renders all its
// charts with one left and right edge of the data area (alignCharts), so
// the time axes of charts one above the other line up.
type chart struct {
	p *plot.Plot
	h vg.Length
}

// newPlot makes a plot over the run's seconds, in the page's font.
func newPlot(seconds int, ylabel string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "virtual time (s)"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, float64(seconds)
	p.X.Tick.Marker = secondTicks(seconds)
	setFont(p)
	return p
}

// setFont sets the page's font on p's title, labels and ticks.
func setFont(p *plot.Plot) {
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	for _, st := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label} {
		st.Font.Typeface, st.Font.Variant = sans.Typeface, sans.Variant
	}
}

// newLineChart makes a line chart with the union of the scenario's fault
// windows shaded in one grey, drawn once: overlapping windows do not blend
// into a colour the legend lacks. Which broker had which fault is the
// fault-window chart's job.
func newLineChart(sc *sim.Scenario, seconds int, ylabel string) *plot.Plot {
	p := newPlot(seconds, ylabel)
	for _, w := range faultUnion(sc) {
		p.Add(band{from: w.From.Seconds(), to: w.To.Seconds(), color: faultBand})
	}
	p.Add(plotter.NewGrid())
	return p
}

// faultUnion returns the union of the scenario's fault windows, in order.
func faultUnion(sc *sim.Scenario) []sim.Span {
	var spans []sim.Span
	for _, e := range sc.Events {
		spans = append(spans, sim.Span{From: e.At, To: e.End()})
	}
	slices.SortFunc(spans, func(a, b sim.Span) int { return int(a.From - b.From) })
	var out []sim.Span
	for _, s := range spans {
		if n := len(out); n > 0 && s.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, s.To)
			continue
		}
		out = append(out, s)
	}
	return out
}

// band fills [from, to) of the x axis across the plot's height.
type band struct {
	from, to float64
	color    color.Color
}

func (s band) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	fillRect(c, s.color, trX(s.from), trX(s.to), c.Min.Y, c.Max.Y, 0)
}

// fillRect fills the rectangle x1..x2, y1..y2 clipped to c's width, at
// least minW wide.
func fillRect(c draw.Canvas, clr color.Color, x1, x2, y1, y2, minW vg.Length) {
	if x2-x1 < minW {
		x2 = x1 + minW
	}
	x1, x2 = max(x1, c.Min.X), min(x2, c.Max.X)
	if x2 <= x1 || y2 <= y1 {
		return
	}
	c.FillPolygon(clr, []vg.Point{{X: x1, Y: y1}, {X: x2, Y: y1}, {X: x2, Y: y2}, {X: x1, Y: y2}})
}

// line is one series of a line chart: y per second, NaN where it has no
// point.
type line struct {
	name  string
	color color.RGBA
	ys    []float64
}

// legendEntry describes how a line is drawn, for the page's legend.
type legendEntry struct {
	Name   string
	Color  template.CSS
	Dashed bool
	// Note says what the legend must say about the line: "identical to X"
	// when it coincides with an earlier line everywhere (it is drawn dashed
	// over it, so both show), "none" when it is zero throughout.
	Note string
}

// addLines draws lines in order. A line equal to an earlier one at every
// second is dashed, with a phase of its own, so the lines under it show
// between its dashes; the legend says which line it repeats.
func addLines(p *plot.Plot, lines []line) ([]legendEntry, error) {
	first := identical(lines)
	copies := map[int]int{} // copies so far of each first line
	legend := make([]legendEntry, len(lines))
	for i, l := range lines {
		legend[i] = legendEntry{Name: l.name, Color: cssColor(l.color)}
		if zero(l.ys) {
			legend[i].Note = "none"
		}
		var pts plotter.XYs
		for s, y := range l.ys {
			if !math.IsNaN(y) {
				pts = append(pts, plotter.XY{X: float64(s) + 0.5, Y: y})
			}
		}
		if len(pts) == 0 {
			continue
		}
		pl, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		pl.Color = l.color
		pl.Width = vg.Points(1.3)
		if j := first[i]; j != i {
			copies[j]++
			n := copies[j]
			group := 1
			for _, f := range first {
				if f == j {
					group++
				}
			}
			group-- // the first line itself was counted
			// Dashes of d with room for the group's other copies and the
			// first line between them: copy n starts n-1 dashes later.
			d := vg.Points(6)
			pl.Dashes = []vg.Length{d, d * vg.Length(group-1)}
			pl.DashOffs = d * vg.Length(group-n)
			pl.Width = vg.Points(1.6)
			legend[i].Dashed = true
			if legend[i].Note == "" {
				legend[i].Note = "identical to " + lines[j].name
			} else {
				legend[i].Note = "none, as " + lines[j].name
			}
		}
		p.Add(pl)
	}
	return legend, nil
}

// identical returns, for each line, the index of the first line with the
// same values at every second (its own index when none before it has).
func identical(lines []line) []int {
	first := make([]int, len(lines))
	for i := range lines {
		first[i] = i
		for j := range i {
			if first[j] == j && sameSeries(lines[i].ys, lines[j].ys) {
				first[i] = j
				break
			}
		}
	}
	return first
}

func sameSeries(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) })
}

func zero(ys []float64) bool {
	for _, y := range ys {
		if y != 0 && !math.IsNaN(y) {
			return false
		}
	}
	return true
}

// stack fills each broker's share of the attempts of each second as a band
// stacked on the bands of the brokers before it, so no broker's share can
// hide another's.
type stack struct {
	series *sim.Series
	colors []color.RGBA
}

func (s stack) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	n := s.series.Seconds
	// bottoms[sec] is where the next broker's band starts; -1 marks a
	// second without attempts.
	bottoms := make([]float64, n)
	for sec := range n {
		if _, ok := s.series.Share(0, sec); !ok {
			bottoms[sec] = -1
		}
	}
	for b := range s.series.Attempts {
		for sec := 0; sec < n; {
			if bottoms[sec] < 0 {
				sec++
				continue
			}
			// One polygon per run of seconds with attempts.
			var top, bottom []vg.Point
			for ; sec < n && bottoms[sec] >= 0; sec++ {
				share, _ := s.series.Share(b, sec)
				lo, hi := bottoms[sec], bottoms[sec]+share
				x1, x2 := trX(float64(sec)), trX(float64(sec+1))
				top = append(top, vg.Point{X: x1, Y: trY(hi)}, vg.Point{X: x2, Y: trY(hi)})
				bottom = append(bottom, vg.Point{X: x1, Y: trY(lo)}, vg.Point{X: x2, Y: trY(lo)})
				bottoms[sec] = hi
			}
			slices.Reverse(bottom)
			c.FillPolygon(s.colors[b%len(s.colors)], c.ClipPolygonXY(append(top, bottom...)))
		}
	}
}

// lanes is a chart with one horizontal lane per broker, the first at the
// top; lane i spans y in [n-i-1, n-i).
func newLaneChart(seconds int, names []string) *chart {
	p := newPlot(seconds, "")
	n := len(names)
	p.Y.Min, p.Y.Max = 0, float64(n)
	var ticks plot.ConstantTicks
	for i, name := range names {
		ticks = append(ticks, plot.Tick{Value: float64(n-i) - 0.5, Label: shorten(name, 18)})
	}
	p.Y.Tick.Marker = ticks
	p.Y.Tick.Length = 0
	p.Y.Padding = 0
	p.X.Padding = 0
	return &chart{p: p, h: laneAxis + laneHeight*vg.Length(n)}
}

// shorten cuts name to n runes with an ellipsis.
func shorten(name string, n int) string {
	r := []rune(name)
	if len(r) <= n {
		return name
	}
	return string(r[:n-1]) + "…"
}

// laneBar is a bar in one lane: [from, to) seconds, between the lane
// fractions lo and hi (0 the lane's bottom, 1 its top).
type laneBar struct {
	lane, lanes int
	from, to    float64
	lo, hi      float64
	color       color.Color
	label       string // drawn inside the bar when it fits
	labelColor  color.Color
}

// laneBars draws bars, in order (a later bar over an earlier one), with at
// least half a point of width so a short isolation still shows.
type laneBars struct {
	bars  []laneBar
	style text.Style
}

func (lb laneBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, b := range lb.bars {
		base := float64(b.lanes - b.lane - 1)
		x1, x2 := trX(b.from), trX(b.to)
		y1, y2 := trY(base+b.lo), trY(base+b.hi)
		fillRect(c, b.color, x1, x2, y1, y2, vg.Points(0.5))
		if b.label == "" {
			continue
		}
		sty := lb.style
		sty.Color = b.labelColor
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		if w := sty.Width(b.label); w+vg.Points(4) < x2-x1 {
			c.FillText(sty, vg.Point{X: (x1 + x2) / 2, Y: (y1 + y2) / 2}, b.label)
		}
	}
}

// releaseMarks draws a short vertical mark at each release (the end of an
// isolation before the run's end), so back-to-back isolations read apart.
type releaseMarks struct {
	lanes int
	marks []laneBar // from is the release's time; lane, lo and hi as laneBar
}

func (r releaseMarks) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	sty := draw.LineStyle{Color: releaseColor, Width: vg.Points(0.8)}
	for _, m := range r.marks {
		base := float64(r.lanes - m.lane - 1)
		x := trX(m.from)
		if x < c.Min.X || x > c.Max.X {
			continue
		}
		c.StrokeLine2(sty, x, trY(base+m.lo), x, trY(base+m.hi))
	}
}

// textOn returns black or white, whichever reads better on c.
func textOn(c color.RGBA) color.Color {
	if 299*int(c.R)+587*int(c.G)+114*int(c.B) > 140000 {
		return color.Black
	}
	return color.White
}

func secs(d time.Duration) float64 { return d.Seconds() }

// alignCharts renders charts as inline SVG elements, every one with its
// data area at the same left and right edges: those of the chart with the
// widest axis labels.
func alignCharts(charts []*chart) ([]template.HTML, error) {
	crops := alignCrops(charts)
	out := make([]template.HTML, len(charts))
	for i, ch := range charts {
		c := vgsvg.New(chartWidth, ch.h)
		ch.p.Draw(draw.Crop(draw.New(c), crops[i][0], -crops[i][1], 0, 0))
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			return nil, err
		}
		s := buf.String()
		if j := strings.Index(s, "<svg"); j >= 0 {
			s = s[j:] // drop the XML declaration
		}
		// Liberation Sans is what the plot measured text with; most systems
		// have a sans-serif of similar metrics when it is missing.
		s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
		out[i] = template.HTML(s) //nolint:gosec // produced by vgsvg from our own data
	}
	return out, nil
}

// alignCrops returns how much to crop each chart's canvas on the left and
// on the right so that every chart's data area begins and ends where that
// of the chart with the widest axis labels does.
func alignCrops(charts []*chart) [][2]vg.Length {
	var left, right vg.Length
	natural := make([][2]vg.Length, len(charts))
	for i, ch := range charts {
		dc := ch.p.DataCanvas(draw.New(vgsvg.New(chartWidth, ch.h)))
		natural[i] = [2]vg.Length{dc.Min.X, chartWidth - dc.Max.X}
		left, right = max(left, natural[i][0]), max(right, natural[i][1])
	}
	crops := make([][2]vg.Length, len(charts))
	for i := range charts {
		crops[i] = [2]vg.Length{left - natural[i][0], right - natural[i][1]}
	}
	return crops
}
