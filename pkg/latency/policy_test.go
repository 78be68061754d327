package latency_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// policyStrategy builds a v5 strategy with fault tolerance on, the policies
// of change, on a manual clock at t0.
func policyStrategy(t *testing.T, change func(c *latency.Config), opts ...latency.Option) (*latency.Strategy, *clock.Manual) {
	t.Helper()
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	if change != nil {
		change(&cfg)
	}
	clk := clock.NewManual(t0)
	s, err := latency.NewStrategy(cfg, append([]latency.Option{latency.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatalf("NewStrategy() error = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

// oneQueueEach is a route with one queue on each broker, in that order.
func oneQueueEach(t testing.TB, brokers ...string) *route.PublishInfo {
	t.Helper()
	qs := make([]route.MessageQueue, len(brokers))
	for i, b := range brokers {
		qs[i] = route.MessageQueue{Topic: "T", BrokerName: b}
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// pickedBrokers picks once from every index position of info (one queue per
// broker) and returns the brokers picked at stage available, sorted.
func pickedBrokers(t *testing.T, s *latency.Strategy, info *route.PublishInfo) []string {
	t.Helper()
	seen := map[string]bool{}
	for i := range info.Len() {
		info.Index().Store(int32(i))
		p, ok := s.Select(info, latency.PickInfo{})
		if !ok {
			t.Fatalf("Select() found nothing")
		}
		if p.Stage == latency.StageAvailable {
			seen[p.Queue.BrokerName] = true
		}
	}
	out := make([]string, 0, len(seen))
	for b := range seen {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// outcome is one fault update of a test's setup.
type outcome struct {
	broker    string
	latency   time.Duration
	failed    bool // the send failed (Update's isolation=true)
	reachable bool
	after     time.Duration // clock advance before the update
}

func apply(s *latency.Strategy, clk *clock.Manual, outs []outcome) {
	for _, o := range outs {
		clk.Advance(o.after)
		s.Update(o.broker, o.latency, o.failed, o.reachable)
	}
}

// TestIsolationCapRanking isolates brokers of a four-broker route with the
// cap at one half (two avoided at most) and checks which isolated brokers
// stay in service, and that picks reach exactly the available and released
// brokers.
func TestIsolationCapRanking(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name         string
		outcomes     []outcome
		wantReleased []string
		wantPicked   []string
	}{
		{"two isolated: the cap does not bind", []outcome{
			{broker: "a", latency: ms, failed: true},
			{broker: "b", latency: 700 * ms, reachable: true},
		}, nil, []string{"c", "d"}},
		{"a broker isolated for latency stays in service before failed ones", []outcome{
			{broker: "a", latency: ms, failed: true},
			{broker: "b", latency: 700 * ms, reachable: true},
			{broker: "c", latency: ms, failed: true},
		}, []string{"b"}, []string{"b", "d"}},
		{"reachable before unreachable", []outcome{
			{broker: "a", latency: ms, failed: true},
			{broker: "b", latency: time.Second, failed: true, reachable: true},
			{broker: "c", latency: ms, failed: true},
		}, []string{"b"}, []string{"b", "d"}},
		{"a failure that took a whole timeout is worse than a refused connection", []outcome{
			{broker: "a", latency: ms, failed: true},
			{broker: "b", latency: time.Second, failed: true},
			{broker: "c", latency: ms, failed: true},
		}, []string{"c"}, []string{"c", "d"}},
		{"the isolation ending first", []outcome{
			{broker: "c", latency: ms, failed: true},
			{broker: "a", latency: ms, failed: true, after: ms},
			{broker: "b", latency: ms, failed: true, after: ms},
		}, []string{"c"}, []string{"c", "d"}},
		{"the lower latency", []outcome{
			{broker: "a", latency: 900 * ms, reachable: true},
			{broker: "b", latency: 700 * ms, reachable: true},
			{broker: "c", latency: 800 * ms, reachable: true},
		}, []string{"b"}, []string{"b", "d"}},
		{"ties by name: the first stays isolated", []outcome{
			{broker: "c", latency: ms, failed: true},
			{broker: "a", latency: ms, failed: true},
			{broker: "b", latency: ms, failed: true},
		}, []string{"c"}, []string{"c", "d"}},
		{"all isolated: the two least bad serve", []outcome{
			{broker: "a", latency: ms, failed: true},
			{broker: "b", latency: 700 * ms, reachable: true},
			{broker: "c", latency: ms, failed: true, reachable: true},
			{broker: "d", latency: ms, failed: true},
		}, []string{"b", "c"}, []string{"b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.5} })
			info := oneQueueEach(t, "a", "b", "c", "d")
			apply(s, clk, tt.outcomes)
			if got := s.Released(info); !slices.Equal(got, tt.wantReleased) {
				t.Errorf("Released() = %v, want %v", got, tt.wantReleased)
			}
			if got := pickedBrokers(t, s, info); !slices.Equal(got, tt.wantPicked) {
				t.Errorf("brokers picked = %v, want %v", got, tt.wantPicked)
			}
			for _, it := range s.Table().Items() {
				if tt := s.Table(); it.Available != tt.IsAvailable(it.Broker) {
					t.Errorf("item %s Available = %t, IsAvailable() = %t", it.Broker, it.Available, tt.IsAvailable(it.Broker))
				}
			}
		})
	}
}

// TestIsolationCapOffIsReference checks that without the cap (Reference5's
// zero fraction, and a fraction of 1) every isolated broker is avoided.
func TestIsolationCapOffIsReference(t *testing.T) {
	for _, frac := range []float64{0, 1} {
		t.Run(fmt.Sprint(frac), func(t *testing.T) {
			s, clk := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: frac} })
			info := oneQueueEach(t, "a", "b", "c", "d")
			apply(s, clk, []outcome{
				{broker: "a", latency: time.Millisecond, failed: true},
				{broker: "b", latency: time.Millisecond, failed: true},
				{broker: "c", latency: time.Millisecond, failed: true},
			})
			if got := s.Released(info); got != nil {
				t.Errorf("Released() = %v, want nil", got)
			}
			if got := pickedBrokers(t, s, info); !slices.Equal(got, []string{"d"}) {
				t.Errorf("brokers picked = %v, want [d]", got)
			}
		})
	}
}

// TestIsolationCapFollowsTheTable checks the route's view through changes of
// the table, each seen by the next pick:
//
//  1. a, b, c fail one millisecond apart: a, whose isolation ends first, is
//     released;
//  2. a fails again: its isolation now ends last, and b, ending first, is
//     released instead;
//  3. isolations end: with two isolated the cap no longer binds;
//  4. a new isolation is avoided at once.
func TestIsolationCapFollowsTheTable(t *testing.T) {
	const ms = time.Millisecond
	s, clk := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.5} })
	info := oneQueueEach(t, "a", "b", "c", "d")
	check := func(step string, wantReleased, wantPicked []string) {
		t.Helper()
		if got := pickedBrokers(t, s, info); !slices.Equal(got, wantPicked) {
			t.Errorf("%s: brokers picked = %v, want %v", step, got, wantPicked)
		}
		if got := s.Released(info); !slices.Equal(got, wantReleased) {
			t.Errorf("%s: Released() = %v, want %v", step, got, wantReleased)
		}
	}
	apply(s, clk, []outcome{
		{broker: "a", latency: ms, failed: true},
		{broker: "b", latency: ms, failed: true, after: ms},
		{broker: "c", latency: ms, failed: true, after: ms},
	})
	check("1", []string{"a"}, []string{"a", "d"})
	apply(s, clk, []outcome{{broker: "a", latency: ms, failed: true, after: ms}})
	check("2", []string{"b"}, []string{"b", "d"})
	clk.Advance(10*time.Second - 2*ms) // b's isolation (from t0+1ms) ends
	check("3", nil, []string{"b", "d"})
	apply(s, clk, []outcome{{broker: "d", latency: 700 * ms, reachable: true}})
	// a, c, d isolated; d (latency only) is the least bad.
	check("4", []string{"d"}, []string{"b", "d"})
}

// TestIsolationCapLimit checks how many brokers of a route may be avoided:
// at least one, the fraction rounded up (Envoy's count), and the cap only
// binds below the route's size.
func TestIsolationCapLimit(t *testing.T) {
	tests := []struct {
		frac    float64
		brokers int
		isolate int
		want    int // brokers avoided
	}{
		{0.5, 1, 1, 1},
		{0.5, 2, 2, 1},
		{0.5, 3, 3, 2},
		{0.5, 4, 4, 2},
		{0.5, 5, 5, 3},
		{0.1, 4, 4, 1},
		{0.1, 30, 30, 3},
		{0.1, 31, 31, 4},
		{0.75, 4, 4, 3},
		{0.3, 10, 10, 3},
		{0.5, 8, 3, 3},
		{0.5, 8, 8, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v/%d/%d", tt.frac, tt.brokers, tt.isolate), func(t *testing.T) {
			s, _ := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: tt.frac} })
			names := make([]string, tt.brokers)
			for i := range names {
				names[i] = fmt.Sprintf("b%02d", i)
			}
			info := oneQueueEach(t, names...)
			for _, n := range names[:tt.isolate] {
				s.Update(n, time.Millisecond, true, false)
			}
			if got := tt.brokers - len(pickedBrokers(t, s, info)); got != tt.want {
				t.Errorf("brokers avoided = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestIsolationCapRetry checks that a retry still avoids the last broker
// when it is one the cap keeps in service.
func TestIsolationCapRetry(t *testing.T) {
	s, clk := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.5} })
	info := oneQueueEach(t, "a", "b", "c", "d")
	apply(s, clk, []outcome{
		{broker: "a", latency: time.Millisecond, failed: true},
		{broker: "b", latency: 700 * time.Millisecond, reachable: true},
		{broker: "c", latency: time.Millisecond, failed: true},
	})
	for i := range 4 {
		info.Index().Store(int32(i))
		p, _ := s.Select(info, latency.PickInfo{LastBroker: "b"})
		if p.Queue.BrokerName != "d" || p.Stage != latency.StageAvailable {
			t.Errorf("Select(last b) from %d = %v at %s, want d at available", i, p.Queue, p.Stage)
		}
	}
}

// TestIsolationCapRetryPrefersHealthy checks that a retry goes to a broker
// nothing isolates before one the cap keeps in service: of four brokers
// (two may be avoided), d, c and b failed in that order and d is kept in
// service, yet the retry after b's failure goes to a from every index
// position.
func TestIsolationCapRetryPrefersHealthy(t *testing.T) {
	s, clk := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.5} })
	info := oneQueueEach(t, "a", "b", "c", "d")
	apply(s, clk, []outcome{
		{broker: "d", latency: time.Millisecond, failed: true},
		{broker: "c", latency: time.Millisecond, failed: true, after: time.Millisecond},
		{broker: "b", latency: time.Millisecond, failed: true, after: time.Millisecond},
	})
	if got := s.Released(info); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("Released() = %v, want [d]", got)
	}
	for i := range 4 {
		info.Index().Store(int32(i))
		if p, _ := s.Select(info, latency.PickInfo{LastBroker: "b"}); p.Queue.BrokerName != "a" {
			t.Errorf("retry after b from %d = %v, want a", i, p.Queue)
		}
		info.Index().Store(int32(i))
		if p, _ := s.Select(info, latency.PickInfo{LastBroker: "a"}); p.Queue.BrokerName != "d" {
			t.Errorf("retry after a from %d = %v, want d (kept in service: the only one left)", i, p.Queue)
		}
	}
	// A first attempt spreads over a and d.
	if got := pickedBrokers(t, s, info); !slices.Equal(got, []string{"a", "d"}) {
		t.Errorf("first attempts reach %v, want [a d]", got)
	}
}

