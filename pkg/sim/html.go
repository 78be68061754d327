package sim

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette holds the line colours of brokers and strategies (colour-blind
// safe, after Okabe and Ito).
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
	{0xF0, 0xE4, 0x42, 0xff}, // yellow
}

func colorOf(i int) color.RGBA { return palette[i%len(palette)] }

func cssColor(c color.RGBA) template.CSS {
	return template.CSS(fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B))
}

// shade is a plotter that fills a fault window across the whole height of
// a plot.
type shade struct {
	from, to float64
	color    color.Color
}

func (s shade) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	x1, x2 := trX(s.from), trX(s.to)
	x1, x2 = max(x1, c.Min.X), min(x2, c.Max.X)
	if x2 <= x1 {
		return
	}
	c.FillPolygon(s.color, []vg.Point{{X: x1, Y: c.Min.Y}, {X: x2, Y: c.Min.Y}, {X: x2, Y: c.Max.Y}, {X: x1, Y: c.Max.Y}})
}

// logTicks are plot.LogTicks inside the axis' range only: gonum/plot
// reserves room for the labels of ticks beyond it.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var in []plot.Tick
	for _, t := range (plot.LogTicks{Prec: -1}).Ticks(lo, hi) {
		if t.Value >= lo && t.Value <= hi {
			in = append(in, t)
		}
	}
	return in
}

// secondTicks labels the time axis every 10 s (or a coarser round step
// for long runs), with a minor tick between labels.
func secondTicks(seconds int) plot.ConstantTicks {
	step := 10
	for _, s := range []int{10, 30, 60, 300, 600, 1800, 3600} {
		if seconds/s <= 12 {
			step = s
			break
		}
		step = s
	}
	var ticks plot.ConstantTicks
	for t := 0; t <= seconds; t += step {
		ticks = append(ticks, plot.Tick{Value: float64(t), Label: strconv.Itoa(t)})
		if half := t + step/2; half <= seconds {
			ticks = append(ticks, plot.Tick{Value: float64(half)})
		}
	}
	return ticks
}

// chartWidth and chartHeight are every chart's size.
const (
	chartWidth  = 9 * vg.Inch
	chartHeight = 2.6 * vg.Inch
)

// newChart makes a plot over the run's seconds with the scenario's fault
// windows shaded in their broker's colour.
func newChart(sc *Scenario, seconds int, ylabel string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "virtual time (s)"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = 0, float64(seconds)
	p.X.Tick.Marker = secondTicks(seconds)
	p.Add(plotter.NewGrid())
	index := map[string]int{}
	for i, b := range sc.Brokers {
		index[b.Name] = i
	}
	for _, e := range sc.Events {
		c := colorOf(index[e.Broker])
		p.Add(shade{from: e.At.Seconds(), to: e.End().Seconds(), color: color.NRGBA{R: c.R, G: c.G, B: c.B, A: 0x38}})
	}
	sans := font.Font{Typeface: "Liberation", Variant: "Sans"}
	for _, st := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label} {
		st.Font.Typeface, st.Font.Variant = sans.Typeface, sans.Variant
	}
	return p
}

// addLine adds a line through pts (nothing when pts is empty).
func addLine(p *plot.Plot, pts plotter.XYs, c color.Color) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.2)
	p.Add(l)
	return nil
}

// svgOf renders p as an SVG element for inlining in HTML.
func svgOf(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.New(chartWidth, chartHeight)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:] // drop the XML declaration
	}
	// Liberation Sans is what the plot measured text with; most systems have
	// a sans-serif of similar metrics when it is missing.
	s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	return template.HTML(s), nil //nolint:gosec // produced by vgsvg from our own data
}

