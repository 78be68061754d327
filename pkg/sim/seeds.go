package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// MaxSeeds bounds the seeds of one --seeds list.
const MaxSeeds = 10_000

// ParseSeeds reads a list of seeds: numbers and ranges separated by commas,
// "1-5", "1,3,7", "1-3,10". A seed may appear once; at most MaxSeeds.
func ParseSeeds(s string) ([]uint64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no seed (want a list such as 1-5 or 1,3,7)")
	}
	var out []uint64
	seen := map[uint64]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed or a range of seeds (such as 1-5)", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range of seeds (such as 1-5)", part)
			}
		}
		if b-a >= MaxSeeds || len(out)+int(b-a)+1 > MaxSeeds {
			return nil, fmt.Errorf("more than %d seeds", MaxSeeds)
		}
		for v := a; ; v++ {
			if seen[v] {
				return nil, fmt.Errorf("seed %d is given twice", v)
			}
			seen[v] = true
			out = append(out, v)
			if v == b {
				break
			}
		}
	}
	return out, nil
}

// SeedsConfig says what RunSeeds runs: the scenario at each of Seeds, with
// the strategies, baseline and rule of a family run (FamilyConfig's
// defaults).
type SeedsConfig struct {
	Seeds      []uint64
	Strategies []Strategy
	Baseline   Baseline
	Rule       Rule
	Workers    int
	Progress   func(done, total int)
}

// SeedsReport is a scenario run at several seeds: a Trial per seed, in the
// order of the seeds.
type SeedsReport struct {
	Scenario   *Scenario
	Seeds      []uint64
	Strategies []string
	Baseline   Baseline
	Rule       Rule
	Trials     []Trial
	Wall       time.Duration
}

// RunSeeds runs the scenario (validated first) at every seed of cfg and
// judges each strategy against the baseline at each. The seeds run on
// cfg.Workers goroutines at a time; the report is the same whatever the
// scheduling. It returns when every goroutine it started has ended.
func RunSeeds(ctx context.Context, sc *Scenario, cfg SeedsConfig) (*SeedsReport, error) {
	if sc == nil {
		return nil, &FieldError{Msg: "no scenario"}
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Seeds) == 0 || len(cfg.Seeds) > MaxSeeds {
		return nil, fmt.Errorf("sim: %d seeds: want 1 to %d", len(cfg.Seeds), MaxSeeds)
	}
	j, err := newPanel(cfg.Strategies, cfg.Baseline, cfg.Rule)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	rep := &SeedsReport{Scenario: sc, Seeds: slices.Clone(cfg.Seeds), Strategies: j.names(), Baseline: j.baseline, Rule: j.rule,
		Trials: make([]Trial, len(cfg.Seeds))}
	if err := j.run(ctx, seedJobs(sc, cfg.Seeds, rep.Trials), cfg.Workers, cfg.Progress); err != nil {
		return nil, err
	}
	rep.Wall = time.Since(began)
	return rep, nil
}

// seedJobs returns a job per seed: a copy of sc at that seed, into out.
func seedJobs(sc *Scenario, seeds []uint64, out []Trial) []trialJob {
	jobs := make([]trialJob, len(seeds))
	for k, seed := range seeds {
		c := *sc
		c.Seed = seed
		jobs[k] = trialJob{sc: &c, out: &out[k]}
	}
	return jobs
}

// Spread is one column over the seeds: its median (the lower of the two
// middle values for an even number of seeds) and its range.
type Spread struct {
	Median, Min, Max float64
}

func spreadOf(vals []float64) Spread {
	s := slices.Clone(vals)
	slices.Sort(s)
	return Spread{Median: s[(len(s)-1)/2], Min: s[0], Max: s[len(s)-1]}
}

// seedColumn is a column of the seeds table: its header, its JSON key,
// the value it takes from a Result, and how to write one.
type seedColumn struct {
	name, key string
	of        func(r *Result) float64
	format    func(v float64) string
	openOnly  bool
}

