package report

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/mqfault/mqfault/pkg/sim"
)

// loadTestScenario loads one of pkg/sim's golden scenarios.
func loadTestScenario(t testing.TB, name string) *sim.Scenario {
	t.Helper()
	s, err := sim.LoadFile(filepath.Join("..", "testdata", "golden", name+".yaml"))
	if err != nil {
		t.Fatalf("LoadFile(%s) error = %v", name, err)
	}
	return s
}

func mustRun(t testing.TB, s *sim.Scenario, opts ...sim.Option) *sim.Report {
	t.Helper()
	rep, err := sim.Run(context.Background(), s, opts...)
	if err != nil {
		t.Fatalf("Run(%s) error = %v", s.Name, err)
	}
	return rep
}

func selectStrategies(t testing.TB, names ...string) []sim.Strategy {
	t.Helper()
	s, err := sim.SelectStrategies(names...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func htmlOf(t *testing.T, rep *sim.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep); err != nil {
		t.Fatalf("WriteHTML() error = %v", err)
	}
	return buf.String()
}

// sections splits the page at its h2 headings: the name of each (HTML
// escaped) to its content.
func sections(page string) map[string]string {
	out := map[string]string{}
	parts := strings.Split(page, "<h2>")
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, "</h2>")
		out[name] = body
	}
	return out
}

func escaped(name string) string { return strings.ReplaceAll(name, "+", "&#43;") }

// TestReportContent checks what the page shows on the golden "mixed"
// scenario (a blackhole, a flapping, a slow and an erroring broker): a
// failed-sends chart over the strategies; the fault windows one lane per
// broker; and per strategy an isolation timeline whose lanes show the
// isolations and unreachable marks the run recorded: none for off, whose
// table is never updated; isolations for the others, and unreachable
// spans where the timeline holds some.
func TestReportContent(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "mixed"))
	page := htmlOf(t, rep)
	sec := sections(page)
	all := sec["All strategies"]
	if !strings.Contains(all, "<h3>Failed sends per second") {
		t.Error("no failed-sends chart under All strategies")
	}
	// Every table scrolls sideways inside its own box on a narrow screen
	// rather than being cut.
	if n, boxed := strings.Count(page, "<table"), strings.Count(page, `<div class="scroll"><table`); n != 4 || boxed != n {
		t.Errorf("%d tables, %d of them in a scroll box; want 4 (verdict, brokers, fault windows, results) and all", n, boxed)
	}
	if !regexp.MustCompile(`\.scroll \{[^}]*overflow-x: auto`).MatchString(page) {
		t.Error("the scroll box does not scroll sideways")
	}
	// The legends' colours are the charts' colours.
	for _, c := range []string{string(cssColor(isolatedColor)), string(cssColor(unreachableCol)), "#e4e4e4", "#dddddd"} {
		if !strings.Contains(page, "background:"+c) {
			t.Errorf("no legend swatch of colour %s", c)
		}
	}
	faults := sec["Fault windows"]
	if strings.Count(faults, "<svg") != 1 {
		t.Fatalf("the fault windows section has %d charts, want 1", strings.Count(faults, "<svg"))
	}
	for _, b := range rep.Scenario.Brokers {
		if !strings.Contains(faults, ">"+b.Name+"</text>") {
			t.Errorf("the fault windows chart has no lane for %s", b.Name)
		}
	}
	for _, res := range rep.Results {
		body, ok := sec[escaped(res.Name)]
		if !ok {
			t.Fatalf("no section for %s", res.Name)
		}
		_, tl, ok := strings.Cut(body, "<h3>"+escaped(res.Name)+": isolation timeline")
		if !ok {
			t.Fatalf("%s: no isolation timeline", res.Name)
		}
		tl, _, _ = strings.Cut(tl, "</svg>")
		isolations, unreachable := 0, 0
		for _, b := range res.Timeline {
			isolations += len(b.Isolated)
			unreachable += len(b.Unreachable)
		}
		drawnIso, drawnUnr := strings.Count(tl, "fill:#5C5C5C"), strings.Count(tl, "fill:#1F1F1F")
		t.Logf("%s: %d isolations, %d unreachable spans; drawn %d and %d", res.Name, isolations, unreachable, drawnIso, drawnUnr)
		if drawnIso != isolations || drawnUnr != unreachable {
			t.Errorf("%s: the timeline draws %d isolated and %d unreachable bars, want %d and %d",
				res.Name, drawnIso, drawnUnr, isolations, unreachable)
		}
		if res.Name == "off" && isolations != 0 {
			t.Errorf("off isolated %d times, want never", isolations)
		}
		if res.Name != "off" && isolations == 0 {
			t.Errorf("%s never isolated a broker in a scenario with a blackhole", res.Name)
		}
		for _, b := range res.Timeline {
			if len(b.Isolated) > 0 && !strings.Contains(body, b.Name+": isolated ") {
				t.Errorf("%s: no note on %s's isolations", res.Name, b.Name)
			}
		}
		if !strings.Contains(body, "<h3>"+escaped(res.Name)+": each broker&#39;s share") || !strings.Contains(body, "<h3>"+escaped(res.Name)+": p99 latency per second") {
			t.Errorf("%s: no share or p99 chart", res.Name)
		}
	}
}

