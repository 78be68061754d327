package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// tuneVariants are preset variants TestTune can compare with v5, besides
// the built-in strategies and ablations (SelectStrategies names).
var tuneVariants = map[string]func(*Strategy){
	"cap-0.34":   func(s *Strategy) { s.Latency.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.34} },
	"cap-0.67":   func(s *Strategy) { s.Latency.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.67} },
	"budget-0.1": func(s *Strategy) { s.Producer.RetryBudget = 0.1 },
	"capacity-0.9": func(s *Strategy) {
		s.Latency.Capacity = &latency.CapacityConfig{Decrease: 0.9, Recovery: s.Latency.Capacity.Recovery}
	},
	"recovery-2s": func(s *Strategy) {
		s.Latency.Capacity = &latency.CapacityConfig{Decrease: s.Latency.Capacity.Decrease, Recovery: 2 * time.Second}
	},
}

// TestTune is a tuning aid, not a check: it is skipped unless MQFAULT_TUNE
// names the strategies to compare with v5 (comma-separated built-in
// strategies and ablations, as SelectStrategies knows them, or keys of
// tuneVariants). It runs them on the default scenario, testdata/scenarios
// and the files of MQFAULT_TUNE_DIR (a directory relative to pkg/sim),
// only those whose file name contains one of MQFAULT_TUNE_ONLY's words when
// that is set, at the seeds of MQFAULT_TUNE_SEEDS (default 1,2,3,4), and
// logs failed sends and p99 with the must-reach verdict (judge): X misses
// it, + is at least 20% better. POLICIES.md's seed ranges come from it.
func TestTune(t *testing.T) {
	names := os.Getenv("MQFAULT_TUNE")
	if names == "" {
		t.Skip("MQFAULT_TUNE not set")
	}
	seeds := []uint64{1, 2, 3, 4}
	if s := os.Getenv("MQFAULT_TUNE_SEEDS"); s != "" {
		seeds = nil
		for _, x := range strings.Split(s, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(x), 10, 64)
			if err != nil {
				t.Fatalf("MQFAULT_TUNE_SEEDS: %q is not a seed: %v", x, err)
			}
			seeds = append(seeds, n)
		}
	}
	strategies, err := SelectStrategies("v5")
	if err != nil {
		t.Fatal(err)
	}
	preset, err := SelectStrategies(PresetName)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range strings.Split(names, ",") {
		if f, ok := tuneVariants[n]; ok {
			s := preset[0]
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
	scenarios := tuneScenarios(t)
	type job struct {
		sc   *Scenario
		seed uint64
	}
	var jobs []job
	for _, sc := range scenarios {
		for _, seed := range seeds {
			c := *sc
			c.Seed = seed
			jobs = append(jobs, job{&c, seed})
		}
	}
	lines := make([]string, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rep, err := Run(context.Background(), j.sc, WithStrategies(strategies...))
			if err != nil {
				errs[i] = fmt.Errorf("%s seed %d: %w", j.sc.Name, j.seed, err)
				return
			}
			v5 := rep.Results[0]
			var b strings.Builder
			fmt.Fprintf(&b, "%-26s s%d  v5 %6d / %7.1f", j.sc.Name, j.seed, v5.Failed, millis(v5.Latency.P99))
			for _, r := range rep.Results[1:] {
				mark := " "
				switch v := DefaultRule.Judge(r.Score(), v5.Score()); {
				case v.FailedWorse || v.P99Worse:
					mark = "X"
				case v.FailedBetter || v.P99Better:
					mark = "+"
				}
				fmt.Fprintf(&b, " | %s %6d / %7.1f %s", r.Name, r.Failed, millis(r.Latency.P99), mark)
			}
			lines[i] = b.String()
		})
	}
	wg.Wait()
	for i, l := range lines {
		if errs[i] != nil {
			t.Error(errs[i])
			continue
		}
		t.Log(l)
	}
}

// tuneScenarios returns TestTune's scenarios.
func tuneScenarios(t *testing.T) []*Scenario {
	t.Helper()
	only := strings.FieldsFunc(os.Getenv("MQFAULT_TUNE_ONLY"), func(r rune) bool { return r == ',' })
	var out []*Scenario
	if len(only) == 0 {
		out = append(out, DefaultScenario())
	}
	for _, d := range []string{scenarioDir, os.Getenv("MQFAULT_TUNE_DIR")} {
		if d == "" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(d, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if len(only) > 0 && !containsAny(filepath.Base(f), only) {
				continue
			}
			sc, err := LoadFile(f)
			if err != nil {
				t.Fatalf("LoadFile(%s) error = %v", f, err)
			}
			out = append(out, sc)
		}
	}
	return out
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
