package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/sim"
	"github.com/mqfault/mqfault/pkg/sim/report"
)

func simCommand() *command {
	return &command{
		name:    "sim",
		summary: "compare fault-tolerance strategies on simulated broker faults",
		details: fmt.Sprintf(`Runs the strategies %s
on one scenario, same seed, in virtual time, and prints one row per strategy
(or JSON). The scenario is the embedded
default, a YAML file, or standard input (--scenario -). On a terminal a
progress bar is drawn on standard error.

--family FILE draws --runs scenarios from a scenario family (YAML:
distributions of brokers, latency, capacity, flow control, load and
faults; pkg/sim/README.md) at --family-seed, runs the strategies on each
and prints a line per run and, per strategy, the runs worse, better and
neutral against the baseline (--baseline, by default the better of v5 and
v5+detector in each column). --keep writes the worse runs as scenarios.
--seeds 1-5 runs the scenario (or each run of the family) at each seed:
per strategy the median and range of each column, and the verdict
counted per seed.

--must-reach DIR judges one strategy (--strategies NAME or --config FILE;
default mqfault) by issue 24's must-reach rules against the better of v5
and v5+detector in each column: DIR/families/healthy.yaml and broad.yaml
at fixed family seeds, every DIR/scenarios/*.yaml and the default scenario
at seeds 1-5. It prints each rule's runs, met and needed, and names every
run that fails a rule; the exit status is 1 when a rule fails.

--ablation adds, after mqfault, the preset with each of its policies past
the reference switched off in turn (a row equal to mqfault's in every
number is folded into a note); --strategies takes these names too:
%s.

--config FILE adds your own configuration as the last row, named after the
file (--config mine.yaml: a row "mine"): the YAML or JSON file of
pkg/config with the MQFAULT_ variables over it, as config.Load reads it
for a producer. The scenario's send_timeout replaces its timeout.`, strings.Join(sim.StrategyNames(), ", "), wrapList(sim.AblationNames(), 76)),
		setup: func(fs *flag.FlagSet) func(context.Context, streams, []string) error {
			var o simOptions
			fs.StringVar(&o.scenario, "scenario", "", "YAML scenario `FILE`, or - for standard input (default: the embedded scenario)")
			fs.Uint64Var(&o.seed, "seed", 0, "random seed `N`, instead of the scenario's")
			fs.BoolVar(&o.json, "json", false, "print the results as JSON instead of a table")
			fs.StringVar(&o.report, "report", "", "also write an HTML report with charts to `FILE.html`")
			fs.StringVar(&o.strategies, "strategies", "", "comma-separated `NAMES` of the strategies to run, ablations' too (default: "+strings.Join(sim.StrategyNames(), ", ")+")")
			fs.BoolVar(&o.ablation, "ablation", false, "also run the mqfault preset with each of its policies switched off in turn, after mqfault")
			fs.StringVar(&o.config, "config", "", "also run your mqfault configuration `FILE` (YAML or JSON, the MQFAULT_ variables over it), a row named after the file")
			fs.BoolVar(&o.printScenario, "print-scenario", false, "print the scenario's YAML (--scenario's, else the embedded one) and exit")
			fs.StringVar(&o.family, "family", "", "YAML scenario family `FILE` (or - for standard input): draw --runs scenarios from it and judge every strategy on each")
			fs.IntVar(&o.runs, "runs", 20, "with --family: the `N` scenarios to draw")
			fs.Uint64Var(&o.familySeed, "family-seed", 1, "with --family: the family seed `S` (run i's scenario depends only on the family, S and i)")
			fs.StringVar(&o.baseline, "baseline", "", "with --family: judge every strategy against strategy `NAME` (default: the better of v5 and v5+detector in each column)")
			fs.StringVar(&o.seeds, "seeds", "", "run the scenario (or each run of --family) at each of these seeds, a `LIST` such as 1-5 or 1,3,7: per strategy the median and range of each column, and the verdict counted per seed")
			fs.StringVar(&o.mustReach, "must-reach", "", "judge one strategy (--strategies NAME or --config FILE; default mqfault) by the must-reach rules on `DIR`'s families/healthy.yaml, families/broad.yaml and scenarios/*.yaml, and the default scenario")
			fs.StringVar(&o.keep, "keep", "", "with --family: write each run in which a strategy was worse than the baseline to `DIR` as a scenario file that replays it")
			return func(ctx context.Context, io streams, args []string) error {
				fs.Visit(func(f *flag.Flag) { o.set = append(o.set, f.Name) })
				return runSim(ctx, io, o, args)
			}
		},
	}
}

