package report

import (
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"

	"github.com/mqfault/mqfault/pkg/sim"
)

func cssColor(c color.RGBA) template.CSS {
	return template.CSS(fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B))
}

// perSecond is a chart of one count per second, a line per strategy.
// Adding a per-second series to the report is one more entry here, with its
// slice in sim.Series and its counter in the simulator's metrics.
type perSecond struct {
	title, ylabel string
	of            func(*sim.Series) []int64
}

var perSecondCharts = []perSecond{
	{"Sends started per second", "sends/s", func(s *sim.Series) []int64 { return s.Sends }},
	{"Failed sends per second (counted in the second they started)", "failed sends/s", func(s *sim.Series) []int64 { return s.Failed }},
	{"Retries per second (counted in the second they started)", "retries/s", func(s *sim.Series) []int64 { return s.Retries }},
	{"Attempts answered busy (SYSTEM_BUSY) per second", "busy answers/s", func(s *sim.Series) []int64 { return s.Busy }},
}

type htmlSwatch struct {
	Name  string
	Color template.CSS
}

type htmlRow struct {
	Name, Summary                                  string
	SameAs                                         string // for an ablation with its base's numbers: the folded row's one cell
	Ablation                                       bool   // an ablation beside its base: the row is set apart
	Group                                          string // the strategy whose ablations begin at this row
	Sends, Succeeded, Failed, Attempts, FirstFails int64
	P50, P99, P999, Max, Unhealthy                 string
	Retries, Refused, Waited, Busy, Shed, InFlight int64
	Herding, Moves                                 string // a fleet's peaks (sim.FormatHerding, sim.FormatMoves)
}

type htmlEvent struct {
	Broker, Window, What string
	Color                template.CSS
}

// htmlBroker is a broker's row of the scenario section: what it is before
// any fault.
type htmlBroker struct {
	Name                   string
	Color                  template.CSS
	Queues                 int
	Median, P99            string
	Capacity, PastCapacity string
	Load                   string // its share of the offered load, by its queues
}

// htmlChart is one chart of the page: its title, legend and notes, and the
// SVG (filled in by alignCharts).
type htmlChart struct {
	Title  string
	Legend []legendEntry
	Notes  []string
	SVG    template.HTML
	chart  *chart
	lanes  []string // the brokers a lane chart draws, top to bottom
}

type htmlStrategy struct {
	Name, Summary        string
	SameAs               string       // folded into this strategy's section: no charts of its own
	Brokers              []htmlSwatch // the brokers its share chart draws
	Timeline, Share, P99 *htmlChart
}

type htmlPage struct {
	Title       string
	Summary     string
	Verdict     *htmlVerdict
	Open        bool // the scenario's load is open: the table has its columns
	Fleet       bool // the scenario is a fleet: the table has its columns
	Columns     int  // of the results table
	SameSpan    int  // the columns a folded row's one cell spans: all but the name
	BrokerRows  []htmlBroker
	Capacity    string // the brokers' capacity against the offered load
	Events      []htmlEvent
	Rows        []htmlRow
	Brokers     []htmlSwatch // those the fault windows chart draws
	Faults      *htmlChart
	All         []*htmlChart
	AllNotes    []string
	Ablations   *htmlAblations // nil without ablation rows beside their base
	PerStrategy []htmlStrategy
	TimelineKey timelineKey
	FaultBand   template.CSS
}

// htmlAblations is the page's section of ablations: the per-second charts
// again, with the base strategy and its ablations only, so the strategy
// charts stay readable with a dozen rows.
type htmlAblations struct {
	Bases  []string
	Charts []*htmlChart
	Notes  []string
}

// timelineKey holds the timeline's colours for its legend.
type timelineKey struct {
	Isolated, Release, Unreachable, Fault template.CSS
}

// rowKind is how the tables show a result.
type rowKind struct {
	folded   bool   // an ablation with its base's numbers: one cell in the results table, no verdict row
	ablation bool   // an ablation beside its base: its rows are set apart
	group    string // the base whose ablations begin at this row
}

// p99Scale is the one y range of every p99 chart of a page, in ms.
type p99Scale struct{ lo, hi float64 }

