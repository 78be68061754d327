package latency

import (
	"time"

	"github.com/mqfault/mqfault/internal/configerr"
	"github.com/mqfault/mqfault/pkg/route"
)

// Config holds the strategy's settings. Collaborators (clock, resolver,
// detector, fault table) are Options of NewStrategy.
type Config struct {
	// Mode is a registered mode (Modes): ModeV5 (default) or ModeV4.
	Mode Mode
	// FaultTolerance turns latency fault tolerance on (the reference's
	// sendLatencyFaultEnable). Off, Update does nothing and Select only
	// avoids the last broker.
	FaultTolerance bool
	// Detector turns the detector on (startDetectorEnable, v5 only): it gates
	// the background rounds, and a transport error then marks the broker
	// unreachable instead of only isolating it.
	Detector bool
	// DetectInterval is how long a broker's check stamp holds after it is
	// checked: a broker is probed at most once per interval (reference 2 s).
	DetectInterval time.Duration
	// DetectTimeout bounds each probe (reference 200 ms).
	DetectTimeout time.Duration
	// DetectPeriod is how often the background loop runs a round
	// (reference 3 s).
	DetectPeriod time.Duration
	// DetectParallel bounds how many probes of one round run at once. The
	// reference probes one after another: 1.
	DetectParallel int
	// Durations is the duration table; nil means the mode's own
	// (V5Durations or V4Durations).
	Durations DurationTable
	// Filters are user filters joined into the cascade (see Strategy.Select).
	Filters []route.QueueFilter

	// The policies past the reference (DESIGN.md section 4) follow. Each is
	// off at its zero value, as in Reference5 and Reference4, and
	// DefaultConfig turns each on. They extend mode v5 only (a v4 strategy,
	// which reproduces 4.9.8, ignores them).

	// MaxIsolatedFraction caps the share of a route's brokers that picks
	// avoid as isolated at once (Envoy's max ejection percent, counted as
	// Envoy does: one more may be avoided while fewer than the fraction
	// are): of a route of n brokers, at most ceil(MaxIsolatedFraction x n),
	// so at least one (2 of 3 or of 4, 4 of 8 at one half). When the
	// fault table isolates more, the least bad of them stay in service and
	// count as available in the cascade's first stage: least bad means
	// isolated for latency rather than by a failure, then reachable, then a
	// faster last send (graded by the duration table), then the isolation
	// ending sooner, then the lower latency, then the name
	// (Strategy.Released lists them). A retry still prefers a broker that
	// nothing isolates to one the cap keeps in service. The table itself,
	// its items and its events are unchanged. A newly isolated broker is
	// avoided at once; picks keep costing what they cost without the cap
	// (BenchmarkSelect/.../policies). 0 turns the cap off (so does 1);
	// otherwise it is in (0, 1].
	MaxIsolatedFraction float64
	// IsolationBackoff lengthens the isolation of repeat offenders (Envoy
	// and gRPC outlier detection): a broker's failure isolation is the
	// duration table's times IsolationBackoff for every earlier failure
	// isolation of it that successes have not yet forgiven (the level), up
	// to MaxIsolation. A failure starts a failure isolation, and raises the
	// level, only when the broker is not already isolated by a failure, so a
	// burst of sends failing on one outage counts once. 0 turns it off;
	// otherwise it is at least 1.
	IsolationBackoff float64
	// MaxIsolation bounds an isolation the backoff lengthened; it never
	// shortens the duration table's own. Positive when IsolationBackoff is on.
	MaxIsolation time.Duration
	// BackoffDecay is how many answered sends that isolate nothing forgive
	// one failure isolation (lower the level by one). At least 1 when
	// IsolationBackoff is on.
	BackoffDecay int
	// ProbeFailures makes a failed detector probe (any error but
	// ErrProbeInconclusive, a timeout included) mark the broker unreachable.
	// The reference only ever marks a broker reachable (RocketMQ PR #11146).
	ProbeFailures bool
	// BusyDecay turns on the busy-is-load policy (busyload.go): a broker's
	// flow-control answer (ClassBusy) adds one unit to its load penalty,
	// which fades exponentially with this time constant, and neither
	// isolates it as a failure nor marks it unreachable (the reference does
	// both). 0 turns it off; otherwise positive. Off in every preset: see
	// POLICIES.md for why the mqfault preset leaves it off.
	BusyDecay time.Duration
	// BusyIsolateAfter is the load penalty at which a busy broker is
	// isolated as load (ReasonBusy, still reachable) for BusyDecay: it
	// answered busy about this many times within one decay time. 0 never
	// isolates a broker for answering busy. Not negative.
	BusyIsolateAfter int
	// CapHoldsBusy makes the isolation cap follow capacity (capacity.go): a
	// broker isolated because it answered busy (it said it has no room) is
	// never one the cap keeps in service, until that isolation ends or a
	// failure of another class replaces it; it still counts as isolated. So
	// the cap restores capacity with slow or failing brokers only, never by
	// sending more to a broker that pushes back. It takes effect with the
	// cap on (MaxIsolatedFraction).
	CapHoldsBusy bool
	// LoadAware turns on load-aware picks (loadaware.go): a v5 pick (first
	// attempt or retry) whose round-robin probe lands on an available broker
	// compares it with one more available queue, chosen anew with each pick
	// (power of two choices), and takes the broker with the lower score:
	// PeakEWMA of latency (a failure counts at least 1 s), faded by the time
	// since its last update, x (attempts in flight + 1), + what is left of
	// its busy answers' push-back. On in DefaultConfig, off in the
	// reference presets.
	LoadAware bool
	// ProbeEndsBackoff brings a recovered broker back (recovery.go): when the
	// detector's probe answers for a broker whose failure isolation the
	// backoff lengthened (IsolationBackoff), that isolation ends where the
	// duration table alone would have ended it (at once if that time has
	// passed), and the broker's next attempt decides: an answer keeps it in
	// service, a failure isolates it again, one backoff level longer. It
	// takes effect with the backoff and the detector on. Off in every
	// preset: in the simulator it brings flapping, busy and slow brokers back
	// too soon (POLICIES.md); RecoveredAfter is the same cut with guards.
	ProbeEndsBackoff bool
	// ReleaseOnPushBack makes the isolation cap follow capacity
	// (pushback.go): besides what MaxIsolatedFraction releases, the cap
	// keeps one reachable isolated broker in service for each broker of the
	// route in service that pushes back (answers busy, or slower than
	// PushBackLatency), the least bad first. It takes effect with the cap
	// on. Off in every preset (POLICIES.md).
	ReleaseOnPushBack bool
	// PushBackLatency is the answer latency above which a broker pushes
	// back under ReleaseOnPushBack; 0 means DefaultPushBackLatency (50 ms,
	// the 5.x table's first tier).
	PushBackLatency time.Duration
	// PushBackHold is how long after its last push-back a broker must start
	// a send that it answers within PushBackLatency to stop pushing back;
	// 0 means DefaultPushBackHold (1 s).
	PushBackHold time.Duration
	// RecoveredAfter turns on the sustained recovery rule (recovery.go), the
	// ProbeEndsBackoff rule with guards: a failure isolation the backoff
	// lengthened is cut as ProbeEndsBackoff cuts it only once the detector's
	// probes have answered, every one, for RecoveredAfter since the failure
	// that began it; never when the broker answered busy or slowly (an
	// answer the duration table isolates for) within one failure isolation
	// before; and once per recovery: the cut is a trial lasting until the
	// isolation would have ended, whose answers forgive no backoff level
	// (a failure in it isolates one level longer), and after it no
	// isolation of the broker is cut again until answered sends forgive
	// every level. It takes effect with the backoff and the detector on. 0
	// turns it off; otherwise positive. With ProbeEndsBackoff on as well,
	// that rule's cut comes first, on any answered probe, and this rule's
	// guards no longer hold. The mqfault preset has 3 s: two probes a
	// detector period apart.
	RecoveredAfter time.Duration
}

