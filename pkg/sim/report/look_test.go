package report

import (
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/sim"
)

// The tests of how the page reads (issue 25.3): what can be checked from its
// HTML and SVG. How it looks at 1400 and 600 px was checked in headless
// Chromium.

// h3s returns the chart titles of a section, in order.
func h3s(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<h3>(.*?)</h3>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReportStrategyTitles: every chart of a strategy's section is titled
// with the strategy, so a chart read on its own says whose it is.
func TestReportStrategyTitles(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "small"))
	sec := sections(htmlOf(t, rep))
	for _, res := range rep.Results {
		titles := h3s(sec[escaped(res.Name)])
		if len(titles) != 3 {
			t.Fatalf("%s: %d charts, want 3: %q", res.Name, len(titles), titles)
		}
		for _, title := range titles {
			if !strings.HasPrefix(title, escaped(res.Name)+": ") {
				t.Errorf("%s: the chart %q is not titled with the strategy", res.Name, title)
			}
		}
	}
}

// svgTexts returns the text elements of an SVG chart, positions included.
func svgTexts(svg string) []string {
	return regexp.MustCompile(`<text[^>]*>[^<]*</text>`).FindAllString(svg, -1)
}

// chartSVG returns the SVG that follows the chart titled with prefix.
func chartSVG(t *testing.T, body, prefix string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, "<h3>"+prefix)
	if !ok {
		t.Fatalf("no chart titled %q", prefix)
	}
	start := strings.Index(rest, "<svg")
	end := strings.Index(rest, "</svg>")
	if start < 0 || end < start {
		t.Fatalf("the chart %q has no SVG", prefix)
	}
	return rest[start:end]
}

// TestReportP99OneScale: every strategy's p99 chart has one y axis (the same
// ticks at the same places), so the charts compare by eye; on the mixed
// scenario the strategies' per-second p99 ranges differ, so each chart's own
// range would give different axes.
func TestReportP99OneScale(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "mixed"))
	sec := sections(htmlOf(t, rep))
	ranges := map[[2]time.Duration]bool{}
	var first []string
	for i, res := range rep.Results {
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for _, d := range res.Series.P99 {
			if d > 0 {
				lo, hi = min(lo, d), max(hi, d)
			}
		}
		ranges[[2]time.Duration{lo, hi}] = true
		texts := svgTexts(chartSVG(t, sec[escaped(res.Name)], escaped(res.Name)+": p99"))
		if i == 0 {
			first = texts
			continue
		}
		if !slices.Equal(texts, first) {
			t.Errorf("%s's p99 chart has other axis labels than %s's:\n%q\n%q", res.Name, rep.Results[0].Name, texts, first)
		}
	}
	if len(ranges) < 2 {
		t.Fatal("every strategy's p99 has one range: the test shows nothing")
	}
}

// TestReportCountTicks: the count charts label their y axis in whole
// numbers ("500", not "500.00"), whatever their range; the share chart in
// percent.
func TestReportCountTicks(t *testing.T) {
	strats := selectStrategies(t, "v5", "mqfault")
	for _, name := range []string{"small", "mixed", "open"} {
		rep := mustRun(t, loadTestScenario(t, name), sim.WithStrategies(strats...))
		sec := sections(htmlOf(t, rep))
		label := regexp.MustCompile(`>([^<>]*)</text>`)
		for _, title := range []string{"Sends started", "Failed sends", "Retries", "Attempts answered busy"} {
			for _, text := range svgTexts(chartSVG(t, sec["All strategies"], title)) {
				l := label.FindStringSubmatch(text)[1]
				if _, err := strconv.Atoi(l); err != nil && strings.ContainsAny(l, "0123456789") {
					t.Errorf("%s: %q chart: tick label %q is not a whole number", name, title, l)
				}
			}
		}
		share := svgTexts(chartSVG(t, sec["v5"], "v5: each broker"))
		if !slices.ContainsFunc(share, func(s string) bool { return strings.Contains(s, ">50%<") }) {
			t.Errorf("%s: the share chart's axis is not in percent: %q", name, share)
		}
	}
}

// swatches returns the colours of the legend swatches in html, in order.
func swatches(html, class string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<span class="`+class+`[^"]*" style="(?:background|border-top-color):(#[0-9a-f]{6})"`).FindAllStringSubmatch(html, -1) {
		out = append(out, m[1])
	}
	return out
}

