package latency

import (
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
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
	// unreachable too.
	Detector bool
	// DetectInterval is how long a broker's check stamp holds after it is
	// checked: a broker is probed at most once per interval (reference 2 s).
	DetectInterval time.Duration
	// DetectTimeout bounds each probe (reference 200 ms).
	DetectTimeout time.Duration
	// DetectPeriod is how often the background loop runs a round (reference 3 s).
	// With ProbeFailures on and a period shorter than DetectInterval, a
	// broker whose probe was refused (failed before its timeout) and that
	// is unreachable is probed again at the next round, not an interval
	// later.
	DetectPeriod time.Duration
	// DetectParallel bounds a round's probes at once (reference 1).
	DetectParallel int
	// Durations is the duration table; nil means the mode's own (5.x's or
	// 4.x's steps).
	Durations DurationTable
	// Filters are user filters joined into the cascade (see Strategy.Select).
	Filters []route.QueueFilter

	// The policies past the reference (DESIGN.md section 4) follow, each
	// one's settings in a struct of its own (the probe-failure rule, a
	// switch, is a bool). Each is off when nil (false), as in Reference5
	// and Reference4, and DefaultConfig turns each on. They extend mode v5
	// only (a v4 strategy, which reproduces 4.9.8, ignores them).

	// IsolationCap caps the share of a route's brokers picks avoid as isolated.
	IsolationCap *IsolationCapConfig
	// Backoff lengthens the isolation of repeat offenders (backoff.go).
	Backoff *BackoffConfig
	// ProbeFailures makes a failed probe (any error but
	// probe.ErrInconclusive, a timeout included) mark the broker
	// unreachable, unless (capacity model on) a send of it was answered,
	// busy included, within DetectInterval; the reference only marks
	// reachable (RocketMQ PR #11146). With the detector on, the v5 first
	// stage then takes reachable brokers only (policy.go).
	ProbeFailures bool
	// Recovery is the sustained recovery rule, which cuts a lengthened isolation.
	Recovery *RecoveryConfig
	// Capacity is the capacity model: a broker's share falls as it pushes back.
	Capacity *CapacityConfig
}

// IsolationCapConfig is the isolation cap's settings (POLICIES.md, "Isolation cap").
type IsolationCapConfig struct {
	// MaxFraction caps the share of a route's brokers that picks avoid as
	// isolated at once: of n at most ceil(MaxFraction x n), at least one;
	// the least bad of the rest count as available in the first stage (a
	// retry still prefers a broker nothing isolates). The table and its
	// events are unchanged. In [0, 1]; 0 and 1 turn the cap off.
	MaxFraction float64
}

// BackoffConfig is the backoff's settings (backoff.go; POLICIES.md).
type BackoffConfig struct {
	// Multiplier: a failure isolation is the duration table's times
	// Multiplier per earlier failure isolation not yet forgiven (the
	// level), up to Max; a failure while one holds counts nothing. At
	// least 1; 0 turns the backoff off.
	Multiplier float64
	// Max bounds a lengthened isolation (never below the table's own); > 0 when on.
	Max time.Duration
	// Decay is how many answered sends that isolate nothing forgive a level; >= 1 when on.
	Decay int
}

// RecoveryConfig is the sustained recovery rule's settings (recovery.go).
type RecoveryConfig struct {
	// After: a failure isolation the backoff lengthened is cut to the table's
	// once every probe has answered for After since the failure (not after a
	// busy or slow answer within one failure isolation before; once per
	// recovery); with the backoff and the detector on. >= 0; 0 is off.
	After time.Duration
}

// CapacityConfig is the capacity model's settings (capacity.go; POLICIES.md).
type CapacityConfig struct {
	// Decrease turns the model on: a busy answer or a throttled attempt
	// multiplies the broker's weight, in (0, 1], by Decrease (at least 1/32
	// is left) instead of isolating it, and a broker below full weight
	// loses first-stage picks to a second candidate of higher weight. In
	// (0, 1); 0 turns the model off.
	Decrease float64
	// Recovery is how long a weight takes to climb linearly from 0 back to 1
	// after the last push-back; 0 means DefaultCapacityRecovery (4 s), not
	// negative.
	Recovery time.Duration
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
// tolerance off, the 4.x table (the detector settings stay valid for a switch).
func Reference4() Config {
	c := Reference5()
	c.Mode = ModeV4
	return c
}

// DefaultConfig returns the mqfault preset: 5.3.3's semantics with fault
// tolerance and the detector on, and the policies past the reference on; its
// values are in the code below and POLICIES.md ("The preset, value by value")
// justifies each. Each call returns new policy structs.
func DefaultConfig() Config {
	c := Reference5()
	c.FaultTolerance = true
	c.Detector = true
	c.DetectParallel = 16
	c.DetectPeriod = 250 * time.Millisecond
	c.DetectInterval = time.Second
	c.IsolationCap = &IsolationCapConfig{MaxFraction: 0.5}
	c.Backoff = &BackoffConfig{Multiplier: 2, Max: 60 * time.Second, Decay: 1000}
	c.ProbeFailures = true
	c.Capacity = &CapacityConfig{Decrease: DefaultCapacityDecrease, Recovery: DefaultCapacityRecovery}
	c.Recovery = &RecoveryConfig{After: 3 * time.Second}
	return c
}

// Validate checks every setting: nil, or one *ConfigError per problem joined
// with errors.Join (errors.As finds the first; one problem per line).
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
	case durationTableFunc:
		return v == nil
	}
	return false
}
