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

	"github.com/hashicorp/go-plugin/runner"
)

// tailLines is how many of the plugin's last stderr lines a StartError shows.
const tailLines = 6

// procRunner runs one plugin process for go-plugin (a runner.Runner). It
// differs from go-plugin's own runner in two ways: it reads the plugin's
// stderr itself, logging each line to slog and keeping the last few for
// start errors (so a plugin's output can never reach go-plugin's parser), and
// it closes exited when the process has been reaped, which is how the
// supervisor learns that the plugin died.
type procRunner struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	path   string
	log    *slog.Logger

	pid        int
	stderrDone chan struct{} // closed when stderr reached EOF
	exited     chan struct{} // closed after the process was reaped
	waitErr    error         // the exit status; read only after exited is closed
	waitOnce   sync.Once

	procMu sync.Mutex // guards killed and the start of cmd (cmd.Process)
	killed bool

	mu   sync.Mutex // guards tail
	tail []string
}

// errKilledBeforeStart is Start's error after Kill.
var errKilledBeforeStart = errors.New("plugin host: the plugin was stopped before it started")

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(path string, args, env []string, log *slog.Logger) (*procRunner, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		_ = stdout.Close()
		return nil, err
	}
	return &procRunner{
		cmd: cmd, stdout: stdout, stderr: stderr, path: path, log: log,
		stderrDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}, nil
}

// Start starts the process and the goroutine that forwards its stderr.
func (r *procRunner) Start(context.Context) error {
	r.procMu.Lock()
	defer r.procMu.Unlock()
	if r.killed {
		return errKilledBeforeStart
	}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	r.pid = r.cmd.Process.Pid
	r.log = r.log.With("pid", r.pid)
	go r.forwardStderr()
	return nil
}

func (r *procRunner) forwardStderr() {
	defer close(r.stderrDone)
	sc := bufio.NewScanner(r.stderr)
	sc.Buffer(make([]byte, 0, 4096), maxLogLine)
	for sc.Scan() {
		line := sc.Bytes()
		logPluginLine(r.log, line, slog.LevelWarn)
		r.remember(string(line))
	}
	if err := sc.Err(); err != nil {
		r.log.Warn("plugin host: cannot read the plugin's stderr", "err", err)
		_, _ = io.Copy(io.Discard, r.stderr)
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

// Wait waits for stderr to drain and then reaps the process.
func (r *procRunner) Wait(context.Context) error {
	<-r.stderrDone
	r.waitOnce.Do(func() {
		r.waitErr = r.cmd.Wait()
		close(r.exited)
	})
	<-r.exited
	return r.waitErr
}

// Kill sends SIGKILL (or keeps a process not yet started from starting);
// killing a process that is gone is not an error. Safe to call from any
// goroutine, at any time.
func (r *procRunner) Kill(context.Context) error {
	r.procMu.Lock()
	defer r.procMu.Unlock()
	r.killed = true
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
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