// WriteHTML writes rep as one self-contained HTML page (no script,
// no external resource): first the verdict (who won, by sim.DefaultRule,
// against v5 and v5+detector), then the scenario (each broker's queues,
// latency and capacity, and the fault windows), the table, and charts drawn
// with gonum/plot as inline SVG, every one on one time axis whose data areas
// line up: the fault windows, one lane per broker; sends, failed sends,
// retries, busy answers and p99 per second for every strategy, a line each
// (a line identical to an earlier one dashed over it and named so in the
// legend); then per strategy, each chart titled with it, its isolation
// timeline (a lane per broker: isolated, released, unreachable), each
// broker's share of the attempts, stacked, and the p99, every p99 chart on
// one scale. Line charts shade the union of the fault windows in grey.
// Brokers, strategies and timeline states have colours of three sets
// unlike each other.
func WriteHTML(w io.Writer, r *sim.Report) error {
	sc := r.Scenario
	if sc == nil || len(r.Results) == 0 {
		return fmt.Errorf("report: the report has no scenario or no result")
	}
	page := htmlPage{Title: fmt.Sprintf("mqfault sim: %s (seed %d)", sc.Name, r.Seed), Summary: strings.SplitN(sc.Summary(r.Seed), "\n", 2)[0],
		TimelineKey: timelineKey{Isolated: cssColor(isolatedColor), Release: cssColor(releaseColor), Unreachable: cssColor(unreachableCol), Fault: cssColor(laneFault)},
		FaultBand:   cssColor(faultBand), Open: sc.Load == sim.LoadOpen, Columns: 15}
	if page.Open {
		page.Columns += 2
	}
	if page.Fleet = sc.Producers > 1; page.Fleet {
		page.Columns += 2
	}
	page.SameSpan = page.Columns - 1
	page.BrokerRows, page.Capacity = brokerRows(sc)
	index := map[string]int{}
	for i, b := range sc.Brokers {
		index[b.Name] = i
	}
	for _, e := range sc.Events {
		page.Events = append(page.Events, htmlEvent{Broker: e.Broker, Window: fmtSec(e.At) + " – " + fmtSec(e.End()),
			What: e.Describe(), Color: cssColor(brokerColor(index[e.Broker]))})
	}
	// An ablation with its base's numbers has its row folded; one with
	// its base's run too (sameAs) has no charts of its own either.
	sameAs := make([]string, len(r.Results))
	rowAs := make([]string, len(r.Results))
	kinds := make([]rowKind, len(r.Results))
	for i := range r.Results {
		b, same := r.SameAsBase(i)
		switch same {
		case sim.SameRun:
			sameAs[i], rowAs[i] = r.Results[b].Name, "the same as "+r.Results[b].Name+" in every number: the policy changed nothing here"
		case sim.SameNumbers:
			rowAs[i] = "the same numbers as " + r.Results[b].Name + "; a different run over time (its charts below)"
		}
		if b >= 0 {
			kinds[i] = rowKind{folded: same != sim.Differs, ablation: true}
			if of := r.Results[i].Ablated.Of; i == 0 || r.Results[i-1].Ablated.Of != of {
				kinds[i].group = of
			}
		}
	}
	page.Verdict = verdict(r, kinds)
	for i, res := range r.Results {
		page.Rows = append(page.Rows, htmlRow{
			Name: res.Name, Summary: res.Summary, SameAs: rowAs[i], Ablation: kinds[i].ablation, Group: kinds[i].group,
			Sends: res.Sends, Succeeded: res.Succeeded, Failed: res.Failed,
			Attempts: res.Attempts, FirstFails: res.FirstAttemptFailures,
			P50: sim.FormatMS(res.Latency.P50), P99: sim.FormatMS(res.Latency.P99), P999: sim.FormatMS(res.Latency.P999), Max: sim.FormatMS(res.Latency.Max),
			Unhealthy: fmt.Sprintf("%.1f%%", 100*res.UnhealthyShare()),
			Retries:   res.Retries, Refused: res.RetriesRefused, Waited: res.Waited, Busy: res.BusyAnswers, Shed: res.Shed, InFlight: res.InFlightAtEnd,
			Herding: sim.FormatHerding(res.Fleet), Moves: sim.FormatMoves(res.Fleet),
		})
	}
	seconds := r.Results[0].Series.Seconds
	scale := p99Range(r.Results)
	var charts []*htmlChart
	page.Faults = faultChart(sc, seconds)
	if page.Faults != nil {
		charts = append(charts, page.Faults)
		for _, name := range page.Faults.lanes {
			page.Brokers = append(page.Brokers, htmlSwatch{Name: name, Color: cssColor(brokerColor(index[name]))})
		}
	}
	// The strategy charts: every strategy but the ablations beside their
	// base, which get charts of their own with the base (folded ones none).
	var main, abl []int
	var bases []string
	for i := range r.Results {
		if base, _ := r.SameAsBase(i); base < 0 {
			main = append(main, i)
			continue
		}
		if of := r.Results[i].Ablated.Of; !slices.Contains(bases, of) {
			bases = append(bases, of)
		}
		if sameAs[i] == "" {
			abl = append(abl, i)
		}
	}
	var err error
	if page.All, err = strategyCharts(sc, seconds, r.Results, main, scale); err != nil {
		return err
	}
	if len(bases) > 0 {
		if len(page.All) > 0 {
			page.AllNotes = append(page.AllNotes, "The ablations are drawn under Ablations, each with the strategy it changes.")
		}
		page.Ablations = &htmlAblations{Bases: bases}
		var idx []int
		for _, of := range bases {
			b := slices.IndexFunc(r.Results, func(res sim.Result) bool { return res.Name == of })
			idx = append(idx, b)
			var folded []string
			for _, i := range abl {
				if r.Results[i].Ablated.Of == of {
					idx = append(idx, i)
				}
			}
			for i := range r.Results {
				if sameAs[i] == of {
					folded = append(folded, r.Results[i].Name)
				}
			}
			if len(folded) > 0 {
				page.Ablations.Notes = append(page.Ablations.Notes, fmt.Sprintf("Not drawn, the same run as %s in every number (the policy changed nothing here): %s.", of, strings.Join(folded, ", ")))
			}
		}
		if len(abl) > 0 {
			if page.Ablations.Charts, err = strategyCharts(sc, seconds, r.Results, idx, scale); err != nil {
				return err
			}
		}
		charts = append(charts, page.Ablations.Charts...)
	}
	charts = append(charts, page.All...)
	for i, res := range r.Results {
		if sameAs[i] != "" {
			page.PerStrategy = append(page.PerStrategy, htmlStrategy{Name: res.Name, Summary: res.Summary, SameAs: sameAs[i]})
			continue
		}
		hs := htmlStrategy{Name: res.Name, Summary: res.Summary, Timeline: timelineChart(sc, seconds, &res)}
		hs.Share = shareChart(sc, &res)
		for b, br := range res.Brokers {
			if br.Attempts > 0 {
				hs.Brokers = append(hs.Brokers, htmlSwatch{Name: br.Name, Color: cssColor(brokerColor(b))})
			}
		}
		if hs.P99, err = p99Chart(sc, seconds, "p99 latency per second (log scale, one scale for every strategy)", r.Results, []int{i}, scale); err != nil {
			return err
		}
		for _, c := range []*htmlChart{hs.Timeline, hs.Share, hs.P99} {
			c.Title = res.Name + ": " + c.Title
		}
		page.PerStrategy = append(page.PerStrategy, hs)
		charts = append(charts, hs.Timeline, hs.Share, hs.P99)
	}
	var drawn []*htmlChart
	var plots []*chart
	for _, c := range charts {
		if c.chart != nil {
			drawn = append(drawn, c)
			plots = append(plots, c.chart)
		}
	}
	svgs, err := alignCharts(plots)
	if err != nil {
		return err
	}
	for i, c := range drawn {
		c.SVG = svgs[i]
	}
	return htmlTemplate.Execute(w, page)
}

