package sim

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
	"github.com/mqfault/mqfault/pkg/route"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func loadTestScenario(t testing.TB, name string) *Scenario {
	t.Helper()
	s, err := LoadFile(filepath.Join("testdata", "golden", name+".yaml"))
	if err != nil {
		t.Fatalf("LoadFile(%s) error = %v", name, err)
	}
	return s
}

func mustRun(t testing.TB, s *Scenario, opts ...Option) *Report {
	t.Helper()
	rep, err := Run(context.Background(), s, opts...)
	if err != nil {
		t.Fatalf("Run(%s) error = %v", s.Name, err)
	}
	return rep
}

func jsonOf(t testing.TB, rep *Report) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatalf("WriteJSON() error = %v", err)
	}
	return buf.Bytes()
}

// TestGolden compares the JSON and the table of three small scenarios (two
// closed loads, one open with send queues) with the
// checked-in files. Run `go test ./pkg/sim -run TestGolden -update` after a
// change that is meant to change them, and review the diff.
func TestGolden(t *testing.T) {
	for _, name := range []string{"small", "mixed", "open"} {
		t.Run(name, func(t *testing.T) {
			rep := mustRun(t, loadTestScenario(t, name))
			var table bytes.Buffer
			if err := rep.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for ext, got := range map[string][]byte{".json": jsonOf(t, rep), ".txt": table.Bytes()} {
				path := filepath.Join("testdata", "golden", name+ext)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			}
		})
	}
}

// TestDeterminism runs one scenario three ways: twice alike, and once with
// the strategies in the opposite order. One seed must give the same bytes,
// and a strategy's result must not depend on the others.
func TestDeterminism(t *testing.T) {
	s := loadTestScenario(t, "mixed")
	first := jsonOf(t, mustRun(t, s))
	if second := jsonOf(t, mustRun(t, s)); !bytes.Equal(first, second) {
		t.Fatalf("two runs with one seed differ:\n%s\n%s", first, second)
	}
	forward := mustRun(t, s)
	rev := Strategies()
	slices.Reverse(rev)
	backward := mustRun(t, s, WithStrategies(rev...))
	for i, res := range forward.Results {
		other := backward.Results[len(rev)-1-i]
		res.Wall, other.Wall = 0, 0
		if !reflect.DeepEqual(res, other) {
			t.Errorf("strategy %s: result depends on the order of strategies", res.Name)
		}
	}
	other := *s
	other.Seed++
	if json := jsonOf(t, mustRun(t, &other)); bytes.Equal(first, json) {
		t.Error("another seed gave the same JSON, want a different run")
	}
}

// TestCommonRandomNumbers checks that an attempt's draws follow the send,
// not the broker. On identical brokers without capacity limits, a strategy
// that never uses broker a meets the latencies of one that does, send for
// send, although every send of a goes elsewhere; and when a is down, the
// sends that first met its refused connection draw on their retry what the
// other strategy drew on its first attempt, so each is 1 ms (the refusal)
// slower and no percentile moves by more.
func TestCommonRandomNumbers(t *testing.T) {
	lat := Latency{Median: 3 * time.Millisecond, P99: 20 * time.Millisecond}
	notA := []route.QueueFilter{route.QueueFilterFunc(func(q route.MessageQueue) bool { return q.BrokerName != "a" })}
	tests := []struct {
		name     string
		strategy string
		events   []Event
		shift    time.Duration // how much slower the strategy that uses a may be
	}{
		{"healthy", "v5", nil, 0},
		{"a down", "off", []Event{{Broker: "a", At: 0, For: 5 * time.Second, State: StateDown}}, downLatency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Scenario{
				Name: "crn", Duration: 5 * time.Second, Seed: 11, Senders: 8, Rate: 100, SendTimeout: 3 * time.Second,
				Brokers: []Broker{{Name: "a", Queues: 2, Latency: lat}, {Name: "b", Queues: 2, Latency: lat}, {Name: "c", Queues: 2, Latency: lat}},
				Events:  tt.events,
			}
			strats, err := SelectStrategies(tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			never := strats[0]
			never.Name += ", never a"
			never.Latency.Filters = notA
			rep := mustRun(t, s, WithStrategies(strats[0], never))
			all, some := rep.Results[0], rep.Results[1]
			if all.Brokers[0].Attempts == 0 || some.Brokers[0].Attempts != 0 {
				t.Fatalf("attempts on broker a: %d and %d, want some, then none", all.Brokers[0].Attempts, some.Brokers[0].Attempts)
			}
			if all.Sends != some.Sends {
				t.Fatalf("sends: %d and %d, want the same", all.Sends, some.Sends)
			}
			got := []time.Duration{all.Latency.P50, all.Latency.P99, all.Latency.P999, all.Latency.Max}
			want := []time.Duration{some.Latency.P50, some.Latency.P99, some.Latency.P999, some.Latency.Max}
			for i := range got {
				if got[i] < want[i] || got[i] > want[i]+tt.shift {
					t.Errorf("percentiles %v, want %v plus at most %v each", got, want, tt.shift)
					break
				}
			}
			if tt.shift == 0 && !slices.Equal(all.Series.P99, some.Series.P99) {
				t.Errorf("p99 per second differs: %v and %v", all.Series.P99, some.Series.P99)
			}
		})
	}
}