// wrapList joins names with ", ", breaking lines before width columns.
func wrapList(names []string, width int) string {
	var b strings.Builder
	col := 0
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
			col++
			if col+1+len(n)+1 > width {
				b.WriteByte('\n')
				col = 0
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(n)
		col += len(n)
	}
	return b.String()
}

type simOptions struct {
	scenario, report, strategies  string
	seed                          uint64
	json, printScenario, ablation bool
	family, baseline, keep, seeds string
	config, mustReach             string
	runs                          int
	familySeed                    uint64
	set                           []string // the flags given
}

func (o simOptions) given(name string) bool {
	for _, n := range o.set {
		if n == name {
			return true
		}
	}
	return false
}

// runSim is `mqfault sim`.
func runSim(ctx context.Context, io streams, o simOptions, args []string) error {
	if len(args) != 0 {
		return usageErrorf("unexpected argument %q (a scenario file is given with --scenario)", args[0])
	}
	if o.printScenario {
		for _, n := range []string{"seed", "json", "report", "strategies", "ablation", "config"} {
			if o.given(n) {
				return usageErrorf("--print-scenario prints the scenario as written and exits: --%s does not apply", n)
			}
		}
	}
	if o.mustReach != "" {
		for _, n := range []string{"scenario", "seed", "print-scenario", "family", "runs", "family-seed", "baseline", "seeds", "keep", "report", "json", "ablation"} {
			if o.given(n) {
				return usageErrorf("--%s does not apply to --must-reach (its runs, seeds and baseline are fixed)", n)
			}
		}
		return runMustReach(ctx, io, o)
	}
	if o.family != "" {
		for _, n := range []string{"scenario", "seed", "print-scenario"} {
			if o.given(n) {
				return usageErrorf("--%s does not apply to --family (a family draws its scenarios and their seeds; --family-seed sets the family's)", n)
			}
		}
	} else {
		for _, n := range []string{"runs", "family-seed", "keep"} {
			if o.given(n) {
				return usageErrorf("--%s applies to --family only", n)
			}
		}
		if o.given("baseline") && !o.given("seeds") {
			return usageErrorf("--baseline applies to --family or --seeds only")
		}
	}
	var seeds []uint64
	if o.given("seeds") {
		for _, n := range []string{"seed", "print-scenario"} {
			if o.given(n) {
				return usageErrorf("--%s does not apply with --seeds", n)
			}
		}
		if o.family == "" && o.report != "" {
			return usageErrorf("--report draws one run of a scenario: give --seed, not --seeds (a family's report covers its seeds)")
		}
		var err error
		if seeds, err = sim.ParseSeeds(o.seeds); err != nil {
			return usageErrorf("--seeds: %w", err)
		}
	}
	var strats []sim.Strategy
	if o.given("strategies") {
		var err error
		if strats, err = sim.SelectStrategies(strings.Split(o.strategies, ",")...); err != nil {
			return usageErrorf("--strategies: %w", err)
		}
	}
	if o.ablation {
		if strats == nil {
			strats = sim.Strategies()
		}
		var err error
		if strats, err = sim.InsertAblations(strats); err != nil {
			return usageErrorf("--ablation: %w (add it to --strategies)", err)
		}
	}

	if o.config != "" {
		mine, err := configStrategy(o.config)
		if err != nil {
			return err
		}
		if strats == nil {
			strats = sim.Strategies()
		}
		strats = append(strats, mine)
	}

	var baseline sim.Baseline
	if o.family != "" || seeds != nil {
		if strats == nil {
			strats = sim.Strategies()
		}
		baseline = sim.Baseline(sim.DefaultBaseline)
		if o.baseline != "" {
			baseline = sim.Baseline{o.baseline}
		}
		for _, name := range baseline {
			if !slices.ContainsFunc(strats, func(s sim.Strategy) bool { return s.Name == name }) {
				return usageErrorf("--baseline: %s is not among the strategies to run (add it to --strategies, or name another with --baseline)", name)
			}
		}
	}
	if o.family != "" {
		return runFamily(ctx, io, o, strats, baseline, seeds)
	}

	text, source := sim.DefaultYAML(), "the embedded scenario"
	if o.scenario != "" {
		var err error
		if text, source, err = readScenario(io.stdin, o.scenario); err != nil {
			return badInput(err)
		}
	}
	sc, err := sim.Parse(text)
	if err != nil {
		return badInput(scenarioError(source, err))
	}
	if o.printScenario {
		_, err := io.stdout.Write(text)
		return err
	}
	if o.given("seed") {
		sc.Seed = o.seed
	}
	if seeds != nil {
		return runSeeds(ctx, io, sc, source, strats, baseline, seeds, o.json)
	}

	// Open the report first: a path that cannot be written is a bad
	// argument, found before the run rather than after it.
	page, err := openReport(o.report)
	if err != nil {
		return err
	}
	defer page.discard()

	var opts []sim.Option
	if strats != nil {
		opts = append(opts, sim.WithStrategies(strats...))
	}
	bar := newProgressBar(io.stderr)
	if bar != nil {
		bar.set(0) // at once: building a large scenario's engines takes a moment
		opts = append(opts, sim.WithProgress(bar.set))
	}
	rep, err := sim.Run(ctx, sc, opts...)
	if bar != nil {
		bar.clear()
	}
	if err != nil {
		if errors.Is(err, sim.ErrInvalidScenario) {
			return badInput(scenarioError(source, err))
		}
		return err
	}

	if o.json {
		err = rep.WriteJSON(io.stdout)
	} else {
		err = rep.WriteTable(io.stdout)
	}
	if err != nil {
		return err
	}
	if err := page.write(func(w *bufio.Writer) error { return report.WriteHTML(w, rep) }); err != nil {
		return err
	}
	if !o.json {
		sends := rep.SimulatedSends()
		secs := rep.Wall.Seconds()
		fmt.Fprintf(io.stderr, "simulated %d sends in %s (%.0f sends/s)", sends, rep.Wall.Round(time.Millisecond), float64(sends)/max(secs, 1e-9))
		if o.report != "" {
			fmt.Fprintf(io.stderr, "; report: %s", o.report)
		}
		fmt.Fprintln(io.stderr)
	}
	return nil
}

