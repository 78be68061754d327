package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/mqfault/mqfault/plugins/protocol"
)

// supervisor owns one plugin: it starts the process, watches it, restarts it
// with backoff when it dies, and stops it on close. Calls read the live
// instance with one atomic load.
type supervisor struct {
	cfg    Config
	kind   protocol.Kind
	plugin plugin.Plugin
	log    *slog.Logger
	want   []byte // the pinned SHA-256, or nil

	cur atomic.Pointer[instance] // the running plugin; nil while it is down

	ctx       context.Context // cancelled by close
	cancel    context.CancelFunc
	done      chan struct{} // closed when run returns
	closeOnce sync.Once

	// onUp and onDown, when set, are called from run after a restart and
	// after the plugin died. They are set before run starts.
	onUp   func()
	onDown func()
}

// instance is one running plugin process.
type instance struct {
	client *plugin.Client
	raw    any // what Dispense returned: *protocol.DetectorClient or *protocol.FilterClient
	proc   *procRunner
}

// newSupervisor validates cfg and starts the plugin once; the caller sets the
// hooks and then runs go s.run().
func newSupervisor(cfg Config, kind protocol.Kind, p plugin.Plugin) (*supervisor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &supervisor{
		cfg:    cfg,
		kind:   kind,
		plugin: p,
		log:    cfg.Logger.With("plugin", filepath.Base(cfg.Path)),
		done:   make(chan struct{}),
	}
	if cfg.SHA256 != "" {
		s.want, _ = hex.DecodeString(cfg.SHA256) // validated by withDefaults
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	start := time.Now()
	inst, err := s.start()
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.cur.Store(inst)
	s.log.Info("plugin host: plugin started", "kind", kind, "pid", inst.proc.pid, "elapsed", time.Since(start))
	s.emit(Event{Kind: EventStarted, PID: inst.proc.pid})
	return s, nil
}

func (s *supervisor) emit(e Event) {
	if s.cfg.OnEvent != nil {
		e.Path = s.cfg.Path
		s.cfg.OnEvent(e)
	}
}

// current returns the running instance, or why there is none.
func (s *supervisor) current() (*instance, error) {
	if inst := s.cur.Load(); inst != nil {
		return inst, nil
	}
	if s.ctx.Err() != nil {
		return nil, ErrClosed
	}
	return nil, fmt.Errorf("%w: %s is down, a restart is pending", ErrUnavailable, s.cfg.Path)
}

// run watches the plugin until close: when the process exits it logs it,
// calls onDown, restarts it with backoff and calls onUp.
func (s *supervisor) run() {
	defer close(s.done)
	inst := s.cur.Load()
	for {
		select {
		case <-s.ctx.Done():
			s.stop(inst)
			return
		case <-inst.proc.exited:
		}
		s.cur.Store(nil)
		if s.onDown != nil {
			s.onDown()
		}
		status := exitStatus(inst.proc.waitErr)
		s.log.Error("plugin host: plugin process exited; it will be restarted", "pid", inst.proc.pid, "status", status)
		s.emit(Event{Kind: EventExited, PID: inst.proc.pid, Err: status})
		inst.client.Kill() // reaps go-plugin's goroutines for the dead process
		attempt := 0
		if inst, attempt = s.restart(); inst == nil {
			return
		}
		s.cur.Store(inst)
		if s.onUp != nil {
			s.onUp()
		}
		s.log.Info("plugin host: plugin restarted", "pid", inst.proc.pid, "attempt", attempt)
		s.emit(Event{Kind: EventStarted, PID: inst.proc.pid, Attempt: attempt})
	}
}

// exitStatus describes how a process ended; a clean exit is an error too,
// since a plugin is never meant to exit on its own.
func exitStatus(waitErr error) error {
	if waitErr == nil {
		return errors.New("exit status 0")
	}
	return waitErr
}

// stop ends inst (gracefully, then by force) and reports it.
func (s *supervisor) stop(inst *instance) {
	s.cur.Store(nil)
	inst.client.Kill()
	s.log.Info("plugin host: plugin stopped", "pid", inst.proc.pid)
	s.emit(Event{Kind: EventStopped, PID: inst.proc.pid})
}

// restart starts the plugin again, waiting MinBackoff before the first try
// and twice as long after each failure, up to MaxBackoff. It returns the new
// instance and the attempt that started it, or nil when closed meanwhile.
func (s *supervisor) restart() (*instance, int) {
	backoff := s.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		if !s.sleep(backoff, attempt) {
			return nil, 0
		}
		inst, err := s.start()
		if err == nil {
			return inst, attempt
		}
		if s.ctx.Err() != nil {
			return nil, 0
		}
		s.log.Error("plugin host: plugin restart failed", "attempt", attempt, "err", err)
		s.emit(Event{Kind: EventRestartFailed, Attempt: attempt, Err: err})
		backoff = min(2*backoff, s.cfg.MaxBackoff)
	}
}

