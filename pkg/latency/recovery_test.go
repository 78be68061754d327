package latency_test

import (
	"context"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// recoveryHarness drives one broker, b, of a strategy on the manual clock:
// outcomes reported through a pick (so the rule's outcome hook sees them),
// detector rounds whose probe answers as told, and checks of when b is
// available. Times are offsets from the harness's zero, the moment of the
// failure that starts the lengthened isolation under test.
type recoveryHarness struct {
	t       *testing.T
	s       *latency.Strategy
	clock   *clock.Manual
	zero    time.Time
	probeOK bool
	pick    latency.Pick
}

// at moves the clock to offset d (never back).
func (h *recoveryHarness) at(d time.Duration) {
	h.t.Helper()
	target := h.zero.Add(d)
	if now := h.clock.Now(); target.Before(now) {
		h.t.Fatalf("at(%v): the clock is already at %v", d, now.Sub(h.zero))
	} else {
		h.clock.Advance(target.Sub(now))
	}
}

func (h *recoveryHarness) report(o latency.Outcome) { h.pick.Done(o) }

// fail reports an attempt on b that ran into its timeout.
func (h *recoveryHarness) fail() {
	h.report(latency.Outcome{Class: latency.ClassTransportTimeout, Latency: time.Second})
}

// busy reports a SYSTEM_BUSY answer from b.
func (h *recoveryHarness) busy() {
	h.report(latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Latency: time.Millisecond})
}

// answer reports an answered send of b that took lat.
func (h *recoveryHarness) answer(lat time.Duration) {
	h.report(latency.Outcome{Class: latency.ClassAnswered, Latency: lat})
}