// TestReportIdenticalLines runs v5 twice under two names, with off beside
// them: every line of the copy is equal to v5's, so the legend of each
// strategy chart says "identical to v5" for it and its line is dashed;
// off's line is not equal to either and gets no note.
func TestReportIdenticalLines(t *testing.T) {
	strats := selectStrategies(t, "off", "v5", "v5")
	strats[2].Name = "v5 again"
	rep := mustRun(t, loadTestScenario(t, "small"), sim.WithStrategies(strats...))
	if !slices.Equal(rep.Results[1].Series.Sends, rep.Results[2].Series.Sends) || slices.Equal(rep.Results[0].Series.Sends, rep.Results[1].Series.Sends) {
		t.Fatal("the test needs v5 and its copy equal and off different")
	}
	all := sections(htmlOf(t, rep))["All strategies"]
	charts := strings.Split(all, "<h3>")[1:]
	if len(charts) != len(perSecondCharts)+1 {
		t.Fatalf("%d charts under All strategies, want %d", len(charts), len(perSecondCharts)+1)
	}
	legend := regexp.MustCompile(`<span class="ln( dash)?" style="border-top-color:#[0-9a-f]{6}"></span>([^<]*?)(?: <em>\(([^)]*)\)</em>)?</span>`)
	for _, c := range charts {
		title, _, _ := strings.Cut(c, "</h3>")
		got := map[string][2]string{}
		for _, m := range legend.FindAllStringSubmatch(c, -1) {
			got[m[2]] = [2]string{m[1], m[3]}
		}
		if len(got) != 3 {
			t.Fatalf("%s: legend %v, want 3 entries", title, got)
		}
		if again := got["v5 again"]; again[0] != " dash" || !strings.Contains(again[1], "as v5") && again[1] != "identical to v5" {
			t.Errorf("%s: the copy's legend entry is %q, want dashed and identical to v5", title, again)
		}
		if g := got["v5"]; g[0] != "" || strings.Contains(g[1], "identical") {
			t.Errorf("%s: v5's legend entry is %q, want a solid line without note", title, g)
		}
		if g := got["off"]; g[0] != "" || strings.Contains(g[1], "identical") {
			t.Errorf("%s: off's legend entry is %q, want a solid line without note", title, g)
		}
		svg := c[strings.Index(c, "<svg"):]
		if strings.Count(svg, "stroke-dasharray") != 1 {
			t.Errorf("%s: %d dashed lines in the chart, want 1 (the copy)", title, strings.Count(svg, "stroke-dasharray"))
		}
	}
}

func TestIdentical(t *testing.T) {
	nan := math.NaN()
	lines := []line{
		{name: "a", ys: []float64{1, nan, 3}},
		{name: "b", ys: []float64{1, nan, 3}},
		{name: "c", ys: []float64{1, 2, 3}},
		{name: "d", ys: []float64{1, nan, 3}},
		{name: "e", ys: []float64{1, 2, 3}},
	}
	if got, want := identical(lines), []int{0, 0, 2, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("identical() = %v, want %v", got, want)
	}
}