// configStrategy loads the configuration of --config (the file, the
// MQFAULT_ variables over it) as a strategy named after the file: its base
// name without the extension.
func configStrategy(path string) (sim.Strategy, error) {
	cfg, err := config.LoadEnv(path, os.Environ())
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) || !errors.Is(err, config.ErrInvalid) {
			return sim.Strategy{}, badInput(err) // an unreadable file: "config: PATH: cannot read ..."
		}
		var b strings.Builder
		fmt.Fprintf(&b, "--config %s is not a valid mqfault configuration:", path)
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(&b, "\n  %s", line)
		}
		return sim.Strategy{}, badInput(&scenarioErr{msg: b.String(), err: err})
	}
	base := filepath.Base(path)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	mine, err := sim.CustomStrategy(name, "your configuration: "+path+", the MQFAULT_ variables over it", cfg.Strategy, cfg.Producer)
	switch {
	case errors.Is(err, sim.ErrReservedName):
		return sim.Strategy{}, badInput(fmt.Errorf("--config %s: the row would be named %q, the name of a built-in strategy or ablation: rename the file", path, name))
	case err != nil:
		return sim.Strategy{}, badInput(fmt.Errorf("--config %s: the row is named after the file: %w", path, err))
	}
	return mine, nil
}

// readScenario reads the scenario named by --scenario: a file, or standard
// input for "-". It returns the text and how to name its source in errors.
func readScenario(stdin io.Reader, name string) ([]byte, string, error) {
	in, source := stdin, "standard input"
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		in, source = f, name
	}
	if in == nil {
		in = strings.NewReader("")
	}
	text, err := io.ReadAll(io.LimitReader(in, sim.MaxScenarioBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", source, err)
	}
	return text, source, nil
}

// scenarioError says which scenario is invalid, one problem per line.
func scenarioError(source string, err error) error {
	if !errors.Is(err, sim.ErrInvalidScenario) {
		return err
	}
	return &scenarioErr{msg: problemLines(source+" is not a valid scenario:", source, err), err: err}
}

