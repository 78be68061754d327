package latency_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// isolations records the Extended flag of every isolation event.
type isolations struct {
	latency.NopObserver
	mu       sync.Mutex // guards extended
	extended []bool
}

func (o *isolations) OnIsolate(ev latency.IsolationEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.extended = append(o.extended, ev.Extended)
}

// TestIsolationEventExtended checks, in both modes, that an isolation that
// begins says Extended false, one that lengthens a running isolation says
// true, and one after the last has expired begins again.
func TestIsolationEventExtended(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := latency.Reference5()
			if mode == latency.ModeV4 {
				cfg = latency.Reference4()
			}
			cfg.FaultTolerance = true
			clk := clock.NewManual(t0)
			obs := &isolations{}
			s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithObserver(obs))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Update("b", 600*time.Millisecond, false, true) // begins
			clk.Advance(100 * time.Millisecond)
			s.Update("b", 5*time.Millisecond, true, false) // a failure while isolated: extends
			clk.Advance(time.Hour)                         // expires
			s.Update("b", 5*time.Millisecond, true, false) // begins again
			obs.mu.Lock()
			defer obs.mu.Unlock()
			want := []bool{false, true, false}
			if len(obs.extended) != len(want) {
				t.Fatalf("Extended of the isolation events = %v, want %v", obs.extended, want)
			}
			for i := range want {
				if obs.extended[i] != want[i] {
					t.Errorf("Extended of the isolation events = %v, want %v", obs.extended, want)
					break
				}
			}
		})
	}
}
