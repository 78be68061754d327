package latency_test

import (
	"math"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// reportOn reports o for an attempt on broker through a pick of s.
func reportOn(s *latency.Strategy, broker string, o latency.Outcome) latency.FaultUpdate {
	q := route.MessageQueue{Topic: "T", BrokerName: broker}
	return latency.Pick{Queue: &q, Reporter: s}.Done(o)
}

var busyAnswer = latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Remark: "[TIMEOUT_CLEAN_QUEUE]broker busy", Latency: time.Millisecond}

// TestBusyIsLoad reports busy answers at given spacings and checks, on the
// manual clock, whether the broker ends isolated, reachable, with which load
// penalty, and for how long.
func TestBusyIsLoad(t *testing.T) {
	tests := []struct {
		name      string
		change    func(c *latency.Config)
		answers   int
		every     time.Duration
		wantIso   bool
		wantReach bool
		wantPen   float64 // the penalty right after the last answer (0: not checked)
		isoFor    time.Duration
	}{
		{name: "off: a busy answer isolates as a failure, unreachable (v5)", answers: 1,
			wantIso: true, wantReach: false, isoFor: 10 * time.Second},
		{name: "load: never isolated without a threshold", answers: 50,
			change:  func(c *latency.Config) { c.BusyDecay = time.Second },
			wantIso: false, wantReach: true, wantPen: 50},
		{name: "load: answers spread over the decay fade", answers: 5, every: time.Second,
			change:  func(c *latency.Config) { c.BusyDecay = time.Second },
			wantIso: false, wantReach: true, wantPen: (1 - math.Exp(-5)) / (1 - math.Exp(-1))},
		{name: "load: below the threshold, not isolated", answers: 2,
			change:  func(c *latency.Config) { c.BusyDecay = time.Second; c.BusyIsolateAfter = 3 },
			wantIso: false, wantReach: true, wantPen: 2},
		{name: "load: at the threshold, isolated for the decay time, still reachable", answers: 3,
			change:  func(c *latency.Config) { c.BusyDecay = time.Second; c.BusyIsolateAfter = 3 },
			wantIso: true, wantReach: true, isoFor: time.Second},
		{name: "load: answering busy now and then never isolates", answers: 20, every: 2 * time.Second,
			change:  func(c *latency.Config) { c.BusyDecay = time.Second; c.BusyIsolateAfter = 2 },
			wantIso: false, wantReach: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clock := policyStrategy(t, func(c *latency.Config) {
				c.IsolationBackoff, c.MaxIsolation, c.BackoffDecay = 2, time.Minute, 10
				if tt.change != nil {
					tt.change(c)
				}
			})
			for i := range tt.answers {
				if i > 0 {
					clock.Advance(tt.every)
				}
				reportOn(s, "b", busyAnswer)
			}
			ft := s.FaultTolerance()
			if got := !ft.IsAvailable("b"); got != tt.wantIso {
				t.Errorf("isolated = %v, want %v", got, tt.wantIso)
			}
			if got := ft.IsReachable("b"); got != tt.wantReach {
				t.Errorf("reachable = %v, want %v", got, tt.wantReach)
			}
			if tt.wantPen != 0 {
				if got := s.BusyPenalty("b"); math.Abs(got-tt.wantPen) > 1e-9 {
					t.Errorf("BusyPenalty = %v, want %v", got, tt.wantPen)
				}
			}
			if tt.change != nil && s.BackoffLevel("b") != 0 {
				t.Errorf("BackoffLevel = %d, want 0: a busy answer is no failure", s.BackoffLevel("b"))
			}
			if tt.isoFor > 0 {
				clock.Advance(tt.isoFor - time.Millisecond)
				if ft.IsAvailable("b") {
					t.Errorf("available %v after the last answer, want isolated for %v", tt.isoFor-time.Millisecond, tt.isoFor)
				}
				clock.Advance(time.Millisecond)
				if !ft.IsAvailable("b") {
					t.Errorf("still isolated %v after the last answer, want %v", tt.isoFor, tt.isoFor)
				}
			}
		})
	}
}

// TestBusyPenaltyFades checks the penalty's decay on the manual clock: one
// decay time takes it to 1/e, and a clock that steps back fades nothing.
func TestBusyPenaltyFades(t *testing.T) {
	s, clock := policyStrategy(t, func(c *latency.Config) { c.BusyDecay = 2 * time.Second })
	if got := s.BusyPenalty("b"); got != 0 {
		t.Fatalf("BusyPenalty of an unknown broker = %v, want 0", got)
	}
	for range 4 {
		reportOn(s, "b", busyAnswer)
	}
	clock.Advance(2 * time.Second)
	if got, want := s.BusyPenalty("b"), 4/math.E; math.Abs(got-want) > 1e-9 {
		t.Errorf("BusyPenalty after one decay time = %v, want %v", got, want)
	}
	// A failure of another class is still a failure.
	reportOn(s, "c", latency.Outcome{Class: latency.ClassBroker, Code: 14})
	if s.FaultTolerance().IsAvailable("c") {
		t.Errorf("code 14 did not isolate: only busy is load")
	}
}