// problemLines writes head, then each of err's problems ("line N: ..." or
// "...", one per line) on a line of its own as "  SOURCE:N: ..." or
// "  SOURCE: ...", the form compilers and editors read. SOURCE is a file's
// path, or "standard input".
func problemLines(head, source string, err error) string {
	var b strings.Builder
	b.WriteString(head)
	for _, line := range strings.Split(err.Error(), "\n") {
		if rest, ok := strings.CutPrefix(line, "line "); ok {
			if n, msg, ok := strings.Cut(rest, ": "); ok && n != "" && strings.Trim(n, "0123456789") == "" {
				fmt.Fprintf(&b, "\n  %s:%s: %s", source, n, msg)
				continue
			}
		}
		fmt.Fprintf(&b, "\n  %s: %s", source, line)
	}
	return b.String()
}

type scenarioErr struct {
	msg string
	err error
}

func (e *scenarioErr) Error() string { return e.msg }
func (e *scenarioErr) Unwrap() error { return e.err }

// reportFile is the --report page, opened before the run.
type reportFile struct {
	path string
	f    *os.File // nil: no page asked for, or written
}

// openReport creates the page at path ("": none) before the run. A path
// that cannot be written is output that cannot be written: a failure (exit
// 1), as an unwritable standard output is.
func openReport(path string) (*reportFile, error) {
	r := &reportFile{path: path}
	if path == "" {
		return r, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--report: %w", err)
	}
	r.f = f
	return r, nil
}

// write writes the page with draw and closes it; nothing without a page.
func (r *reportFile) write(draw func(*bufio.Writer) error) error {
	if r.f == nil {
		return nil
	}
	w := bufio.NewWriter(r.f)
	err := draw(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", r.path, err)
	}
	r.f = nil
	return nil
}

// discard removes a page not written, so no empty page is left behind.
func (r *reportFile) discard() {
	if r.f != nil {
		r.f.Close()
		os.Remove(r.path)
		r.f = nil
	}
}

// runFamily is `mqfault sim --family`.
func runFamily(ctx context.Context, io streams, o simOptions, strats []sim.Strategy, baseline sim.Baseline, seeds []uint64) error {
	if o.runs < 1 || o.runs > sim.MaxFamilyRuns {
		return usageErrorf("--runs %d: want 1 to %d", o.runs, sim.MaxFamilyRuns)
	}
	if o.runs*max(len(seeds), 1) > sim.MaxFamilyRuns {
		return usageErrorf("--runs %d at %d seeds: at most %d runs in all", o.runs, len(seeds), sim.MaxFamilyRuns)
	}
	text, source, err := readScenario(io.stdin, o.family)
	if err != nil {
		return badInput(err)
	}
	fam, err := sim.ParseFamily(text)
	if err != nil {
		return badInput(familyError(source, err))
	}
	page, err := openReport(o.report)
	if err != nil {
		return err
	}
	defer page.discard()

	cfg := sim.FamilyConfig{Family: fam, Runs: o.runs, Seed: o.familySeed, Seeds: seeds, Strategies: strats, Baseline: baseline}
	bar := newProgressBar(io.stderr)
	if bar != nil {
		bar.set(0)
		cfg.Progress = func(done, total int) { bar.set(float64(done) / float64(total)) }
	}
	rep, err := sim.RunFamily(ctx, cfg)
	if bar != nil {
		bar.clear()
	}
	if err != nil {
		return err
	}
	if o.json {
		err = rep.WriteJSON(io.stdout)
	} else {
		err = rep.WriteTable(io.stdout)
	}
	if err != nil {
		return err
	}
	if err := page.write(func(w *bufio.Writer) error { return report.WriteFamilyHTML(w, rep) }); err != nil {
		return err
	}
	var kept []string
	if o.keep != "" {
		if kept, err = rep.Keep(o.keep); err != nil {
			return fmt.Errorf("--keep: %w", err)
		}
	}
	if !o.json {
		sends := rep.SimulatedSends()
		fmt.Fprintf(io.stderr, "simulated %d sends in %s (%.0f sends/s)", sends, rep.Wall.Round(time.Millisecond), float64(sends)/max(rep.Wall.Seconds(), 1e-9))
		if o.report != "" {
			fmt.Fprintf(io.stderr, "; report: %s", o.report)
		}
		if o.keep != "" {
			fmt.Fprintf(io.stderr, "; kept %d runs in %s", len(kept), o.keep)
		}
		fmt.Fprintln(io.stderr)
	}
	return nil
}