// TestIsolationCapAllocations checks that a pick that must recompute the
// route's view allocates nothing.
func TestIsolationCapAllocations(t *testing.T) {
	s, clk := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.5} })
	info := oneQueueEach(t, "a", "b", "c", "d")
	apply(s, clk, []outcome{
		{broker: "a", latency: time.Millisecond, failed: true},
		{broker: "b", latency: time.Millisecond, failed: true},
		{broker: "c", latency: time.Millisecond, failed: true},
	})
	s.Select(info, latency.PickInfo{})
	reachable := false
	allocs := testing.AllocsPerRun(200, func() {
		reachable = !reachable
		s.Table().SetReachable("b", reachable) // moves the isolation epoch on
		s.Select(info, latency.PickInfo{})
	})
	if allocs != 0 {
		t.Errorf("Select() with a recompute allocates %v times, want 0", allocs)
	}
	want := []string{"c"} // ties by name: a, b, c from worst
	if reachable {
		want = []string{"b"} // b reachable: the least bad
	}
	if got := s.Released(info); !slices.Equal(got, want) {
		t.Errorf("Released() = %v, want %v", got, want)
	}
}

// TestIsolationCapConcurrent picks from many goroutines while others
// isolate, probe and recover brokers; under the race detector this checks
// the view's publication. At the end, on one goroutine, the view must match
// the table.
func TestIsolationCapConcurrent(t *testing.T) {
	s, clk := policyStrategy(t, func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 0.5} })
	names := []string{"a", "b", "c", "d", "e", "f"}
	info := oneQueueEach(t, names...)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				if _, ok := s.Select(info, latency.PickInfo{}); !ok {
					t.Error("Select() found nothing")
					return
				}
				if g == 0 && i%50 == 0 {
					s.Released(info)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 500 {
			b := names[i%len(names)]
			s.Update(b, time.Duration(i%3)*time.Second, i%2 == 0, i%5 == 0)
			if i%7 == 0 {
				clk.Advance(3 * time.Second)
			}
		}
	})
	wg.Wait()
	for _, b := range names {
		s.Update(b, time.Millisecond, true, false)
	}
	if got := len(s.Released(info)); got != 3 {
		t.Errorf("Released() has %d brokers with all 6 isolated, want 3", got)
	}
	if got := pickedBrokers(t, s, info); len(got) != 3 {
		t.Errorf("brokers picked = %v, want 3 of them", got)
	}
}

