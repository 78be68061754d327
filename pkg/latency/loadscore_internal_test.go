package latency

import (
	"math"
	"testing"
	"time"
)

// TestLoadScore checks the load-aware score as a pick reads it, at the
// table's last seen time: the PeakEWMA fades by exp(-t/decay) from its last
// update (so an idle broker's old latency does not keep it out for ever),
// never below the score of a broker never answered; each busy answer adds
// busyCost of push-back, at most busyHold ahead, worked off as time passes.
func TestLoadScore(t *testing.T) {
	const ms = int64(time.Millisecond)
	t0 := int64(1_000_000) * ms
	tests := []struct {
		name string
		set  func(l *brokerLoad)
		at   int64
		want float64
	}{
		{"never answered", func(*brokerLoad) {}, t0, float64(defaultRTT)},
		{"just answered in 100ms", func(l *brokerLoad) { l.observe(t0, 100*time.Millisecond) }, t0, 100 * float64(ms)},
		{"100ms, one decay time later: 1/e", func(l *brokerLoad) { l.observe(t0, 100*time.Millisecond) }, t0 + int64(loadDecay), 100 * float64(ms) / math.E},
		{"600ms, 7 decay times later: under a millisecond, the floor", func(l *brokerLoad) { l.observe(t0, 600*time.Millisecond) }, t0 + 7*int64(loadDecay), float64(defaultRTT)},
		{"faded to the floor", func(l *brokerLoad) { l.observe(t0, 2*time.Millisecond) }, t0 + 100*int64(loadDecay), float64(defaultRTT)},
		{"in flight multiplies", func(l *brokerLoad) { l.observe(t0, 10*time.Millisecond); l.inflight.Store(3) }, t0, 40 * float64(ms)},
		{"one busy answer", func(l *brokerLoad) { l.end(t0, Outcome{Class: ClassBusy}) }, t0, float64(defaultRTT) + float64(busyCost)},
		{"busy answers stop at busyHold", func(l *brokerLoad) {
			for range 20 {
				l.end(t0, Outcome{Class: ClassBusy})
			}
		}, t0, float64(defaultRTT) + float64(busyHold)},
		{"push-back is worked off", func(l *brokerLoad) { l.end(t0, Outcome{Class: ClassBusy}) }, t0 + 150*ms, float64(defaultRTT) + float64(50*ms)},
		{"push-back worked off entirely", func(l *brokerLoad) { l.end(t0, Outcome{Class: ClassBusy}) }, t0 + 300*ms, float64(defaultRTT)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l brokerLoad
			tt.set(&l)
			if got := float64(l.score(tt.at)); got < tt.want-1 || got > tt.want+1 {
				t.Errorf("score = %.0f, want %.0f", got, tt.want)
			}
		})
	}
}

// TestPartner checks the second candidate of a load-aware pick: never the
// first's position, every other position of the route reached as the index
// moves, and about evenly (a fixed partner weighed each broker against one
// other only).
func TestPartner(t *testing.T) {
	for _, n := range []int{2, 3, 16, 64, 1000} {
		for _, p := range []int{0, n / 2, n - 1} {
			counts := make([]int, n)
			rounds := 200 * n
			for idx := range rounds {
				q := partner(p, n, int32(idx))
				if q < 0 || q >= n || q == p {
					t.Fatalf("partner(%d, %d, %d) = %d, want another position of the route", p, n, idx, q)
				}
				counts[q]++
			}
			for q, c := range counts {
				if q == p {
					continue
				}
				if want := rounds / (n - 1); c < want/2 || c > 2*want {
					t.Errorf("n=%d p=%d: position %d was the partner %d times of %d, want about %d", n, p, q, c, rounds, want)
				}
			}
		}
	}
}
