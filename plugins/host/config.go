package host

import (
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/plugins/protocol"
)

// Config says which plugin to run and how to supervise it.
type Config struct {
	// Path is the plugin executable.
	Path string
	// Args are its command-line arguments, without the program name.
	Args []string
	// Env holds KEY=VALUE pairs added to the plugin's environment, which is
	// otherwise the host's. go-plugin's own variables (PLUGIN_*) and the
	// magic cookie cannot be set here.
	Env []string
	// SHA256, when not empty, pins the executable: its SHA-256 in hex (64
	// digits, any case). The file is checked before every start, restarts
	// included, and a mismatch is refused (ErrChecksum) without running it.
	SHA256 string
	// CallTimeout bounds every call to the plugin (default 5 s). A detector
	// call is also bounded by its ctx's deadline, whichever comes first.
	CallTimeout time.Duration
	// StartTimeout bounds a start up to the end of the handshake (default
	// 10 s).
	StartTimeout time.Duration
	// MinBackoff is the delay before the first restart after the plugin
	// died (default 100 ms); it doubles after each failed restart up to
	// MaxBackoff (default 30 s), and starts over after a good one.
	MinBackoff time.Duration
	// MaxBackoff caps the restart delay.
	MaxBackoff time.Duration
	// Logger receives the plugin's log lines and output (with attributes
	// plugin and pid) and what the host does (exits, restarts). Default
	// slog.Default().
	Logger *slog.Logger
	// Clock times the restart backoff, the call timeouts and a filter's
	// refreshes. Default latency.RealClock.
	Clock latency.Clock
	// OnEvent, when set, is told of every start, exit and restart of the
	// plugin process. It is called from the supervising goroutine (and from
	// the constructor for the first start) and must not block.
	OnEvent func(Event)
}

const (
	defaultCallTimeout  = 5 * time.Second
	defaultStartTimeout = 10 * time.Second
	defaultMinBackoff   = 100 * time.Millisecond
	defaultMaxBackoff   = 30 * time.Second
)

// withDefaults validates c and fills in defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Path == "" {
		return c, invalid("Path", `""`, "the plugin executable is required")
	}
	if c.SHA256 != "" {
		b, err := hex.DecodeString(c.SHA256)
		if err != nil || len(b) != 32 {
			return c, invalid("SHA256", c.SHA256, "must be 64 hexadecimal digits")
		}
	}
	for _, kv := range c.Env {
		key, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || key == "":
			return c, invalid("Env", kv, "must be KEY=VALUE")
		case strings.HasPrefix(key, "PLUGIN_") || key == protocol.MagicCookieKey:
			return c, invalid("Env", kv, "go-plugin's variables and the magic cookie are set by the host")
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"CallTimeout", &c.CallTimeout, defaultCallTimeout},
		{"StartTimeout", &c.StartTimeout, defaultStartTimeout},
		{"MinBackoff", &c.MinBackoff, defaultMinBackoff},
		{"MaxBackoff", &c.MaxBackoff, defaultMaxBackoff},
	} {
		if *d.v < 0 {
			return c, invalid(d.name, *d.v, "must not be negative")
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.MinBackoff > c.MaxBackoff {
		return c, &ConfigError{Field: "MinBackoff", Value: c.MinBackoff, Reason: "must not exceed MaxBackoff (" + c.MaxBackoff.String() + ")",
			Related: "MaxBackoff", Err: ErrInvalidConfig}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = latency.RealClock{}
	}
	return c, nil
}

// EventKind names what happened to a plugin process.
type EventKind uint8

const (
	// EventStarted: a plugin process completed its handshake (the first
	// start or a restart).
	EventStarted EventKind = iota + 1
	// EventExited: the plugin process died on its own (or was killed from
	// outside); Err is its exit status.
	EventExited
	// EventRestartScheduled: a restart will be tried after Backoff.
	EventRestartScheduled
	// EventRestartFailed: a restart failed; Err says why.
	EventRestartFailed
	// EventStopped: Close stopped the plugin.
	EventStopped
)

var eventNames = [...]string{"", "started", "exited", "restart_scheduled", "restart_failed", "stopped"}

// String returns the kind's name, e.g. "exited".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return "event(" + strconv.Itoa(int(k)) + ")"
}

// Event is something that happened to a plugin process.
type Event struct {
	Kind EventKind
	// Path is the plugin executable.
	Path string
	// PID is the process id (of the process that started, exited or
	// stopped).
	PID int
	// Attempt counts restarts since the last exit, from 1.
	Attempt int
	// Backoff is the delay before the restart (EventRestartScheduled).
	Backoff time.Duration
	// Err is the exit status (EventExited) or why a restart failed.
	Err error
}
