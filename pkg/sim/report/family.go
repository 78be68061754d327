package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mqfault/mqfault/pkg/sim"
)

// familyRow is one trial of the family page's table.
type familyRow struct {
	Rank, Run int
	Seed      uint64
	Baseline  string
	Cells     []familyCell
	Drawn     string
}

type familyCell struct {
	Score, Verdict string
}

type familyPage struct {
	Title, Baseline, Rule, Subject string
	Strategies                     []string
	Totals                         []sim.Tally
	Rows                           []familyRow
	Charts                         []*htmlChart
}

// rankedTrial is a trial with its place in the family.
type rankedTrial struct {
	run   *sim.FamilyRun
	trial *sim.Trial
	bad   float64 // the subject's larger ratio to the baseline
}

// failedRatio is a run's failed sends over the baseline's, one added to
// each so that a baseline without failed sends has a ratio.
func failedRatio(got, base sim.Score) float64 {
	return float64(got.Failed+1) / float64(base.Failed+1)
}

func p99Ratio(got, base sim.Score) float64 {
	if base.P99 <= 0 {
		return math.NaN()
	}
	return float64(got.P99) / float64(base.P99)
}

// subject returns the strategy the family page ranks runs by: the mqfault
// preset when it ran, else the last strategy.
func subject(names []string) int {
	if i := slices.Index(names, sim.PresetName); i >= 0 {
		return i
	}
	return len(names) - 1
}

// WriteFamilyHTML writes a family's report as one self-contained HTML page:
// the rule and the totals, a chart of each run's ratio to the baseline
// (p99, and failed sends plus one), a point per strategy, and a table of
// the runs, worst first for the subject (the mqfault preset when it ran,
// else the last strategy): the runs it was worse in, then neutral, then
// better, each by its larger ratio to the baseline, highest first.
func WriteFamilyHTML(w io.Writer, r *sim.FamilyReport) error {
	if r == nil || r.Family == nil || len(r.Runs) == 0 || len(r.Strategies) == 0 {
		return fmt.Errorf("report: the family report has no run")
	}
	subj := subject(r.Strategies)
	var trials []rankedTrial
	for i := range r.Runs {
		run := &r.Runs[i]
		for k := range run.Trials {
			t := &run.Trials[k]
			got := t.Results[subj].Score()
			bad := max(failedRatio(got, t.Baseline), p99Ratio(got, t.Baseline))
			if math.IsNaN(bad) {
				bad = failedRatio(got, t.Baseline)
			}
			trials = append(trials, rankedTrial{run: run, trial: t, bad: bad})
		}
	}
	order := map[sim.Verdict]int{sim.Worse: 0, sim.Neutral: 1, sim.Better: 2}
	slices.SortStableFunc(trials, func(a, b rankedTrial) int {
		if c := cmp.Compare(order[a.trial.Verdicts[subj]], order[b.trial.Verdicts[subj]]); c != 0 {
			return c
		}
		return cmp.Compare(b.bad, a.bad)
	})
	page := familyPage{
		Title:      fmt.Sprintf("mqfault sim: family %s (%d runs, family seed %d%s)", r.Family.Name, len(r.Runs), r.Seed, seedsNote(r.Seeds)),
		Baseline:   r.Baseline.String(),
		Rule:       r.Rule.String(),
		Subject:    r.Strategies[subj],
		Strategies: r.Strategies,
		Totals:     r.Totals(),
	}
	for rank, rt := range trials {
		row := familyRow{Rank: rank + 1, Run: rt.run.Run, Seed: rt.trial.Seed, Drawn: rt.run.Drawn.String(),
			Baseline: scoreText(rt.trial.Baseline)}
		for i := range rt.trial.Results {
			v := rt.trial.Verdicts[i]
			cell := familyCell{Score: scoreText(rt.trial.Results[i].Score())}
			if v != sim.Neutral {
				cell.Verdict = v.String()
			}
			row.Cells = append(row.Cells, cell)
		}
		page.Rows = append(page.Rows, row)
	}
	var plots []*chart
	for _, c := range []struct {
		title, ylabel string
		ratio         func(got, base sim.Score) float64
	}{
		{"p99 over the baseline's p99, each run (worst first, as the table)", "p99 / baseline", p99Ratio},
		{"Failed sends over the baseline's, each run (both plus one; worst first)", "(failed+1) / (baseline+1)", failedRatio},
	} {
		hc, err := ratioChart(c.title, c.ylabel, r, trials, c.ratio)
		if err != nil {
			return err
		}
		page.Charts = append(page.Charts, hc)
		plots = append(plots, hc.chart)
	}
	svgs, err := alignCharts(plots)
	if err != nil {
		return err
	}
	for i, c := range page.Charts {
		c.SVG = svgs[i]
	}
	return familyTemplate.Execute(w, page)
}

// seedsNote says at how many seeds each run ran, when not at its own.
func seedsNote(seeds []uint64) string {
	if len(seeds) == 0 {
		return ""
	}
	return fmt.Sprintf(", each run at %d seeds: a row per run and seed", len(seeds))
}

func scoreText(s sim.Score) string { return fmt.Sprintf("%d / %s", s.Failed, sim.FormatMS(s.P99)) }

