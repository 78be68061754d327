package latency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestProbeEndsBackoff isolates broker b twice by failures (the second
// lengthened by the backoff to 20 s), runs a detector round whose probe
// answers or not, and checks on the manual clock when the isolation ends and
// what the next attempt does.
func TestProbeEndsBackoff(t *testing.T) {
	tests := []struct {
		name      string
		on        bool
		probeErr  error
		probeAt   time.Duration // after the second failure
		wantEnd   time.Duration // isolation end, after the second failure
		nextFails bool          // the attempt after the end fails
		wantNext  time.Duration // the isolation that failure gives
	}{
		{name: "off: the lengthened isolation runs out", on: false, probeAt: 3 * time.Second, wantEnd: 20 * time.Second},
		{name: "probe answers early: cut to the table's 10 s", on: true, probeAt: 3 * time.Second, wantEnd: 10 * time.Second},
		{name: "probe answers late: ends at once", on: true, probeAt: 12 * time.Second, wantEnd: 12 * time.Second},
		{name: "probe fails: nothing cut", on: true, probeErr: errors.New("refused"), probeAt: 3 * time.Second, wantEnd: 20 * time.Second},
		{name: "the next attempt fails: one level longer", on: true, probeAt: 12 * time.Second, wantEnd: 12 * time.Second,
			nextFails: true, wantNext: 40 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probeErr := tt.probeErr
			s, clock := policyStrategy(t, func(c *latency.Config) {
				c.Detector = true
				c.IsolationBackoff, c.MaxIsolation, c.BackoffDecay = 2, time.Minute, 1000
				c.ProbeEndsBackoff = tt.on
			}, latency.WithResolver(latency.StaticResolver{"b": "127.0.0.1:1"}),
				latency.WithServiceDetector(latency.ServiceDetectorFunc(func(context.Context, string) error { return probeErr })))
			ft := s.FaultTolerance()
			fail := func() { s.Update("b", time.Millisecond, true, false) }
			fail()
			clock.Advance(10 * time.Second) // the first isolation (10 s) ends
			if !ft.IsAvailable("b") {
				t.Fatal("first isolation did not end after 10 s")
			}
			fail() // a repeat offender: 20 s
			clock.Advance(tt.probeAt)
			if _, err := s.DetectRound(t.Context()); err != nil {
				t.Fatal(err)
			}
			if tt.wantEnd > tt.probeAt {
				clock.Advance(tt.wantEnd - tt.probeAt - time.Millisecond)
				if ft.IsAvailable("b") {
					t.Fatalf("available before %v", tt.wantEnd)
				}
				clock.Advance(time.Millisecond)
			} else {
				clock.Advance(0)
			}
			if !ft.IsAvailable("b") {
				t.Fatalf("still isolated at %v, want the end there", tt.wantEnd)
			}
			if !tt.nextFails {
				return
			}
			fail()
			clock.Advance(tt.wantNext - time.Millisecond)
			if ft.IsAvailable("b") {
				t.Errorf("available before %v after the next failure", tt.wantNext)
			}
			clock.Advance(time.Millisecond)
			if !ft.IsAvailable("b") {
				t.Errorf("still isolated %v after the next failure", tt.wantNext)
			}
		})
	}
}