// TestLogTicks: the p99 axis labels 1, 2 and 5 of each decade, so the
// ~20 ms baseline reads off it; ticks stay inside the range; a narrow range
// still gets two labels; a very wide one labels the powers of ten only.
func TestLogTicks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Value < lo || tk.Value > hi {
				t.Errorf("Ticks(%g, %g) has %g, outside the range", lo, hi, tk.Value)
			}
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got, want := labels(13, 4500), []string{"20", "50", "100", "200", "500", "1000", "2000"}; !slices.Equal(got, want) {
		t.Errorf("labels of 13..4500 ms = %v, want %v", got, want)
	}
	if got := labels(15, 30); len(got) < 2 {
		t.Errorf("labels of 15..30 ms = %v, want at least two", got)
	}
	if got, want := labels(0.05, 2e5), []string{"0.1", "1", "10", "100", "1000", "10000", "100000"}; !slices.Equal(got, want) {
		t.Errorf("labels of 0.05..200000 ms = %v, want %v", got, want)
	}
}

// TestAlignCharts: charts with y labels of different widths (broker names,
// "share of attempts", log-scale ms) get data areas with one left and one
// right edge once aligned, though their natural ones differ.
func TestAlignCharts(t *testing.T) {
	sc := loadTestScenario(t, "mixed")
	rep := mustRun(t, sc, sim.WithStrategies(sim.Strategies()[2]))
	res := &rep.Results[0]
	seconds := res.Series.Seconds
	lanes := newLaneChart(seconds, []string{"a-broker-with-a-long-name", "b"})
	p99, err := p99Chart(sc, seconds, "p99", rep.Results, []int{0}, p99Range(rep.Results))
	if err != nil {
		t.Fatal(err)
	}
	charts := []*chart{lanes, shareChart(sc, res).chart, p99.chart, timelineChart(sc, seconds, res).chart}
	edges := func(ch *chart, crop [2]float64) (float64, float64) {
		c := draw.New(vgsvg.New(chartWidth, ch.h))
		dc := ch.p.DataCanvas(draw.Crop(c, vgLen(crop[0]), -vgLen(crop[1]), 0, 0))
		return float64(dc.Min.X), float64(dc.Max.X)
	}
	crops := alignCrops(charts)
	l0, r0 := edges(charts[0], [2]float64{float64(crops[0][0]), float64(crops[0][1])})
	naturalDiffer := false
	for i, ch := range charts {
		l, r := edges(ch, [2]float64{float64(crops[i][0]), float64(crops[i][1])})
		if math.Abs(l-l0) > 1e-6 || math.Abs(r-r0) > 1e-6 {
			t.Errorf("chart %d: data area %.2f..%.2f, chart 0's %.2f..%.2f; want one", i, l, r, l0, r0)
		}
		if nl, _ := edges(ch, [2]float64{}); math.Abs(nl-l0) > 1 {
			naturalDiffer = true
		}
	}
	if !naturalDiffer {
		t.Error("every chart's natural left edge is the aligned one: the test shows nothing")
	}
}

