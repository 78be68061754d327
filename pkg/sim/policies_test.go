package sim

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// scenarioDir holds the scenarios where each policy past the reference
// matters (see pkg/latency/POLICIES.md).
const scenarioDir = "../../testdata/scenarios"

// p99Exceptions are the must-reach scenarios whose p99 the preset does not
// keep within 5% of v5's, with the bound it keeps, each explained in
// POLICIES.md ("What the preset does not win"):
//
//   - short-capacity: a tenth of the sends started while one of four
//     brokers is down must fail whatever the strategy, and the p99 measures
//     how fast they fail. v5 without its detector keeps the down broker
//     reachable and spends them on 1 ms refused connections; the preset's
//     detector marks it unreachable, so they fail on SYSTEM_BUSY round
//     trips (v5 with the detector: +13%). +5.1% at seed 1, +3.5-4.7% at
//     seeds 2-4, with 2.7% fewer failed sends.
var p99Exceptions = map[string]float64{"short-capacity": 1.07}

// verdict is what the must-reach rule says of a strategy against v5 on one
// scenario: what it misses (none when it reaches) and whether it is at
// least 20% better on failed sends (v5 failing some) or p99.
type verdict struct {
	problems []string
	better   bool
}

// judge applies the must-reach rule (TestMqfaultMustReach) to mq against
// v5 on scenario name: DefaultRule (failed sends at most 5% and 5 sends
// above v5's, p99 at most 5% above), with the scenario's p99Exceptions
// bound in place of the 5% where it has one.
func judge(name string, v5, mq Result) verdict {
	rule := DefaultRule
	if x, ok := p99Exceptions[name]; ok {
		rule.P99Ratio = x
	}
	j := rule.Judge(mq.Score(), v5.Score())
	var v verdict
	if j.FailedWorse {
		v.problems = append(v.problems, fmt.Sprintf("%s failed %d sends, v5 %d: want at most %.0f%% and %d sends more",
			mq.Name, mq.Failed, v5.Failed, 100*(rule.FailedRatio-1), rule.FailedSlack))
	}
	if j.P99Worse {
		v.problems = append(v.problems, fmt.Sprintf("%s p99 = %v, v5 %v: want at most %.0f%% higher", mq.Name, mq.Latency.P99, v5.Latency.P99, 100*(rule.P99Ratio-1)))
	}
	v.better = j.FailedBetter || j.P99Better
	return v
}

