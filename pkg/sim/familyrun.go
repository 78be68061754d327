package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// FamilyConfig says what RunFamily runs.
type FamilyConfig struct {
	// Family is drawn from; Runs scenarios (1 to MaxFamilyRuns) at family
	// seed Seed.
	Family *Family
	Runs   int
	Seed   uint64
	// Seeds, when not empty, runs each drawn scenario at each of these
	// seeds instead of its drawn one: a Trial per seed.
	Seeds []uint64
	// Strategies are the contenders (nil: Strategies()).
	Strategies []Strategy
	// Baseline names what each strategy is judged against (nil:
	// DefaultBaseline); every name must be among the strategies.
	Baseline Baseline
	// Rule judges (the zero Rule: DefaultRule).
	Rule Rule
	// Workers bounds the scenarios run at once (0: GOMAXPROCS). Each runs
	// its strategies concurrently, as Run does.
	Workers int
	// Progress, when set, is called after each run with the runs done and
	// their total, one call at a time, from the goroutines running them;
	// it must return quickly.
	Progress func(done, total int)
}

// FamilyReport is what RunFamily found: every run in order, and what
// judged them.
type FamilyReport struct {
	Family     *Family
	Seed       uint64
	Seeds      []uint64 // FamilyConfig.Seeds: empty when each run ran at its drawn seed
	Strategies []string // the strategies' names, in the order of every Trial's Results
	Baseline   Baseline
	Rule       Rule
	Runs       []FamilyRun
	// Wall is the real time the whole family took.
	Wall time.Duration
}

// FamilyRun is one run of a family: what was drawn, and its trials.
type FamilyRun struct {
	*Drawn
	// Trials holds the scenario's run at its drawn seed, or at each seed
	// of FamilyConfig.Seeds, in their order.
	Trials []Trial
}

// Trial is one run of a scenario at one seed, judged.
type Trial struct {
	Seed uint64
	// Results holds each strategy's result, in the report's order, without
	// its Series and Timeline, and Wall zero: the numbers only.
	Results []Result
	// Baseline is the baseline's score in this trial.
	Baseline Score
	// Verdicts holds each strategy's verdict against Baseline.
	Verdicts []Verdict
}

// Tally counts one strategy's verdicts.
type Tally struct {
	Name                   string
	Worse, Better, Neutral int
}

// RunFamily draws cfg.Runs scenarios of cfg.Family at cfg.Seed, runs every
// strategy on each, and judges each strategy against the baseline. The
// scenarios run on cfg.Workers goroutines at a time; the report is the same
// for one family and seed whatever the scheduling. It returns when every
// goroutine it started has ended; cancelling ctx ends it early with ctx's
// error.
func RunFamily(ctx context.Context, cfg FamilyConfig) (*FamilyReport, error) {
	if cfg.Family == nil {
		return nil, &FamilyError{Err: &FieldError{Msg: "no family"}}
	}
	if err := cfg.Family.Validate(); err != nil {
		return nil, err
	}
	if cfg.Runs < 1 || cfg.Runs > MaxFamilyRuns {
		return nil, fmt.Errorf("sim: %d runs: want 1 to %d", cfg.Runs, MaxFamilyRuns)
	}
	if len(cfg.Seeds) > MaxSeeds || cfg.Runs*max(len(cfg.Seeds), 1) > MaxFamilyRuns {
		return nil, fmt.Errorf("sim: %d runs at %d seeds: want at most %d runs in all", cfg.Runs, len(cfg.Seeds), MaxFamilyRuns)
	}
	j, err := newPanel(cfg.Strategies, cfg.Baseline, cfg.Rule)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	rep := &FamilyReport{Family: cfg.Family, Seed: cfg.Seed, Seeds: slices.Clone(cfg.Seeds), Strategies: j.names(),
		Baseline: j.baseline, Rule: j.rule, Runs: make([]FamilyRun, cfg.Runs)}
	var jobs []trialJob
	for i := range rep.Runs {
		d, err := cfg.Family.draw(cfg.Seed, i+1)
		if err != nil {
			return nil, err
		}
		if len(cfg.Seeds) == 0 {
			rep.Runs[i] = FamilyRun{Drawn: d, Trials: make([]Trial, 1)}
			jobs = append(jobs, trialJob{sc: d.Scenario, out: &rep.Runs[i].Trials[0]})
			continue
		}
		rep.Runs[i] = FamilyRun{Drawn: d, Trials: make([]Trial, len(cfg.Seeds))}
		jobs = append(jobs, seedJobs(d.Scenario, cfg.Seeds, rep.Runs[i].Trials)...)
	}
	if err := j.run(ctx, jobs, cfg.Workers, cfg.Progress); err != nil {
		return nil, err
	}
	rep.Wall = time.Since(began)
	return rep, nil
}

