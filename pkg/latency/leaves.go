package latency

import (
	"context"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
)

// The clock and the probe contract are leaf packages of their own
// (pkg/clock, pkg/probe), which plugins and detectors import without the
// strategy. The names below are the same types and values under latency's
// older names.

type (
	// Clock is clock.Clock.
	Clock = clock.Clock
	// Timer is clock.Timer.
	Timer = clock.Timer
	// Ticker is clock.Ticker.
	Ticker = clock.Ticker
	// RealClock is clock.Real.
	RealClock = clock.Real
	// ManualClock is clock.Manual.
	ManualClock = clock.Manual
	// ClockContext is clock.Context.
	ClockContext = clock.Context

	// Resolver is probe.Resolver.
	Resolver = probe.Resolver
	// ResolverFunc is probe.ResolverFunc.
	ResolverFunc = probe.ResolverFunc
	// StaticResolver is probe.StaticResolver.
	StaticResolver = probe.StaticResolver
	// ServiceDetector is probe.ServiceDetector.
	ServiceDetector = probe.ServiceDetector
	// ServiceDetectorFunc is probe.ServiceDetectorFunc.
	ServiceDetectorFunc = probe.ServiceDetectorFunc
	// TCPDetector is probe.TCPDetector.
	TCPDetector = probe.TCPDetector
	// ProbeError is probe.Error.
	ProbeError = probe.Error
)

// ErrNoAnswer is probe.ErrNoAnswer.
var ErrNoAnswer = probe.ErrNoAnswer

// NewManualClock is clock.NewManual.
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }

// NewClockContext is clock.NewContext.
func NewClockContext(parent context.Context, c Clock, deadline time.Time) *ClockContext {
	return clock.NewContext(parent, c, deadline)
}

// WithClockTimeout is clock.WithTimeout.
func WithClockTimeout(parent context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	return clock.WithTimeout(parent, c, d)
}

// ProbeGrace is probe.Grace.
func ProbeGrace(timeout time.Duration) time.Duration { return probe.Grace(timeout) }

// DetectWithin is probe.Within.
func DetectWithin(ctx context.Context, c Clock, sd ServiceDetector, endpoint string, timeout time.Duration) error {
	return probe.Within(ctx, c, sd, endpoint, timeout)
}

// ask runs call as probe.Within runs a detector: the detector round's probe.
func ask(ctx context.Context, c Clock, endpoint string, timeout time.Duration, call func(context.Context) error) error {
	return probe.Within(ctx, c, probe.ServiceDetectorFunc(func(pctx context.Context, _ string) error { return call(pctx) }), endpoint, timeout)
}
