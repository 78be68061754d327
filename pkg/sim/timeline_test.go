package sim

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
)

// isolationLog records what the fault table itself reports, to check the
// timeline against.
type isolationLog struct {
	mu        sync.Mutex // guards the slices
	isolated  []latency.IsolationEvent
	recovered []latency.RecoveryEvent
}

func (l *isolationLog) OnIsolate(ev latency.IsolationEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.isolated = append(l.isolated, ev)
}

func (l *isolationLog) OnRecover(ev latency.RecoveryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recovered = append(l.recovered, ev)
}

func (l *isolationLog) OnProbe(latency.ProbeEvent) {}

func loadShipped(t *testing.T, name string) *Scenario {
	t.Helper()
	sc, err := LoadFile(filepath.Join(scenarioDir, name))
	if err != nil {
		t.Fatalf("LoadFile(%s) error = %v", name, err)
	}
	return sc
}

func within(spans []Span, at time.Duration) bool {
	for _, s := range spans {
		if s.From <= at && at <= s.To {
			return true
		}
	}
	return false
}

// TestTimeline checks the isolation timeline against the fault table's own
// events (an observer joined to the simulator's, as Env.Observer says), on
// the shipped scenario where every broker is isolated at once: every
// isolation the table reports falls inside a span of its broker, every
// release it reports ends one, the spans are ordered and apart, nothing is
// isolated before the faults begin at 20 s, and the detector's strategy
// marks the down broker unreachable while v5 without it never does.
func TestTimeline(t *testing.T) {
	sc := loadShipped(t, "all-isolated.yaml")
	strats, err := SelectStrategies("v5", "v5+detector")
	if err != nil {
		t.Fatal(err)
	}
	logs := make([]*isolationLog, len(strats))
	for i := range strats {
		log := &isolationLog{}
		logs[i] = log
		strats[i].New = func(cfg latency.Config, env Env) (*latency.Strategy, error) {
			return latency.NewStrategy(cfg, append(env.Options(), latency.WithObserver(observe.JoinLatency(env.Observer, log)))...)
		}
	}
	rep := mustRun(t, sc, WithStrategies(strats...))
	start := sc.Events[0].At
	for i, res := range rep.Results {
		if len(res.Timeline) != len(sc.Brokers) {
			t.Fatalf("%s: %d timelines, want one per broker (%d)", res.Name, len(res.Timeline), len(sc.Brokers))
		}
		byName := map[string]*BrokerTimeline{}
		for k := range res.Timeline {
			tl := &res.Timeline[k]
			if tl.Name != sc.Brokers[k].Name {
				t.Errorf("%s: timeline %d is %s, want %s", res.Name, k, tl.Name, sc.Brokers[k].Name)
			}
			byName[tl.Name] = tl
			for _, spans := range [][]Span{tl.Isolated, tl.Unreachable} {
				for j, s := range spans {
					if s.To <= s.From || (j > 0 && s.From < spans[j-1].To) {
						t.Errorf("%s %s: span %d %v is empty or overlaps the one before", res.Name, tl.Name, j, s)
					}
					if s.From < start {
						t.Errorf("%s %s: span %v begins before the faults (%v)", res.Name, tl.Name, s, start)
					}
				}
			}
			if tl.Isolations() == 0 {
				t.Errorf("%s %s: never isolated; every broker is isolated in this scenario", res.Name, tl.Name)
			}
		}
		log := logs[i]
		if len(log.isolated) == 0 || len(log.recovered) == 0 {
			t.Fatalf("%s: the table reported %d isolations and %d releases, want some of each", res.Name, len(log.isolated), len(log.recovered))
		}
		for _, ev := range log.isolated {
			at := ev.Until.Add(-ev.Duration).Sub(Epoch)
			if !within(byName[ev.Broker].Isolated, at) {
				t.Errorf("%s: the table isolated %s at %v, outside every span of the timeline %v", res.Name, ev.Broker, at, byName[ev.Broker].Isolated)
			}
		}
		for _, ev := range log.recovered {
			at := ev.At.Sub(Epoch)
			ended := false
			for _, s := range byName[ev.Broker].Isolated {
				ended = ended || s.To == at
			}
			if !ended {
				t.Errorf("%s: the table released %s at %v, and no span of the timeline ends then", res.Name, ev.Broker, at)
			}
		}
	}
	v5, det := byBroker(rep.Results[0], "broker-a"), byBroker(rep.Results[1], "broker-a")
	if d := v5.UnreachableTime(); d != 0 {
		t.Errorf("v5: broker-a unreachable for %v; without the detector a refused connection leaves it reachable", d)
	}
	down := sc.Events[0].For
	if d := det.UnreachableTime(); d < down*3/4 {
		t.Errorf("v5+detector: broker-a unreachable for %v, want most of its %v down", d, down)
	}
	for _, s := range det.Unreachable {
		if s.To > sc.Events[0].End()+2*latency.DefaultConfig().DetectPeriod {
			t.Errorf("v5+detector: broker-a unreachable %v, past its window's end and the next probes", s)
		}
	}
}

