package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// MustReachSuite is what JudgeMustReach runs: runs of families at family
// seeds, and scenarios at seeds.
type MustReachSuite struct {
	Families []SuiteFamily
	// Scenarios are run at each of Seeds; Sources names each (a file's
	// path, or "default"), in the same order.
	Scenarios []*Scenario
	Sources   []string
	Seeds     []uint64
}

// SuiteFamily is Runs runs of Family at each of Seeds (family seeds).
type SuiteFamily struct {
	Family *Family
	Seeds  []uint64
	Runs   int
}

// The must-reach suite's fixed draws: each shipped family at these family
// seeds (MustReachHealthyRuns and MustReachBroadRuns runs at each), and
// each scenario at seeds 1 to 5. The counts keep the whole judge of one
// strategy under a minute on one core. LoadMustReachSuite copies them.
var (
	MustReachFamilySeeds = []uint64{1, 2}
	MustReachSeeds       = []uint64{1, 2, 3, 4, 5}
)

// The runs of each shipped family at each family seed.
const (
	MustReachHealthyRuns = 16
	MustReachBroadRuns   = 12
)

// LoadMustReachSuite reads the must-reach suite from dir, the
// repository's testdata: families/healthy.yaml and families/broad.yaml
// (MustReachHealthyRuns and MustReachBroadRuns runs at each of
// MustReachFamilySeeds), every scenarios/*.yaml and the embedded default
// scenario (at MustReachSeeds). A file that is missing or invalid is an
// error naming it.
func LoadMustReachSuite(dir string) (*MustReachSuite, error) {
	s := &MustReachSuite{Seeds: slices.Clone(MustReachSeeds)}
	for _, fam := range []struct {
		name string
		runs int
	}{{"healthy", MustReachHealthyRuns}, {"broad", MustReachBroadRuns}} {
		path := filepath.Join(dir, "families", fam.name+".yaml")
		f, err := LoadFamily(path)
		if err != nil {
			return nil, fmt.Errorf("sim: must-reach family %s: %w", path, err)
		}
		s.Families = append(s.Families, SuiteFamily{Family: f, Seeds: slices.Clone(MustReachFamilySeeds), Runs: fam.runs})
	}
	paths, err := filepath.Glob(filepath.Join(dir, "scenarios", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("sim: must-reach: no scenario in %s", filepath.Join(dir, "scenarios"))
	}
	for _, p := range paths {
		sc, err := LoadFile(p)
		if err != nil {
			return nil, fmt.Errorf("sim: must-reach scenario %s: %w", p, err)
		}
		s.Scenarios, s.Sources = append(s.Scenarios, sc), append(s.Sources, p)
	}
	def, err := Parse(DefaultYAML())
	if err != nil {
		return nil, err
	}
	s.Scenarios, s.Sources = append(s.Scenarios, def), append(s.Sources, "default")
	return s, nil
}

// MustReachRun is one run the judge made: where it comes from, what it
// is, and the figures it is judged on.
type MustReachRun struct {
	// Name names the run: "broad-7 (family seed 2)", "many-slow seed 3".
	Name string
	// Drawn describes the scenario in a few words (Drawn.String's form).
	Drawn string
	// Faulty: the scenario has at least one event.
	Faulty bool
	// Utilization is the offered rate over the brokers' capacity (0 when
	// a broker has no capacity: the cluster takes any load).
	Utilization float64
	// Got is the judged strategy's figures, Base the baseline's (the better
	// of v5 and v5+detector, column by column) and V5 v5's.
	Got, Base, V5 Score
}

// Healthy reports whether the run is a healthy cluster the rules hold to
// v5's figures: no fault, and at most 95% of the capacity offered.
func (r *MustReachRun) Healthy() bool { return !r.Faulty && r.Utilization <= 0.95 }

// MustReachRule is one rule's result.
type MustReachRule struct {
	// Name states the rule.
	Name string
	// Judged counts the runs the rule applies to, Met those that meet it,
	// Need those that must.
	Judged, Met, Need int
	// Failing holds the indices (in MustReachReport.Runs) of the runs that
	// do not meet it, in run order.
	Failing []int
}

// Pass reports whether enough runs met the rule.
func (r *MustReachRule) Pass() bool { return r.Met >= r.Need }

// MustReachReport is what JudgeMustReach found. Its methods only read it.
type MustReachReport struct {
	Strategy string
	Baseline Baseline
	Runs     []MustReachRun
	Rules    []MustReachRule
	Wall     time.Duration
}

// Pass reports whether every rule passed.
func (r *MustReachReport) Pass() bool {
	for i := range r.Rules {
		if !r.Rules[i].Pass() {
			return false
		}
	}
	return true
}

// The must-reach rules' names.
const (
	RuleNeverWorse = "never worse: failed <= 1.05 x baseline + 5 and p99 <= 1.05 x baseline, every run"
	RuleHealthy    = "healthy (no fault, utilization <= 95%): 0 failed and p99 <= 1.05 x v5's"
	RuleBetter     = "20% better (failed < 0.8 x or p99 < 0.8 x baseline, not worse) on half the faulty runs"
)

// JudgeMustReachRuns applies the must-reach rules to runs whose figures
// are known: never worse than the baseline by DefaultRule's worse bounds on
// any run; on every healthy run no failed send and a p99 at most 5% above
// v5's; and better by DefaultRule (20% fewer failed sends or a 20% lower
// p99, and not worse) on at least half the runs with a fault. A rule with
// no run to judge passes. It is what JudgeMustReach returns in Rules.
func JudgeMustReachRuns(runs []MustReachRun) []MustReachRule {
	never := MustReachRule{Name: RuleNeverWorse}
	healthy := MustReachRule{Name: RuleHealthy}
	better := MustReachRule{Name: RuleBetter}
	for i := range runs {
		r := &runs[i]
		j := DefaultRule.Judge(r.Got, r.Base)
		never.Judged++
		if j.FailedWorse || j.P99Worse {
			never.Failing = append(never.Failing, i)
		} else {
			never.Met++
		}
		if r.Healthy() {
			healthy.Judged++
			if r.Got.Failed != 0 || float64(r.Got.P99) > 1.05*float64(r.V5.P99) {
				healthy.Failing = append(healthy.Failing, i)
			} else {
				healthy.Met++
			}
		}
		if r.Faulty {
			better.Judged++
			if j.Verdict() == Better {
				better.Met++
			} else {
				better.Failing = append(better.Failing, i)
			}
		}
	}
	never.Need, healthy.Need = never.Judged, healthy.Judged
	better.Need = (better.Judged + 1) / 2
	return []MustReachRule{never, healthy, better}
}

// MustReachConfig says how JudgeMustReach runs.
type MustReachConfig struct {
	// Workers bounds the scenarios run at once (0: GOMAXPROCS).
	Workers int
	// Progress, as FamilyConfig's.
	Progress func(done, total int)
}

// JudgeMustReach runs strategy s, v5 and v5+detector on every run of the
// suite and judges s by the must-reach rules (JudgeMustReachRuns) against
// the better of v5 and v5+detector, column by column. s may be v5 or
// v5+detector itself. It blocks until every run has ended (on
// cfg.Workers goroutines) and returns when every goroutine it started has
// ended; cancelling ctx ends it early with ctx's error. It only reads the
// suite, so calls may share one.
func JudgeMustReach(ctx context.Context, suite *MustReachSuite, s Strategy, cfg MustReachConfig) (*MustReachReport, error) {
	if suite == nil || len(suite.Scenarios) != len(suite.Sources) {
		return nil, errors.New("sim: must-reach: no suite, or its scenarios and sources differ in number")
	}
	strategies, err := SelectStrategies(DefaultBaseline...)
	if err != nil {
		return nil, err
	}
	got := slices.IndexFunc(strategies, func(b Strategy) bool { return b.Name == s.Name })
	if got < 0 {
		strategies = append(strategies, s)
		got = len(strategies) - 1
	}
	j, err := newPanel(strategies, nil, DefaultRule)
	if err != nil {
		return nil, err
	}
	v5 := slices.IndexFunc(strategies, func(b Strategy) bool { return b.Name == "v5" })
	began := time.Now()
	type pending struct {
		name, drawn string
		sc          *Scenario
		util        float64
		trial       Trial
	}
	var runs []*pending
	for _, sf := range suite.Families {
		if err := sf.Family.Validate(); err != nil {
			return nil, err
		}
		for _, seed := range sf.Seeds {
			for i := 1; i <= sf.Runs; i++ {
				d, err := sf.Family.draw(seed, i)
				if err != nil {
					return nil, err
				}
				runs = append(runs, &pending{name: fmt.Sprintf("%s (family seed %d)", d.Scenario.Name, seed),
					drawn: d.String(), sc: d.Scenario, util: d.Utilization})
			}
		}
	}
	for k, sc := range suite.Scenarios {
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("sim: must-reach scenario %s: %w", suite.Sources[k], err)
		}
		for _, seed := range suite.Seeds {
			c := *sc
			c.Seed = seed
			runs = append(runs, &pending{name: fmt.Sprintf("%s seed %d", sc.Name, seed), drawn: describe(&c), sc: &c, util: utilization(&c)})
		}
	}
	jobs := make([]trialJob, len(runs))
	for k, p := range runs {
		jobs[k] = trialJob{sc: p.sc, out: &p.trial}
	}
	if err := j.run(ctx, jobs, cfg.Workers, cfg.Progress); err != nil {
		return nil, err
	}
	rep := &MustReachReport{Strategy: s.Name, Baseline: j.baseline, Runs: make([]MustReachRun, len(runs))}
	for k, p := range runs {
		rep.Runs[k] = MustReachRun{Name: p.name, Drawn: p.drawn, Faulty: len(p.sc.Events) > 0, Utilization: p.util,
			Got: p.trial.Results[got].Score(), Base: p.trial.Baseline, V5: p.trial.Results[v5].Score()}
	}
	rep.Rules = JudgeMustReachRuns(rep.Runs)
	rep.Wall = time.Since(began)
	return rep, nil
}