// sleep waits d on the clock; it reports false when closed meanwhile.
func (s *supervisor) sleep(d time.Duration, attempt int) bool {
	fired := make(chan struct{})
	t := s.cfg.Clock.AfterFunc(d, func() { close(fired) })
	s.emit(Event{Kind: EventRestartScheduled, Attempt: attempt, Backoff: d})
	select {
	case <-fired:
		return true
	case <-s.ctx.Done():
		t.Stop()
		return false
	}
}

// close stops the plugin and waits for run. Safe to call more than once.
func (s *supervisor) close() {
	s.closeOnce.Do(func() {
		s.cancel()
		<-s.done
	})
}

// verify checks the executable against the pinned SHA-256.
func (s *supervisor) verify() error {
	if s.want == nil {
		return nil
	}
	f, err := os.Open(s.cfg.Path)
	if err != nil {
		return &StartError{Path: s.cfg.Path, Reason: ErrStart, Err: err}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return &StartError{Path: s.cfg.Path, Reason: ErrStart, Err: err}
	}
	if got := h.Sum(nil); !bytes.Equal(got, s.want) {
		return &StartError{Path: s.cfg.Path, Reason: ErrChecksum,
			Err: fmt.Errorf("the file's sha256 is %x, want %x; refusing to run it", got, s.want)}
	}
	return nil
}

// start runs one plugin process through the handshake and dispenses the
// plugin. Closing the supervisor meanwhile kills the process.
func (s *supervisor) start() (*instance, error) {
	if err := s.verify(); err != nil {
		return nil, err
	}
	var proc atomic.Pointer[procRunner]
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake(s.kind),
		VersionedPlugins: map[int]plugin.PluginSet{protocol.ProtocolVersion: {string(s.kind): s.plugin}},
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, _ string) (runner.Runner, error) {
			// cmd carries the environment go-plugin prepared (the host's,
			// the magic cookie, the protocol versions, the mTLS
			// certificate); Config.Env goes last so it overrides the
			// host's variables, and cannot name go-plugin's.
			r, err := newProcRunner(s.cfg.Path, s.cfg.Args, append(cmd.Env, s.cfg.Env...), s.log)
			if err == nil {
				proc.Store(r)
			}
			return r, err
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     s.cfg.StartTimeout,
		Logger:           newHCLogger(s.log),
		Stderr:           io.Discard,
		SyncStdout:       newLineLogger(s.log.With("stream", "stdout"), slog.LevelInfo),
		SyncStderr:       newLineLogger(s.log.With("stream", "stderr"), slog.LevelWarn),
	})
	stopKiller := context.AfterFunc(s.ctx, func() {
		if r := proc.Load(); r != nil {
			_ = r.Kill(context.Background())
		}
	})
	rpc, err := client.Client()
	stopKiller()
	if err != nil {
		client.Kill()
		return nil, s.startError(err, proc.Load())
	}
	raw, err := rpc.Dispense(string(s.kind))
	if err != nil {
		client.Kill()
		return nil, &StartError{Path: s.cfg.Path, Reason: ErrHandshake, Err: err}
	}
	return &instance{client: client, raw: raw, proc: proc.Load()}, nil
}

// startError classifies what go-plugin said about a failed start. go-plugin
// has no sentinel errors for these, so its messages are matched.
func (s *supervisor) startError(err error, proc *procRunner) error {
	msg := err.Error()
	reason := ErrStart
	switch {
	case strings.Contains(msg, "incompatible API version"):
		reason = ErrIncompatible
		err = fmt.Errorf("%v (the host speaks version %d)", err, protocol.ProtocolVersion)
	case strings.Contains(msg, "exited before we could connect"),
		// The plugin closed its stdout without a word: it exited at once.
		strings.HasPrefix(msg, "Unrecognized remote plugin message: \n"),
		strings.TrimSpace(msg) == "Unrecognized remote plugin message:":
		reason = ErrHandshake
		err = fmt.Errorf("the plugin exited before the handshake: it is no mqfault %s plugin (a wrong magic cookie), or it failed at start", s.kind)
	case strings.Contains(msg, "Unrecognized remote plugin message"),
		strings.Contains(msg, "timeout while waiting for plugin to start"),
		strings.Contains(msg, "unsupported plugin protocol"),
		strings.Contains(msg, "incompatible core API version"),
		strings.Contains(msg, "error parsing"):
		reason = ErrHandshake
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			err = errors.New(msg[:i])
		}
	}
	if s.ctx.Err() != nil {
		reason, err = ErrClosed, nil
	}
	se := &StartError{Path: s.cfg.Path, Reason: reason, Err: err}
	if proc != nil {
		se.Output = proc.lastOutput()
	}
	return se
}