// TestBackoff follows one broker through failure isolations with the
// backoff at 2x, 60 s at most, two answers forgiving a step.
//
//  1. A failure isolates it for the table's 10 s (level 1); another failure
//     while it is isolated by a failure extends the isolation at the same
//     level (a burst of sends failing on one outage counts once).
//  2. Each failure after an isolation ended doubles it: 20 s, 40 s, then
//     60 s (capped), and the level stops growing once capped.
//  3. Answered sends forgive: two per step.
//  4. A slow answer isolates for latency without touching the level; a
//     failure then starts a failure isolation and raises the level.
func TestBackoff(t *testing.T) {
	s, clk := policyStrategy(t, func(c *latency.Config) {
		c.Backoff = &latency.BackoffConfig{Multiplier: 2, Max: time.Minute, Decay: 2}
	})
	const sec = time.Second
	steps := []struct {
		name      string
		after     time.Duration
		latency   time.Duration
		failed    bool
		wantUntil time.Duration // from t0; -1: not checked
		wantLevel int
	}{
		{"first failure", 0, time.Millisecond, true, 10 * sec, 1},
		{"failure while isolated by a failure", sec, time.Millisecond, true, 11 * sec, 1},
		{"second isolation", 11 * sec, time.Millisecond, true, 32 * sec, 2},
		{"third isolation", 20 * sec, time.Millisecond, true, 72 * sec, 3},
		{"fourth isolation: capped", 40 * sec, time.Millisecond, true, 132 * sec, 4},
		{"fifth isolation: level stays", 60 * sec, time.Millisecond, true, 192 * sec, 4},
		{"one answer", 60 * sec, time.Millisecond, false, -1, 4},
		{"two answers", 0, time.Millisecond, false, -1, 3},
		{"three answers", 0, time.Millisecond, false, -1, 3},
		{"", 0, time.Millisecond, false, -1, 2},
		{"", 0, time.Millisecond, false, -1, 2},
		{"", 0, time.Millisecond, false, -1, 1},
		{"", 0, time.Millisecond, false, -1, 1},
		{"all forgiven", 0, time.Millisecond, false, -1, 0},
		{"forgiving more does nothing", 0, time.Millisecond, false, -1, 0},
		{"slow answer: latency isolation", 0, 700 * time.Millisecond, false, 194 * sec, 0},
		{"failure of a broker isolated for latency", sec, time.Millisecond, true, 203 * sec, 1},
		{"failure at level 1 while isolated by a failure", sec, time.Millisecond, true, 204 * sec, 1},
	}
	for i, st := range steps {
		clk.Advance(st.after)
		s.Update("b", st.latency, st.failed, false)
		if st.wantUntil >= 0 {
			it, _ := s.Table().Item("b")
			if got := it.IsolatedUntil.Sub(t0); got != st.wantUntil {
				t.Errorf("step %d %s: isolated until t0+%v, want t0+%v", i, st.name, got, st.wantUntil)
			}
		}
		if got := s.BackoffLevel("b"); got != st.wantLevel {
			t.Errorf("step %d %s: BackoffLevel() = %d, want %d", i, st.name, got, st.wantLevel)
		}
	}
}

