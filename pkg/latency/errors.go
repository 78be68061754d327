package latency

import (
	"errors"

	"github.com/mqfault/mqfault/internal/input/configerr"
)

// ErrInvalidConfig is what every configuration error matches with errors.Is.
var ErrInvalidConfig = errors.New("latency: invalid configuration")

// ConfigError names the setting that is wrong, its value and why: Field is a
// Config field as Go spells it ("DetectTimeout") or NewStepTable's column
// ("latencyMax", "notAvailable", with Item the position from 1); Err is
// ErrInvalidConfig. It is the one configuration error type of mqfault's
// packages (producer.ConfigError and host.ConfigError are the same type).
type ConfigError = configerr.Error

// invalid returns a *ConfigError matching ErrInvalidConfig.
func invalid(field string, value any, reason string) *ConfigError {
	return &ConfigError{Field: field, Value: value, Reason: reason, Err: ErrInvalidConfig}
}

// ErrNoDetector is returned by Strategy.DetectRound when the strategy has no
// detector (no Resolver was given, or the mode has none: v4).
var ErrNoDetector = errors.New("latency: no detector configured")

// ErrClosed is returned by operations on a closed strategy.
var ErrClosed = errors.New("latency: strategy closed")