// Reference5 returns RocketMQ 5.3.3's defaults exactly: mode v5, fault
// tolerance off, detector off, interval 2 s, timeout 200 ms, a round every 3 s,
// one probe at a time, the 5.x table.
func Reference5() Config {
	return Config{
		Mode:           ModeV5,
		DetectInterval: 2000 * time.Millisecond,
		DetectTimeout:  200 * time.Millisecond,
		DetectPeriod:   3 * time.Second,
		DetectParallel: 1,
	}
}

// Reference4 returns RocketMQ 4.9.8's defaults exactly: mode v4, fault
// tolerance off, the 4.x table. (4.x has no detector; its settings are kept
// valid so a Config can switch modes.)
func Reference4() Config {
	c := Reference5()
	c.Mode = ModeV4
	return c
}

// DefaultConfig returns the recommended settings, the mqfault preset: the
// 5.3.3 semantics with fault tolerance and the detector on, and the policies
// past the reference turned on:
//
//   - DetectParallel 16: a round over many isolated brokers takes about one
//     probe timeout per 16 brokers instead of one per broker;
//   - MaxIsolatedFraction 0.5: at most half of a route's brokers (rounded
//     up) are avoided at once, so a fault that hits many brokers cannot push
//     all the traffic onto the few left;
//   - IsolationBackoff 2, MaxIsolation 60 s, BackoffDecay 1000: a broker
//     that fails again soon after its isolation ends is isolated 20 s, then
//     40 s, then 60 s (the v5 table gives 10 s), and 1000 answered sends
//     forgive one step;
//   - ProbeFailures: a broker whose probe fails is unreachable;
//   - CapHoldsBusy: the cap never keeps in service a broker isolated for
//     answering busy;
//   - RecoveredAfter 3 s: a broker whose probes have answered for 3 s since
//     it failed comes back when the duration table's 10 s are over, not
//     the backoff's 20 s or more, unless it was busy or slow just before,
//     once per recovery;
//   - LoadAware: a pick whose round robin lands on an available broker
//     takes the lower-scored of it and a second candidate (PeakEWMA latency
//     faded as read x (in flight + 1) + busy answers' push-back).
//
// BusyDecay (busy is load) and ReleaseOnPushBack stay off: in the simulator
// they lose sends on clusters short of capacity. pkg/latency/POLICIES.md
// justifies each value with the simulator's results.
func DefaultConfig() Config {
	c := Reference5()
	c.FaultTolerance = true
	c.Detector = true
	c.DetectParallel = 16
	c.MaxIsolatedFraction = 0.5
	c.IsolationBackoff = 2
	c.MaxIsolation = 60 * time.Second
	c.BackoffDecay = 1000
	c.ProbeFailures = true
	c.CapHoldsBusy = true
	c.LoadAware = true
	c.RecoveredAfter = 3 * time.Second
	return c
}