// TestMqfaultMustReach runs the default scenario and every scenario under
// testdata/scenarios with the v5 and mqfault strategies, and checks what the
// mqfault preset must reach (issue 15):
//
//  1. on every scenario it fails no more sends than v5, with 5% and 5 sends
//     of tolerance, and its p99 is no more than 5% higher (p99Exceptions
//     names the one scenario it is not, and its bound);
//  2. on most of them (more than half) it is at least 20% better than v5 on
//     failed sends (v5 failing some) or on p99.
//
// Every attempt draws its latency from common random numbers (attemptRand),
// so a difference between the two is the policies' doing, not sampling
// noise. The runs are deterministic (one seed each, the file's), so a
// failure is never a flake; POLICIES.md has seeds 1-4 and the scenarios
// where the preset does not win at every seed. They take a few seconds;
// under the race detector, which makes simulation about ten times slower,
// the test is skipped.
func TestMqfaultMustReach(t *testing.T) {
	if raceEnabled {
		t.Skip("the full scenarios are slow under the race detector; TestGolden covers the mqfault strategy's code")
	}
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d scenarios under %s, want at least 10", len(files), scenarioDir)
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
			t.Logf("v5: %d sends, %d failed, p99 %v; mqfault: %d sends, %d failed, p99 %v",
				v5.Sends, v5.Failed, v5.Latency.P99, mq.Sends, mq.Failed, mq.Latency.P99)
			v := judge(sc.Name, v5, mq)
			for _, p := range v.problems {
				t.Error(p)
			}
			if v.better {
				better++
			}
		})
	}
	if 2*better <= len(scenarios) {
		t.Errorf("mqfault is at least 20%% better than v5 on %d of %d scenarios, want most", better, len(scenarios))
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

// TestCapacityScenarios keeps POLICIES.md's account of the short-capacity
// scenarios of the must-reach set true:
// each check is the mechanism it describes, shown by an ablation (the
// preset with one policy off).
func TestCapacityScenarios(t *testing.T) {
	if raceEnabled {
		t.Skip("full scenarios are slow under the race detector")
	}
	const down = 1 // broker-b, the broker that goes away
	tests := []struct {
		file  string
		check func(t *testing.T, v5, v5d, mq, noHold, noBudget Result)
	}{
		{"short-capacity.yaml", func(t *testing.T, v5, v5d, mq, _, noBudget Result) {
			// Without its detector a refused connection leaves the down
			// broker reachable, so v5's reachable stage spends the sends
			// the cluster cannot hold on 1 ms refusals.
			if v5.Brokers[down].Failures < 5*v5d.Brokers[down].Failures {
				t.Errorf("failed attempts on the down broker: v5 %d, v5+detector %d; want v5 at least 5 times as many",
					v5.Brokers[down].Failures, v5d.Brokers[down].Failures)
			}
			// Most retries of a busy answer find room on another broker,
			// and a retry that found an answer is given back to the
			// budget: it costs nothing here (at 0.2 without the refund it
			// failed half as many sends again).
			if 100*mq.RetriesRefused > mq.Retries || float64(mq.Failed) > 1.01*float64(noBudget.Failed) {
				t.Errorf("mqfault: %d of %d retries refused, %d failed; without the budget %d failed: want (almost) no refusal and no cost",
					mq.RetriesRefused, mq.Retries, mq.Failed, noBudget.Failed)
			}
		}},
		{"short-capacity-blackhole.yaml", func(t *testing.T, v5, _, mq, noHold, _ Result) {
			// v5's reachable stage sends to a broker that never answers;
			// the cap without the hold keeps busy brokers in service and
			// fails several times the sends.
			if v5.Latency.P99 < time.Second {
				t.Errorf("v5 p99 = %v, want at least 1s (sends waiting on the blackholed broker)", v5.Latency.P99)
			}
			if noHold.Failed < 5*mq.Failed || 2*mq.Failed > v5.Failed {
				t.Errorf("failed sends: mqfault %d, without cap_holds_busy %d, v5 %d; want the hold's gain (5 times) and at most half v5's",
					mq.Failed, noHold.Failed, v5.Failed)
			}
		}},
		{"short-capacity-open.yaml", func(t *testing.T, v5, v5d, mq, noHold, noBudget Result) {
			// One broker short under an open load with send queues: without
			// the hold, the cap keeps busy brokers in service and every
			// busy answer is retried into a full queue (a retry storm:
			// half as many busy answers again as v5 at least (about
			// twice), several times its failed sends; the budget refuses
			// part of it).
			t.Logf("retries/busy answers: v5 %d/%d, v5+detector %d/%d, mqfault %d/%d, without the hold %d/%d, without the budget %d/%d",
				v5.Retries, v5.BusyAnswers, v5d.Retries, v5d.BusyAnswers, mq.Retries, mq.BusyAnswers,
				noHold.Retries, noHold.BusyAnswers, noBudget.Retries, noBudget.BusyAnswers)
			if 2*noHold.BusyAnswers < 3*v5.BusyAnswers || noHold.Failed < 3*v5.Failed || noHold.RetriesRefused == 0 {
				t.Errorf("without the hold: %d busy answers, %d failed, %d retries refused; v5 %d, %d; want the storm (the budget refusing part of it)",
					noHold.BusyAnswers, noHold.Failed, noHold.RetriesRefused, v5.BusyAnswers, v5.Failed)
			}
			// With it the storm is gone (fewer retries than v5), but the
			// preset is not better than v5 here at most seeds (POLICIES.md):
			// this checks the hold's gain, not a win.
			if mq.Retries >= v5.Retries || 5*mq.Failed > noHold.Failed {
				t.Errorf("mqfault: %d retries, %d failed; v5 %d retries; without the hold %d failed: want fewer retries than v5 and a fifth of the failed sends without the hold",
					mq.Retries, mq.Failed, v5.Retries, noHold.Failed)
			}
			if v5.Latency.P99 < 3*200*time.Millisecond {
				t.Errorf("v5 p99 = %v, want at least 600ms: three attempts that each waited out a 200ms queue", v5.Latency.P99)
			}
		}},
	}
	// The ablations come from the simulator's table (ablation.go), as
	// `mqfault sim --ablation` runs them.
	strategies, err := SelectStrategies("v5", "v5+detector", "mqfault", "mqfault-cap-holds-busy", "mqfault-retry-budget")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			sc, err := LoadFile(filepath.Join(scenarioDir, tt.file))
			if err != nil {
				t.Fatalf("LoadFile(%s) error = %v", tt.file, err)
			}
			rep := mustRun(t, sc, WithStrategies(strategies...))
			r := rep.Results
			for _, res := range r {
				t.Logf("%s: %d failed, p99 %v, %d retries, %d refused", res.Name, res.Failed, res.Latency.P99, res.Retries, res.RetriesRefused)
			}
			tt.check(t, r[0], r[1], r[2], r[3], r[4])
		})
	}
}

// TestNotWon keeps the account of a scenario the preset does not win
// (pkg/sim/testdata/limits, POLICIES.md "What the preset does not win")
// true: on majority-slow the isolation cap keeps a slow broker in service,
// so the preset's p99 is above v5's, and without the cap below it. When a
// change wins it, this fails: move the file to testdata/scenarios and say
// so in POLICIES.md and the README.
func TestNotWon(t *testing.T) {
	if raceEnabled {
		t.Skip("full scenarios are slow under the race detector")
	}
	sc, err := LoadFile(filepath.Join("testdata", "limits", "majority-slow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	strategies, err := SelectStrategies("v5", "mqfault", "mqfault-isolation-cap")
	if err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, sc, WithStrategies(strategies...)).Results
	v5, mq, noCap := r[0], r[1], r[2]
	t.Logf("p99: v5 %v, mqfault %v, without the cap %v", v5.Latency.P99, mq.Latency.P99, noCap.Latency.P99)
	if mq.Latency.P99 <= v5.Latency.P99 || noCap.Latency.P99 >= v5.Latency.P99 || mq.Failed > v5.Failed+5 {
		t.Errorf("majority-slow: p99 v5 %v, mqfault %v, without the cap %v; failed %d and %d: the account (the cap costs here) no longer holds",
			v5.Latency.P99, mq.Latency.P99, noCap.Latency.P99, v5.Failed, mq.Failed)
	}
}