// probe runs a detector round at offset d whose probe of b answers or not.
func (h *recoveryHarness) probe(d time.Duration, ok bool) {
	h.t.Helper()
	h.at(d)
	h.probeOK = ok
	rep, err := h.s.DetectRound(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	if rep.Probed != 1 {
		h.t.Fatalf("round at %v probed %d brokers, want b alone (its check stamp must have passed)", d, rep.Probed)
	}
}

// isolatedUntil checks that b is isolated until exactly offset end: still
// isolated a millisecond before, available at end. It leaves the clock at
// end.
func (h *recoveryHarness) isolatedUntil(end time.Duration) {
	h.t.Helper()
	ft := h.s.Table()
	h.at(end - time.Millisecond)
	if ft.IsAvailable("b") {
		h.t.Fatalf("b available at %v, want isolated until %v", end-time.Millisecond, end)
	}
	h.at(end)
	if !ft.IsAvailable("b") {
		h.t.Fatalf("b isolated at %v, want available from there", end)
	}
}

// stillIsolated checks that b is isolated now.
func (h *recoveryHarness) stillIsolated() {
	h.t.Helper()
	if h.s.Table().IsAvailable("b") {
		h.t.Fatalf("b available at %v, want it isolated", h.clock.Now().Sub(h.zero))
	}
}

// availableNow checks that b is available now (an isolation cut to now ends
// on the timer's next tick, which Advance(0) runs).
func (h *recoveryHarness) availableNow() {
	h.t.Helper()
	h.clock.Advance(0)
	if !h.s.Table().IsAvailable("b") {
		h.t.Fatalf("b isolated at %v, want the cut to have ended it", h.clock.Now().Sub(h.zero))
	}
}

// TestRecoveredAfter holds the sustained recovery rule (Config.Recovery,
// 3 s here) on the manual clock: broker b is isolated by a timeout (10 s,
// the v5 table's), then again at offset 0 (20 s by the backoff: the
// duration table alone gives 10 s), probes answer or not, and each case
// checks when the isolation ends and what b's next attempts do. Rounds are at
// least the detect interval (2 s) apart, so each probes b.
func TestRecoveredAfter(t *testing.T) {
	s := time.Second
	tests := []struct {
		name   string
		change func(c *latency.Config)
		before func(h *recoveryHarness) // before the first failure (offset -10 s)
		during func(h *recoveryHarness) // during the first isolation
		second func(h *recoveryHarness) // the failure at offset 0 (default: a timeout)
		run    func(h *recoveryHarness) // from offset 0
	}{
		{name: "rule off: the lengthened isolation runs out",
			change: func(c *latency.Config) { c.Recovery = nil },
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(20 * s)
			}},
		{name: "backoff off: nothing lengthened, nothing cut",
			change: func(c *latency.Config) { c.Backoff = nil },
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(10 * s)
			}},
		{name: "sustained probes cut it to the table's 10 s",
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(10 * s)
			}},
		{name: "one answer is not sustained",
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.isolatedUntil(20 * s)
			}},
		{name: "sustained after the table's end: ends at once",
			run: func(h *recoveryHarness) {
				h.probe(11*s, true)
				h.probe(14*s, true)
				h.availableNow()
			}},
		{name: "a failed probe in between starts the count again",
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, false) // a flap: the probe times out
				h.probe(7*s, true)
				h.probe(9500*time.Millisecond, true) // 2.5 s of answers: not yet
				h.at(11 * s)
				h.stillIsolated()   // counted from 1 s, it would have ended at 10 s
				h.probe(12*s, true) // 5 s: cut, past the table's end
				h.availableNow()
			}},
		{name: "a probe failing before the cut takes effect calls it off",
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)  // cut to 10 s
				h.probe(7*s, false) // the broker went again: back to 20 s
				h.at(11 * s)
				h.stillIsolated()
				h.probe(12*s, true)
				h.probe(15*s, true) // sustained again: ends at once
				h.availableNow()
			}},
		{name: "answers from before the failure do not count",
			during: func(h *recoveryHarness) {
				h.probe(-7*s, true)
				h.probe(-4*s, true)
			},
			run: func(h *recoveryHarness) {
				h.probe(1*s, true) // one answer since the failure is not 3 s
				h.isolatedUntil(20 * s)
			}},
		{name: "a busy broker is not cut",
			second: func(h *recoveryHarness) { h.busy() },
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.probe(7*s, true)
				h.isolatedUntil(20 * s)
			}},
		{name: "a slow broker is not cut",
			second: func(h *recoveryHarness) {
				h.answer(600 * time.Millisecond) // the v5 table isolates 2 s for it
				h.fail()
			},
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(20 * s)
			}},
		{name: "a slow answer more than a failure isolation before is forgotten",
			before: func(h *recoveryHarness) {
				h.at(-10*s - 500*time.Millisecond)
				h.answer(600 * time.Millisecond)
			},
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(10 * s)
			}},
		{name: "a failing trial isolates one level longer and holds",
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(10 * s)
				h.fail() // the trial's attempt: 40 s
				h.probe(11*s, true)
				h.probe(14*s, true)
				h.probe(17*s, true)
				h.isolatedUntil(50 * s)
				h.fail() // still held: 60 s (Backoff.Max), not cut
				h.probe(51*s, true)
				h.probe(54*s, true)
				h.isolatedUntil(110 * s)
			}},
		{name: "answers during a trial forgive nothing",
			change: func(c *latency.Config) { c.Backoff.Decay = 1 },
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(10 * s)
				h.answer(3 * time.Millisecond)
				h.answer(3 * time.Millisecond)
				if got := h.s.BackoffLevel("b"); got != 2 {
					h.t.Fatalf("BackoffLevel = %d after answers on trial, want 2", got)
				}
				h.probe(21*s, true) // past the 20 s the cut isolation would have run: the trial is over
				h.answer(3 * time.Millisecond)
				if got := h.s.BackoffLevel("b"); got != 1 {
					h.t.Fatalf("BackoffLevel = %d after an answer past the trial, want 1", got)
				}
			}},
		{name: "after a passed trial a new outage is held",
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(10 * s)
				h.answer(3 * time.Millisecond)
				h.probe(21*s, true) // the trial passed
				h.at(25 * s)
				h.fail() // a new outage before the backoff forgave b: 40 s, not cut
				h.probe(26*s, true)
				h.probe(29*s, true)
				h.isolatedUntil(65 * s)
			}},
		{name: "a hold ends when successes forgive every level",
			change: func(c *latency.Config) { c.Backoff.Decay = 1 },
			run: func(h *recoveryHarness) {
				h.probe(1*s, true)
				h.probe(4*s, true)
				h.isolatedUntil(10 * s)
				h.fail() // the trial failed: held, 40 s
				h.isolatedUntil(50 * s)
				for range 3 { // level 3 -> 0
					h.answer(3 * time.Millisecond)
				}
				if got := h.s.BackoffLevel("b"); got != 0 {
					h.t.Fatalf("BackoffLevel = %d after three answers, want 0", got)
				}
				h.fail() // 10 s
				h.isolatedUntil(60 * s)
				h.fail() // 20 s, and no longer held: the probes cut it
				h.probe(61*s, true)
				h.probe(64*s, true)
				h.isolatedUntil(70 * s)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &recoveryHarness{t: t}
			h.s, h.clock = policyStrategy(t, func(c *latency.Config) {
				c.Detector = true
				c.Backoff = &latency.BackoffConfig{Multiplier: 2, Max: time.Minute, Decay: 1000}
				c.Recovery = &latency.RecoveryConfig{After: 3 * time.Second}
				if tt.change != nil {
					tt.change(c)
				}
			}, latency.WithResolver(probe.StaticResolver{"b": "127.0.0.1:1"}),
				latency.WithServiceDetector(probe.ServiceDetectorFunc(func(context.Context, string) error {
					if h.probeOK {
						return nil
					}
					return context.DeadlineExceeded
				})))
			h.zero = h.clock.Now().Add(20 * time.Second)
			h.pick = latency.Pick{Queue: &route.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}, Reporter: h.s}
			h.at(-11 * s)
			h.answer(3 * time.Millisecond) // b has an item, healthy
			if tt.before != nil {
				tt.before(h)
			}
			h.at(-10 * s)
			h.fail() // the first isolation: 10 s
			if tt.during != nil {
				tt.during(h)
			}
			h.isolatedUntil(0)
			if tt.second != nil {
				tt.second(h)
			} else {
				h.fail() // a repeat offender: 20 s
			}
			tt.run(h)
		})
	}
}

