package latency

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
)

// The backoff for repeat offenders, a policy past the reference (Envoy's and
// gRPC's outlier detection eject for base x multiplier^n, capped): an
// isolation hook, so it acts only on updates.

// backoff is the repeat-offender policy: a failure isolation grows by
// multiplier for every failure isolation of the same broker that successes
// have not yet forgiven, up to max, and decay answered sends that isolate
// nothing forgive one.
//
// Per slot the count is kept in units of decay (strikes): a new failure
// isolation raises the level (ceil(strikes/decay)) by one and sets strikes
// to level*decay; each forgiving answer takes one unit off.
type backoff struct {
	multiplier float64
	max        time.Duration
	decay      int64
}

// backoffState is the backoff's per-broker state, a field of the slot.
type backoffState struct {
	// strikes is the backoff's count: the level times the decay, less
	// the answered sends forgiven since.
	strikes atomic.Int64
}

// backoffSettings addresses the backoff's settings in a Config.
func backoffSettings(c *Config) **BackoffConfig { return &c.Backoff }

// backoffPolicy registers the backoff (policy.go).
var backoffPolicy = policyKind{
	name: "backoff", ablation: "backoff",
	knobs: []PolicyKnob{
		settingKnob("isolation_backoff", "2", "a repeat offender's failure isolation is multiplied by this per unforgiven failure isolation; 0 is off (v5)",
			backoffSettings, func(b *BackoffConfig) *float64 { return &b.Multiplier }),
		settingKnob("max_isolation", "", "the longest isolation the backoff gives",
			backoffSettings, func(b *BackoffConfig) *time.Duration { return &b.Max }),
		settingKnob("backoff_decay", "", "answered sends that forgive one failure isolation of the backoff",
			backoffSettings, func(b *BackoffConfig) *int { return &b.Decay }),
	},
	on: func(c Config) bool { return c.Backoff != nil && c.Backoff.Multiplier != 0 },
	validate: func(c Config, l *configerr.List) {
		b := c.Backoff
		if b == nil {
			return
		}
		m := b.Multiplier
		on := !math.IsNaN(m) && !math.IsInf(m, 0) && (m == 0 || m >= 1)
		if !on {
			l.Add(invalid("Backoff.Multiplier", m, "must be 0 (off) or a finite multiplier of at least 1"))
		}
		on = on && m != 0
		switch {
		case b.Max < 0:
			l.Add(invalid("Backoff.Max", b.Max, "must not be negative"))
		case on && b.Max == 0:
			l.Add(&ConfigError{Field: "Backoff.Max", Value: b.Max, Reason: "must be positive while Backoff.Multiplier is on",
				Related: "Backoff.Multiplier", Err: ErrInvalidConfig})
		}
		switch {
		case b.Decay < 0:
			l.Add(invalid("Backoff.Decay", b.Decay, "must not be negative"))
		case on && b.Decay == 0:
			l.Add(&ConfigError{Field: "Backoff.Decay", Value: b.Decay, Reason: "must be at least 1 while Backoff.Multiplier is on",
				Related: "Backoff.Multiplier", Err: ErrInvalidConfig})
		}
	},
	install: func(c Config, p *policies) {
		if b := c.Backoff; b != nil && b.Multiplier != 0 {
			p.isolation = &backoff{multiplier: b.Multiplier, max: b.Max, decay: int64(b.Decay)}
		}
	},
}

var _ isolationHook = (*backoff)(nil)

// level is the number of unforgiven failure isolations strikes stands for.
func (b *backoff) level(strikes int64) int64 { return (strikes + b.decay - 1) / b.decay }

// grow is base lengthened for level (base for levels 0 and 1, base x
// multiplier for level 2, ...), bounded by max but never below base; capped
// reports that a higher level would give no more.
func (b *backoff) grow(base time.Duration, level int64) (d time.Duration, capped bool) {
	limit := max(b.max, base)
	f := float64(base)
	for i := int64(1); i < level; i++ {
		f *= b.multiplier
		if f >= float64(limit) {
			return limit, true
		}
	}
	d = time.Duration(f)
	return d, d >= limit || b.multiplier == 1
}

// failureIsolation returns how long a failure at now isolates s (base is
// the duration table's), raising its level when this failure starts a
// failure isolation (s was not already isolated by one). Caller must hold
// s.mu.
func (b *backoff) failureIsolation(s *slot, base time.Duration, now int64) time.Duration {
	strikes := s.backoff.strikes.Load()
	level := b.level(strikes)
	if !(s.ended && now < s.until.Load() && s.failed.Load()) {
		if _, capped := b.grow(base, level); !capped || level == 0 {
			level++
		}
		s.backoff.strikes.Store(level * b.decay)
		s.rec.failureStarted() // recovery.go: a trial, if one ran, failed
	}
	d, _ := b.grow(base, level)
	return d
}

// answered takes one unit off s's strikes (an answered send that isolates
// nothing); it allocates nothing and takes no lock.
func (b *backoff) answered(s *slot) {
	if s.rec.onTrial() { // recovery.go: a trial's answers forgive nothing
		return
	}
	for {
		n := s.backoff.strikes.Load()
		if n <= 0 {
			return
		}
		if s.backoff.strikes.CompareAndSwap(n, n-1) {
			if n == 1 {
				s.rec.forgiven() // recovery.go: a hold is over
			}
			return
		}
	}
}

// backoffLevel returns how many failure isolations of broker the backoff
// still counts (0 when none, or when the broker has no item): its next
// failure isolation is the duration table's times Backoff.Multiplier to that
// power, up to Backoff.Max. It is 0 unless Config.Backoff is on.
// Safe for concurrent use.
func (s *Strategy) backoffLevel(broker string) int {
	b, ok := s.policies.isolation.(*backoff)
	if !ok {
		return 0
	}
	sl := s.table.lookup(broker)
	if sl == nil || !sl.present.Load() {
		return 0
	}
	return int(b.level(sl.backoff.strikes.Load()))
}
