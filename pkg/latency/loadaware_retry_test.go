package latency_test

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestLoadAwareRetryAvoidsLastBroker checks that a load-aware retry's two
// candidates both avoid the broker the retry names as the last one while
// another is available: broker a, the last, has the lowest score of the
// route (never answered: 1 ms, against 500 ms for every other), so a second
// candidate allowed onto a wins the comparison whenever the partner lands
// on it. Every index value of a round of the route is tried, on the seek
// (flag summary) and walk (probe by probe) paths, with and without the
// isolation cap (whose retry pass takes a partner nothing isolates).
func TestLoadAwareRetryAvoidsLastBroker(t *testing.T) {
	brokers := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		name string
		walk bool
		cap  bool
	}{
		{name: "seek"},
		{name: "walk", walk: true},
		{name: "seek with the isolation cap", cap: true},
		{name: "walk with the isolation cap", walk: true, cap: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := policyStrategy(t, func(c *latency.Config) {
				c.LoadAware = true
				if tt.cap {
					c.MaxIsolatedFraction = 0.5
				}
			})
			if tt.walk {
				latency.WalkOnly(s)
			}
			info := loadRoute(t, brokers...)
			s.RouteChanged(info)
			for _, b := range brokers[1:] {
				pickOn(t, s, info, b).Done(answeredIn(500 * time.Millisecond))
			}
			if got := s.LoadLatency("a"); got != 0 {
				t.Fatalf("LoadLatency(a) = %v, want 0 (never answered, the lowest score)", got)
			}
			// The first attempt's pick goes to a when its probe lands there
			// or its partner does: show that a's score wins a comparison.
			won := false
			for range 4 * len(brokers) {
				p, _ := s.Select(info, latency.PickInfo{})
				won = won || p.Queue.BrokerName == "a"
				p.Release()
			}
			if !won {
				t.Fatal("no first-attempt pick went to a: the setup does not make a the preferred broker")
			}
			for i := range 8 * len(brokers) {
				p, ok := s.Select(info, latency.PickInfo{LastBroker: "a"})
				if !ok || p.Queue == nil {
					t.Fatalf("retry %d: Select = %+v, %v", i, p, ok)
				}
				if p.Queue.BrokerName == "a" {
					t.Fatalf("retry %d picked a, the retry's last broker, with four others available (stage %v)", i, p.Stage)
				}
				if p.Stage != latency.StageAvailable {
					t.Errorf("retry %d: stage %v, want available", i, p.Stage)
				}
				p.Release()
			}
			for _, b := range brokers {
				if n := s.InFlight(b); n != 0 {
					t.Errorf("InFlight(%s) = %d after every release, want 0", b, n)
				}
			}
		})
	}
}

// TestLoadAwareThrottledLeavesScore checks that an attempt the client's own
// flow control refused (ClassThrottled: no request met the broker) ends its
// in-flight count without folding its latency into the broker's PeakEWMA, on
// every path an outcome is reported on: a 5 s throttled wait after a 10 ms
// answer leaves 10 ms, and on a broker never answered leaves it never
// answered (0).
func TestLoadAwareThrottledLeavesScore(t *testing.T) {
	ms := time.Millisecond
	for _, path := range []latency.Path{latency.PathSend, latency.PathAsyncAnswer, latency.PathAsyncResend} {
		for _, before := range []time.Duration{0, 10 * ms} {
			t.Run(path.String()+"/after "+before.String(), func(t *testing.T) {
				s, clock := policyStrategy(t, loadAware)
				info := loadRoute(t, "a")
				if before > 0 {
					pickOn(t, s, info, "a").Done(answeredIn(before))
				}
				clock.Advance(ms)
				p := pickOn(t, s, info, "a")
				p.Done(latency.Outcome{Class: latency.ClassThrottled, Path: path, Latency: 5 * time.Second})
				if got := s.LoadLatency("a"); got != before {
					t.Errorf("LoadLatency(a) after a throttled 5s = %v, want %v (a throttled attempt says nothing of the broker)", got, before)
				}
				if n := s.InFlight("a"); n != 0 {
					t.Errorf("InFlight(a) = %d, want 0 (the throttled attempt ended)", n)
				}
			})
		}
	}
}
