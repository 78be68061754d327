package host

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/mqfault/mqfault/plugins/protocol"
)

// tailLines is how many of the plugin's last stderr lines a StartError shows.
const tailLines = 6

// headBytes is how many of the first bytes the plugin wrote to stdout are
// kept, to say what it wrote instead of a handshake.
const headBytes = 120

// drainTimeout bounds how long the runner waits, once the plugin process
// has exited and its process group was killed, for its stdout and stderr to
// reach end of file. A process outside the group (one that called setsid)
// may still hold them; after drainTimeout the host closes its ends, so that
// nothing waits for such a process.
const drainTimeout = 500 * time.Millisecond

// procRunner runs one plugin process for go-plugin (a runner.Runner). It
// differs from go-plugin's own runner in that:
//
//   - the plugin runs in a process group of its own, and Kill (and the
//     plugin's exit) kills the whole group, so a wrapper script's children
//     die with it;
//   - a goroutine reaps the process as soon as it exits, and closes exited:
//     that is how the supervisor learns that the plugin died, and reaping
//     never waits for the plugin's pipes;
//   - it reads the plugin's stderr itself, logging each line to slog and
//     keeping the last few for start errors (so a plugin's output can never
//     reach go-plugin's parser), and keeps the first bytes of stdout;
//   - the pipes are closed at most drainTimeout after the exit, whoever
//     still holds their other ends.
type procRunner struct {
	exe     string
	args    []string
	env     []string
	cmd     *exec.Cmd // replaced only by Start, under procMu
	stdoutR *os.File  // the host's ends of the pipes
	stderrR *os.File
	stdoutW *os.File // the plugin's ends; closed once it started
	stderrW *os.File
	stdinR  *os.File // the plugin's stdin, closed once it started
	stdinW  *os.File // held open until the plugin exited (see protocol.HostWatchKey)
	stdout  *headReader
	path    string
	log     *slog.Logger   // the host's messages
	outLog  *slog.Logger   // the plugin's output
	out     *outputLimiter // bounds what reaches outLog

	pid        int
	stderrDone chan struct{} // closed when stderr reached EOF (or was closed)
	exited     chan struct{} // closed after the process was reaped
	waitErr    error         // the exit status; read only after exited is closed

	procMu  sync.Mutex // guards killed and the start of cmd (cmd.Process)
	killed  bool
	started bool

	mu   sync.Mutex // guards tail
	tail []string
}

// errKilledBeforeStart is Start's error after Kill.
var errKilledBeforeStart = errors.New("plugin host: the plugin was stopped before it started")

var _ runner.Runner = (*procRunner)(nil)

