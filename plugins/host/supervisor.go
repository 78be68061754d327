package host

import (
	"context"
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
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/plugins/protocol"
)

// supervisor owns one plugin: it starts the process, watches it (its exit,
// and health checks), restarts it with backoff when it dies or hangs, and
// stops it on close. Calls read the live instance with one atomic load.
type supervisor struct {
	cfg    Config
	kind   protocol.Kind
	plugin plugin.Plugin
	log    *slog.Logger   // the host's messages
	outLog *slog.Logger   // the plugin's output
	out    *outputLimiter // bounds the plugin's output
	pin    *pin           // the pinned private copy, or nil without a pin

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
	client    *plugin.Client
	raw       any // what Dispense returned: *protocol.DetectorClient or *protocol.FilterClient
	proc      *procRunner
	conn      *grpc.ClientConn // for health checks; nil if go-plugin gave none
	socketDir string           // go-plugin's temporary directory
	dirLock   *dirLock         // marks socketDir in use (see sweepStale)
	started   time.Time        // when the handshake completed, on Clock
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
		outLog: cfg.OutputLogger.With("plugin", filepath.Base(cfg.Path)),
		done:   make(chan struct{}),
	}
	s.out = newOutputLimiter(cfg.Clock, cfg.OutputRate, s.outLog)
	if cfg.SHA256 != "" {
		want, _ := hex.DecodeString(cfg.SHA256) // validated by withDefaults
		s.pin = &pin{want: want}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// What hosts that are gone (killed, say) left behind.
	copyParent := cfg.CopyDir
	if copyParent == "" {
		copyParent = os.TempDir()
	}
	sweepStale(copyParent, copyDirPrefix, s.log)
	sweepStale(os.TempDir(), socketDirPrefix, s.log)
	start := time.Now()
	inst, err := s.start()
	if err != nil {
		s.cancel()
		if s.pin != nil {
			s.pin.remove()
		}
		s.out.close()
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

// run watches the plugin until close: when the process exits, or fails
// HealthFailures health checks in a row (then it is killed), it logs it,
// calls onDown, restarts it with backoff and calls onUp. The backoff starts
// over at MinBackoff only after a plugin that ran healthy for StableAfter;
// after a quicker death it goes on from the last restart's, doubled.
func (s *supervisor) run() {
	defer close(s.done)
	defer s.out.close() // after the last process's output was read
	defer func() {
		if s.pin != nil {
			s.pin.remove()
		}
	}()
	health := s.cfg.Clock.NewTicker(s.cfg.HealthInterval)
	defer health.Stop()
	inst := s.cur.Load()
	var backoff time.Duration // the last restart's delay
	quick := 0                // deaths in a row within StableAfter of the start
	for {
		uptime, exited := s.watch(inst, health)
		if !exited {
			s.stop(inst)
			return
		}
		s.cur.Store(nil)
		if s.onDown != nil {
			s.onDown()
		}
		if uptime >= s.cfg.StableAfter {
			quick = 0
		} else {
			quick++
		}
		if quick < 2 {
			backoff = s.cfg.MinBackoff
		} else {
			backoff = min(2*backoff, s.cfg.MaxBackoff)
		}
		status := exitStatus(inst.proc.waitErr)
		s.log.Error("plugin host: plugin process exited; it will be restarted", "pid", inst.proc.pid, "status", status, "uptime", uptime)
		if quick >= 2 {
			s.log.Warn("plugin host: plugin crash loop: it died soon after each start; its restarts back off",
				"quick_exits", quick, "stable_after", s.cfg.StableAfter, "backoff", backoff)
		}
		s.emit(Event{Kind: EventExited, PID: inst.proc.pid, Err: status, Uptime: uptime, QuickExits: quick})
		s.shutdown(inst) // reaps go-plugin's goroutines for the dead process
		attempt := 0
		if inst, attempt, backoff = s.restart(backoff, quick); inst == nil {
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

// watch waits until inst's process has exited (it returns true; a plugin
// that failed its health checks is killed first) or the supervisor is
// closed (false). It returns how long inst ran healthy: from its start to
// its exit, or to the first of the failed health checks it was killed for.
func (s *supervisor) watch(inst *instance, health clock.Ticker) (time.Duration, bool) {
	failures := 0
	var failingSince time.Time
	uptime := func() time.Duration {
		end := failingSince
		if end.IsZero() {
			end = s.cfg.Clock.Now()
		}
		return end.Sub(inst.started)
	}
	for {
		select {
		case <-s.ctx.Done():
			return 0, false
		case <-inst.proc.exited:
			return uptime(), true
		case <-health.C():
		}
		err := s.check(inst)
		switch {
		case s.ctx.Err() != nil:
			return 0, false
		case err == nil:
			failures = 0
			failingSince = time.Time{}
			continue
		}
		failures++
		if failures == 1 {
			failingSince = s.cfg.Clock.Now()
		}
		s.log.Warn("plugin host: plugin health check failed", "pid", inst.proc.pid, "failures", failures, "err", err)
		if failures < s.cfg.HealthFailures {
			continue
		}
		s.log.Error("plugin host: plugin stopped answering; killing it to restart it", "pid", inst.proc.pid, "failures", failures, "err", err)
		s.emit(Event{Kind: EventUnresponsive, PID: inst.proc.pid, Err: err})
		s.cur.Store(nil) // no call waits for it any more
		_ = inst.proc.Kill(context.Background())
		select {
		case <-inst.proc.exited:
			return uptime(), true
		case <-s.ctx.Done():
			return 0, false
		}
	}
}

// check asks the plugin's gRPC health service whether it serves, within
// HealthTimeout.
func (s *supervisor) check(inst *instance) error {
	if inst.conn == nil {
		return nil
	}
	ctx, cancel := clock.WithTimeout(s.ctx, s.cfg.Clock, s.cfg.HealthTimeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(inst.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: plugin.GRPCServiceName})
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("no answer to a health check within %v", s.cfg.HealthTimeout)
	case err != nil:
		return fmt.Errorf("health check: %w", err)
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return fmt.Errorf("health check: status %s", resp.GetStatus())
	}
	return nil
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
	s.shutdown(inst)
	s.log.Info("plugin host: plugin stopped", "pid", inst.proc.pid)
	s.emit(Event{Kind: EventStopped, PID: inst.proc.pid})
}

// shutdown ends inst and everything go-plugin runs for it: go-plugin's
// graceful shutdown (a Shutdown call, then waiting for the exit) for at
// most StopTimeout, then SIGKILL to the plugin's process group. It returns
// when go-plugin's goroutines are done and its temporary directory is
// removed: within StopTimeout plus the time to reap a killed process.
func (s *supervisor) shutdown(inst *instance) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		inst.client.Kill()
	}()
	t := time.NewTimer(s.cfg.StopTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("plugin host: plugin did not stop within StopTimeout; killing it", "pid", inst.proc.pid, "stop_timeout", s.cfg.StopTimeout)
		_ = inst.proc.Kill(context.Background())
		<-done
	}
	if inst.socketDir != "" {
		_ = os.RemoveAll(inst.socketDir)
	}
	inst.dirLock.unlock()
}

// restart starts the plugin again, waiting first before the first try and
// twice as long after each failure, up to MaxBackoff. It returns the new
// instance, the attempt that started it and the delay before that attempt,
// or nil when closed meanwhile. quick is the crash loop's count for the
// events.
func (s *supervisor) restart(first time.Duration, quick int) (*instance, int, time.Duration) {
	backoff := first
	for attempt := 1; ; attempt++ {
		if !s.sleep(backoff, attempt, quick) {
			return nil, 0, 0
		}
		inst, err := s.start()
		if err == nil {
			return inst, attempt, backoff
		}
		if s.ctx.Err() != nil {
			return nil, 0, 0
		}
		s.log.Error("plugin host: plugin restart failed", "attempt", attempt, "err", err)
		s.emit(Event{Kind: EventRestartFailed, Attempt: attempt, Err: err})
		backoff = min(2*backoff, s.cfg.MaxBackoff)
	}
}

// sleep waits d on the clock; it reports false when closed meanwhile.
func (s *supervisor) sleep(d time.Duration, attempt, quick int) bool {
	fired := make(chan struct{})
	t := s.cfg.Clock.AfterFunc(d, func() { close(fired) })
	s.emit(Event{Kind: EventRestartScheduled, Attempt: attempt, Backoff: d, QuickExits: quick})
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

// executable returns the file to run: the pinned private copy, or Path
// itself when it is not pinned and nobody else can change it.
func (s *supervisor) executable() (string, error) {
	where := writableByOthers(s.cfg.Path)
	if s.pin == nil {
		if where != "" {
			return "", &StartError{Path: s.cfg.Path, Reason: ErrInsecure,
				Err: fmt.Errorf("%s is writable by other users, who could replace what the host runs; refusing to run it unpinned (fix the permissions, or pin it with SHA256)", where)}
		}
		return s.cfg.Path, nil
	}
	first := s.pin.exe == ""
	exe, err := s.pin.executable(s.cfg.Path, s.cfg.CopyDir)
	if err == nil && first && where != "" {
		s.log.Warn("plugin host: the plugin file is writable by other users; running the pinned, verified private copy", "where", where, "copy", exe)
	}
	return exe, err
}

// start runs one plugin process through the handshake and dispenses the
// plugin. Closing the supervisor meanwhile kills the process.
func (s *supervisor) start() (*instance, error) {
	exe, err := s.executable()
	if err != nil {
		return nil, err
	}
	var proc atomic.Pointer[procRunner]
	var socketDir atomic.Pointer[string]
	var lock atomic.Pointer[dirLock]
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake(s.kind),
		VersionedPlugins: map[int]plugin.PluginSet{protocol.ProtocolVersion: {string(s.kind): s.plugin}},
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, dir string) (runner.Runner, error) {
			socketDir.Store(&dir)
			if l, err := lockDir(dir); err == nil { // without a lock it is never swept
				lock.Store(l)
			}
			// cmd carries the environment go-plugin prepared (the host's,
			// the magic cookie, the protocol versions, the mTLS
			// certificate); Config.Env goes last so it overrides the
			// host's variables, and cannot name go-plugin's.
			r, err := newProcRunner(s.cfg.Path, exe, s.cfg.Args, append(cmd.Env, s.cfg.Env...), s.log, s.outLog, s.out)
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
		SyncStdout:       newLineLogger(s.outLog.With("stream", "stdout"), slog.LevelInfo, s.out),
		SyncStderr:       newLineLogger(s.outLog.With("stream", "stderr"), slog.LevelWarn, s.out),
	})
	stopKiller := context.AfterFunc(s.ctx, func() {
		if r := proc.Load(); r != nil {
			_ = r.Kill(context.Background())
		}
	})
	rpc, err := client.Client()
	stopKiller()
	var dir string
	if d := socketDir.Load(); d != nil {
		dir = *d
	}
	inst := &instance{client: client, proc: proc.Load(), socketDir: dir, dirLock: lock.Load()}
	if err != nil {
		s.discard(inst)
		return nil, s.startError(err, inst.proc)
	}
	if gc, ok := rpc.(*plugin.GRPCClient); ok {
		inst.conn = gc.Conn
	}
	if inst.raw, err = rpc.Dispense(string(s.kind)); err != nil {
		s.discard(inst)
		return nil, &StartError{Path: s.cfg.Path, Reason: ErrHandshake, Err: err}
	}
	inst.started = s.cfg.Clock.Now()
	return inst, nil
}

// discard ends a plugin that failed to start.
func (s *supervisor) discard(inst *instance) {
	if inst.proc != nil {
		_ = inst.proc.Kill(context.Background())
	}
	s.shutdown(inst)
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
		// No line came: the plugin closed its stdout without a word, or
		// wrote more than go-plugin reads for one line.
		strings.HasPrefix(msg, "Unrecognized remote plugin message: \n"),
		strings.TrimSpace(msg) == "Unrecognized remote plugin message:":
		reason = ErrHandshake
		err = s.noHandshake(proc)
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

// maxHandshakeLine is the longest line go-plugin reads for a handshake (its
// bufio.Scanner's limit).
const maxHandshakeLine = 64 << 10

// noHandshake says why no handshake line came: what the plugin wrote to
// stdout instead, or that it wrote nothing.
func (s *supervisor) noHandshake(proc *procRunner) error {
	var head []byte
	var n int64
	if proc != nil {
		head, n = proc.stdout.seen()
	}
	if n == 0 {
		return fmt.Errorf("the plugin exited before the handshake: it is no mqfault %s plugin (a wrong magic cookie), or it failed at start", s.kind)
	}
	more := ""
	if n > int64(len(head)) {
		more = "…"
	}
	if n >= maxHandshakeLine {
		return fmt.Errorf("the plugin wrote at least %d bytes to stdout with no line break, more than go-plugin reads for a handshake line (64 KiB); they start %q%s", n, head, more)
	}
	return fmt.Errorf("the plugin wrote %d bytes to stdout but no handshake line: %q%s", n, head, more)
}