// TestBackoffBounds checks the backoff at its edges: a maximum below the
// table's own isolation never shortens it, a multiplier of 1 never grows
// it, and with the backoff off the level is always 0.
func TestBackoffBounds(t *testing.T) {
	tests := []struct {
		name       string
		multiplier float64
		max        time.Duration
		want       []time.Duration // isolation of each failure, one after another
		wantLevel  int
	}{
		{"max below the table's", 2, 5 * time.Second, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}, 1},
		{"multiplier 1", 1, time.Minute, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}, 1},
		{"multiplier 3", 3, time.Minute, []time.Duration{10 * time.Second, 30 * time.Second, time.Minute, time.Minute}, 3},
		{"off", 0, 0, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clk := policyStrategy(t, func(c *latency.Config) {
				c.Backoff = &latency.BackoffConfig{Multiplier: tt.multiplier, Max: tt.max}
				if tt.multiplier != 0 {
					c.Backoff.Decay = 1
				}
			})
			for i, want := range tt.want {
				now := clk.Now()
				s.Update("b", time.Millisecond, true, false)
				it, _ := s.Table().Item("b")
				if got := it.IsolatedUntil.Sub(now); got != want {
					t.Errorf("failure %d isolated for %v, want %v", i, got, want)
				}
				clk.Advance(it.IsolatedUntil.Sub(now))
			}
			if got := s.BackoffLevel("b"); got != tt.wantLevel {
				t.Errorf("BackoffLevel() = %d, want %d", got, tt.wantLevel)
			}
		})
	}
}

