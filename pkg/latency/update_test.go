package latency_test

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// TestUpdateNegativeLatency checks that a negative latency (a caller's
// clock stepping back) counts as 0, as Update documents: it is stored as 0,
// isolates for the table's answer at 0, and does not make the broker look
// better than one that answered in 0 ms when v4 picks the least bad.
func TestUpdateNegativeLatency(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := latency.Reference5()
			if mode == latency.ModeV4 {
				cfg = latency.Reference4()
			}
			cfg.FaultTolerance = true
			// A table whose first threshold is 0 isolates a 0 ms send for
			// 1 s, and nothing below 0.
			cfg.Durations = latency.MustStepTable([]time.Duration{0, time.Second}, []time.Duration{time.Second, time.Minute})
			clk := clock.NewManual(time.UnixMilli(1_000_000))
			s, err := latency.NewStrategy(cfg, latency.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Update("a", -5*time.Second, false, true)
			items := s.Table().Items()
			if len(items) != 1 || items[0].Latency != 0 {
				t.Fatalf("Items() after Update(a, -5s) = %+v, want a with latency 0", items)
			}
			if want := clk.Now().Add(time.Second); !items[0].IsolatedUntil.Equal(want) {
				t.Errorf("IsolatedUntil = %v, want %v (the table's isolation at 0)", items[0].IsolatedUntil, want)
			}
		})
	}
}