// TestFaultWindows: overlapping fault windows are shaded as their union in
// one grey on the line charts (one band per union span, not one per
// window), and drawn one lane per broker in the broker's colour.
func TestFaultWindows(t *testing.T) {
	sc := &sim.Scenario{Events: []sim.Event{
		{Broker: "b", At: 20 * time.Second, For: 40 * time.Second},
		{Broker: "c", At: 20 * time.Second, For: 40 * time.Second},
		{Broker: "e", At: 30 * time.Second, For: 40 * time.Second},
		{Broker: "a", At: 80 * time.Second, For: 5 * time.Second},
		{Broker: "b", At: 70 * time.Second, For: 10 * time.Second}, // touches the next
	}}
	want := []sim.Span{{From: 20 * time.Second, To: 85 * time.Second}}
	if got := faultUnion(sc); !slices.Equal(got, want) {
		t.Errorf("faultUnion() = %v, want %v", got, want)
	}
	sc.Events = append(sc.Events, sim.Event{Broker: "d", At: 88 * time.Second, For: time.Second})
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		sc.Brokers = append(sc.Brokers, sim.Broker{Name: name})
	}
	p := newLineChart(sc, 95, "y")
	svg, err := alignCharts([]*chart{{p: p, h: lineHeight}})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(svg[0]), "fill:#DDDDDD"); n != 2 {
		t.Errorf("the line chart has %d grey bands, want 2 (the union's spans)", n)
	}
	fc := faultChart(sc, 95)
	ticks := fc.chart.p.Y.Tick.Marker.Ticks(0, 5)
	var names []string
	for _, tk := range ticks {
		names = append(names, tk.Label)
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(names, want) {
		t.Errorf("fault lanes = %v, want %v (brokers with a window, in order)", names, want)
	}
}

func vgLen(v float64) vg.Length { return vg.Length(v) }

func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{{1, 1}, {1.04, 1.2}, {18.7, 20}, {2080, 2500}, {420, 500}, {0.3, 0.3}, {0.31, 0.4}, {110, 120}, {1.1e6, 1.2e6}} {
		if got := niceCeil(tt.in); got != tt.want {
			t.Errorf("niceCeil(%g) = %g, want %g", tt.in, got, tt.want)
		}
	}
}

// TestSecondTicks: the time axis has at most 12 steps between labels, on
// round steps of the finest size that allows it, whatever the run's length.
func TestSecondTicks(t *testing.T) {
	for _, tt := range []struct{ seconds, step int }{{3, 1}, {15, 2}, {24, 2}, {26, 5}, {93, 10}, {200, 30}, {700, 60}, {3600, 300}, {100000, 14400}} {
		var labels []float64
		for _, tk := range secondTicks(tt.seconds) {
			if tk.Label != "" {
				labels = append(labels, tk.Value)
			}
		}
		if len(labels) < 2 || labels[1]-labels[0] != float64(tt.step) || len(labels) > 13 {
			t.Errorf("secondTicks(%d) labels %v, want every %d s, at most 13", tt.seconds, labels, tt.step)
		}
	}
}

// TestReportFleet: a fleet's results table has the herding and moves
// columns with the table's peaks and says what they mean; a run of one
// producer has neither.
func TestReportFleet(t *testing.T) {
	lat := sim.Latency{Median: 3 * time.Millisecond, P99: 20 * time.Millisecond}
	sc := &sim.Scenario{Name: "fleet", Duration: 10 * time.Second, Seed: 1, Senders: 8, Rate: 400, Producers: 4,
		Brokers: []sim.Broker{{Name: "broker-a", Queues: 4, Latency: lat}, {Name: "broker-b", Queues: 4, Latency: lat}},
		Events:  []sim.Event{{Broker: "broker-b", At: 2 * time.Second, For: 8 * time.Second, State: sim.StateDown}}}
	rep := mustRun(t, sc, sim.WithStrategies(selectStrategies(t, "v5")...))
	results := sections(htmlOf(t, rep))["Results"]
	f := rep.Results[0].Fleet
	for _, want := range []string{`<th class="n">herding</th><th class="n">moves</th>`,
		`<td class="n">` + sim.FormatHerding(f) + `</td><td class="n">` + sim.FormatMoves(f) + `</td>`, "moves: the largest share"} {
		if !strings.Contains(results, want) {
			t.Errorf("the results lack %q:\n%s", want, results)
		}
	}
	if sim.FormatMoves(f) != "100% (broker-b, 2s)" {
		t.Errorf("moves peak %q, want every producer leaving broker-b at 2 s", sim.FormatMoves(f))
	}
	if one := sections(htmlOf(t, mustRun(t, loadTestScenario(t, "small"))))["Results"]; strings.Contains(one, "moves") || strings.Contains(one, "herding") {
		t.Errorf("one producer's results name the fleet's columns:\n%s", one)
	}
}
