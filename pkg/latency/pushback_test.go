package latency

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/route"
)

// TestReleaseOnPushBack drives the push-back rule on the manual clock: four
// brokers, b isolated by a failure (reachable, so the fraction's cap of two
// does not bind), and outcomes on the others decide whether the cap keeps b
// in service.
func TestReleaseOnPushBack(t *testing.T) {
	type step struct {
		broker  string
		o       Outcome
		advance time.Duration // before the outcome
	}
	busy := Outcome{Class: ClassBusy, Latency: time.Millisecond}
	fast := Outcome{Class: ClassAnswered, Latency: 3 * time.Millisecond}
	slow := Outcome{Class: ClassAnswered, Latency: 80 * time.Millisecond}
	failed := Outcome{Class: ClassTransportFailed, Latency: time.Millisecond}
	tests := []struct {
		name         string
		off          bool
		unreachableB bool
		steps        []step
		wantReleased []string
		wantPushing  []string
	}{
		{name: "healthy brokers in service: nothing released", steps: []step{{"a", fast, 0}, {"c", fast, 0}}},
		{name: "a busy answer releases b", steps: []step{{"a", busy, 0}}, wantReleased: []string{"b"}, wantPushing: []string{"a"}},
		{name: "a slow answer is push-back too", steps: []step{{"c", slow, 0}}, wantReleased: []string{"b"}, wantPushing: []string{"c"}},
		{name: "a late fast answer does not end it", steps: []step{{"a", busy, 0}, {"a", fast, 500 * time.Millisecond}},
			wantReleased: []string{"b"}, wantPushing: []string{"a"}},
		{name: "a fast answer started a hold after ends it", steps: []step{{"a", busy, 0}, {"a", fast, 1100 * time.Millisecond}}},
		{name: "a failure of another class ends it", steps: []step{{"a", busy, 0}, {"a", failed, 0}}},
		{name: "an unreachable broker is never released", unreachableB: true, steps: []step{{"a", busy, 0}, {"c", busy, 0}},
			wantPushing: []string{"a", "c"}},
		{name: "off: nothing tracked", off: true, steps: []step{{"a", busy, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Detector = false
			cfg.ReleaseOnPushBack = !tt.off
			cfg.BusyDecay = time.Second // busy answers isolate nothing: a and c stay in service
			clk := NewManualClock(time.UnixMilli(1000000))
			s, err := NewStrategy(cfg, WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var qs []route.MessageQueue
			for _, b := range []string{"a", "b", "c", "d"} {
				qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b})
				s.Update(b, time.Millisecond, false, true)
			}
			info, err := route.NewPublishInfoFromQueues("T", qs)
			if err != nil {
				t.Fatal(err)
			}
			s.Update("b", time.Millisecond, true, !tt.unreachableB)
			if got := s.Released(info); got != nil {
				t.Fatalf("Released before any push-back = %v, want none", got)
			}
			for _, st := range tt.steps {
				clk.Advance(st.advance)
				p := Pick{Queue: &route.MessageQueue{Topic: "T", BrokerName: st.broker}, Reporter: s}
				p.Done(st.o)
			}
			if got := s.Released(info); !slices.Equal(got, tt.wantReleased) {
				t.Errorf("Released = %v, want %v", got, tt.wantReleased)
			}
			var pushing []string
			for _, b := range []string{"a", "b", "c", "d"} {
				if s.PushingBack(b) {
					pushing = append(pushing, b)
				}
			}
			if !slices.Equal(pushing, tt.wantPushing) {
				t.Errorf("pushing back = %v, want %v", pushing, tt.wantPushing)
			}
		})
	}
}

// TestReleaseOnPushBackReferenceModes: off in both reference presets and the
// mqfault preset, and its settings are validated.
func TestReleaseOnPushBackReferenceModes(t *testing.T) {
	for _, c := range []Config{Reference5(), Reference4(), DefaultConfig()} {
		if c.ReleaseOnPushBack {
			t.Errorf("%s preset has ReleaseOnPushBack on", c.Mode)
		}
	}
	c := DefaultConfig()
	c.PushBackLatency, c.PushBackHold = -1, -1
	err := c.Validate()
	for _, f := range []string{"PushBackLatency", "PushBackHold"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate() = %v, want it to name %s", err, f)
		}
	}
}