// panel runs scenarios with a set of strategies and judges them.
type panel struct {
	strategies []Strategy
	baseline   Baseline
	base       []int // the baseline's indices in strategies
	rule       Rule
}

func newPanel(strategies []Strategy, baseline Baseline, rule Rule) (*panel, error) {
	if strategies == nil {
		strategies = Strategies()
	}
	if len(strategies) == 0 {
		return nil, errors.New("sim: no strategy to run")
	}
	seen := map[string]bool{}
	for _, s := range strategies {
		if s.Name == "" || seen[s.Name] {
			return nil, fmt.Errorf("sim: strategy name %q is empty or repeated", s.Name)
		}
		seen[s.Name] = true
	}
	if baseline == nil {
		baseline = slices.Clone(Baseline(DefaultBaseline))
	}
	base, err := baseline.indices(strategies)
	if err != nil {
		return nil, err
	}
	if rule == (Rule{}) {
		rule = DefaultRule
	}
	return &panel{strategies: strategies, baseline: baseline, base: base, rule: rule}, nil
}

func (j *panel) names() []string {
	out := make([]string, len(j.strategies))
	for i, s := range j.strategies {
		out[i] = s.Name
	}
	return out
}

// trialJob is one scenario to run (at its own seed) into out.
type trialJob struct {
	sc  *Scenario
	out *Trial
}

// run runs the jobs, at most workers at a time, each filling its Trial.
func (j *panel) run(ctx context.Context, jobs []trialJob, workers int, progress func(done, total int)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	var mu sync.Mutex // serializes progress
	done := 0
	for _, job := range jobs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			rep, err := Run(gctx, job.sc, WithStrategies(j.strategies...))
			if err != nil {
				return fmt.Errorf("%s (seed %d): %w", job.sc.Name, job.sc.Seed, err)
			}
			*job.out = j.trial(rep)
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(jobs))
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// trial judges a run's results, keeping their numbers only.
func (j *panel) trial(rep *Report) Trial {
	t := Trial{Seed: rep.Seed, Results: make([]Result, len(rep.Results)), Verdicts: make([]Verdict, len(rep.Results))}
	for i, r := range rep.Results {
		r.Series, r.Timeline, r.Wall = Series{}, nil, 0
		t.Results[i] = r
	}
	t.Baseline = baselineScore(t.Results, j.base)
	for i := range t.Results {
		t.Verdicts[i] = j.rule.Judge(t.Results[i].Score(), t.Baseline).Verdict()
	}
	return t
}

// Totals counts each strategy's verdicts over every trial of every run.
func (r *FamilyReport) Totals() []Tally {
	out := make([]Tally, len(r.Strategies))
	for i, name := range r.Strategies {
		out[i].Name = name
	}
	for _, run := range r.Runs {
		for _, t := range run.Trials {
			for i, v := range t.Verdicts {
				out[i].add(v)
			}
		}
	}
	return out
}

func (t *Tally) add(v Verdict) {
	switch v {
	case Worse:
		t.Worse++
	case Better:
		t.Better++
	default:
		t.Neutral++
	}
}

// SimulatedSends returns the sends of every strategy of every trial.
func (r *FamilyReport) SimulatedSends() int64 {
	var n int64
	for _, run := range r.Runs {
		for _, t := range run.Trials {
			for _, res := range t.Results {
				n += res.Sends
			}
		}
	}
	return n
}

// Worse returns the names of the strategies the trial judged worse.
func (r *FamilyReport) Worse(t *Trial) []string {
	var out []string
	for i, v := range t.Verdicts {
		if v == Worse {
			out = append(out, r.Strategies[i])
		}
	}
	return out
}

// Keep writes each trial in which some strategy was worse than the
// baseline to dir (created if missing) as a scenario file that replays
// that trial exactly (`mqfault sim --scenario FILE`): NAME.yaml, the drawn
// scenario's name. It returns the paths written, in run order.
func (r *FamilyReport) Keep(dir string) ([]string, error) {
	var paths []string
	for _, run := range r.Runs {
		for _, t := range run.Trials {
			worse := r.Worse(&t)
			if len(worse) == 0 {
				continue
			}
			if len(paths) == 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return nil, err
				}
			}
			sc := *run.Scenario
			sc.Seed = t.Seed
			name := sc.Name
			if len(run.Trials) > 1 {
				name = fmt.Sprintf("%s-seed%d", sc.Name, t.Seed)
			}
			path := filepath.Join(dir, name+".yaml")
			header := fmt.Sprintf("Run %d of family %s at family seed %d, seed %d: %s.\n"+
				"Worse than the baseline (%s): %s.\n"+
				"Replay it: mqfault sim --scenario %s",
				run.Run, r.Family.Name, r.Seed, t.Seed, run.Drawn.String(), r.Baseline, strings.Join(worse, ", "), filepath.Base(path))
			if err := os.WriteFile(path, sc.YAML(header), 0o644); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}