// randomScenario builds a small valid scenario from r: 1 to 5 brokers, a few
// events of every state, some capacities.
func randomScenario(r *rand.Rand, i int) *Scenario {
	s := &Scenario{
		Name:        fmt.Sprintf("random-%d", i),
		Duration:    time.Duration(2+r.IntN(6)) * time.Second,
		Seed:        r.Uint64(),
		Senders:     1 + r.IntN(12),
		Rate:        float64(50 + r.IntN(800)),
		SendTimeout: time.Duration(200+r.IntN(3000)) * time.Millisecond,
	}
	for b := range 1 + r.IntN(5) {
		med := time.Duration(1+r.IntN(20)) * time.Millisecond
		br := Broker{Name: fmt.Sprintf("b%d", b), Queues: 1 + r.IntN(4), Latency: Latency{med, med * time.Duration(1+r.IntN(10))}}
		if r.IntN(3) == 0 {
			br.Capacity = float64(10 + r.IntN(300))
		}
		s.Brokers = append(s.Brokers, br)
	}
	for range r.IntN(6) {
		at := time.Duration(r.Int64N(int64(s.Duration)))
		e := Event{
			Broker: s.Brokers[r.IntN(len(s.Brokers))].Name,
			At:     at,
			For:    time.Duration(1 + r.Int64N(int64(s.Duration-at))),
			State:  eventStates[r.IntN(len(eventStates))],
		}
		switch e.State {
		case StateSlow:
			e.Latency = Latency{200 * time.Millisecond, time.Duration(200+r.IntN(3000)) * time.Millisecond}
		case StateBusy:
			e.Rate, e.Code = 0.1+0.9*r.Float64(), []int{0, 1, 2, 17, 25}[r.IntN(5)]
		case StateFlapping:
			e.Period = max(e.For/time.Duration(1+r.IntN(5)), 2)
		case StateStall:
			e.Period = max(e.For/time.Duration(1+r.IntN(5)), 2)
			e.Length = max(e.Period/time.Duration(1+r.IntN(4)), 1)
		}
		e.Probe = []Probe{ProbeAuto, ProbeAuto, ProbeReachable, ProbeUnreachable, ProbeTimeout}[r.IntN(5)]
		if e.State == StateGone {
			e.Probe = ProbeAuto
		}
		s.Events = append(s.Events, e)
	}
	return s
}