// lab converts "#rrggbb" to CIE L*a*b* (D65).
func lab(hex string) [3]float64 {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	c := [3]float64{float64(v >> 16 & 255), float64(v >> 8 & 255), float64(v & 255)}
	for i := range c {
		x := c[i] / 255
		if x <= 0.04045 {
			x /= 12.92
		} else {
			x = math.Pow((x+0.055)/1.055, 2.4)
		}
		c[i] = x
	}
	x := (0.4124*c[0] + 0.3576*c[1] + 0.1805*c[2]) / 0.95047
	y := 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
	z := (0.0193*c[0] + 0.1192*c[1] + 0.9505*c[2]) / 1.08883
	f := func(t float64) float64 {
		if t > 0.008856 {
			return math.Cbrt(t)
		}
		return 7.787*t + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

// deltaE is the CIE76 colour difference of two "#rrggbb" colours: about 2.3
// is just noticeable, past 10 two colours read as different ones.
func deltaE(a, b string) float64 {
	x, y := lab(a), lab(b)
	return math.Sqrt((x[0]-y[0])*(x[0]-y[0]) + (x[1]-y[1])*(x[1]-y[1]) + (x[2]-y[2])*(x[2]-y[2]))
}

// minGroupDistance is how far apart (CIE76) any two colours of different
// groups must be: brokers, strategies and timeline states.
const minGroupDistance = 15

// TestReportPalettes: on a page with every ablation, the brokers' colours
// (fault windows, shares), the strategies' line colours and the timeline's
// state colours are three sets no two colours of which are alike across
// sets (today broker-b, v4 and "unreachable" shared vermillion), and every
// strategy's line has a colour of its own.
func TestReportPalettes(t *testing.T) {
	strats, err := sim.InsertAblations(sim.Strategies())
	if err != nil {
		t.Fatal(err)
	}
	sc := loadTestScenario(t, "small")
	rep := mustRun(t, sc, sim.WithStrategies(strats...))
	page := htmlOf(t, rep)
	sec := sections(page)
	groups := map[string][]string{}
	for _, c := range swatches(sec["Scenario"], "sw") {
		if !slices.Contains(groups["broker"], c) {
			groups["broker"] = append(groups["broker"], c)
		}
	}
	for _, c := range append(swatches(sec["All strategies"], "ln"), swatches(sec["Ablations"], "ln")...) {
		if !slices.Contains(groups["strategy"], c) {
			groups["strategy"] = append(groups["strategy"], c)
		}
	}
	key := regexp.MustCompile(`<p class="legend key">(.*?)</p>`).FindStringSubmatch(sec["v5"])
	if key == nil {
		t.Fatal("v5's section has no timeline key")
	}
	groups["state"] = swatches(key[1], "sw")
	if len(groups["broker"]) != len(sc.Brokers) || len(groups["strategy"]) < len(sim.Strategies()) || len(groups["state"]) < 3 {
		t.Fatalf("colours found: %v; want %d brokers, at least %d strategies, the states", groups, len(sc.Brokers), len(sim.Strategies()))
	}
	// What the page shows is the palettes', and every colour of them
	// keeps its distance, beyond the few this page uses.
	hexes := func(cs []color.RGBA) []string {
		var out []string
		for _, c := range cs {
			out = append(out, string(cssColor(c)))
		}
		return out
	}
	for g, palette := range map[string][]string{"broker": hexes(brokerPalette), "strategy": hexes(strategyPalette),
		"state": hexes([]color.RGBA{isolatedColor, unreachableCol, laneFault, faultBand})} {
		for _, c := range groups[g] {
			if !slices.Contains(palette, c) {
				t.Errorf("the page's %s colour %s is not in the %s palette", g, c, g)
			}
		}
		groups[g] = palette
	}
	order := []string{"broker", "strategy", "state"}
	for i, g := range order {
		for _, h := range order[i+1:] {
			for _, a := range groups[g] {
				for _, b := range groups[h] {
					if d := deltaE(a, b); d < minGroupDistance {
						t.Errorf("%s colour %s and %s colour %s are alike (ΔE %.1f, want at least %d)", g, a, h, b, d, minGroupDistance)
					}
				}
			}
		}
	}
	for i := range len(strats) {
		for j := range i {
			if strategyColor(i) == strategyColor(j) {
				t.Errorf("strategies %s and %s share a colour", strats[i].Name, strats[j].Name)
			}
		}
	}
}

// TestReportBrokers: the scenario section shows each broker's static
// properties (queues, latency, capacity and what happens past it: a token
// bucket's SYSTEM_BUSY or a send queue's wait), so a capacity scenario's
// steady failures have a visible cause, and the capacity of all brokers
// against the offered load.
func TestReportBrokers(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "open"), sim.WithStrategies(selectStrategies(t, "v5")...))
	s := sections(htmlOf(t, rep))["Scenario"]
	for _, b := range rep.Scenario.Brokers {
		_, row, ok := strings.Cut(s, "</span>"+b.Name+"</td>")
		if !ok {
			t.Fatalf("the broker table has no row for %s", b.Name)
		}
		row, _, _ = strings.Cut(row, "</tr>")
		want := []string{fmt.Sprintf(`<td class="n">%d</td>`, b.Queues), b.Latency.Median.String(), b.Latency.P99.String(),
			fmt.Sprintf("%g sends/s", b.Capacity)}
		if b.QueueWait > 0 {
			want = append(want, "send queue", b.QueueWait.String())
		} else {
			want = append(want, "SYSTEM_BUSY")
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("%s's row %q lacks %q", b.Name, row, w)
			}
		}
	}
	if !strings.Contains(s, "1750 sends/s in all, for 1500 sends/s offered") {
		t.Errorf("the scenario section does not compare the capacity with the load: %s", s)
	}
	unlimited := sections(htmlOf(t, mustRun(t, loadTestScenario(t, "mixed"), sim.WithStrategies(selectStrategies(t, "v5")...))))["Scenario"]
	if !strings.Contains(unlimited, "unlimited") {
		t.Error("a broker without a capacity is not shown as unlimited")
	}
}