// TestBusyIsLoadReferenceModes checks that the reference presets keep the
// policy off and a v4 strategy ignores it.
func TestBusyIsLoadReferenceModes(t *testing.T) {
	for _, c := range []latency.Config{latency.Reference5(), latency.Reference4()} {
		if c.BusyDecay != 0 || c.BusyIsolateAfter != 0 || c.CapHoldsBusy {
			t.Errorf("%s preset: BusyDecay %v, BusyIsolateAfter %d, CapHoldsBusy %v; want all off", c.Mode, c.BusyDecay, c.BusyIsolateAfter, c.CapHoldsBusy)
		}
	}
	s, _ := policyStrategy(t, func(c *latency.Config) { c.Mode = latency.ModeV4; c.BusyDecay = time.Second })
	reportOn(s, "b", busyAnswer)
	if s.FaultTolerance().IsAvailable("b") || s.BusyPenalty("b") != 0 {
		t.Errorf("v4: busy answer left the broker available (or penalized): v4 must ignore the policy")
	}
	bad := latency.DefaultConfig()
	bad.BusyDecay, bad.BusyIsolateAfter = -time.Second, -1
	if err := bad.Validate(); err == nil {
		t.Errorf("Validate(negative BusyDecay and BusyIsolateAfter) = nil, want errors")
	}
}

// TestCapHoldsBusy isolates brokers of a four-broker route (the cap at one
// half: two avoided at most) and checks which stay in service: with
// CapHoldsBusy a broker isolated by a busy answer counts as isolated but is
// never the one the cap keeps in service.
func TestCapHoldsBusy(t *testing.T) {
	busy := func(s *latency.Strategy, b string) { reportOn(s, b, busyAnswer) }
	fail := func(s *latency.Strategy, b string) {
		reportOn(s, b, latency.Outcome{Class: latency.ClassTransportNotSent, Latency: time.Millisecond})
	}
	slow := func(s *latency.Strategy, b string) {
		reportOn(s, b, latency.Outcome{Class: latency.ClassAnswered, Latency: 3 * time.Second})
	}
	answer := func(s *latency.Strategy, b string) {
		reportOn(s, b, latency.Outcome{Class: latency.ClassAnswered, Latency: time.Millisecond})
	}
	type step struct {
		do     func(*latency.Strategy, string)
		broker string
	}
	tests := []struct {
		name  string
		hold  bool
		steps []step
		want  []string // brokers picks reach at stage available
	}{
		{"without: three busy, one is kept in service", false,
			[]step{{busy, "a"}, {busy, "b"}, {busy, "c"}}, []string{"c", "d"}},
		{"every busy broker stays out", true,
			[]step{{busy, "a"}, {busy, "b"}, {busy, "c"}}, []string{"d"}},
		{"busy ones count, the slow one is the one released", true,
			[]step{{busy, "a"}, {slow, "b"}, {slow, "c"}}, []string{"c", "d"}},
		{"three slow: the cap still binds among them", true,
			[]step{{slow, "a"}, {slow, "b"}, {slow, "c"}}, []string{"c", "d"}},
		{"an answer does not end the hold (late answers of queued sends)", true,
			[]step{{busy, "a"}, {busy, "b"}, {busy, "c"}, {answer, "c"}}, []string{"d"}},
		{"a failure of another kind puts it back in the count", true,
			[]step{{busy, "a"}, {busy, "b"}, {busy, "c"}, {fail, "c"}, {fail, "b"}}, []string{"c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := policyStrategy(t, func(c *latency.Config) { c.MaxIsolatedFraction = 0.5; c.CapHoldsBusy = tt.hold })
			info := oneQueueEach(t, "a", "b", "c", "d")
			for _, st := range tt.steps {
				st.do(s, st.broker)
			}
			if got := pickedBrokers(t, s, info); !slicesEqual(got, tt.want) {
				t.Errorf("brokers in service = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCapHoldsBusyEndsWithTheIsolation checks that the hold ends with the
// isolation the busy answer earned: the broker counts again afterwards.
func TestCapHoldsBusyEndsWithTheIsolation(t *testing.T) {
	s, clock := policyStrategy(t, func(c *latency.Config) { c.MaxIsolatedFraction = 0.5; c.CapHoldsBusy = true })
	info := oneQueueEach(t, "a", "b", "c", "d")
	reportOn(s, "a", busyAnswer)
	clock.Advance(11 * time.Second) // the v5 failure isolation of a busy answer is over
	for _, b := range []string{"a", "b", "c"} {
		reportOn(s, b, latency.Outcome{Class: latency.ClassTransportNotSent, Latency: time.Millisecond})
	}
	if got := pickedBrokers(t, s, info); len(got) != 2 {
		t.Errorf("brokers in service = %v, want two (the cap binds on three failures once a's hold ended)", got)
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOutcomeHooksAllocations checks that reporting outcomes through the
// new policies' hooks allocates nothing for a known broker.
func TestOutcomeHooksAllocations(t *testing.T) {
	s, clock := policyStrategy(t, func(c *latency.Config) {
		*c = latency.DefaultConfig()
		c.Detector = false // no resolver here; the hooks do not need it
		c.BusyDecay, c.BusyIsolateAfter = time.Second, 3
	})
	q := route.MessageQueue{Topic: "T", BrokerName: "b"}
	p := latency.Pick{Queue: &q, Reporter: s}
	p.Done(busyAnswer)
	outs := []latency.Outcome{busyAnswer, {Class: latency.ClassAnswered, Latency: time.Millisecond},
		{Class: latency.ClassTransportNotSent, Latency: time.Millisecond}}
	allocs := testing.AllocsPerRun(100, func() {
		for _, o := range outs {
			p.Done(o)
		}
		clock.Advance(time.Millisecond)
	})
	if allocs != 0 {
		t.Errorf("Done allocates %v times per run, want 0", allocs)
	}
}
