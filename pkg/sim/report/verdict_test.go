package report

import (
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/sim"
)

// verdictRow returns the verdict table's row of strategy name.
func verdictRowOf(t *testing.T, verdict, name string) string {
	t.Helper()
	_, row, ok := strings.Cut(verdict, "<td>"+escaped(name)+"</td>")
	if !ok {
		t.Fatalf("the verdict table has no row for %s", name)
	}
	row, _, _ = strings.Cut(row, "</tr>")
	return row
}

// bestOf returns the names with the lowest value of score, in report order.
func bestOf(rep *sim.Report, score func(sim.Score) int64) []string {
	var best []string
	var low int64
	for _, res := range rep.Results {
		switch v := score(res.Score()); {
		case best == nil || v < low:
			best, low = []string{res.Name}, v
		case v == low:
			best = append(best, res.Name)
		}
	}
	return best
}

// TestReportVerdict: the page opens with a verdict (issue 25.3), before the
// scenario and the results table: the strategies with the fewest failed
// sends and the lowest p99, and every strategy against v5 and against
// v5+detector, judged by sim.DefaultRule (the rule of --seeds and
// --family): in a sentence per baseline listing the strategies better,
// worse and neutral, and in a table whose cells give the verdict, the
// columns that decided it, and both figures of both columns.
func TestReportVerdict(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "mixed"))
	page := htmlOf(t, rep)
	v, ok := sections(page)["Verdict"]
	if !ok {
		t.Fatal("the page has no Verdict section")
	}
	at := strings.Index(page, "<h2>Verdict</h2>")
	for _, later := range []string{`<th class="n">sends</th>`, "<svg"} {
		if i := strings.Index(page, later); i < at {
			t.Errorf("%q comes before the verdict", later)
		}
	}
	names := func(ns []string) string {
		var out []string
		for _, n := range ns {
			out = append(out, escaped(n))
		}
		return strings.Join(out, ", ")
	}
	bestFailed := bestOf(rep, func(s sim.Score) int64 { return s.Failed })
	bestP99 := bestOf(rep, func(s sim.Score) int64 { return int64(s.P99) })
	if !strings.Contains(v, "Fewest failed sends: "+names(bestFailed)) {
		t.Errorf("the verdict does not name %v as having the fewest failed sends:\n%s", bestFailed, v)
	}
	if !strings.Contains(v, "Lowest p99: "+names(bestP99)) {
		t.Errorf("the verdict does not name %v as having the lowest p99:\n%s", bestP99, v)
	}
	if !strings.Contains(html.UnescapeString(v), sim.DefaultRule.String()) {
		t.Error("the verdict does not state its rule")
	}
	kinds := map[sim.Verdict]int{}
	for _, baseName := range sim.DefaultBaseline {
		base := rep.Results[slices.IndexFunc(rep.Results, func(r sim.Result) bool { return r.Name == baseName })]
		byVerdict := map[sim.Verdict][]string{}
		for _, res := range rep.Results {
			if res.Name == baseName {
				continue
			}
			j := sim.DefaultRule.Judge(res.Score(), base.Score())
			byVerdict[j.Verdict()] = append(byVerdict[j.Verdict()], res.Name)
			kinds[j.Verdict()]++
		}
		sentence := regexp.MustCompile(`<p class="against">Against ` + regexp.QuoteMeta(escaped(baseName)) + `:(.*?)</p>`).FindStringSubmatch(v)
		if sentence == nil {
			t.Fatalf("no sentence against %s", baseName)
		}
		for _, verdict := range []sim.Verdict{sim.Better, sim.Worse, sim.Neutral} {
			if ns := byVerdict[verdict]; len(ns) > 0 && !strings.Contains(sentence[1], verdict.String()+": "+names(ns)) {
				t.Errorf("against %s: the sentence %q does not say %s: %v", baseName, sentence[1], verdict, ns)
			}
		}
	}
	if len(kinds) < 2 {
		t.Fatalf("every judgement is %v: the test shows little", kinds)
	}
	for _, res := range rep.Results {
		row := verdictRowOf(t, v, res.Name)
		cells := regexp.MustCompile(`<td class="v-(\w+)">(.*?)</td>`).FindAllStringSubmatch(row, -1)
		if len(cells) != len(sim.DefaultBaseline) {
			t.Fatalf("%s: %d verdict cells, want %d: %s", res.Name, len(cells), len(sim.DefaultBaseline), row)
		}
		for k, baseName := range sim.DefaultBaseline {
			base := rep.Results[slices.IndexFunc(rep.Results, func(r sim.Result) bool { return r.Name == baseName })]
			if res.Name == baseName {
				if cells[k][1] != "base" {
					t.Errorf("%s against itself: %q, want the baseline's cell", res.Name, cells[k][0])
				}
				continue
			}
			want := sim.DefaultRule.Judge(res.Score(), base.Score()).Verdict().String()
			if cells[k][1] != want {
				t.Errorf("%s against %s: %s, want %s", res.Name, baseName, cells[k][1], want)
			}
			for _, figure := range []string{
				fmt.Sprintf("failed %d vs %d", res.Failed, base.Failed),
				fmt.Sprintf("p99 %s vs %s ms", sim.FormatMS(res.Latency.P99), sim.FormatMS(base.Latency.P99)),
			} {
				if !strings.Contains(cells[k][2], figure) {
					t.Errorf("%s against %s: the cell %q lacks %q", res.Name, baseName, cells[k][2], figure)
				}
			}
		}
	}
}

// TestReportVerdictBaselineMissing: without v5+detector in the run the
// verdict judges against v5 only and says why; without either it names
// the best and says that there is no baseline to judge against.
func TestReportVerdictBaselineMissing(t *testing.T) {
	sc := loadTestScenario(t, "small")
	v := sections(htmlOf(t, mustRun(t, sc, sim.WithStrategies(selectStrategies(t, "off", "v5")...))))["Verdict"]
	if !strings.Contains(html.UnescapeString(v), "v5+detector did not run") || !strings.Contains(v, `<p class="against">Against v5:`) {
		t.Errorf("the verdict without v5+detector: %s", v)
	}
	if n := strings.Count(verdictRowOf(t, v, "off"), `<td class="v-`); n != 1 {
		t.Errorf("off has %d verdict cells, want 1 (against v5)", n)
	}
	v = sections(htmlOf(t, mustRun(t, sc, sim.WithStrategies(selectStrategies(t, "off", "mqfault")...))))["Verdict"]
	if !strings.Contains(v, "Fewest failed sends: ") || !strings.Contains(html.UnescapeString(v), "Neither v5 nor v5+detector ran") || strings.Contains(v, `class="v-`) {
		t.Errorf("the verdict without v5 and v5+detector: %s", v)
	}
}