// utilization is a scenario's offered rate over its brokers' capacity, 0
// when a broker has none (it takes any load).
func utilization(sc *Scenario) float64 {
	total := 0.0
	for _, b := range sc.Brokers {
		if b.Capacity <= 0 {
			return 0
		}
		total += b.Capacity
	}
	return sc.Rate / total
}

// describe says in a few words what a scenario file holds, as Drawn.String
// does for a drawn one.
func describe(sc *Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d brokers, ", len(sc.Brokers))
	if sc.open() {
		b.WriteString("open")
	} else {
		fmt.Fprintf(&b, "closed %d senders", sc.Senders)
	}
	if sc.Producers > 1 {
		fmt.Fprintf(&b, ", %d producers", sc.Producers)
	}
	fmt.Fprintf(&b, ", %g/s", sc.Rate)
	if u := utilization(sc); u > 0 {
		fmt.Fprintf(&b, " = %.0f%%", 100*u)
	}
	fmt.Fprintf(&b, ", %s", sc.Duration)
	writeFaults(&b, sc.Events, true)
	return b.String()
}

// writeFaults ends a scenario's description with its faults: ": no fault",
// or ":" and each event's state (after its broker with named), with its
// forced probe answer ("/probe unreachable") when it has one.
func writeFaults(b *strings.Builder, events []Event, named bool) {
	if len(events) == 0 {
		b.WriteString(": no fault")
		return
	}
	b.WriteString(":")
	for i, e := range events {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		if named {
			b.WriteString(e.Broker + " ")
		}
		b.WriteString(string(e.State))
		if e.Probe != ProbeAuto {
			b.WriteString("/probe " + string(e.Probe))
		}
	}
}

