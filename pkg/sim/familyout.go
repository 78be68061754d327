package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// verdictCell is a verdict as a table cell: blank for neutral, padded so a
// right-aligned column reads left-aligned.
func verdictCell(v Verdict) string {
	if v == Neutral {
		return "      "
	}
	return fmt.Sprintf("%-6s", v)
}

func scoreCell(s Score) string { return fmt.Sprintf("%d / %s", s.Failed, fmtMS(s.P99)) }

// WriteTable writes the family's runs, one line each (the run, its seed,
// the baseline's failed sends and p99, then each strategy's and its
// verdict, then what was drawn), and the totals: for each strategy the
// runs worse, better and neutral against the baseline.
func (r *FamilyReport) WriteTable(w io.Writer) error {
	if len(r.Seeds) > 0 {
		return r.writeSeedsTable(w)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "family %q: %d runs drawn at family seed %d; baseline: %s\n", r.Family.Name, len(r.Runs), r.Seed, r.Baseline)
	b.WriteString("each cell: failed sends / p99 ms, and the verdict against the baseline (blank: neutral)\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "run\tseed\tbaseline\t")
	for _, name := range r.Strategies {
		fmt.Fprintf(tw, "%s\t%s\t", name, verdictCell(Neutral))
	}
	fmt.Fprint(tw, "  drawn\n")
	for _, run := range r.Runs {
		for _, t := range run.Trials {
			fmt.Fprintf(tw, "%d\t%d\t%s\t", run.Run, t.Seed, scoreCell(t.Baseline))
			for i := range t.Results {
				fmt.Fprintf(tw, "%s\t%s\t", scoreCell(t.Results[i].Score()), verdictCell(t.Verdicts[i]))
			}
			fmt.Fprintf(tw, "  %s\n", run.Drawn)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteByte('\n')
	if err := writeTotals(&b, r.Rule, r.Totals(), "runs"); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSeedsTable is WriteTable with seeds: a line per run, each cell the
// median and range over the seeds, each verdict the seeds counted.
func (r *FamilyReport) writeSeedsTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "family %q: %d runs drawn at family seed %d, each at seeds %s (%d); baseline: %s\n",
		r.Family.Name, len(r.Runs), r.Seed, seedList(r.Seeds), len(r.Seeds), r.Baseline)
	b.WriteString("each cell: failed sends / p99 ms, the median over the seeds [lowest-highest], and the seeds at which the strategy was\n" +
		"worse (w) or better (b) than the baseline (the rest: neutral)\n\n")
	failed := func(r *Result) float64 { return float64(r.Failed) }
	p99 := func(r *Result) float64 { return float64(r.Latency.P99) }
	cell := func(trials []Trial, i int) string {
		return spreadCell(spreadOver(trials, i, failed), count) + " / " + spreadCell(spreadOver(trials, i, p99), msCol)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "run\tbaseline\t")
	for _, name := range r.Strategies {
		fmt.Fprintf(tw, "%s\t%-7s\t", name, "")
	}
	fmt.Fprint(tw, "  drawn\n")
	for _, run := range r.Runs {
		base := make([]Trial, len(run.Trials))
		for k, t := range run.Trials {
			base[k] = Trial{Results: []Result{{Failed: t.Baseline.Failed, Latency: Percentiles{P99: t.Baseline.P99}}}}
		}
		fmt.Fprintf(tw, "%d\t%s\t", run.Run, cell(base, 0))
		for i, name := range r.Strategies {
			t := tallyOver(name, run.Trials, i)
			var v []string
			if t.Worse > 0 {
				v = append(v, fmt.Sprintf("%dw", t.Worse))
			}
			if t.Better > 0 {
				v = append(v, fmt.Sprintf("%db", t.Better))
			}
			fmt.Fprintf(tw, "%s\t%-7s\t", cell(run.Trials, i), strings.Join(v, " "))
		}
		fmt.Fprintf(tw, "  %s\n", run.Drawn)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteByte('\n')
	if err := writeTotals(&b, r.Rule, r.Totals(), "runs x seeds"); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTotals writes the rule and the verdicts' counts per strategy.
func writeTotals(b *strings.Builder, rule Rule, totals []Tally, of string) error {
	fmt.Fprintf(b, "%s against the baseline (%s):\n", of, rule)
	width := len("strategy")
	for _, t := range totals {
		width = max(width, len(t.Name))
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tworse\tbetter\tneutral\t\n", width, "strategy")
	for _, t := range totals {
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t\n", width, t.Name, t.Worse, t.Better, t.Neutral)
	}
	return tw.Flush()
}

type jsonFamily struct {
	Family     string      `json:"family"`
	FamilySeed uint64      `json:"family_seed"`
	Runs       int         `json:"runs"`
	Seeds      []uint64    `json:"seeds,omitempty"`
	Baseline   []string    `json:"baseline"`
	Rule       jsonRule    `json:"rule"`
	Results    []jsonTrial `json:"results"`
	Totals     []jsonTally `json:"totals"`
}

type jsonRule struct {
	FailedRatio float64 `json:"failed_ratio"`
	FailedSlack int64   `json:"failed_slack"`
	P99Ratio    float64 `json:"p99_ratio"`
	BetterRatio float64 `json:"better_ratio"`
}

type jsonTrial struct {
	Run        int                 `json:"run"`
	Scenario   string              `json:"scenario"`
	Seed       uint64              `json:"seed"`
	Drawn      string              `json:"drawn"`
	Baseline   jsonScore           `json:"baseline"`
	Strategies []jsonTrialStrategy `json:"strategies"`
}

type jsonScore struct {
	Failed int64   `json:"failed"`
	P99MS  float64 `json:"p99_ms"`
}

type jsonTrialStrategy struct {
	Name    string  `json:"name"`
	Sends   int64   `json:"sends"`
	Failed  int64   `json:"failed"`
	P99MS   float64 `json:"p99_ms"`
	Verdict string  `json:"verdict"`
}

type jsonTally struct {
	Name    string `json:"name"`
	Worse   int    `json:"worse"`
	Better  int    `json:"better"`
	Neutral int    `json:"neutral"`
}

func jsonTallies(ts []Tally) []jsonTally {
	out := make([]jsonTally, len(ts))
	for i, t := range ts {
		out[i] = jsonTally(t)
	}
	return out
}

// MarshalJSON encodes the report as
//
//	{"family": NAME, "family_seed": N, "runs": N, ["seeds": [N, ...],]
//	 "baseline": [NAME, ...],
//	 "rule": {"failed_ratio": X, "failed_slack": N, "p99_ratio": X, "better_ratio": X},
//	 "results": [{"run": N, "scenario": NAME, "seed": N, "drawn": TEXT,
//	   "baseline": {"failed": N, "p99_ms": X},
//	   "strategies": [{"name", "sends", "failed", "p99_ms", "verdict"}, ...]}, ...],
//	 "totals": [{"name", "worse", "better", "neutral"}, ...]}
//
// one entry of results per run (per run and seed with seeds), verdicts
// "worse", "better" or "neutral", latencies in milliseconds to the
// microsecond: one family and seed always give the same bytes.
func (r *FamilyReport) MarshalJSON() ([]byte, error) {
	out := jsonFamily{Family: r.Family.Name, FamilySeed: r.Seed, Runs: len(r.Runs), Seeds: r.Seeds, Baseline: r.Baseline,
		Rule:   jsonRule(r.Rule),
		Totals: jsonTallies(r.Totals()), Results: []jsonTrial{}}
	for _, run := range r.Runs {
		for _, t := range run.Trials {
			jt := jsonTrial{Run: run.Run, Scenario: run.Scenario.Name, Seed: t.Seed, Drawn: run.Drawn.String(),
				Baseline: jsonScore{Failed: t.Baseline.Failed, P99MS: ms(t.Baseline.P99)}}
			for i, res := range t.Results {
				jt.Strategies = append(jt.Strategies, jsonTrialStrategy{Name: res.Name, Sends: res.Sends, Failed: res.Failed,
					P99MS: ms(res.Latency.P99), Verdict: t.Verdicts[i].String()})
			}
			out.Results = append(out.Results, jt)
		}
	}
	return json.Marshal(out)
}

// WriteJSON writes the report's JSON, indented by two spaces, and a newline.
func (r *FamilyReport) WriteJSON(w io.Writer) error { return writeIndented(w, r) }

func writeIndented(w io.Writer, m json.Marshaler) error {
	raw, err := m.MarshalJSON()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}
