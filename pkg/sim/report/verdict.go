package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/sim"
)

// htmlVerdict is the page's opening section: who won the run, by the one
// rule of the simulator (sim.DefaultRule, that of --seeds and --family).
type htmlVerdict struct {
	BestFailed, BestP99 string
	Rule                string
	Baselines           []string // the columns: those of sim.DefaultBaseline that ran
	Missing             string   // says which baselines did not run, if any
	Against             []string // a sentence per baseline
	Rows                []verdictRow
	Folded              string // the ablations left out, as the table folds them
	ColSpan             int    // of a group row
}

type verdictRow struct {
	Name, Summary, P99 string
	Ablation           bool
	Group              string // a row before this one that introduces the ablations of Group
	Failed, Sends      int64
	Cells              []verdictCell
}

// verdictCell is one strategy against one baseline: Class is the verdict
// ("worse", "better", "neutral") or "base" for the baseline itself.
type verdictCell struct {
	Class, Text string
}

// verdict judges every strategy of r whose row the table shows against each
// strategy of sim.DefaultBaseline that ran, by sim.DefaultRule, and names
// the best on failed sends and on p99 of those rows.
func verdict(r *sim.Report, kinds []rowKind) *htmlVerdict {
	rule := sim.DefaultRule
	v := &htmlVerdict{Rule: rule.String()}
	var bases []int
	var missing []string
	for _, name := range sim.DefaultBaseline {
		if i := slices.IndexFunc(r.Results, func(res sim.Result) bool { return res.Name == name }); i >= 0 {
			bases = append(bases, i)
			v.Baselines = append(v.Baselines, name)
		} else {
			missing = append(missing, name)
		}
	}
	switch {
	case len(bases) == 0:
		v.Missing = "Neither " + strings.Join(sim.DefaultBaseline, " nor ") + " ran, so no strategy is judged against them (add them with --strategies)."
	case len(missing) > 0:
		v.Missing = strings.Join(missing, " and ") + " did not run: the strategies are judged against " + strings.Join(v.Baselines, " and ") + " only."
	}
	v.ColSpan = 3 + len(bases)

	var bestF, bestP []string
	var lowF int64
	var lowP time.Duration
	byBase := make([]map[sim.Verdict][]string, len(bases))
	for k := range bases {
		byBase[k] = map[sim.Verdict][]string{}
	}
	var folded []string
	for i := range r.Results {
		res := &r.Results[i]
		if kinds[i].folded {
			folded = append(folded, res.Name)
			continue
		}
		switch s := res.Score(); {
		case bestF == nil || s.Failed < lowF:
			bestF, lowF = []string{res.Name}, s.Failed
		case s.Failed == lowF:
			bestF = append(bestF, res.Name)
		}
		switch s := res.Score(); {
		case bestP == nil || s.P99 < lowP:
			bestP, lowP = []string{res.Name}, s.P99
		case s.P99 == lowP:
			bestP = append(bestP, res.Name)
		}
		row := verdictRow{Name: res.Name, Summary: res.Summary, Failed: res.Failed, Sends: res.Sends,
			P99: sim.FormatMS(res.Latency.P99), Ablation: kinds[i].ablation, Group: kinds[i].group}
		for k, b := range bases {
			if b == i {
				row.Cells = append(row.Cells, verdictCell{Class: "base", Text: "the baseline"})
				continue
			}
			base := &r.Results[b]
			j := rule.Judge(res.Score(), base.Score())
			byBase[k][j.Verdict()] = append(byBase[k][j.Verdict()], res.Name)
			row.Cells = append(row.Cells, verdictCell{Class: j.Verdict().String(), Text: judgementText(j, res, base)})
		}
		v.Rows = append(v.Rows, row)
	}
	v.BestFailed = fmt.Sprintf("Fewest failed sends: %s (%d).", strings.Join(bestF, ", "), lowF)
	v.BestP99 = fmt.Sprintf("Lowest p99: %s (%s ms).", strings.Join(bestP, ", "), sim.FormatMS(lowP))
	for k, name := range v.Baselines {
		var parts []string
		for _, verdict := range []sim.Verdict{sim.Better, sim.Worse, sim.Neutral} {
			if ns := byBase[k][verdict]; len(ns) > 0 {
				parts = append(parts, verdict.String()+": "+strings.Join(ns, ", "))
			}
		}
		if len(parts) == 0 {
			continue // the baseline ran alone
		}
		v.Against = append(v.Against, fmt.Sprintf("Against %s: %s.", name, strings.Join(parts, "; ")))
	}
	if len(folded) > 0 {
		v.Folded = "Not listed, as the table folds them (the numbers of the strategy they change): " + strings.Join(folded, ", ") + "."
	}
	return v
}

// judgementText says in words and numbers how got compares with base:
// which columns decided the verdict, then both figures of both columns and
// the change.
func judgementText(j sim.Judgement, got, base *sim.Result) string {
	var lead string
	switch j.Verdict() {
	case sim.Worse:
		lead = "worse on " + columns(j.FailedWorse, j.P99Worse)
	case sim.Better:
		lead = "better on " + columns(j.FailedBetter, j.P99Better)
	default:
		lead = "neutral"
	}
	return fmt.Sprintf("%s: failed %d vs %d (%s), p99 %s vs %s ms (%s)", lead,
		got.Failed, base.Failed, change(float64(got.Failed), float64(base.Failed), true),
		sim.FormatMS(got.Latency.P99), sim.FormatMS(base.Latency.P99), change(float64(got.Latency.P99), float64(base.Latency.P99), false))
}

func columns(failed, p99 bool) string {
	switch {
	case failed && p99:
		return "failed sends and p99"
	case failed:
		return "failed sends"
	}
	return "p99"
}

// change formats got against base as a relative change ("+12%", "−3.5%"),
// or, for counts from a base of zero, as the difference ("+4").
func change(got, base float64, count bool) string {
	switch {
	case got == base:
		return "the same"
	case base == 0 && count:
		return fmt.Sprintf("%+.0f", got-base)
	case base == 0:
		return "from 0"
	}
	pct := 100 * (got - base) / base
	s := fmt.Sprintf("%+.0f%%", pct)
	switch {
	case math.Abs(pct) < 1:
		s = fmt.Sprintf("%+.2f%%", pct)
	case math.Abs(pct) < 10:
		s = fmt.Sprintf("%+.1f%%", pct)
	}
	return strings.Replace(s, "-", "−", 1)
}