// brokerRows describes each broker before any fault, and sums the brokers'
// capacity against the offered load ("" when no broker has a capacity).
func brokerRows(sc *sim.Scenario) ([]htmlBroker, string) {
	queues := sc.Queues()
	var rows []htmlBroker
	var total float64
	var unlimited []string
	for i, b := range sc.Brokers {
		row := htmlBroker{Name: b.Name, Color: cssColor(brokerColor(i)), Queues: b.Queues,
			Median: b.Latency.Median.String(), P99: b.Latency.P99.String(), Capacity: "unlimited", PastCapacity: "—"}
		share := 0.0
		if queues > 0 {
			share = sc.Rate * float64(b.Queues) / float64(queues)
		}
		row.Load = fmt.Sprintf("%.0f sends/s", share)
		switch {
		case b.Capacity <= 0:
			unlimited = append(unlimited, b.Name)
		case b.QueueWait > 0:
			row.Capacity = fmt.Sprintf("%g sends/s", b.Capacity)
			row.PastCapacity = fmt.Sprintf("waits in a send queue served in order; SYSTEM_BUSY after %s", b.QueueWait)
		default:
			row.Capacity = fmt.Sprintf("%g sends/s", b.Capacity)
			row.PastCapacity = "answered SYSTEM_BUSY past a 50 ms burst"
		}
		if b.Capacity > 0 {
			total += b.Capacity
			row.Load += fmt.Sprintf(" (%.0f%% of its capacity)", 100*share/b.Capacity)
		}
		rows = append(rows, row)
	}
	offered := fmt.Sprintf("%g sends/s offered", sc.Rate)
	switch {
	case len(unlimited) == len(sc.Brokers):
		return rows, ""
	case len(unlimited) > 0:
		return rows, fmt.Sprintf("Capacity: unlimited (%s without a limit), %g sends/s on the others, for %s.", nameList(unlimited), total, offered)
	}
	return rows, fmt.Sprintf("Capacity: %g sends/s in all, for %s (%.0f%%).", total, offered, 100*sc.Rate/total)
}

