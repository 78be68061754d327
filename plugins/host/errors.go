package host

import (
	"errors"
	"strings"

	"github.com/mqfault/mqfault/internal/input/configerr"
	"github.com/mqfault/mqfault/plugins/protocol"
)

var (
	// ErrInvalidConfig is what every configuration error matches.
	ErrInvalidConfig = errors.New("plugin host: invalid configuration")
	// ErrChecksum: the executable's SHA-256 is not the pinned one; the
	// plugin is refused and not started.
	ErrChecksum = errors.New("plugin host: checksum mismatch")
	// ErrHandshake: the plugin did not complete go-plugin's handshake: it is
	// no mqfault plugin of the wanted kind (a wrong magic cookie), it exited
	// or printed something else at start, or it took longer than
	// StartTimeout.
	ErrHandshake = errors.New("plugin host: handshake failed")
	// ErrIncompatible: the plugin speaks no protocol version the host does.
	ErrIncompatible = errors.New("plugin host: incompatible plugin protocol version")
	// ErrInsecure: the plugin is not pinned (Config.SHA256) and its file,
	// or a directory above it, is writable by other users; it is refused
	// and not started.
	ErrInsecure = errors.New("plugin host: insecure plugin file")
	// ErrStart: the executable could not be run at all (missing, not
	// executable, ...).
	ErrStart = errors.New("plugin host: cannot run plugin")
	// ErrCallTimeout: the plugin did not answer a call within its timeout.
	// A detector's answer is then also inconclusive.
	ErrCallTimeout = errors.New("plugin host: plugin call timed out")
	// ErrClosed: the detector or filter was closed.
	ErrClosed = errors.New("plugin host: closed")
	// ErrUnavailable: the plugin process is not running (it died and is
	// being restarted). Same value as protocol.ErrUnavailable.
	ErrUnavailable = protocol.ErrUnavailable
	// ErrBadAnswer: the plugin's answer broke the protocol (garbage). Same
	// value as protocol.ErrBadAnswer.
	ErrBadAnswer = protocol.ErrBadAnswer
)

// ConfigError names the setting that is wrong, its value and why: Field is a
// field of Config or FilterConfig as Go spells it ("StartTimeout"), and Err
// is ErrInvalidConfig, which it matches. It is the same type as
// latency.ConfigError (see there), so one errors.As finds either.
type ConfigError = configerr.Error

// invalid returns a *ConfigError matching ErrInvalidConfig.
func invalid(field string, value any, reason string) *ConfigError {
	return &ConfigError{Field: field, Value: value, Reason: reason, Err: ErrInvalidConfig}
}

// StartError says why a plugin could not be started. It matches its Reason
// (ErrChecksum, ErrInsecure, ErrHandshake, ErrIncompatible or ErrStart) and
// wraps Err.
type StartError struct {
	// Path is the plugin executable.
	Path string
	// Reason is the class of failure: ErrChecksum, ErrInsecure,
	// ErrHandshake, ErrIncompatible or ErrStart.
	Reason error
	// Err is what go-plugin or the operating system said.
	Err error
	// Output is the last lines the plugin wrote to its stderr, if any.
	Output []string
}

func (e *StartError) Error() string {
	var b strings.Builder
	b.WriteString("plugin host: cannot start plugin ")
	b.WriteString(e.Path)
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Reason.Error(), "plugin host: "))
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if len(e.Output) > 0 {
		b.WriteString("; its last output: ")
		b.WriteString(strings.Join(e.Output, " | "))
	}
	return b.String()
}

// Unwrap returns Reason and Err.
func (e *StartError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}