// TestBackoffEvents checks that the isolation an observer is told of is the
// lengthened one.
func TestBackoffEvents(t *testing.T) {
	var got []time.Duration
	obs := isolationRecorder(func(ev latency.IsolationEvent) { got = append(got, ev.Duration) })
	s, clk := policyStrategy(t, func(c *latency.Config) {
		c.Backoff = &latency.BackoffConfig{Multiplier: 2, Max: time.Minute, Decay: 1}
	}, latency.WithObserver(obs))
	s.Update("b", 0, true, false)
	clk.Advance(10 * time.Second)
	s.Update("b", 0, true, false)
	if want := []time.Duration{10 * time.Second, 20 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("isolation events = %v, want %v", got, want)
	}
}

type isolationRecorder func(latency.IsolationEvent)

func (f isolationRecorder) OnIsolate(ev latency.IsolationEvent) { f(ev) }
func (isolationRecorder) OnRecover(latency.RecoveryEvent)       {}
func (isolationRecorder) OnProbe(latency.ProbeEvent)            {}

// TestBackoffAllocations checks that updates allocate nothing with the
// backoff on: answers that forgive and failures of an isolated broker.
func TestBackoffAllocations(t *testing.T) {
	s, _ := policyStrategy(t, func(c *latency.Config) {
		c.Backoff = &latency.BackoffConfig{Multiplier: 2, Max: time.Minute, Decay: 1000}
	})
	s.Update("b", 0, true, false)
	tests := []struct {
		name   string
		update func()
	}{
		{"answer", func() { s.Update("b", 3*time.Millisecond, false, true) }},
		{"failure", func() { s.Update("b", time.Millisecond, true, false) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(200, tt.update); got != 0 {
				t.Errorf("Update() allocates %v times, want 0", got)
			}
		})
	}
}