// newProcRunner prepares a run of the executable exe as the plugin at path
// (its argv[0]; exe differs from path when a pinned plugin runs from its
// private copy).
func newProcRunner(path, exe string, args, env []string, log, outLog *slog.Logger, out *outputLimiter) (*procRunner, error) {
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		closeAll(stdoutR, stdoutW)
		return nil, err
	}
	// The plugin's stdin: the host never writes to it, and its end closes
	// when the host process ends, however it ends; the plugin takes end of
	// file there as its host being gone, and exits.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		closeAll(stdoutR, stdoutW, stderrR, stderrW)
		return nil, err
	}
	env = append(env[:len(env):len(env)], protocol.HostWatchKey+"="+protocol.HostWatchStdin)
	r := &procRunner{
		exe: exe, args: args, env: env,
		stdoutR: stdoutR, stderrR: stderrR, stdoutW: stdoutW, stderrW: stderrW,
		stdinR: stdinR, stdinW: stdinW,
		stdout: &headReader{r: stdoutR, eof: make(chan struct{})},
		path:   path, log: log, outLog: outLog, out: out,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	r.cmd = r.newCmd()
	return r, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// Start starts the process, the goroutine that forwards its stderr and the
// one that reaps it. A Start that fails releases everything.
func (r *procRunner) Start(context.Context) error {
	r.procMu.Lock()
	defer r.procMu.Unlock()
	if r.started {
		return errors.New("plugin host: runner started twice")
	}
	r.started = true
	var err error
	if r.killed {
		err = errKilledBeforeStart
	} else {
		err = r.startCmd()
	}
	closeAll(r.stdoutW, r.stderrW, r.stdinR) // the plugin has its copies
	if err != nil {
		closeAll(r.stdoutR, r.stderrR, r.stdinW)
		close(r.stderrDone)
		r.waitErr = err
		close(r.exited)
		return err
	}
	r.pid = r.cmd.Process.Pid
	r.log = r.log.With("pid", r.pid)
	r.outLog = r.outLog.With("pid", r.pid)
	go r.forwardStderr()
	go r.reap()
	return nil
}

// startCmd starts r.cmd, trying again a few times when the executable is
// busy: a fork elsewhere in the host may for a moment still hold the write
// descriptor a pinned plugin's copy was made through (ETXTBSY).
func (r *procRunner) startCmd() error {
	for attempt := 1; ; attempt++ {
		err := r.cmd.Start()
		if err == nil || !isTextBusy(err) || attempt == 5 {
			return err
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
		r.cmd = r.newCmd()
	}
}

// newCmd returns an unstarted command for the plugin.
func (r *procRunner) newCmd() *exec.Cmd {
	cmd := exec.Command(r.exe, r.args...)
	cmd.Args[0] = r.path
	cmd.Env = r.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r.stdinR, r.stdoutW, r.stderrW
	setProcessGroup(cmd)
	return cmd
}

// reap waits for the process to exit, kills what is left of its process
// group, and closes the pipes once they drained (or after drainTimeout).
func (r *procRunner) reap() {
	r.waitErr = r.cmd.Wait() // returns at the exit: the pipes are *os.File, no copying
	close(r.exited)
	closeAll(r.stdinW)
	// The group is still ours: its id cannot be reused while any member
	// lives, and the leader was reaped a moment ago.
	_ = killProcessGroup(r.pid)
	drained := time.NewTimer(drainTimeout)
	defer drained.Stop()
	for _, done := range []chan struct{}{r.stdout.eof, r.stderrDone} {
		select {
		case <-done:
		case <-drained.C:
			closeAll(r.stdoutR, r.stderrR)
			return
		}
	}
	closeAll(r.stdoutR, r.stderrR)
}

func (r *procRunner) forwardStderr() {
	defer close(r.stderrDone)
	sc := bufio.NewScanner(r.stderrR)
	sc.Buffer(make([]byte, 0, 4096), maxLogLine)
	for sc.Scan() {
		line := sc.Bytes()
		r.out.line(r.outLog, line, slog.LevelWarn)
		r.remember(string(line))
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		r.log.Warn("plugin host: cannot read the plugin's stderr", "err", err)
		_, _ = io.Copy(io.Discard, r.stderrR)
	}
}

func (r *procRunner) remember(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tail = append(r.tail, line)
	if len(r.tail) > tailLines {
		r.tail = r.tail[len(r.tail)-tailLines:]
	}
}

// lastOutput returns the plugin's last stderr lines.
func (r *procRunner) lastOutput() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.tail...)
}

// Wait waits until the process was reaped and its stderr drained.
func (r *procRunner) Wait(context.Context) error {
	<-r.exited
	<-r.stderrDone
	return r.waitErr
}

// Kill sends SIGKILL to the plugin's process group (or keeps a process not
// yet started from starting); killing a process that is gone is not an
// error. Safe to call from any goroutine, at any time.
func (r *procRunner) Kill(context.Context) error {
	r.procMu.Lock()
	defer r.procMu.Unlock()
	r.killed = true
	if r.cmd.Process == nil {
		return nil
	}
	select {
	case <-r.exited:
		return nil // reaped: its group was killed then
	default:
	}
	// The leader is alive or a zombie: its pid, and so the group id, are
	// still taken.
	err := killProcessGroup(r.pid)
	if kerr := r.cmd.Process.Kill(); kerr != nil && !errors.Is(kerr, os.ErrProcessDone) && err == nil {
		err = kerr
	}
	return err
}

// Stdout is the handshake channel go-plugin reads.
func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr returns an empty stream: the runner forwards stderr itself.
func (r *procRunner) Stderr() io.ReadCloser { return io.NopCloser(strings.NewReader("")) }

// Name is the executable's path.
func (r *procRunner) Name() string { return r.path }

// ID is the process id.
func (r *procRunner) ID() string { return strconv.Itoa(r.pid) }

// Diagnose returns the plugin's last stderr lines.
func (r *procRunner) Diagnose(context.Context) string {
	return strings.Join(r.lastOutput(), "\n")
}

// PluginToHost returns the address unchanged: the plugin runs on this host.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin returns the address unchanged.
func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// headReader reads the plugin's stdout for go-plugin, keeping the first
// headBytes bytes and counting them all, and closes eof at the end of the
// stream (or on a read error).
type headReader struct {
	r       io.Reader
	eof     chan struct{}
	eofOnce sync.Once

	mu   sync.Mutex // guards head and n
	head []byte
	n    int64
}

func (h *headReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if n > 0 {
		h.mu.Lock()
		if room := headBytes - len(h.head); room > 0 {
			h.head = append(h.head, p[:min(n, room)]...)
		}
		h.n += int64(n)
		h.mu.Unlock()
	}
	if err != nil {
		h.eofOnce.Do(func() { close(h.eof) })
	}
	return n, err
}

// Close does nothing: the runner closes the pipe.
func (h *headReader) Close() error { return nil }

// seen returns the first bytes read and how many were read in all.
func (h *headReader) seen() ([]byte, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]byte(nil), h.head...), h.n
}
