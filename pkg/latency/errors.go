package latency

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is what every configuration error matches with errors.Is.
var ErrInvalidConfig = errors.New("latency: invalid configuration")

// ConfigError names the setting that is wrong, its value and why. It matches
// ErrInvalidConfig.
type ConfigError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("latency: %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// ErrProbeInconclusive is what a ServiceDetector returns (or wraps) when a
// probe yields no information, for instance because the detector itself is
// unavailable: nothing about the broker changes.
var ErrProbeInconclusive = errors.New("latency: probe inconclusive")

// ErrNoDetector is returned by Strategy.DetectRound when the strategy has no
// detector (no Resolver was given, or the fault table is not the built-in one).
var ErrNoDetector = errors.New("latency: no detector configured")

// ErrClosed is returned by operations on a closed strategy.
var ErrClosed = errors.New("latency: strategy closed")