// TestProbeFailures checks what a probe's answer does to a broker marked
// reachable, with the probe-failure policy on and off: a failed probe (an
// error, or the probe's timeout) marks it unreachable only with the policy;
// an inconclusive probe never changes it.
func TestProbeFailures(t *testing.T) {
	tests := []struct {
		name          string
		on            bool
		err           error
		wantReachable bool
		wantBecame    bool // the event's BecameUnreachable
	}{
		{"answered", true, nil, true, false},
		{"refused", true, errRefused, false, true},
		{"timed out", true, context.DeadlineExceeded, false, true},
		{"inconclusive", true, fmt.Errorf("plugin died: %w", probe.ErrInconclusive), true, false},
		{"refused, policy off (reference)", false, errRefused, true, false},
		{"timed out, policy off (reference)", false, context.DeadlineExceeded, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			r := newDetectorRig(t, ctrl, true, func(c *latency.Config) {
				c.Detector = true
				c.ProbeFailures = tt.on
			})
			r.isolate("b", true)
			r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
			r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(tt.err)
			r.obs.EXPECT().OnProbe(gomock.Cond(func(ev latency.ProbeEvent) bool {
				return ev.Broker == "b" && ev.BecameUnreachable == tt.wantBecame && !ev.BecameReachable
			}))
			r.round(t)
			it, _ := r.s.Table().Item("b")
			if it.Reachable != tt.wantReachable {
				t.Errorf("after the round Reachable = %t, want %t", it.Reachable, tt.wantReachable)
			}
			// A second failed probe tells nothing new.
			if tt.wantBecame {
				r.clock.Advance(2 * time.Second)
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(tt.err)
				r.obs.EXPECT().OnProbe(gomock.Cond(func(ev latency.ProbeEvent) bool { return !ev.BecameUnreachable }))
				r.round(t)
			}
		})
	}
}

// TestProbeFailuresRank checks the probe-failure policy's effect on the
// isolation cap: a broker found unreachable by a probe is kept isolated
// before one that answers.
func TestProbeFailuresRank(t *testing.T) {
	down := errors.New("refused")
	service := probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
		if addr == "addr-c" {
			return down
		}
		return nil
	})
	resolver := probe.ResolverFunc(func(b string) (string, bool) { return "addr-" + b, true })
	s, _ := policyStrategy(t, func(c *latency.Config) {
		c.IsolationCap, c.ProbeFailures, c.Detector = &latency.IsolationCapConfig{MaxFraction: 0.5}, true, true
	}, latency.WithResolver(resolver), latency.WithServiceDetector(service))
	info := oneQueueEach(t, "a", "b", "c", "d")
	for _, b := range []string{"a", "b", "c"} {
		s.Update(b, 700*time.Millisecond, false, true) // slow: isolated for latency, reachable
	}
	if got := s.Released(info); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("Released() before the round = %v, want [c] (ties by name)", got)
	}
	if _, err := s.DetectRound(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := s.Released(info); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Released() after c's probe failed = %v, want [b]", got)
	}
}

// TestPoliciesOffInReferencePresets checks that Reference5 and Reference4
// have every policy off, and that DefaultConfig turns each on.
func TestPoliciesOffInReferencePresets(t *testing.T) {
	for _, c := range []latency.Config{latency.Reference5(), latency.Reference4()} {
		if c.IsolationCap != nil || c.Backoff != nil || c.ProbeFailures || c.Recovery != nil || c.Capacity != nil {
			t.Errorf("reference preset %s has a policy on: %+v", c.Mode, c)
		}
	}
	d := latency.DefaultConfig()
	if *d.IsolationCap != (latency.IsolationCapConfig{MaxFraction: 0.5}) || *d.Backoff != (latency.BackoffConfig{Multiplier: 2, Max: time.Minute, Decay: 1000}) ||
		!d.ProbeFailures || d.DetectParallel != 16 {
		t.Errorf("DefaultConfig() policies = %+v, want cap 0.5, backoff 2 up to 1m forgiven per 1000, probe failures, 16 probes", d)
	}
}

// TestPoliciesWithGivenTable checks that a strategy over a table it was
// given runs its policies as over its own: the cap keeps one of three
// isolated brokers of four in service, and the backoff counts the failures.
// The capacity model is off: with it, the cap binds only once the broker
// left pushes back (TestCapacityCapBindsOnlyWhenShort).
func TestPoliciesWithGivenTable(t *testing.T) {
	ft := latency.NewFaultTable(latency.ModeV5, clock.NewManual(t0))
	s, _ := policyStrategy(t, func(c *latency.Config) { *c = latency.DefaultConfig(); c.Detector = false; c.Capacity = nil },
		latency.WithFaultTable(ft))
	info := oneQueueEach(t, "a", "b", "c", "d")
	for _, b := range []string{"a", "b", "c"} {
		s.Update(b, 0, true, false)
	}
	if got := s.Released(info); len(got) != 1 {
		t.Errorf("Released() = %v, want one of a, b, c", got)
	}
	if got := s.BackoffLevel("a"); got != 1 {
		t.Errorf("BackoffLevel() = %d, want 1", got)
	}
}