// TestAccounting is the property test: on random scenarios, for every
// strategy, every send ended exactly once (sends = succeeded + failed), every
// attempt is accounted to exactly one broker and one second, and the counts
// are consistent with each other.
func TestAccounting(t *testing.T) {
	n := 30
	if raceEnabled || testing.Short() {
		n = 6
	}
	r := rand.New(rand.NewPCG(1, 2))
	scenarios := []*Scenario{loadTestScenario(t, "small"), loadTestScenario(t, "mixed")}
	for i := range n {
		scenarios = append(scenarios, randomScenario(r, i))
	}
	for _, s := range scenarios {
		if err := s.Validate(); err != nil {
			t.Fatalf("scenario %s is invalid: %v", s.Name, err)
		}
		rep := mustRun(t, s)
		for _, res := range rep.Results {
			name := s.Name + "/" + res.Name
			if res.Sends != res.Succeeded+res.Failed {
				t.Errorf("%s: sends %d != succeeded %d + failed %d", name, res.Sends, res.Succeeded, res.Failed)
			}
			if res.Sends == 0 {
				t.Errorf("%s: no send", name)
			}
			var attempts, failures int64
			for _, b := range res.Brokers {
				attempts += b.Attempts
				failures += b.Failures
				if b.Failures > b.Attempts {
					t.Errorf("%s: broker %s has %d failures of %d attempts", name, b.Name, b.Failures, b.Attempts)
				}
			}
			if attempts != res.Attempts {
				t.Errorf("%s: brokers' attempts add up to %d, want %d", name, attempts, res.Attempts)
			}
			var perSecond, sendsPerSecond, failedPerSecond int64
			for b := range res.Series.Attempts {
				for _, a := range res.Series.Attempts[b] {
					perSecond += int64(a)
				}
			}
			for sec := range res.Series.Seconds {
				sendsPerSecond += res.Series.Sends[sec]
				failedPerSecond += res.Series.Failed[sec]
			}
			if perSecond != res.Attempts || sendsPerSecond != res.Sends || failedPerSecond != res.Failed {
				t.Errorf("%s: series hold %d attempts, %d sends, %d failed; want %d, %d, %d", name,
					perSecond, sendsPerSecond, failedPerSecond, res.Attempts, res.Sends, res.Failed)
			}
			// Every send makes at least one attempt and at most three (two retries).
			if res.Attempts < res.Sends || res.Attempts > 3*res.Sends {
				t.Errorf("%s: %d attempts for %d sends, want between 1 and 3 per send", name, res.Attempts, res.Sends)
			}
			if res.FirstAttemptFailures > res.Sends || res.FirstAttemptFailures > failures || res.Failed > res.FirstAttemptFailures {
				t.Errorf("%s: first-attempt failures %d out of bounds (sends %d, failed attempts %d, failed sends %d)",
					name, res.FirstAttemptFailures, res.Sends, failures, res.Failed)
			}
			if res.UnhealthyAttempts > res.Attempts {
				t.Errorf("%s: %d unhealthy attempts of %d", name, res.UnhealthyAttempts, res.Attempts)
			}
			l := res.Latency
			if l.P50 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max || l.Max > s.sendTimeout()+timeoutLag {
				t.Errorf("%s: latency %+v is not ordered or exceeds the budget %s", name, l, s.sendTimeout())
			}
		}
	}
}

// TestDefaultScenarioV5BeatsOff is the must-reach: on the default
// scenario, v5 has fewer first-attempt failures than off.
func TestDefaultScenarioV5BeatsOff(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("the full default scenario is slow under the race detector; TestAccounting covers the code")
	}
	strats, err := SelectStrategies("off", "v5")
	if err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, DefaultScenario(), WithStrategies(strats...))
	off, v5 := rep.Results[0], rep.Results[1]
	if v5.FirstAttemptFailures >= off.FirstAttemptFailures {
		t.Errorf("first-attempt failures: v5 %d, off %d; want v5 fewer", v5.FirstAttemptFailures, off.FirstAttemptFailures)
	}
	if v5.UnhealthyShare() >= off.UnhealthyShare() {
		t.Errorf("unhealthy share: v5 %.3f, off %.3f; want v5 lower", v5.UnhealthyShare(), off.UnhealthyShare())
	}
}

// TestDetectorMatters builds the case the detector is for: every broker
// isolated at once. Broker a is down; b is slow enough to be isolated by
// latency but answers. v5 then falls back to plain round robin, which keeps
// meeting a; with the detector on, a's transport errors mark it unreachable
// and the reachable stage picks b.
func TestDetectorMatters(t *testing.T) {
	s := &Scenario{
		Name: "detector", Duration: 20 * time.Second, Seed: 5, Senders: 4, Rate: 40, SendTimeout: 3 * time.Second,
		Brokers: []Broker{
			{Name: "a", Queues: 2, Latency: Latency{2 * time.Millisecond, 5 * time.Millisecond}},
			{Name: "b", Queues: 2, Latency: Latency{600 * time.Millisecond, 700 * time.Millisecond}},
		},
		Events: []Event{{Broker: "a", At: time.Second, For: 18 * time.Second, State: StateDown}},
	}
	strats, err := SelectStrategies("v5", "v5+detector")
	if err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, s, WithStrategies(strats...))
	v5, det := rep.Results[0], rep.Results[1]
	if det.FirstAttemptFailures >= v5.FirstAttemptFailures {
		t.Errorf("first-attempt failures: v5+detector %d, v5 %d; want the detector fewer", det.FirstAttemptFailures, v5.FirstAttemptFailures)
	}
}

