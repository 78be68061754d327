package report

import (
	"bytes"
	"image/color"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/sim"
)

func TestWriteHTML(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "small"))
	page := htmlOf(t, rep)
	// The fault windows, the per-second counts and the p99 of every
	// strategy, then each strategy's timeline, shares and p99.
	if want := 1 + len(perSecondCharts) + 1 + 3*len(rep.Results); strings.Count(page, "<svg") != want {
		t.Errorf("the page has %d charts, want %d", strings.Count(page, "<svg"), want)
	}
	for _, res := range rep.Results {
		if !strings.Contains(page, "<h2>"+escaped(res.Name)+"</h2>") {
			t.Errorf("the page has no section for %s", res.Name)
		}
	}
	// Self-contained: no script, no stylesheet or image fetched from elsewhere.
	for _, bad := range []string{"<script", "<link", "src=", "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q; want it self-contained", bad)
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, &sim.Report{}); err == nil {
		t.Error("WriteHTML() of an empty report succeeded, want an error")
	}
}

// TestReportOpenLoad: the page's table has the open-load columns for an
// open load only; its charts show retries and busy answers per second
// under either load.
func TestReportOpenLoad(t *testing.T) {
	strats := selectStrategies(t, "v5")
	sc := &sim.Scenario{Name: "poisson", Duration: 2 * time.Second, Seed: 5, Load: sim.LoadOpen, Rate: 200,
		Brokers: []sim.Broker{{Name: "a", Queues: 4, Latency: sim.Latency{Median: time.Millisecond, P99: 5 * time.Millisecond}}}}
	closed := *sc
	closed.Load, closed.Senders = sim.LoadClosed, 2
	for _, tt := range []struct {
		sc   *sim.Scenario
		open bool
	}{{sc, true}, {&closed, false}} {
		page := htmlOf(t, mustRun(t, tt.sc, sim.WithStrategies(strats...)))
		for _, want := range []string{`<th class="n">busy answers</th>`, "Retries per second", "Attempts answered busy (SYSTEM_BUSY) per second"} {
			if !strings.Contains(page, want) {
				t.Errorf("open=%v: the page lacks %q", tt.open, want)
			}
		}
		if got := strings.Contains(page, `<th class="n">in flight at end</th>`); got != tt.open {
			t.Errorf("open=%v: the page has the in-flight column: %v, want %v", tt.open, got, tt.open)
		}
	}
}

// foldedReport runs the mixed golden scenario with v5, mqfault, a copy of
// mqfault marked as its ablation (same run, so folded everywhere) and v5's
// settings marked as one (different numbers); then it adds a copy of
// mqfault's result whose timeline differs (same numbers, another run).
func foldedReport(t *testing.T) *sim.Report {
	t.Helper()
	strats := selectStrategies(t, "v5", "mqfault")
	same := strats[1]
	same.Name, same.Ablated = "mqfault-same", sim.Ablated{Of: "mqfault", Policy: "nothing"}
	other := strats[0]
	other.Name, other.Ablated = "mqfault-other", sim.Ablated{Of: "mqfault", Policy: "everything"}
	rep := mustRun(t, loadTestScenario(t, "mixed"), sim.WithStrategies(strats[0], strats[1], same, other))
	numbers := rep.Results[1]
	numbers.Name, numbers.Ablated = "mqfault-numbers", sim.Ablated{Of: "mqfault", Policy: "timing"}
	numbers.Timeline = slices.Clone(numbers.Timeline)
	numbers.Timeline[0].Isolated = append(slices.Clone(numbers.Timeline[0].Isolated), sim.Span{From: 0, To: time.Second})
	rep.Results = append(rep.Results, numbers)
	return rep
}

