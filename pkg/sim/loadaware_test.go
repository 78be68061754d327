package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadAwareScenarios measures load-aware picks (latency.Config.LoadAware)
// on top of the mqfault preset against v5 and the preset on every must-reach
// and limits scenario, logging sends, failed sends and p99 (the numbers in
// POLICIES.md). Set MQFAULT_LOADAWARE_ALL=1 for every scenario; by default
// it runs the two the issue names.
func TestLoadAwareScenarios(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("full scenarios")
	}
	files := []string{filepath.Join(scenarioDir, "hot-broker-queue.yaml"), filepath.Join(limitDir, "short-capacity-open.yaml")}
	if os.Getenv("MQFAULT_LOADAWARE_ALL") != "" {
		a, _ := filepath.Glob(filepath.Join(scenarioDir, "*.yaml"))
		b, _ := filepath.Glob(filepath.Join(limitDir, "*.yaml"))
		files = append(a, b...)
	}
	strategies, err := SelectStrategies("v5", "mqfault")
	if err != nil {
		t.Fatal(err)
	}
	la := strategies[1]
	la.Name = "mqfault+load-aware"
	la.Latency.LoadAware = true
	strategies = append(strategies, la)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			seeds := []uint64{sc.Seed}
			if os.Getenv("MQFAULT_LOADAWARE_SEEDS") != "" {
				seeds = []uint64{1, 2, 3, 4}
			}
			for _, seed := range seeds {
				sc.Seed = seed
				rep := mustRun(t, sc, WithStrategies(strategies...))
				for _, r := range rep.Results {
					t.Logf("seed %d %s: %d sends, %d failed, p99 %v", seed, r.Name, r.Sends, r.Failed, r.Latency.P99)
				}
			}
		})
	}
}