// chartP99 plots the p99 of each second for the given results, on a log
// scale, in milliseconds.
func chartP99(sc *Scenario, results []Result, colors []color.RGBA) (template.HTML, error) {
	seconds := results[0].Series.Seconds
	p := newChart(sc, seconds, "p99 ms")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	lo, hi := 1e18, 0.0
	for i, r := range results {
		var pts plotter.XYs
		for s, d := range r.Series.P99 {
			if d <= 0 {
				continue
			}
			v := ms(d)
			lo, hi = min(lo, v), max(hi, v)
			pts = append(pts, plotter.XY{X: float64(s) + 0.5, Y: v})
		}
		if err := addLine(p, pts, colors[i]); err != nil {
			return "", err
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	return svgOf(p)
}

// chartSends plots the sends started in each second for every result.
func chartSends(sc *Scenario, results []Result) (template.HTML, error) {
	p := newChart(sc, results[0].Series.Seconds, "sends/s")
	p.Y.Min = 0
	for i, r := range results {
		pts := make(plotter.XYs, 0, len(r.Series.Sends))
		for s, n := range r.Series.Sends {
			pts = append(pts, plotter.XY{X: float64(s) + 0.5, Y: float64(n)})
		}
		if err := addLine(p, pts, colorOf(i)); err != nil {
			return "", err
		}
	}
	return svgOf(p)
}

// chartShare plots each broker's share of the attempts of each second.
func chartShare(sc *Scenario, r Result) (template.HTML, error) {
	p := newChart(sc, r.Series.Seconds, "share")
	p.Y.Min, p.Y.Max = 0, 1
	for b := range r.Series.Attempts {
		var pts plotter.XYs
		for s := range r.Series.Seconds {
			if v, ok := r.Series.Share(b, s); ok {
				pts = append(pts, plotter.XY{X: float64(s) + 0.5, Y: v})
			}
		}
		if err := addLine(p, pts, colorOf(b)); err != nil {
			return "", err
		}
	}
	return svgOf(p)
}

type htmlSwatch struct {
	Name  string
	Color template.CSS
}

type htmlRow struct {
	Name, Summary                                  string
	Sends, Succeeded, Failed, Attempts, FirstFails int64
	P50, P99, P999, Max, Unhealthy                 string
}

type htmlStrategy struct {
	Name, Summary string
	Share, P99    template.HTML
}

type htmlEvent struct {
	Broker, Window, What string
	Color                template.CSS
}

type htmlPage struct {
	Title       string
	Summary     string
	Events      []htmlEvent
	Rows        []htmlRow
	Strategies  []htmlSwatch
	Brokers     []htmlSwatch
	P99All      template.HTML
	SendsAll    template.HTML
	PerStrategy []htmlStrategy
}

// WriteHTML writes the report as one self-contained HTML page (no script,
// no external resource): the scenario, the table, and charts drawn with
// gonum/plot as inline SVG: sends and p99 per second for every strategy,
// then per strategy each broker's share of the attempts and the p99, with
// fault windows shaded in their broker's colour.
func (r *Report) WriteHTML(w io.Writer) error {
	sc := r.Scenario
	if sc == nil || len(r.Results) == 0 {
		return fmt.Errorf("sim: the report has no scenario or no result")
	}
	page := htmlPage{Title: fmt.Sprintf("mqfault sim: %s (seed %d)", sc.Name, r.Seed), Summary: strings.SplitN(sc.Summary(r.Seed), "\n", 2)[0]}
	index := map[string]int{}
	for i, b := range sc.Brokers {
		index[b.Name] = i
		page.Brokers = append(page.Brokers, htmlSwatch{Name: b.Name, Color: cssColor(colorOf(i))})
	}
	for _, e := range sc.Events {
		page.Events = append(page.Events, htmlEvent{Broker: e.Broker, Window: fmtSec(e.At) + " – " + fmtSec(e.End()),
			What: e.describe(), Color: cssColor(colorOf(index[e.Broker]))})
	}
	colors := make([]color.RGBA, len(r.Results))
	for i, res := range r.Results {
		colors[i] = colorOf(i)
		page.Strategies = append(page.Strategies, htmlSwatch{Name: res.Name, Color: cssColor(colors[i])})
		page.Rows = append(page.Rows, htmlRow{
			Name: res.Name, Summary: res.Summary, Sends: res.Sends, Succeeded: res.Succeeded, Failed: res.Failed,
			Attempts: res.Attempts, FirstFails: res.FirstAttemptFailures,
			P50: fmtMS(res.Latency.P50), P99: fmtMS(res.Latency.P99), P999: fmtMS(res.Latency.P999), Max: fmtMS(res.Latency.Max),
			Unhealthy: fmt.Sprintf("%.1f%%", 100*res.UnhealthyShare()),
		})
	}
	var err error
	if page.P99All, err = chartP99(sc, r.Results, colors); err != nil {
		return err
	}
	if page.SendsAll, err = chartSends(sc, r.Results); err != nil {
		return err
	}
	for _, res := range r.Results {
		hs := htmlStrategy{Name: res.Name, Summary: res.Summary}
		if hs.Share, err = chartShare(sc, res); err != nil {
			return err
		}
		if hs.P99, err = chartP99(sc, []Result{res}, []color.RGBA{colorOf(6)}); err != nil {
			return err
		}
		page.PerStrategy = append(page.PerStrategy, hs)
	}
	return htmlTemplate.Execute(w, page)
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: Arial, Helvetica, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #ddd; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.sw { display: inline-block; width: 1.6em; height: 0.5em; margin: 0 0.3em 0.1em 1em; vertical-align: middle; }
.shade { opacity: 0.35; height: 0.9em; }
.note { color: #555; font-size: 0.9em; }
svg { display: block; max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Summary}}</p>
{{if .Events}}<table>
<tr><th>broker</th><th>window (virtual)</th><th>what happens</th></tr>
{{range .Events}}<tr><td><span class="sw shade" style="background:{{.Color}}"></span>{{.Broker}}</td><td>{{.Window}}</td><td>{{.What}}</td></tr>
{{end}}</table>{{end}}
<table>
<tr><th>strategy</th><th class="n">sends</th><th class="n">succeeded</th><th class="n">failed</th><th class="n">attempts</th><th class="n">1st-attempt failures</th><th class="n">p50 ms</th><th class="n">p99 ms</th><th class="n">p999 ms</th><th class="n">max ms</th><th class="n">unhealthy attempts</th></tr>
{{range .Rows}}<tr title="{{.Summary}}"><td>{{.Name}}</td><td class="n">{{.Sends}}</td><td class="n">{{.Succeeded}}</td><td class="n">{{.Failed}}</td><td class="n">{{.Attempts}}</td><td class="n">{{.FirstFails}}</td><td class="n">{{.P50}}</td><td class="n">{{.P99}}</td><td class="n">{{.P999}}</td><td class="n">{{.Max}}</td><td class="n">{{.Unhealthy}}</td></tr>
{{end}}</table>
<p class="note">Latency: whole sends, retries included, failed sends too. Unhealthy: attempts made to a broker that was down, blackholed,
slow, busy or flapping-down at that moment. Every strategy met the same brokers, faults and seed. Shaded bands are the fault windows,
in the colour of their broker.</p>

<h2>All strategies</h2>
<p>{{range .Strategies}}<span class="sw" style="background:{{.Color}}"></span>{{.Name}} {{end}}</p>
<h3>Sends started per second</h3>
{{.SendsAll}}
<h3>p99 latency of the sends started in each second (log scale)</h3>
{{.P99All}}

{{range .PerStrategy}}
<h2>{{.Name}}</h2>
<p class="note">{{.Summary}}</p>
<h3>Each broker's share of the attempts, per second</h3>
<p>{{range $.Brokers}}<span class="sw" style="background:{{.Color}}"></span>{{.Name}} {{end}}</p>
{{.Share}}
<h3>p99 latency per second (log scale)</h3>
{{.P99}}
{{end}}
</body>
</html>
`))