// Validate checks every setting and returns nil, or one *ConfigError per
// problem joined with errors.Join (so errors.As finds the first and the
// message has one problem per line).
func (c Config) Validate() error {
	var l configerr.List
	spec, ok := modeSpecs[c.Mode.orDefault()]
	if !ok {
		l.Add(invalid("Mode", string(c.Mode), "must be "+ModeChoices()))
	}
	if c.DetectInterval <= 0 {
		l.Add(invalid("DetectInterval", c.DetectInterval, "must be positive"))
	}
	if c.DetectTimeout <= 0 {
		l.Add(invalid("DetectTimeout", c.DetectTimeout, "must be positive"))
	}
	if c.DetectPeriod <= 0 {
		l.Add(invalid("DetectPeriod", c.DetectPeriod, "must be positive"))
	}
	if c.DetectParallel < 1 {
		l.Add(invalid("DetectParallel", c.DetectParallel, "must be at least 1"))
	}
	if ok && !spec.detector && c.Detector {
		l.Add(invalid("Detector", true, "mode "+string(spec.mode)+" has no detector"))
	}
	validatePolicies(c, &l)
	for i, f := range c.Filters {
		if f == nil {
			l.Add(&ConfigError{Field: "Filters", Item: i + 1, Value: nil, Reason: "filter is nil", Err: ErrInvalidConfig})
		} else if fn, ok := f.(route.QueueFilterFunc); ok && fn == nil {
			l.Add(&ConfigError{Field: "Filters", Item: i + 1, Value: nil, Reason: "filter is a nil QueueFilterFunc", Err: ErrInvalidConfig})
		}
	}
	if c.Durations != nil && nilTable(c.Durations) {
		l.Add(invalid("Durations", c.Durations, "is a nil table (leave it nil for the mode's own)"))
	}
	return l.Err()
}

// nilTable reports whether t is a typed nil of the package's own table types,
// which would panic when consulted.
func nilTable(t DurationTable) bool {
	switch v := t.(type) {
	case *StepTable:
		return v == nil
	case DurationTableFunc:
		return v == nil
	}
	return false
}