// TestReportAblationFolded: on the page, an ablation equal to its base in
// every number gets one cell in the table and no charts; one with the
// base's numbers but another run gets one cell and keeps its charts; a
// different one is a row; every ablation is drawn under Ablations with its
// base, not under All strategies.
func TestReportAblationFolded(t *testing.T) {
	rep := foldedReport(t)
	page := htmlOf(t, rep)
	sec := sections(page)
	if !strings.Contains(page, `<td>mqfault-same</td><td class="same" colspan="14">the same as mqfault in every number: the policy changed nothing here</td>`) {
		t.Error("the page's table does not fold the copy's row into one cell")
	}
	if !strings.Contains(page, `<td>mqfault-numbers</td><td class="same" colspan="14">the same numbers as mqfault; a different run over time (its charts below)</td>`) {
		t.Error("the page's table does not fold the same-numbers row into one cell")
	}
	if strings.Contains(sec["All strategies"], "mqfault-") {
		t.Error("the ablations are drawn under All strategies")
	}
	abl, ok := sec["Ablations"]
	if !ok {
		t.Fatal("no Ablations section")
	}
	if !strings.Contains(abl, "Not drawn, the same run as mqfault in every number (the policy changed nothing here): mqfault-same.") {
		t.Error("the Ablations section does not say which ablations it leaves out")
	}
	charts := strings.Split(abl, "<h3>")[1:]
	if len(charts) != len(perSecondCharts)+1 {
		t.Fatalf("%d charts under Ablations, want %d", len(charts), len(perSecondCharts)+1)
	}
	for _, c := range charts {
		if !strings.Contains(c, "</span>mqfault-other") || !strings.Contains(c, "</span>mqfault-numbers") || !strings.Contains(c, "</span>mqfault ") && !strings.Contains(c, "</span>mqfault<") ||
			strings.Contains(c, "mqfault-same") || strings.Contains(c, "</span>v5") {
			t.Errorf("an Ablations chart does not show exactly mqfault, mqfault-other and mqfault-numbers: %.400s", c)
		}
	}
	if body := sec["mqfault-same"]; strings.Contains(body, "<svg") || !strings.Contains(body, "The same run as mqfault in every number") {
		t.Errorf("the folded ablation's section has charts or no note: %.300s", body)
	}
	for _, name := range []string{"mqfault-other", "mqfault-numbers"} {
		if body := sec[name]; strings.Count(body, "<svg") != 3 {
			t.Errorf("%s's section has %d charts, want 3", name, strings.Count(body, "<svg"))
		}
	}
}

// TestReportAblationBaseMissing: an ablation run without its base is drawn
// with the others, and the page has no Ablations section.
func TestReportAblationBaseMissing(t *testing.T) {
	strats := selectStrategies(t, "v5", sim.AblationNames()[0])
	sec := sections(htmlOf(t, mustRun(t, loadTestScenario(t, "small"), sim.WithStrategies(strats...))))
	if _, ok := sec["Ablations"]; ok {
		t.Error("an Ablations section without the base")
	}
	if !strings.Contains(sec["All strategies"], sim.AblationNames()[0]) {
		t.Error("the ablation is not drawn under All strategies")
	}
}

// TestStrategyColors: every strategy and every ablation of a full run, and
// a configuration of the user's, gets a line colour of its own, the first
// five as before the palettes were split (Okabe and Ito's), none pale.
func TestStrategyColors(t *testing.T) {
	n := len(sim.Strategies()) + len(sim.Ablations()) + 1
	if len(strategyPalette) < n {
		t.Fatalf("%d strategy colours for %d strategies", len(strategyPalette), n)
	}
	seen := map[color.RGBA]int{}
	okabeIto := []color.RGBA{{0x00, 0x72, 0xB2, 0xff}, {0xD5, 0x5E, 0x00, 0xff}, {0x00, 0x9E, 0x73, 0xff}, {0xCC, 0x79, 0xA7, 0xff}, {0xE6, 0x9F, 0x00, 0xff}}
	for i := range n {
		c := strategyColor(i)
		if j, dup := seen[c]; dup {
			t.Errorf("strategies %d and %d share colour %v", j, i, c)
		}
		seen[c] = i
		if i < len(okabeIto) && c != okabeIto[i] {
			t.Errorf("strategy %d's colour %v, want %v", i, c, okabeIto[i])
		}
		if int(c.R)+int(c.G)+int(c.B) > 3*0xE8 {
			t.Errorf("strategy %d's colour %v is too pale for a line", i, c)
		}
	}
}
