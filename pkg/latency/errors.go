package latency

import (
	"errors"

	"github.com/mqfault/mqfault/internal/input/configerr"
)

// ErrInvalidConfig is what every configuration error matches with errors.Is.
var ErrInvalidConfig = errors.New("latency: invalid configuration")

// ConfigError names the wrong setting, its value and why: Field is a Config
// field ("DetectTimeout") or NewStepTable's column (Item its position from 1);
// Err is ErrInvalidConfig. producer.ConfigError and host.ConfigError are the
// same type, mqfault's one configuration error.
type ConfigError = configerr.Error

// invalid returns a *ConfigError matching ErrInvalidConfig.
func invalid(field string, value any, reason string) *ConfigError {
	return &ConfigError{Field: field, Value: value, Reason: reason, Err: ErrInvalidConfig}
}

// ErrNoDetector is DetectRound's error with no detector (no Resolver, v4).
var ErrNoDetector = errors.New("latency: no detector configured")

// ErrClosed is returned by operations on a closed strategy.
var ErrClosed = errors.New("latency: strategy closed")
