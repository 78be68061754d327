package host

import (
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/plugins/protocol"
)

// Config says which plugin to run and how to supervise it.
type Config struct {
	// Path is the plugin executable.
	Path string
	// Args are its command-line arguments, without the program name.
	Args []string
	// Env holds KEY=VALUE pairs added to the plugin's environment, which is
	// otherwise the host's. go-plugin's own variables (PLUGIN_*), the magic
	// cookie and protocol.HostWatchKey cannot be set here.
	Env []string
	// SHA256, when not empty, pins the executable: its SHA-256 in hex (64
	// digits, any case). At the first start the file is copied into a
	// private directory (mode 0700, under CopyDir), the copy is hashed and
	// the copy is run, so the bytes that run are the bytes that were hashed
	// whatever happens to Path meanwhile; a mismatch is refused
	// (ErrChecksum) without running anything. Restarts run the same copy,
	// hashed again first. Close removes it. The plugin's argv[0] is still
	// Path.
	//
	// Without a pin, a plugin whose file, or a directory above it, is
	// writable by other users is refused (ErrInsecure): anyone could replace
	// what the host runs. With a pin it runs (the copy is safe) and the host
	// logs a warning.
	SHA256 string
	// CopyDir is where a pinned plugin's private copy is made (default
	// os.TempDir()). It must allow running programs (not mounted noexec).
	CopyDir string
	// CallTimeout bounds every filter call to the plugin (default 5 s), and
	// a detector call whose ctx has no deadline: a probe's deadline belongs
	// to its caller (the strategy's DetectTimeout), see Detector.Detect.
	CallTimeout time.Duration
	// StartTimeout bounds a start up to the end of the handshake (default
	// 10 s).
	StartTimeout time.Duration
	// StopTimeout bounds the graceful part of stopping the plugin (Close, or
	// a restart of a plugin that stopped answering): go-plugin's shutdown
	// call and the wait for the process to exit. After it the plugin's whole
	// process group is killed with SIGKILL (default 2 s). It is timed on the
	// wall clock, like StartTimeout, so that Close always returns.
	StopTimeout time.Duration
	// HealthInterval is how often the host checks that the plugin answers
	// (gRPC health check; default 3 s), each check bounded by HealthTimeout
	// (default 2 s). After HealthFailures (default 3) failed checks in a
	// row the plugin is taken as hung: it is killed and restarted like a
	// plugin that died (EventUnresponsive). Timed on Clock.
	HealthInterval time.Duration
	HealthTimeout  time.Duration
	HealthFailures int
	// MinBackoff is the delay before the first restart after the plugin
	// died (default 100 ms); it doubles after each failed restart up to
	// MaxBackoff (default 30 s).
	MinBackoff time.Duration
	// MaxBackoff caps the restart delay.
	MaxBackoff time.Duration
	// StableAfter is how long a plugin must stay up, answering its health
	// checks, for the restart after its death to wait MinBackoff again
	// (default 1 min). A plugin that dies (or stops answering) sooner, time
	// after time, is in a crash loop: each restart then waits twice as long
	// as the one before, up to MaxBackoff; the host logs that at WARN and
	// Event.QuickExits counts the quick deaths in a row. Timed on Clock.
	StableAfter time.Duration
	// Logger receives what the host does (starts, exits, restarts), with
	// the attribute plugin. Default slog.Default().
	Logger *slog.Logger
	// OutputLogger receives the plugin's own output: the lines it logs
	// (package plugins/sdk's Logger, at their level), writes to stderr (WARN)
	// and to stdout (INFO), with the attributes plugin and pid (default
	// Logger). A handler that takes nothing keeps a plugin's chatter out of a
	// command's output; the last lines of stderr still explain a failed
	// start (StartError.Output).
	OutputLogger *slog.Logger
	// OutputRate bounds the plugin's output that reaches OutputLogger: on
	// average OutputRate lines a second, in bursts of as many (default 100),
	// for everything the plugin writes together. What exceeds it is dropped
	// unread and counted: a WARN line on OutputLogger ("plugin output
	// dropped", dropped=N) says how many, at most once a second while it
	// goes on. Timed on Clock.
	OutputRate int
	// Clock times the restart backoff, the call timeouts and a filter's
	// refreshes. Default clock.Real.
	Clock clock.Clock
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
	defaultStableAfter  = time.Minute
	defaultOutputRate   = 100

	defaultStopTimeout    = 2 * time.Second
	defaultHealthInterval = 3 * time.Second
	defaultHealthTimeout  = 2 * time.Second
	defaultHealthFailures = 3
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
		case strings.HasPrefix(key, "PLUGIN_") || key == protocol.MagicCookieKey || key == protocol.HostWatchKey:
			return c, invalid("Env", kv, "go-plugin's variables, the magic cookie and "+protocol.HostWatchKey+" are set by the host")
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
		{"StableAfter", &c.StableAfter, defaultStableAfter},
		{"StopTimeout", &c.StopTimeout, defaultStopTimeout},
		{"HealthInterval", &c.HealthInterval, defaultHealthInterval},
		{"HealthTimeout", &c.HealthTimeout, defaultHealthTimeout},
	} {
		if *d.v < 0 {
			return c, invalid(d.name, *d.v, "must not be negative")
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	switch {
	case c.HealthFailures < 0:
		return c, invalid("HealthFailures", c.HealthFailures, "must not be negative")
	case c.HealthFailures == 0:
		c.HealthFailures = defaultHealthFailures
	}
	switch {
	case c.OutputRate < 0:
		return c, invalid("OutputRate", c.OutputRate, "must not be negative")
	case c.OutputRate == 0:
		c.OutputRate = defaultOutputRate
	}
	if c.MinBackoff > c.MaxBackoff {
		return c, &ConfigError{Field: "MinBackoff", Value: c.MinBackoff, Reason: "must not exceed MaxBackoff (" + c.MaxBackoff.String() + ")",
			Related: "MaxBackoff", Err: ErrInvalidConfig}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.OutputLogger == nil {
		c.OutputLogger = c.Logger
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
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
	// outside); Err is its exit status, Uptime how long it ran healthy,
	// QuickExits whether it is in a crash loop.
	EventExited
	// EventRestartScheduled: a restart will be tried after Backoff.
	EventRestartScheduled
	// EventRestartFailed: a restart failed; Err says why.
	EventRestartFailed
	// EventStopped: Close stopped the plugin.
	EventStopped
	// EventUnresponsive: the plugin failed HealthFailures health checks in
	// a row; it is killed, and restarted (EventExited and the restart
	// events follow). Err is the last check's error.
	EventUnresponsive
)

var eventNames = [...]string{"", "started", "exited", "restart_scheduled", "restart_failed", "stopped", "unresponsive"}

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
	// Uptime is how long the process ran, answering its health checks,
	// before it died or stopped answering (EventExited), on Clock.
	Uptime time.Duration
	// QuickExits counts the deaths in a row, the last one included, that
	// came within StableAfter of their process's start (EventExited and
	// EventRestartScheduled); 0 after a plugin that ran stable. From 2 on
	// the plugin is in a crash loop and the restarts back off.
	QuickExits int
	// Err is the exit status (EventExited) or why a restart failed.
	Err error
}
