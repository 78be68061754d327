package report

import (
	"bytes"
	"context"
	"html/template"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/sim"
)

const testFamily = `name: tiny
duration: {min: 4s, max: 6s}
brokers: {min: 2, max: 4}
queues: 2
latency: {median: {min: 1ms, max: 3ms}, tail: 5}
capacity: {per_broker: 100, uneven: 0.5, spread: 3}
flow_control: {none: 1, reject: 1, queue: 1}
load: {model: {closed: 1, open: 1}, senders: [2, 4], utilization: {min: 0.3, max: 1.1}}
faults:
  count: {min: 1, max: 2}
  at: {min: 0.1, max: 0.5}
  for: {min: 1s, max: 3s}
  states: {down: {}, blackhole: {}, slow: {median: 400ms}, busy: {rate: 0.5}, flapping: {period: 1s}}
`

// TestWriteFamilyHTML: the family page has the totals, a chart of the
// runs' p99 and failed-send ratios to the baseline, and a row per run,
// the subject's (here the last strategy's) worse runs first; it is
// self-contained.
func TestWriteFamilyHTML(t *testing.T) {
	f, err := sim.ParseFamily([]byte(testFamily))
	if err != nil {
		t.Fatal(err)
	}
	strats := selectStrategies(t, "v5", "v5+detector", "off")
	rep, err := sim.RunFamily(context.Background(), sim.FamilyConfig{Family: f, Runs: 8, Seed: 1, Strategies: strats})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteFamilyHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "<svg"); n != 2 {
		t.Errorf("the page has %d charts, want 2", n)
	}
	for _, want := range []string{"<h3>p99 over the baseline", "<h3>Failed sends over the baseline", "worst first for off", strings.ReplaceAll(template.HTMLEscapeString(rep.Rule.String()), "+", "&#43;")} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	totals := rep.Totals()
	if totals[2].Worse == 0 || totals[2].Worse == len(rep.Runs) {
		t.Fatalf("off was worse in %d of %d runs: the order shows nothing", totals[2].Worse, len(rep.Runs))
	}
	// The rows: worse for off first, then the others.
	_, table, _ := strings.Cut(page, "<h2>The runs")
	rows := strings.Split(table, "<tr><td>")[1:]
	if len(rows) != len(rep.Runs) {
		t.Fatalf("%d rows, want %d", len(rows), len(rep.Runs))
	}
	for i, row := range rows {
		cells := strings.Split(row, "<td class=\"n")
		offWorse := strings.Contains(cells[len(cells)-1], " worse\"")
		if offWorse != (i < totals[2].Worse) {
			t.Errorf("row %d: off worse %v; want the %d worse runs first", i+1, offWorse, totals[2].Worse)
		}
	}
	for _, bad := range []string{"<script", "<link", "src=", "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q; want it self-contained", bad)
		}
	}
	if err := WriteFamilyHTML(&buf, &sim.FamilyReport{}); err == nil {
		t.Error("WriteFamilyHTML() of an empty report succeeded")
	}
}