// TestPolicyConfigValidate checks the policies' settings: their ranges and
// the settings the backoff needs.
func TestPolicyConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		change    func(c *latency.Config)
		wantField string // "" means valid
	}{
		{"DefaultConfig", func(c *latency.Config) { *c = latency.DefaultConfig() }, ""},
		{"cap of 1", func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 1} }, ""},
		{"negative cap", func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: -0.1} }, "IsolationCap.MaxFraction"},
		{"cap above 1", func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: 1.5} }, "IsolationCap.MaxFraction"},
		{"NaN cap", func(c *latency.Config) { c.IsolationCap = &latency.IsolationCapConfig{MaxFraction: math.NaN()} }, "IsolationCap.MaxFraction"},
		{"backoff below 1", func(c *latency.Config) {
			c.Backoff = &latency.BackoffConfig{Multiplier: 0.5, Max: time.Minute, Decay: 1}
		}, "Backoff.Multiplier"},
		{"infinite backoff", func(c *latency.Config) {
			c.Backoff = &latency.BackoffConfig{Multiplier: math.Inf(1), Max: time.Minute, Decay: 1}
		}, "Backoff.Multiplier"},
		{"NaN backoff", func(c *latency.Config) {
			c.Backoff = &latency.BackoffConfig{Multiplier: math.NaN(), Max: time.Minute, Decay: 1}
		}, "Backoff.Multiplier"},
		{"backoff without a maximum", func(c *latency.Config) { c.Backoff = &latency.BackoffConfig{Multiplier: 2, Decay: 1} }, "Backoff.Max"},
		{"backoff without decay", func(c *latency.Config) { c.Backoff = &latency.BackoffConfig{Multiplier: 2, Max: time.Minute} }, "Backoff.Decay"},
		{"negative maximum", func(c *latency.Config) { c.Backoff = &latency.BackoffConfig{Max: -time.Second} }, "Backoff.Max"},
		{"negative decay", func(c *latency.Config) { c.Backoff = &latency.BackoffConfig{Decay: -1} }, "Backoff.Decay"},
		{"backoff settings kept while it is off", func(c *latency.Config) { c.Backoff = &latency.BackoffConfig{Max: time.Minute, Decay: 5} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := latency.Reference5()
			tt.change(&cfg)
			err := cfg.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *latency.ConfigError
			if !errors.Is(err, latency.ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != tt.wantField {
				t.Errorf("Validate() = %v, want a *ConfigError for %s", err, tt.wantField)
			}
			if _, serr := latency.NewStrategy(cfg); !errors.Is(serr, latency.ErrInvalidConfig) {
				t.Errorf("NewStrategy() error = %v, want the validation error", serr)
			}
		})
	}
}

// TestPoliciesIgnoredInV4 checks that a v4 strategy built with the policies
// on decides as 4.9.8: every isolated broker is avoided, isolations do not
// grow.
func TestPoliciesIgnoredInV4(t *testing.T) {
	s, clk := policyStrategy(t, func(c *latency.Config) {
		*c = latency.DefaultConfig()
		c.Mode, c.Detector = latency.ModeV4, false
	})
	info := oneQueueEach(t, "a", "b", "c", "d")
	for _, b := range []string{"a", "b", "c"} {
		s.Update(b, time.Millisecond, true, false)
	}
	if got := s.Released(info); got != nil {
		t.Errorf("Released() = %v, want nil", got)
	}
	for i := range 4 {
		info.Index().Store(int32(i))
		if p, _ := s.Select(info, latency.PickInfo{}); p.Queue.BrokerName != "d" {
			t.Errorf("Select() from %d = %v, want d", i, p.Queue)
		}
	}
	clk.Advance(10 * time.Minute)
	s.Update("a", time.Millisecond, true, false)
	if it, _ := s.Table().Item("a"); it.IsolatedUntil.Sub(clk.Now()) != 10*time.Minute || s.BackoffLevel("a") != 0 {
		t.Errorf("a isolated until now+%v at level %d, want 10m (4.x) at level 0", it.IsolatedUntil.Sub(clk.Now()), s.BackoffLevel("a"))
	}
}