// WriteText writes the report: a line per rule (runs judged, met, needed,
// pass or FAIL), then a table of every run that failed a rule, named, with
// its figures and what it is.
func (r *MustReachReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "must-reach: %s against %s; %d runs in %s\n\n", r.Strategy, r.Baseline, len(r.Runs), r.Wall.Round(time.Millisecond))
	fmt.Fprintln(tw, "  rule\truns\tmet\tneed\tverdict")
	for i := range r.Rules {
		ru := &r.Rules[i]
		verdict := "pass"
		if !ru.Pass() {
			verdict = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\n", ru.Name, ru.Judged, ru.Met, ru.Need, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i := range r.Rules {
		ru := &r.Rules[i]
		if len(ru.Failing) == 0 || (ru.Name == RuleBetter && ru.Pass()) {
			continue
		}
		what := "failing"
		if ru.Name == RuleBetter {
			what = "not better"
		}
		fmt.Fprintf(w, "\n%s: %s (failed / p99 ms)\n", what, ru.Name)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  run\tbaseline\tv5\t%s\tdrawn\n", r.Strategy)
		for _, k := range ru.Failing {
			run := &r.Runs[k]
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", run.Name, scoreCell(run.Base), scoreCell(run.V5), scoreCell(run.Got), run.Drawn)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", map[bool]string{true: "reached", false: "not reached"}[r.Pass()])
	return err
}