// TestRecoveredAfterPresets checks that the reference presets leave the rule
// off and the mqfault preset turns it on, and that reporting outcomes
// through a pick allocates nothing with it on (busy and slow answers stamp
// the broker).
func TestRecoveredAfterPresets(t *testing.T) {
	if got := latency.Reference5().Recovery; got != nil {
		t.Errorf("Reference5().Recovery = %+v, want nil (off)", got)
	}
	if got := latency.Reference4().Recovery; got != nil {
		t.Errorf("Reference4().Recovery = %+v, want nil (off)", got)
	}
	d := latency.DefaultConfig()
	if d.Recovery == nil || d.Recovery.After <= 0 {
		t.Errorf("DefaultConfig(): Recovery = %+v, want the sustained rule on", d.Recovery)
	}
	s, _ := policyStrategy(t, func(c *latency.Config) { *c = latency.DefaultConfig() },
		latency.WithResolver(probe.StaticResolver{"b": "127.0.0.1:1"}))
	pick := latency.Pick{Queue: &route.MessageQueue{Topic: "T", BrokerName: "b"}, Reporter: s}
	for _, o := range []latency.Outcome{
		{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Latency: time.Millisecond},
		{Class: latency.ClassAnswered, Latency: 600 * time.Millisecond},
		{Class: latency.ClassAnswered, Latency: time.Millisecond},
		{Class: latency.ClassTransportTimeout, Latency: time.Second},
	} {
		pick.Done(o) // b has an item
		if allocs := testing.AllocsPerRun(100, func() { pick.Done(o) }); allocs != 0 {
			t.Errorf("Done(%v, %v) allocates %v times, want 0", o.Class, o.Latency, allocs)
		}
	}
}

// BenchmarkRecoveredAfterDone measures what the sustained recovery rule's
// outcome hook adds to Done on the mqfault preset (answered sends: a
// duration-table lookup; busy answers: a clock read and a store), against
// the preset with the rule off.
func BenchmarkRecoveredAfterDone(b *testing.B) {
	for _, on := range []bool{false, true} {
		cfg := latency.DefaultConfig()
		if !on {
			cfg.Recovery = nil
		}
		s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)),
			latency.WithResolver(probe.StaticResolver{"b": "127.0.0.1:1"}))
		if err != nil {
			b.Fatal(err)
		}
		pick := latency.Pick{Queue: &route.MessageQueue{Topic: "T", BrokerName: "b"}, Reporter: s}
		name := "off"
		if on {
			name = "on"
		}
		answered := latency.Outcome{Class: latency.ClassAnswered, Latency: time.Millisecond}
		pick.Done(answered)
		b.Run(name+"/answered", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pick.Done(answered)
			}
		})
		s.Close()
	}
}