// TestReportBrokerLegends: a broker legend lists the brokers its chart
// draws: the fault windows' only those with a window, the shares' only
// those with attempts.
func TestReportBrokerLegends(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "open"), sim.WithStrategies(selectStrategies(t, "v5")...))
	sec := sections(htmlOf(t, rep))
	entries := func(legend string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<span class="sw" style="background:#[0-9a-f]{6}"></span>([^<]*)</span>`).FindAllStringSubmatch(legend, -1) {
			out = append(out, m[1])
		}
		return out
	}
	faults, _, _ := strings.Cut(sec["Fault windows"], "<svg")
	if got := entries(faults); !slices.Equal(got, []string{"b"}) {
		t.Errorf("the fault windows legend lists %v, want [b] (the one broker with a window)", got)
	}
	_, share, _ := strings.Cut(sec["v5"], "</svg>") // after the timeline
	share, _, _ = strings.Cut(share, "<svg")
	var attempted []string
	for i, b := range rep.Results[0].Brokers {
		if b.Attempts > 0 {
			attempted = append(attempted, rep.Scenario.Brokers[i].Name)
		}
	}
	if got := entries(share); !slices.Equal(got, attempted) {
		t.Errorf("the share legend lists %v, want %v", got, attempted)
	}
}

// TestReportAblationRows: in the tables an ablation's row is told apart
// from the strategies' (class abl, under a row that says what they are).
func TestReportAblationRows(t *testing.T) {
	rep := foldedReport(t)
	page := htmlOf(t, rep)
	for _, res := range rep.Results {
		row := regexp.MustCompile(`<tr( class="[^"]*")?[^>]*><td[^>]*>(?:<span[^>]*>[^<]*</span>)?` + regexp.QuoteMeta(res.Name) + `</td>`).FindStringSubmatch(page)
		if row == nil {
			t.Fatalf("no table row for %s", res.Name)
		}
		if got, want := strings.Contains(row[1], "abl"), res.Ablated.Of != ""; got != want {
			t.Errorf("%s's row is marked an ablation: %v, want %v", res.Name, got, want)
		}
	}
	if !strings.Contains(page, `<tr class="group"><td colspan=`) {
		t.Error("no row introduces the ablations")
	}
}

// TestReportLayoutRules: every table sits in a box that scrolls sideways
// (so a narrow screen scrolls the table, not the page), the charts shrink
// to the page, and the tables' cells may wrap their headers.
func TestReportLayoutRules(t *testing.T) {
	page := htmlOf(t, mustRun(t, loadTestScenario(t, "open")))
	if n, boxed := strings.Count(page, "<table"), strings.Count(page, `<div class="scroll"><table`); n < 3 || boxed != n {
		t.Errorf("%d tables, %d of them in a scroll box; want at least 3 (verdict, brokers, results), all boxed", n, boxed)
	}
	for _, rule := range []string{`\.scroll \{[^}]*overflow-x: auto`, `svg \{[^}]*max-width: 100%`, `th \{[^}]*white-space: normal`} {
		if !regexp.MustCompile(rule).MatchString(page) {
			t.Errorf("the style has no rule %s", rule)
		}
	}
}
