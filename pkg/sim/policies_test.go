package sim

import (
	"path/filepath"
	"testing"
	"time"
)

// scenarioDir holds the scenarios where each policy past the reference
// matters (see pkg/latency/POLICIES.md).
const scenarioDir = "../../testdata/scenarios"

// TestMqfaultMustReach runs the default scenario and every scenario under
// testdata/scenarios with the v5 and mqfault strategies, and checks what the
// mqfault preset must reach:
//
//  1. on every scenario it fails no more sends than v5 and its p99 is no
//     higher, with no tolerance on either: every attempt draws its latency
//     from common random numbers (attemptDraws), so where the two
//     strategies make the same sends to equally healthy brokers their
//     latencies are the same draws, and a difference is the policies' doing,
//     not sampling noise;
//  2. on at least two it is clearly better: at most half of v5's failed
//     sends (v5 failing some), or a p99 at least 10% lower.
//
// The runs are deterministic (one seed each), so a failure is never a
// flake. They take about a second; under the race detector, which makes
// simulation about ten times slower, the test is skipped.
func TestMqfaultMustReach(t *testing.T) {
	if raceEnabled {
		t.Skip("six full scenarios are slow under the race detector; TestGolden covers the mqfault strategy's code")
	}
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d scenarios under %s, want at least 4", len(files), scenarioDir)
	}
	scenarios := []*Scenario{DefaultScenario()}
	for _, f := range files {
		s, err := LoadFile(f)
		if err != nil {
			t.Fatalf("LoadFile(%s) error = %v", f, err)
		}
		scenarios = append(scenarios, s)
	}
	strategies, err := SelectStrategies("v5", "mqfault")
	if err != nil {
		t.Fatal(err)
	}
	better := 0
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			rep := mustRun(t, sc, WithStrategies(strategies...))
			v5, mq := rep.Results[0], rep.Results[1]
			t.Logf("v5: %d failed, p99 %v; mqfault: %d failed, p99 %v", v5.Failed, v5.Latency.P99, mq.Failed, mq.Latency.P99)
			if mq.Failed > v5.Failed {
				t.Errorf("mqfault failed %d sends, v5 %d: want no more", mq.Failed, v5.Failed)
			}
			if mq.Latency.P99 > v5.Latency.P99 {
				t.Errorf("mqfault p99 = %v, v5 %v: want no worse", mq.Latency.P99, v5.Latency.P99)
			}
			fewerFailed := v5.Failed > 0 && 2*mq.Failed <= v5.Failed
			lowerP99 := mq.Latency.P99 <= v5.Latency.P99-v5.Latency.P99/10
			if fewerFailed || lowerP99 {
				better++
			}
		})
	}
	if better < 2 {
		t.Errorf("mqfault is clearly better than v5 on %d scenarios, want at least 2", better)
	}
}

// TestMqfaultStrategy checks the mqfault entry: the project's presets,
// unchanged.
func TestMqfaultStrategy(t *testing.T) {
	s, err := SelectStrategies("mqfault")
	if err != nil {
		t.Fatal(err)
	}
	l, p := s[0].Latency, s[0].Producer
	if l.MaxIsolatedFraction == 0 || l.IsolationBackoff == 0 || !l.ProbeFailures || !l.Detector || l.DetectParallel < 2 {
		t.Errorf("mqfault latency config = %+v, want every policy on", l)
	}
	if p.MaxTimeoutPerRequest != time.Second {
		t.Errorf("mqfault per-attempt cap = %v, want 1s", p.MaxTimeoutPerRequest)
	}
}