// p99Range returns the one y range of the page's p99 charts: the lowest and
// highest p99 of any second of any result, with room above and below.
func p99Range(results []sim.Result) p99Scale {
	lo, hi := math.Inf(1), 0.0
	for _, r := range results {
		for _, d := range r.Series.P99 {
			if d > 0 {
				lo, hi = min(lo, ms(d)), max(hi, ms(d))
			}
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	return p99Scale{lo: lo / 1.5, hi: hi * 1.5}
}

// strategyCharts draws the per-second charts and the p99 chart of the
// results at the given indices, each line in the colour of its index.
func strategyCharts(sc *sim.Scenario, seconds int, results []sim.Result, idx []int, scale p99Scale) ([]*htmlChart, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	var out []*htmlChart
	for _, ps := range perSecondCharts {
		lines := make([]line, len(idx))
		for k, i := range idx {
			counts := ps.of(&results[i].Series)
			ys := make([]float64, len(counts))
			for s, n := range counts {
				ys[s] = float64(n)
			}
			lines[k] = line{name: results[i].Name, color: strategyColor(i), ys: ys}
		}
		hc, err := countChart(sc, seconds, ps, lines)
		if err != nil {
			return nil, err
		}
		out = append(out, hc)
	}
	p99, err := p99Chart(sc, seconds, "p99 latency of the sends started in each second (log scale)", results, idx, scale)
	if err != nil {
		return nil, err
	}
	return append(out, p99), nil
}

// countChart draws a per-second count, a line per strategy, from zero, its
// axis labelled in whole numbers.
func countChart(sc *sim.Scenario, seconds int, ps perSecond, lines []line) (*htmlChart, error) {
	p := newLineChart(sc, seconds, ps.ylabel)
	top := 1.0
	for _, l := range lines {
		for _, y := range l.ys {
			top = max(top, y)
		}
	}
	p.Y.Min, p.Y.Max = 0, niceCeil(top*1.04)
	p.Y.Tick.Marker = countTicks{}
	legend, err := addLines(p, lines)
	if err != nil {
		return nil, err
	}
	return &htmlChart{Title: ps.title, Legend: legend, chart: &chart{p: p, h: lineHeight}}, nil
}

// niceCeil rounds v > 0 up to a round multiple of a power of ten (1, 1.2,
// 1.5, 2, 2.5, 3, 4, 5, 6 or 8), so the axis ends on a round number with
// little room lost.
func niceCeil(v float64) float64 {
	e := math.Floor(math.Log10(v)) - 1
	scale := func(m float64) float64 { // m * 10^e, exact for whole m
		if e < 0 {
			return m / math.Pow(10, -e)
		}
		return m * math.Pow(10, e)
	}
	for _, m := range []float64{10, 12, 15, 20, 25, 30, 40, 50, 60, 80} {
		if scale(m) >= v {
			return scale(m)
		}
	}
	return scale(100)
}

// p99Chart plots the p99 of each second of the results at idx, on the
// page's log scale, in milliseconds, each in its strategy's colour; the
// legend only when there is more than one line.
func p99Chart(sc *sim.Scenario, seconds int, title string, results []sim.Result, idx []int, scale p99Scale) (*htmlChart, error) {
	p := newLineChart(sc, seconds, "p99 ms")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Y.Min, p.Y.Max = scale.lo, scale.hi
	lines := make([]line, len(idx))
	for k, i := range idx {
		r := &results[i]
		ys := make([]float64, len(r.Series.P99))
		for s, d := range r.Series.P99 {
			ys[s] = math.NaN()
			if d > 0 {
				ys[s] = ms(d)
			}
		}
		lines[k] = line{name: r.Name, color: strategyColor(i), ys: ys}
	}
	legend, err := addLines(p, lines)
	if err != nil {
		return nil, err
	}
	hc := &htmlChart{Title: title, chart: &chart{p: p, h: lineHeight}}
	if len(idx) > 1 {
		hc.Legend = legend
	}
	return hc, nil
}

// shareChart stacks each broker's share of the attempts of each second.
func shareChart(sc *sim.Scenario, r *sim.Result) *htmlChart {
	p := newLineChart(sc, r.Series.Seconds, "share of attempts")
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = percentTicks{}
	p.Add(stack{series: &r.Series, colors: brokerPalette})
	return &htmlChart{Title: "each broker's share of the attempts, per second (stacked, in the order of the legend from the bottom)",
		chart: &chart{p: p, h: lineHeight}}
}

// faultChart draws the scenario's fault windows, a lane per broker that has
// one, in the broker's colour (flapping: solid while down, pale while up).
// A window over an earlier one of the same broker is drawn over it, as the
// later window wins in the simulation. Nil when there are none.
func faultChart(sc *sim.Scenario, seconds int) *htmlChart {
	var names []string
	lane := map[string]int{}
	for _, b := range sc.Brokers {
		for _, e := range sc.Events {
			if e.Broker == b.Name {
				lane[b.Name] = len(names)
				names = append(names, b.Name)
				break
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	index := map[string]int{}
	for i, b := range sc.Brokers {
		index[b.Name] = i
	}
	var notes []string
	if len(names) > maxLanes {
		notes = append(notes, fmt.Sprintf("%d brokers have fault windows; the first %d are drawn.", len(names), maxLanes))
		names = names[:maxLanes]
	}
	ch := newLaneChart(seconds, names)
	bars := laneBars{style: ch.p.Y.Tick.Label}
	for _, e := range sc.Events {
		l, ok := lane[e.Broker]
		if !ok || l >= len(names) {
			continue
		}
		c := brokerColor(index[e.Broker])
		from, to := secs(e.At), secs(e.End())
		if e.State != sim.StateFlapping {
			bars.bars = append(bars.bars, laneBar{lane: l, lanes: len(names), from: from, to: to, lo: 0.1, hi: 0.9, color: c,
				label: string(e.State), labelColor: textOn(c)})
			continue
		}
		pale := color.RGBA{R: blend(c.R), G: blend(c.G), B: blend(c.B), A: 0xff}
		bars.bars = append(bars.bars, laneBar{lane: l, lanes: len(names), from: from, to: to, lo: 0.1, hi: 0.9, color: pale})
		half := e.Period / 2
		for t := e.At; t < e.End(); t += e.Period {
			bars.bars = append(bars.bars, laneBar{lane: l, lanes: len(names), from: secs(t), to: secs(min(t+half, e.End())), lo: 0.1, hi: 0.9, color: c})
		}
	}
	ch.p.Add(bars)
	return &htmlChart{Title: "Fault windows, a lane per broker", Notes: notes, chart: ch, lanes: names}
}

// blend pales a colour channel towards white.
func blend(v uint8) uint8 { return uint8(255 - (255-int(v))*35/100) }

// timelineChart draws what the strategy's fault table held: a lane per
// broker that had a fault window, an isolation or an unreachable mark.
func timelineChart(sc *sim.Scenario, seconds int, r *sim.Result) *htmlChart {
	faulted := map[string]bool{}
	for _, e := range sc.Events {
		faulted[e.Broker] = true
	}
	var shown []int
	var quiet []string
	for i, tl := range r.Timeline {
		if faulted[tl.Name] || len(tl.Isolated) > 0 || len(tl.Unreachable) > 0 {
			shown = append(shown, i)
		} else {
			quiet = append(quiet, tl.Name)
		}
	}
	var notes []string
	if len(shown) > maxLanes {
		var left []string
		for _, i := range shown[maxLanes:] {
			left = append(left, r.Timeline[i].Name)
		}
		notes = append(notes, fmt.Sprintf("%d more brokers not drawn: %s.", len(left), nameList(left)))
		shown = shown[:maxLanes]
	}
	if len(shown) == 0 {
		notes = append(notes, "No broker had a fault window, an isolation or an unreachable mark.")
		return &htmlChart{Title: "isolation timeline", Notes: notes}
	}
	names := make([]string, len(shown))
	for l, i := range shown {
		names[l] = r.Timeline[i].Name
	}
	ch := newLaneChart(seconds, names)
	n := len(names)
	bars := laneBars{style: ch.p.Y.Tick.Label}
	marks := releaseMarks{lanes: n}
	for l, i := range shown {
		tl := &r.Timeline[i]
		for _, e := range sc.Events {
			if e.Broker == tl.Name {
				bars.bars = append(bars.bars, laneBar{lane: l, lanes: n, from: secs(e.At), to: secs(e.End()), lo: 0, hi: 1, color: laneFault})
			}
		}
		for _, s := range tl.Isolated {
			bars.bars = append(bars.bars, laneBar{lane: l, lanes: n, from: secs(s.From), to: secs(s.To), lo: 0.5, hi: 0.9, color: isolatedColor})
		}
		for _, at := range releases(tl, seconds) {
			marks.marks = append(marks.marks, laneBar{lane: l, from: at, lo: 0.45, hi: 0.95})
		}
		for _, s := range tl.Unreachable {
			bars.bars = append(bars.bars, laneBar{lane: l, lanes: n, from: secs(s.From), to: secs(s.To), lo: 0.1, hi: 0.42, color: unreachableCol})
		}
	}
	ch.p.Add(bars, marks)
	var never []string
	for _, i := range shown {
		if tl := &r.Timeline[i]; len(tl.Isolated) > 0 || len(tl.Unreachable) > 0 {
			notes = append(notes, timelineNote(tl))
		} else {
			never = append(never, tl.Name)
		}
	}
	never = append(never, quiet...)
	switch {
	case len(never) == len(r.Timeline):
		notes = append(notes, "No broker was ever isolated or unreachable.")
	case len(never) > 0:
		notes = append(notes, "Never isolated nor unreachable: "+nameList(never)+".")
	}
	return &htmlChart{Title: "isolation timeline, when the fault table held each broker isolated or unreachable", Notes: notes, chart: ch}
}

// releases returns the times, in seconds, of the releases worth a mark:
// those another isolation follows too closely for the gap to show (within
// 0.3% of the axis), at most one per 0.6% of the axis, so back-to-back
// isolations read apart and a lane of hundreds does not turn into a black
// bar.
func releases(tl *sim.BrokerTimeline, seconds int) []float64 {
	gap, spacing := 0.003*float64(seconds), 0.006*float64(seconds)
	var out []float64
	last := math.Inf(-1)
	for k, s := range tl.Isolated {
		if k == len(tl.Isolated)-1 {
			break // the last one is released into a visible gap, or never
		}
		at := secs(s.To)
		if secs(tl.Isolated[k+1].From)-at <= gap && at-last >= spacing {
			out = append(out, at)
			last = at
		}
	}
	return out
}

// timelineNote says in words what a broker's lane shows.
func timelineNote(tl *sim.BrokerTimeline) string {
	if len(tl.Isolated) == 0 {
		return fmt.Sprintf("%s: never isolated; unreachable %s.", tl.Name, fmtSpan(tl.UnreachableTime()))
	}
	times := "times"
	if len(tl.Isolated) == 1 {
		times = "time"
	}
	s := fmt.Sprintf("%s: isolated %d %s, %s in all", tl.Name, len(tl.Isolated), times, fmtSpan(tl.IsolatedTime()))
	if tl.StillIsolated {
		s += ", still isolated at the end"
	}
	if len(tl.Unreachable) > 0 {
		s += fmt.Sprintf("; unreachable %s", fmtSpan(tl.UnreachableTime()))
	}
	return s + "."
}

// nameList joins names, the first ten of them.
func nameList(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: Arial, Helvetica, sans-serif; margin: 1.5em auto; padding: 0 1em; max-width: 96em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2.2em; border-top: 1px solid #ccc; padding-top: 0.8em; }
h3 { font-size: 1em; margin: 1.4em 0 0.3em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { padding: 0.25em 0.5em; border-bottom: 1px solid #ddd; background: #fff; }
td { white-space: nowrap; }
th { white-space: normal; vertical-align: bottom; font-size: 0.92em; }
tr > :first-child { position: sticky; left: 0; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.w { white-space: normal; min-width: 14em; }
td.same { color: #555; font-style: italic; }
tr.abl > td { background: #f4f4f4; }
tr.abl > td:first-child { padding-left: 1.3em; }
tr.group > td { background: #fff; color: #555; font-style: italic; white-space: normal; border-bottom: none; padding-top: 0.6em; }
table.verdict td[class^="v-"] { white-space: normal; min-width: 26em; max-width: 36em; }
td.v-better { color: #0a5d00; } td.v-worse { color: #a00000; } td.v-base { color: #555; font-style: italic; }
.sw { display: inline-block; width: 1.6em; height: 0.6em; margin: 0 0.3em 0.1em 0; vertical-align: middle; }
.ln { display: inline-block; width: 2em; margin: 0 0.3em 0.2em 0; vertical-align: middle; border-top-width: 3px; border-top-style: solid; }
.ln.dash { border-top-style: dashed; }
.rel { display: inline-block; width: 0.7em; height: 0.6em; margin: 0 0 0.1em 0; vertical-align: middle; }
.rel + .rel { margin: 0 0.3em 0.1em 2px; }
.legend { margin: 0.2em 0; line-height: 1.7; }
.legend span.e { white-space: nowrap; margin-right: 1.2em; }
.note { color: #555; font-size: 0.9em; margin: 0.2em 0; }
code { font-size: 0.95em; }
.chart { max-width: 56em; }
svg { display: block; width: 100%; max-width: 100%; height: auto; }
@media (max-width: 800px) {
  body { font-size: 15px; padding: 0 0.5em; }
  th, td { padding: 0.25em 0.35em; }
  table.verdict td[class^="v-"] { min-width: 12em; }
}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Summary}}</p>
{{with .Verdict}}<h2>Verdict</h2>
<p class="best">{{.BestFailed}} {{.BestP99}}</p>
{{range .Against}}<p class="against">{{.}}</p>
{{end}}{{if .Missing}}<p class="note">{{.Missing}}</p>
{{end}}<div class="scroll"><table class="verdict">
<tr><th>strategy</th><th class="n">failed</th><th class="n">p99 ms</th>{{range .Baselines}}<th>against {{.}}</th>{{end}}</tr>
{{range .Rows}}{{if .Group}}<tr class="group"><td colspan="{{$.Verdict.ColSpan}}">{{.Group}} with one policy switched off:</td></tr>
{{end}}<tr{{if .Ablation}} class="abl"{{end}} title="{{.Summary}}"><td>{{.Name}}</td><td class="n">{{.Failed}}</td><td class="n">{{.P99}}</td>{{range .Cells}}<td class="v-{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table></div>
<p class="note">Judged by the rule of <code>mqfault sim --seeds</code> and <code>--family</code>, on the failed sends and the p99 of whole sends: {{.Rule}}.{{if .Folded}} {{.Folded}}{{end}}</p>
{{end}}
<h2>Scenario</h2>
<div class="scroll"><table>
<tr><th>broker</th><th class="n">queues</th><th class="n">latency median</th><th class="n">latency p99</th><th class="n">capacity</th><th>past its capacity</th><th class="n">its share of the load</th></tr>
{{range .BrokerRows}}<tr><td><span class="sw" style="background:{{.Color}}"></span>{{.Name}}</td><td class="n">{{.Queues}}</td><td class="n">{{.Median}}</td><td class="n">{{.P99}}</td><td class="n">{{.Capacity}}</td><td class="w">{{.PastCapacity}}</td><td class="n">{{.Load}}</td></tr>
{{end}}</table></div>
<p class="note">{{if .Capacity}}{{.Capacity}} {{end}}A broker's share of the load is what round robin over the queues gives it, with every broker up. Latency: of an attempt to a healthy broker, before any wait in its send queue.</p>
{{if .Events}}<div class="scroll"><table>
<tr><th>broker</th><th>window (virtual)</th><th>what happens</th></tr>
{{range .Events}}<tr><td><span class="sw" style="background:{{.Color}}"></span>{{.Broker}}</td><td>{{.Window}}</td><td class="w">{{.What}}</td></tr>
{{end}}</table></div>{{end}}
<h2>Results</h2>
<div class="scroll"><table>
<tr><th>strategy</th><th class="n">sends</th><th class="n">succeeded</th><th class="n">failed</th><th class="n">attempts</th><th class="n">1st-attempt failures</th><th class="n">p50 ms</th><th class="n">p99 ms</th><th class="n">p999 ms</th><th class="n">max ms</th><th class="n">unhealthy attempts</th><th class="n">retries</th><th class="n">refused retries</th><th class="n">waited</th><th class="n">busy answers</th>{{if .Open}}<th class="n">shed</th><th class="n">in flight at end</th>{{end}}{{if .Fleet}}<th class="n">herding</th><th class="n">moves</th>{{end}}</tr>
{{range .Rows}}{{if .Group}}<tr class="group"><td colspan="{{$.Columns}}">{{.Group}} with one policy switched off:</td></tr>
{{end}}<tr{{if .Ablation}} class="abl"{{end}} title="{{.Summary}}"><td>{{.Name}}</td>{{if .SameAs}}<td class="same" colspan="{{$.SameSpan}}">{{.SameAs}}</td>{{else}}<td class="n">{{.Sends}}</td><td class="n">{{.Succeeded}}</td><td class="n">{{.Failed}}</td><td class="n">{{.Attempts}}</td><td class="n">{{.FirstFails}}</td><td class="n">{{.P50}}</td><td class="n">{{.P99}}</td><td class="n">{{.P999}}</td><td class="n">{{.Max}}</td><td class="n">{{.Unhealthy}}</td><td class="n">{{.Retries}}</td><td class="n">{{.Refused}}</td><td class="n">{{.Waited}}</td><td class="n">{{.Busy}}</td>{{if $.Open}}<td class="n">{{.Shed}}</td><td class="n">{{.InFlight}}</td>{{end}}{{if $.Fleet}}<td class="n">{{.Herding}}</td><td class="n">{{.Moves}}</td>{{end}}{{end}}</tr>
{{end}}</table></div>
<p class="note">Latency: whole sends, retries included, failed sends too. Unhealthy: attempts made to a broker that was down, blackholed,
slow, busy or flapping-down at that moment. Busy answers: attempts answered SYSTEM_BUSY (flow control). Refused retries: sends whose retry a retry budget refused. Waited: sends that waited for room before their last attempt (the mqfault preset's).
{{if .Fleet}}Fleet: the counts add up every producer's. Herding: the largest share of the producers that isolated one broker, or sent it less than half of what round robin would have, within one second; moves: the largest share that left one broker by that test or came back to it in one second, a synchronised storm when most of the fleet moves at once away from a fault's edges (each the peak, its broker and second).
{{end}}{{if .Open}}Open load: shed sends arrived while the in-flight bound was reached and failed at once (not in the latencies); in flight at end: sends still going when the duration ran out. {{end}}Every strategy met the same brokers, faults and seed. Every chart has the same time axis;
<span class="sw" style="background:{{.FaultBand}}"></span>grey bands on the line charts are the times when some broker had a fault window (which broker and what: the fault windows chart).</p>
{{define "chart"}}<h3>{{.Title}}</h3>
{{if .Legend}}<p class="legend">{{range .Legend}}<span class="e"><span class="ln{{if .Dashed}} dash{{end}}" style="border-top-color:{{.Color}}"></span>{{.Name}}{{if .Note}} <em>({{.Note}})</em>{{end}}</span> {{end}}</p>
{{end}}{{if .SVG}}<div class="chart">{{.SVG}}</div>
{{end}}{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{end}}
{{with .Faults}}<h2>Fault windows</h2>
<p class="legend">{{range $.Brokers}}<span class="e"><span class="sw" style="background:{{.Color}}"></span>{{.Name}}</span> {{end}}</p>
{{template "chart" .}}{{end}}
{{if .All}}<h2>All strategies</h2>
{{range .AllNotes}}<p class="note">{{.}}</p>
{{end}}{{range .All}}{{template "chart" .}}{{end}}{{end}}
{{with .Ablations}}<h2>Ablations</h2>
<p class="note">Each ablation is {{range $i, $b := .Bases}}{{if $i}}, {{end}}{{$b}}{{end}} with one policy switched off; its lines beside the strategy's show what that policy does on this scenario.</p>
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{range .Charts}}{{template "chart" .}}{{end}}{{end}}
{{range .PerStrategy}}
<h2>{{.Name}}</h2>
<p class="note">{{.Summary}}</p>
{{if .SameAs}}<p class="note">The same run as {{.SameAs}} in every number (the table, the per-second series, the isolation timeline): see its charts.</p>
{{else}}<p class="legend key">{{with $.TimelineKey}}<span class="e"><span class="sw" style="background:{{.Isolated}}"></span>isolated</span> <span class="e"><span class="rel" style="background:{{.Isolated}}"></span><span class="rel" style="background:{{.Isolated}}"></span>released, another isolation at once</span> <span class="e"><span class="sw" style="background:{{.Unreachable}}"></span>unreachable</span> <span class="e"><span class="sw" style="background:{{.Fault}}"></span>the broker's fault window</span>{{end}}</p>
{{template "chart" .Timeline}}
<p class="legend">{{range .Brokers}}<span class="e"><span class="sw" style="background:{{.Color}}"></span>{{.Name}}</span> {{end}}</p>
{{template "chart" .Share}}
{{template "chart" .P99}}
{{end}}{{end}}
</body>
</html>
`))

// fmtSpan formats a length of virtual time to a tenth of a second (to the
// millisecond under one second).
func fmtSpan(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// fmtSec formats a moment of virtual time as the scenario summary does:
// whole seconds as "10s", anything else as a Go duration.
func fmtSec(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// ms converts d to milliseconds rounded to the microsecond, as the JSON does.
func ms(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)/time.Microsecond) / 1000
}