func count(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func msCol(v float64) string { return fmtMS(time.Duration(v)) }
func pctCol(v float64) string {
	return fmt.Sprintf("%.1f%%", 100*v)
}

// seedColumns are the columns of WriteTable's table, in its order.
var seedColumns = []seedColumn{
	{"sends", "sends", func(r *Result) float64 { return float64(r.Sends) }, count, false},
	{"succeeded", "succeeded", func(r *Result) float64 { return float64(r.Succeeded) }, count, false},
	{"failed", "failed", func(r *Result) float64 { return float64(r.Failed) }, count, false},
	{"attempts", "attempts", func(r *Result) float64 { return float64(r.Attempts) }, count, false},
	{"1st-attempt failures", "first_attempt_failures", func(r *Result) float64 { return float64(r.FirstAttemptFailures) }, count, false},
	{"p50 ms", "p50_ms", func(r *Result) float64 { return float64(r.Latency.P50) }, msCol, false},
	{"p99 ms", "p99_ms", func(r *Result) float64 { return float64(r.Latency.P99) }, msCol, false},
	{"p999 ms", "p999_ms", func(r *Result) float64 { return float64(r.Latency.P999) }, msCol, false},
	{"max ms", "max_ms", func(r *Result) float64 { return float64(r.Latency.Max) }, msCol, false},
	{"unhealthy attempts", "unhealthy_share", func(r *Result) float64 { return r.UnhealthyShare() }, pctCol, false},
	{"retries", "retries", func(r *Result) float64 { return float64(r.Retries) }, count, false},
	{"refused retries", "retries_refused", func(r *Result) float64 { return float64(r.RetriesRefused) }, count, false},
	{"waited", "waited", func(r *Result) float64 { return float64(r.Waited) }, count, false},
	{"busy answers", "busy_answers", func(r *Result) float64 { return float64(r.BusyAnswers) }, count, false},
	{"shed", "shed", func(r *Result) float64 { return float64(r.Shed) }, count, true},
	{"in flight at end", "in_flight_at_end", func(r *Result) float64 { return float64(r.InFlightAtEnd) }, count, true},
}

func (r *SeedsReport) columns() []seedColumn {
	var out []seedColumn
	for _, c := range seedColumns {
		if !c.openOnly || r.Scenario.open() {
			out = append(out, c)
		}
	}
	return out
}

// spread returns strategy i's column c over the trials.
func spreadOver(trials []Trial, i int, of func(*Result) float64) Spread {
	vals := make([]float64, len(trials))
	for k := range trials {
		vals[k] = of(&trials[k].Results[i])
	}
	return spreadOf(vals)
}

func tallyOver(name string, trials []Trial, i int) Tally {
	t := Tally{Name: name}
	for k := range trials {
		t.add(trials[k].Verdicts[i])
	}
	return t
}

// spreadCell writes a spread as "median [min-max]", the median alone when
// every seed gave the same value.
func spreadCell(s Spread, format func(float64) string) string {
	if s.Min == s.Max {
		return format(s.Median)
	}
	return fmt.Sprintf("%s [%s-%s]", format(s.Median), format(s.Min), format(s.Max))
}

// seedList writes seeds compactly: "1-5", "1-3,7".
func seedList(seeds []uint64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, strconv.FormatUint(seeds[i], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// WriteTable writes the scenario's summary and a row per strategy: each
// column of the one-seed table as its median over the seeds and its range,
// then the seeds at which the strategy was worse, better and neutral
// against the baseline.
func (r *SeedsReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	sc := r.Scenario
	summary := sc.Summary(r.Seeds[0])
	first, events, _ := strings.Cut(summary, "\n")
	first = strings.TrimSuffix(first, fmt.Sprintf(", seed %d", r.Seeds[0]))
	fmt.Fprintf(&b, "%s, seeds %s (%d)\n%s", first, seedList(r.Seeds), len(r.Seeds), events)
	b.WriteString("each cell: the median over the seeds [lowest-highest]; worse, better, neutral: the seeds at which the strategy was, against the baseline\n\n")
	cols := r.columns()
	width := len("strategy")
	for _, n := range r.Strategies {
		width = max(width, len(n))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t", width, "strategy")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.name)
	}
	fmt.Fprint(tw, "worse\tbetter\tneutral\t\n")
	for i, name := range r.Strategies {
		fmt.Fprintf(tw, "%-*s\t", width, name)
		for _, c := range cols {
			fmt.Fprintf(tw, "%s\t", spreadCell(spreadOver(r.Trials, i, c.of), c.format))
		}
		t := tallyOver(name, r.Trials, i)
		fmt.Fprintf(tw, "%d\t%d\t%d\t\n", t.Worse, t.Better, t.Neutral)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nbaseline: %s at each seed; %s.\n", r.Baseline, r.Rule)
	_, err := io.WriteString(w, b.String())
	return err
}

type jsonSeeds struct {
	Scenario   string             `json:"scenario"`
	Seeds      []uint64           `json:"seeds"`
	Baseline   []string           `json:"baseline"`
	Rule       jsonRule           `json:"rule"`
	Strategies []jsonSeedStrategy `json:"strategies"`
}

type jsonSeedStrategy struct {
	Name     string                `json:"name"`
	Columns  map[string]jsonSpread `json:"columns"`
	Verdicts jsonVerdicts          `json:"verdicts"`
	PerSeed  []jsonSeedTrial       `json:"per_seed"`
}

type jsonSpread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

type jsonVerdicts struct {
	Worse   int `json:"worse"`
	Better  int `json:"better"`
	Neutral int `json:"neutral"`
}

type jsonSeedTrial struct {
	Seed    uint64  `json:"seed"`
	Failed  int64   `json:"failed"`
	P99MS   float64 `json:"p99_ms"`
	Verdict string  `json:"verdict"`
}

// jsonSpreadOf writes a spread in the JSON's units: milliseconds to the
// microsecond for latencies, the rest as they are.
func jsonSpreadOf(s Spread, c seedColumn) jsonSpread {
	if strings.HasSuffix(c.key, "_ms") {
		f := func(v float64) float64 { return ms(time.Duration(v)) }
		return jsonSpread{f(s.Median), f(s.Min), f(s.Max)}
	}
	return jsonSpread(s)
}

// MarshalJSON encodes the report as
//
//	{"scenario": NAME, "seeds": [N, ...], "baseline": [NAME, ...],
//	 "rule": {"failed_ratio", "failed_slack", "p99_ratio", "better_ratio"},
//	 "strategies": [{"name": NAME,
//	   "columns": {"sends": {"median": X, "min": X, "max": X}, ...},
//	   "verdicts": {"worse": N, "better": N, "neutral": N},
//	   "per_seed": [{"seed": N, "failed": N, "p99_ms": X, "verdict": V}, ...]}, ...]}
//
// with the columns of the one-seed table under the keys of its JSON
// ("first_attempt_failures", "p99_ms", "unhealthy_share" as a share,
// "shed" and "in_flight_at_end" under an open load only).
func (r *SeedsReport) MarshalJSON() ([]byte, error) {
	out := jsonSeeds{Scenario: r.Scenario.Name, Seeds: r.Seeds, Baseline: r.Baseline, Rule: jsonRule(r.Rule)}
	for i, name := range r.Strategies {
		s := jsonSeedStrategy{Name: name, Columns: map[string]jsonSpread{}}
		for _, c := range r.columns() {
			s.Columns[c.key] = jsonSpreadOf(spreadOver(r.Trials, i, c.of), c)
		}
		t := tallyOver(name, r.Trials, i)
		s.Verdicts = jsonVerdicts{Worse: t.Worse, Better: t.Better, Neutral: t.Neutral}
		for k := range r.Trials {
			res := &r.Trials[k].Results[i]
			s.PerSeed = append(s.PerSeed, jsonSeedTrial{Seed: r.Trials[k].Seed, Failed: res.Failed, P99MS: ms(res.Latency.P99),
				Verdict: r.Trials[k].Verdicts[i].String()})
		}
		out.Strategies = append(out.Strategies, s)
	}
	return json.Marshal(out)
}

// WriteJSON writes the report's JSON, indented by two spaces, and a newline.
func (r *SeedsReport) WriteJSON(w io.Writer) error { return writeIndented(w, r) }

// SimulatedSends returns the sends of every strategy at every seed.
func (r *SeedsReport) SimulatedSends() int64 {
	var n int64
	for _, t := range r.Trials {
		for _, res := range t.Results {
			n += res.Sends
		}
	}
	return n
}