func byBroker(r Result, name string) *BrokerTimeline {
	for i := range r.Timeline {
		if r.Timeline[i].Name == name {
			return &r.Timeline[i]
		}
	}
	return &BrokerTimeline{}
}

// TestShippedDetectorScenario keeps the README's line under the table
// true: in testdata/scenarios/all-isolated.yaml every broker is isolated at
// once and the detector makes the difference, so the v5+detector row
// differs from v5's, with a tenth of its first-attempt failures or fewer.
func TestShippedDetectorScenario(t *testing.T) {
	sc := loadShipped(t, "all-isolated.yaml")
	strats, err := SelectStrategies("v5", "v5+detector")
	if err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, sc, WithStrategies(strats...))
	v5, det := rep.Results[0], rep.Results[1]
	t.Logf("first-attempt failures: v5 %d, v5+detector %d", v5.FirstAttemptFailures, det.FirstAttemptFailures)
	if v5.FirstAttemptFailures < 100 || 10*det.FirstAttemptFailures > v5.FirstAttemptFailures {
		t.Errorf("first-attempt failures: v5 %d, v5+detector %d; want v5 100 or more and the detector at most a tenth of them",
			v5.FirstAttemptFailures, det.FirstAttemptFailures)
	}
}

// TestTimelineOff: a strategy with fault tolerance off never updates its
// table, so its timeline holds every broker and no span.
func TestTimelineOff(t *testing.T) {
	rep := mustRun(t, loadTestScenario(t, "small"), WithStrategies(Strategies()[0]))
	res := rep.Results[0]
	if res.Name != "off" || len(res.Timeline) != len(rep.Scenario.Brokers) {
		t.Fatalf("%s: %d timelines, want off with %d", res.Name, len(res.Timeline), len(rep.Scenario.Brokers))
	}
	for _, tl := range res.Timeline {
		if len(tl.Isolated)+len(tl.Unreachable) != 0 || tl.StillIsolated || tl.StillUnreachable {
			t.Errorf("off: %s has spans %+v; want none", tl.Name, tl)
		}
	}
}

// BenchmarkTimelineSample measures what the timeline adds to a fault
// update: "update" is Strategy.Update alone (the baseline, in the same
// run), "update+sample" the update and the timeline's sample after it, as
// the engine makes them at each attempt's end.
func BenchmarkTimelineSample(b *testing.B) {
	sc := DefaultScenario()
	for _, sample := range []bool{false, true} {
		name := "update"
		if sample {
			name = "update+sample"
		}
		b.Run(name, func(b *testing.B) {
			clk := clock.NewManual(Epoch)
			tl := newTimeline(sc, clk, brokerIndex(sc), true)
			cfg := latency.DefaultConfig()
			cfg.Detector = false
			strat, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithObserver(tl))
			if err != nil {
				b.Fatal(err)
			}
			defer strat.Close()
			tl.ft = strat.Table()
			names := make([]string, len(sc.Brokers))
			for i, br := range sc.Brokers {
				names[i] = br.Name
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := i % len(names)
				strat.Update(names[k], 3*time.Millisecond, false, true)
				if sample {
					tl.updated(int64(i), k)
				}
				i++
			}
		})
	}
}
