package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/mqfault/mqfault/pkg/sim"
)

const simUsage = "usage: mqfault sim [--scenario FILE] [--seed N] [--strategies A,B] [--json] [--report FILE.html] [--print-scenario]"

// runSim is `mqfault sim`: it runs every strategy on a scenario (the
// embedded default, or --scenario FILE) and prints a table, or JSON.
func runSim(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarioFile := fs.String("scenario", "", "YAML scenario `FILE` (default: the embedded scenario; see --print-scenario)")
	seed := fs.Uint64("seed", 0, "random seed `N`, instead of the scenario's")
	asJSON := fs.Bool("json", false, "print the results as JSON instead of a table")
	reportFile := fs.String("report", "", "also write an HTML report with charts to `FILE.html`")
	strategies := fs.String("strategies", "", "comma-separated `NAMES` of the strategies to run (default: all)")
	printScenario := fs.Bool("print-scenario", false, "print the default scenario's YAML and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, simUsage)
		fmt.Fprintf(stderr, "\nRuns the strategies %s on one scenario, same seed, in virtual time,\n"+
			"and prints one row per strategy.\n\n", strings.Join(sim.StrategyNames(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "mqfault sim: unexpected argument %q\n%s\n", fs.Arg(0), simUsage)
		return exitUsage
	}
	if *printScenario {
		if _, err := stdout.Write(sim.DefaultYAML()); err != nil {
			fmt.Fprintf(stderr, "mqfault sim: %v\n", err)
			return 1
		}
		return 0
	}

	sc := sim.DefaultScenario()
	if *scenarioFile != "" {
		var err error
		if sc, err = sim.LoadFile(*scenarioFile); err != nil {
			printScenarioError(stderr, *scenarioFile, err)
			return exitUsage
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			sc.Seed = *seed
		}
	})

	// Open the report first: a path that cannot be written is a bad
	// argument, found before the run rather than after it.
	var report *os.File
	if *reportFile != "" {
		var err error
		if report, err = os.Create(*reportFile); err != nil {
			fmt.Fprintf(stderr, "mqfault sim: --report: %v\n", err)
			return exitUsage
		}
		defer report.Close()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var opts []sim.Option
	if *strategies != "" {
		strats, err := sim.SelectStrategies(strings.Split(*strategies, ",")...)
		if err != nil {
			fmt.Fprintf(stderr, "mqfault sim: --strategies: %v\n", err)
			return exitUsage
		}
		opts = append(opts, sim.WithStrategies(strats...))
	}
	bar := newProgressBar(stderr)
	if bar != nil {
		opts = append(opts, sim.WithProgress(bar.set))
	}
	rep, err := sim.Run(ctx, sc, opts...)
	if bar != nil {
		bar.clear()
	}
	if err != nil {
		fmt.Fprintf(stderr, "mqfault sim: %v\n", err)
		if errors.Is(err, sim.ErrInvalidScenario) {
			return exitUsage
		}
		return 1
	}

	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mqfault sim: %v\n", err)
		return 1
	}
	if report != nil {
		if err := writeReport(report, rep); err != nil {
			fmt.Fprintf(stderr, "mqfault sim: writing %s: %v\n", *reportFile, err)
			return 1
		}
	}
	if !*asJSON {
		sends := rep.SimulatedSends()
		secs := rep.Wall.Seconds()
		fmt.Fprintf(stderr, "simulated %d sends in %s (%.0f sends/s)", sends, rep.Wall.Round(time.Millisecond), float64(sends)/max(secs, 1e-9))
		if *reportFile != "" {
			fmt.Fprintf(stderr, "; report: %s", *reportFile)
		}
		fmt.Fprintln(stderr)
	}
	return 0
}

// printScenarioError prints a scenario error, one problem per line.
func printScenarioError(w io.Writer, file string, err error) {
	if !errors.Is(err, sim.ErrInvalidScenario) {
		fmt.Fprintf(w, "mqfault sim: %v\n", err)
		return
	}
	fmt.Fprintf(w, "mqfault sim: %s is not a valid scenario:\n", file)
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// writeReport writes rep's HTML page to f and closes it.
func writeReport(f *os.File, rep *sim.Report) error {
	w := bufio.NewWriter(f)
	if err := rep.WriteHTML(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// progressBar draws the simulation's progress on a terminal.
type progressBar struct {
	w     io.Writer
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
	return &progressBar{w: w}
}

const barWidth = 40

// set draws done (in [0, 1]) at most ten times a second. It is safe for
// concurrent use.
func (b *progressBar) set(done float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if now.Sub(b.last) < 100*time.Millisecond && done < 1 {
		return
	}
	b.last = now
	n := int(min(max(done, 0), 1) * barWidth)
	fmt.Fprintf(b.w, "\rsimulating [%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), 100*min(done, 1))
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