// runMustReach is `mqfault sim --must-reach DIR`.
func runMustReach(ctx context.Context, io streams, o simOptions) error {
	var judged sim.Strategy
	switch {
	case o.strategies != "" && o.config != "":
		return usageErrorf("--must-reach judges one strategy: give --strategies NAME or --config FILE, not both")
	case o.config != "":
		var err error
		if judged, err = configStrategy(o.config); err != nil {
			return err
		}
	default:
		name := "mqfault"
		if o.strategies != "" {
			name = o.strategies
		}
		strats, err := sim.SelectStrategies(strings.Split(name, ",")...)
		if err != nil {
			return usageErrorf("--strategies: %w", err)
		}
		if len(strats) != 1 {
			return usageErrorf("--must-reach judges one strategy: --strategies names %d", len(strats))
		}
		judged = strats[0]
	}
	suite, err := sim.LoadMustReachSuite(o.mustReach)
	if err != nil {
		return badInput(fmt.Errorf("--must-reach: %w", err))
	}
	var cfg sim.MustReachConfig
	bar := newProgressBar(io.stderr)
	if bar != nil {
		bar.set(0)
		cfg.Progress = func(done, total int) { bar.set(float64(done) / float64(total)) }
	}
	rep, err := sim.JudgeMustReach(ctx, suite, judged, cfg)
	if bar != nil {
		bar.clear()
	}
	if err != nil {
		return err
	}
	if err := rep.WriteText(io.stdout); err != nil {
		return err
	}
	if !rep.Pass() {
		return &exitError{code: exitFailure}
	}
	return nil
}

// runSeeds is `mqfault sim --seeds` on a scenario.
func runSeeds(ctx context.Context, io streams, sc *sim.Scenario, source string, strats []sim.Strategy, baseline sim.Baseline, seeds []uint64, asJSON bool) error {
	cfg := sim.SeedsConfig{Seeds: seeds, Strategies: strats, Baseline: baseline}
	bar := newProgressBar(io.stderr)
	if bar != nil {
		bar.set(0)
		cfg.Progress = func(done, total int) { bar.set(float64(done) / float64(total)) }
	}
	rep, err := sim.RunSeeds(ctx, sc, cfg)
	if bar != nil {
		bar.clear()
	}
	if err != nil {
		if errors.Is(err, sim.ErrInvalidScenario) {
			return badInput(scenarioError(source, err))
		}
		return err
	}
	if asJSON {
		return rep.WriteJSON(io.stdout)
	}
	if err := rep.WriteTable(io.stdout); err != nil {
		return err
	}
	sends := rep.SimulatedSends()
	fmt.Fprintf(io.stderr, "simulated %d sends in %s (%.0f sends/s)\n", sends, rep.Wall.Round(time.Millisecond), float64(sends)/max(rep.Wall.Seconds(), 1e-9))
	return nil
}

// familyError says which family is invalid, one problem per line.
func familyError(source string, err error) error {
	if !errors.Is(err, sim.ErrInvalidFamily) {
		return err
	}
	return &scenarioErr{msg: problemLines(source+" is not a valid scenario family:", source, err), err: err}
}

// progressBar draws the simulation's progress on a terminal.
type progressBar struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex // guards last and shown
	last  time.Time
	shown bool
}

// newProgressBar returns a bar drawing on w when w is a terminal, else nil.
func newProgressBar(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progressBar{w: w, start: time.Now()}
}

const barWidth = 40

// set draws done (in [0, 1]) at most ten times a second. It is safe for
// concurrent use.
func (b *progressBar) set(done float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.shown && now.Sub(b.last) < 100*time.Millisecond && done < 1 {
		return
	}
	b.last = now
	done = min(max(done, 0), 1)
	n := int(done * barWidth)
	fmt.Fprintf(b.w, "\rsimulating [%s%s] %5.1f%% %6s", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), 100*done,
		now.Sub(b.start).Round(time.Second))
	b.shown = true
}

// clear erases the bar.
func (b *progressBar) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", barWidth+20))
	}
}