// TestDetectorRuns checks that the simulated detector's rounds probe
// brokers, and answer from the broker's state at the probe's virtual moment.
func TestDetectorRuns(t *testing.T) {
	s := loadTestScenario(t, "mixed")
	spec := Strategies()[3]
	if spec.Name != "v5+detector" {
		t.Fatalf("Strategies()[3] = %s, want v5+detector", spec.Name)
	}
	obs := &probeLog{}
	spec.New = func(cfg latency.Config, env Env) (*latency.Strategy, error) {
		return latency.NewStrategy(cfg, append(env.Options(), latency.WithObserver(observe.JoinLatency(env.Observer, obs)))...)
	}
	spec.Name = "observed"
	mustRun(t, s, WithStrategies(spec))
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.events) == 0 {
		t.Fatal("no probe in a run with the detector on")
	}
	seen := map[string]bool{}
	for _, ev := range obs.events {
		switch {
		case ev.Err == nil:
			seen["reachable"] = true
		case errors.Is(ev.Err, context.DeadlineExceeded):
			seen["timeout"] = true
		default:
			seen["refused"] = true
		}
		if ev.Elapsed != 0 {
			t.Errorf("probe of %s took %s of virtual time, want 0", ev.Broker, ev.Elapsed)
		}
	}
	for _, want := range []string{"reachable", "timeout", "refused"} {
		if !seen[want] {
			t.Errorf("no probe answered %s; saw %v", want, seen)
		}
	}
}

type probeLog struct {
	latency.NopObserver
	mu     sync.Mutex // guards events
	events []latency.ProbeEvent
}

func (p *probeLog) OnProbe(ev latency.ProbeEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, ev)
}

func TestRunErrors(t *testing.T) {
	s := loadTestScenario(t, "small")
	bad := Strategies()[0]
	bad.Name = "bad"
	bad.Latency.DetectPeriod = 0
	dup := Strategies()[:1]
	dup = append(dup, dup[0])
	invalid := *s
	invalid.Senders = 0
	tests := []struct {
		name string
		s    *Scenario
		opts []Option
		want string
	}{
		{"nil scenario", nil, nil, "no scenario"},
		{"invalid scenario", &invalid, nil, "senders: missing (required under closed load"},
		{"no strategy", s, []Option{WithStrategies()}, "no strategy"},
		{"repeated name", s, []Option{WithStrategies(dup...)}, `strategy name "off" is empty or repeated`},
		{"bad config", s, []Option{WithStrategies(bad)}, "strategy bad: latency: DetectPeriod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Run(context.Background(), tt.s, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run() = %v, %v; want an error containing %q", rep, err, tt.want)
			}
			if tt.name == "bad config" && !errors.Is(err, latency.ErrInvalidConfig) {
				t.Errorf("Run() error = %v, want it to match latency.ErrInvalidConfig", err)
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Run(ctx, loadTestScenario(t, "small"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run(cancelled) = %v, %v; want context.Canceled", rep, err)
	}
}

func TestProgress(t *testing.T) {
	var mu sync.Mutex
	var seen []float64
	mustRun(t, loadTestScenario(t, "small"), WithProgress(func(done float64) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, done)
	}))
	if len(seen) < 2 {
		t.Fatalf("progress reported %d times, want several", len(seen))
	}
	if !slices.IsSorted(seen) {
		t.Errorf("progress went backwards: %v", seen)
	}
	if last := seen[len(seen)-1]; last != 1 {
		t.Errorf("last progress = %v, want 1", last)
	}
}

func TestSelectStrategies(t *testing.T) {
	got, err := SelectStrategies("v5", "off")
	if err != nil || len(got) != 2 || got[0].Name != "v5" || got[1].Name != "off" {
		t.Errorf("SelectStrategies(v5, off) = %v, %v", got, err)
	}
	if _, err := SelectStrategies("v6"); err == nil || !strings.Contains(err.Error(), `unknown strategy "v6"`) {
		t.Errorf("SelectStrategies(v6) error = %v, want unknown strategy", err)
	}
}
