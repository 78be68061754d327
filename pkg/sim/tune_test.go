package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// tuneVariants are preset variants TestTune can compare with v5, besides
// the built-in strategies and ablations (SelectStrategies names).
var tuneVariants = map[string]func(*Strategy){
	"cap-0.34":    func(s *Strategy) { s.Latency.MaxIsolatedFraction = 0.34 },
	"cap-0.67":    func(s *Strategy) { s.Latency.MaxIsolatedFraction = 0.67 },
	"budget-0.1":  func(s *Strategy) { s.Producer.RetryBudget = 0.1 },
	"busy-load":   func(s *Strategy) { s.Latency.BusyDecay = time.Second },
	"pushback":    func(s *Strategy) { s.Latency.ReleaseOnPushBack = true },
	"no-la-nocap": func(s *Strategy) { s.Latency.LoadAware, s.Latency.MaxIsolatedFraction = false, 0 },
}

// TestTune is a tuning aid, skipped unless MQFAULT_TUNE names the
// strategies to compare with v5 (comma-separated: built-in strategies and
// ablations as SelectStrategies knows them, or keys of tuneVariants). It runs v5 and each variant on the
// default scenario, testdata/scenarios and the files of
// MQFAULT_TUNE_DIR, at the seeds of MQFAULT_TUNE_SEEDS (default 1-4), and
// logs failed sends and p99 with issue 15's verdicts.
func TestTune(t *testing.T) {
	names := os.Getenv("MQFAULT_TUNE")
	if names == "" {
		t.Skip("MQFAULT_TUNE not set")
	}
	var files []string
	for _, d := range []string{scenarioDir, os.Getenv("MQFAULT_TUNE_DIR")} {
		if d == "" {
			continue
		}
		f, _ := filepath.Glob(filepath.Join(d, "*.yaml"))
		files = append(files, f...)
	}
	if only := os.Getenv("MQFAULT_TUNE_ONLY"); only != "" {
		var keep []string
		for _, f := range files {
			for _, o := range strings.Split(only, ",") {
				if strings.Contains(filepath.Base(f), o) {
					keep = append(keep, f)
					break
				}
			}
		}
		files = keep
	}
	seeds := []uint64{1, 2, 3, 4}
	if s := os.Getenv("MQFAULT_TUNE_SEEDS"); s != "" {
		seeds = nil
		for _, x := range strings.Split(s, ",") {
			n, _ := strconv.ParseUint(x, 10, 64)
			seeds = append(seeds, n)
		}
	}
	base, err := SelectStrategies("v5", "mqfault")
	if err != nil {
		t.Fatal(err)
	}
	strategies := []Strategy{base[0]}
	vnames := strings.Split(names, ",")
	for _, n := range vnames {
		if f, ok := tuneVariants[n]; ok {
			s := base[1]
			s.Name = n
			f(&s)
			strategies = append(strategies, s)
			continue
		}
		s, err := SelectStrategies(n)
		if err != nil {
			t.Fatal(err)
		}
		strategies = append(strategies, s...)
	}
	type job struct {
		name string
		seed uint64
		sc   *Scenario
	}
	var jobs []job
	addJob := func(name string, mk func() *Scenario) {
		for _, seed := range seeds {
			sc := mk()
			sc.Seed = seed
			jobs = append(jobs, job{name, seed, sc})
		}
	}
	if os.Getenv("MQFAULT_TUNE_ONLY") == "" {
		addJob("default", DefaultScenario)
	}
	for _, f := range files {
		f := f
		if _, err := LoadFile(f); err != nil {
			t.Fatal(err)
		}
		addJob(filepath.Base(f), func() *Scenario { s, _ := LoadFile(f); return s })
	}
	lines := make([]string, len(jobs))
	type tally struct{ ok, better, n int }
	tallies := make([]tally, len(vnames))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rep := mustRun(t, j.sc, WithStrategies(strategies...))
			v5 := rep.Results[0]
			var b strings.Builder
			fmt.Fprintf(&b, "%-28s s%d v5 %6d/%7.1f", j.name, j.seed, v5.Failed, msf(v5.Latency.P99))
			mu.Lock()
			defer mu.Unlock()
			for k, r := range rep.Results[1:] {
				failOK := float64(r.Failed) <= float64(v5.Failed)*1.05+5
				p99OK := float64(r.Latency.P99) <= float64(v5.Latency.P99)*1.05
				better := (v5.Failed > 0 && 5*r.Failed <= 4*v5.Failed) || 5*r.Latency.P99 <= 4*v5.Latency.P99
				mark := " "
				if !failOK || !p99OK {
					mark = "X"
				} else {
					tallies[k].ok++
					if better {
						mark = "+"
						tallies[k].better++
					}
				}
				tallies[k].n++
				fmt.Fprintf(&b, " | %s %6d/%7.1f%s", vnames[k][:min(12, len(vnames[k]))], r.Failed, msf(r.Latency.P99), mark)
			}
			if os.Getenv("MQFAULT_TUNE_V") != "" {
				for _, r := range rep.Results {
					fmt.Fprintf(&b, "\n    %-8s sends %d attempts %d retries %d refused %d busy %d shed %d |", r.Name, r.Sends, r.Attempts, r.Retries, r.RetriesRefused, r.BusyAnswers, r.Shed)
					for _, br := range r.Brokers {
						fmt.Fprintf(&b, " %s %d/%d", br.Name[len(br.Name)-1:], br.Attempts, br.Failures)
					}
					fmt.Fprintf(&b, "\n      failed/5s:")
					for sec := 0; sec < r.Series.Seconds; sec += 5 {
						n := int64(0)
						for k := sec; k < min(sec+5, r.Series.Seconds); k++ {
							n += r.Series.Failed[k]
						}
						fmt.Fprintf(&b, " %d", n)
					}
					if bi := os.Getenv("MQFAULT_TUNE_B"); bi != "" {
						for k := range r.Series.Attempts {
							if bi != "all" && bi != strconv.Itoa(k) {
								continue
							}
							fmt.Fprintf(&b, "\n      broker %d attempts/5s:", k)
							for sec := 0; sec < r.Series.Seconds; sec += 5 {
								n := int32(0)
								for x := sec; x < min(sec+5, r.Series.Seconds); x++ {
									n += r.Series.Attempts[k][x]
								}
								fmt.Fprintf(&b, " %d", n)
							}
						}
					}
					fmt.Fprintf(&b, "\n      busy/5s:")
					for sec := 0; sec < r.Series.Seconds; sec += 5 {
						n := int64(0)
						for k := sec; k < min(sec+5, r.Series.Seconds); k++ {
							n += r.Series.Busy[k]
						}
						fmt.Fprintf(&b, " %d", n)
					}
				}
			}
			lines[i] = b.String()
		}()
	}
	wg.Wait()
	sort.Strings(lines)
	for _, l := range lines {
		t.Log(l)
	}
	for k, n := range vnames {
		t.Logf("%s: ok %d/%d, better %d", n, tallies[k].ok, tallies[k].n, tallies[k].better)
	}
}

func msf(d time.Duration) float64 { return float64(d) / 1e6 }