// ratioChart draws each trial's ratio to the baseline, a point per
// strategy at the trial's rank, on a log scale, with the rule's bounds as
// grey lines.
func ratioChart(title, ylabel string, r *sim.FamilyReport, trials []rankedTrial, ratio func(got, base sim.Score) float64) (*htmlChart, error) {
	p := plot.New()
	p.X.Label.Text = "runs, worst first for " + r.Strategies[subject(r.Strategies)]
	p.Y.Label.Text = ylabel
	setFont(p)
	n := len(trials)
	p.X.Min, p.X.Max = 0.5, float64(n)+0.5
	p.X.Tick.Marker = rankTicks(n)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Add(plotter.NewGrid())
	lo, hi := 1.0, 1.0
	var legend []legendEntry
	var scatters []plot.Plotter
	for i, name := range r.Strategies {
		var pts plotter.XYs
		for rank, rt := range trials {
			v := ratio(rt.trial.Results[i].Score(), rt.trial.Baseline)
			if math.IsNaN(v) || v <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(rank + 1), Y: v})
			lo, hi = min(lo, v), max(hi, v)
		}
		if len(pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		c := strategyColor(i)
		s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.6), Shape: glyphShapes[i%len(glyphShapes)]}
		scatters = append(scatters, s)
		legend = append(legend, legendEntry{Name: name, Color: cssColor(c)})
	}
	for _, y := range []float64{r.Rule.BetterRatio, 1, r.Rule.P99Ratio} {
		ln, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}})
		if err != nil {
			return nil, err
		}
		ln.Color = faultBand
		ln.Width = vg.Points(1)
		if y != 1 {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(ln)
	}
	p.Add(scatters...)
	p.Y.Min, p.Y.Max = lo/1.3, hi*1.3
	return &htmlChart{Title: title, Legend: legend,
		Notes: []string{fmt.Sprintf("Grey lines: 1 (the baseline), and dashed %g and %g, the rule's bounds on p99 (on failed sends it adds %d sends of slack).",
			r.Rule.BetterRatio, r.Rule.P99Ratio, r.Rule.FailedSlack)},
		chart: &chart{p: p, h: lineHeight}}, nil
}

// glyphShapes tell the strategies' points apart without their colours.
var glyphShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{},
	draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}

// rankTicks labels the run axis at about ten round ranks.
func rankTicks(n int) plot.ConstantTicks {
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000} {
		step = s
		if n/s <= 10 {
			break
		}
	}
	var ticks plot.ConstantTicks
	for t := step; t <= n; t += step {
		ticks = append(ticks, plot.Tick{Value: float64(t), Label: fmt.Sprint(t)})
	}
	if len(ticks) == 0 || step > 1 {
		ticks = append(plot.ConstantTicks{{Value: 1, Label: "1"}}, ticks...)
	}
	return ticks
}

var familyTemplate = template.Must(template.New("family").Parse(`<!DOCTYPE html>
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
table { border-collapse: collapse; margin: 1em 0; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #ddd; white-space: nowrap; background: #fff; }
th { vertical-align: bottom; }
tr > :first-child { position: sticky; left: 0; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.worse { background: #f6d5c3; } td.better { background: #cfe8dd; }
td.w { white-space: normal; min-width: 20em; }
.ln { display: inline-block; width: 0.7em; height: 0.7em; margin: 0 0.3em 0 0; vertical-align: middle; border-radius: 50%; }
.legend { margin: 0.2em 0; line-height: 1.7; }
.legend span.e { white-space: nowrap; margin-right: 1.2em; }
.note { color: #555; font-size: 0.9em; margin: 0.2em 0; }
svg { display: block; width: 100%; max-width: 56em; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>Every strategy is judged against the baseline, {{.Baseline}}, on each run: {{.Rule}}.</p>
<div class="scroll"><table>
<tr><th>strategy</th><th class="n">worse</th><th class="n">better</th><th class="n">neutral</th></tr>
{{range .Totals}}<tr><td>{{.Name}}</td><td class="n">{{.Worse}}</td><td class="n">{{.Better}}</td><td class="n">{{.Neutral}}</td></tr>
{{end}}</table></div>
<h2>Each run against the baseline</h2>
{{range .Charts}}<h3>{{.Title}}</h3>
<p class="legend">{{range .Legend}}<span class="e"><span class="ln" style="background:{{.Color}}"></span>{{.Name}}</span> {{end}}</p>
{{.SVG}}
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{end}}
<h2>The runs, worst first for {{.Subject}}</h2>
<p class="note">Each cell: failed sends / p99 ms; shaded where the strategy was worse or better than the baseline. Each run replays with <code>mqfault sim --family FILE --family-seed S --runs N --keep DIR</code> (its worse runs) or from its drawn scenario.</p>
<div class="scroll"><table>
<tr><th>#</th><th class="n">run</th><th class="n">seed</th><th class="n">baseline</th>{{range .Strategies}}<th class="n">{{.}}</th>{{end}}<th>drawn</th></tr>
{{range .Rows}}<tr><td>{{.Rank}}</td><td class="n">{{.Run}}</td><td class="n">{{.Seed}}</td><td class="n">{{.Baseline}}</td>{{range .Cells}}<td class="n{{if .Verdict}} {{.Verdict}}{{end}}"{{if .Verdict}} title="{{.Verdict}}"{{end}}>{{.Score}}</td>{{end}}<td class="w">{{.Drawn}}</td></tr>
{{end}}</table></div>
</body>
</html>
`))
