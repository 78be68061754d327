//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqfault/mqfault/pkg/probe/probetest"
)

// output collects what a child process writes and says when the first line
// is complete.
type output struct {
	mu    sync.Mutex // guards buf and once
	buf   bytes.Buffer
	line  chan struct{}
	fired bool
}

func newOutput() *output { return &output{line: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if !o.fired && bytes.IndexByte(o.buf.Bytes(), '\n') >= 0 {
		o.fired = true
		close(o.line)
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// child is the mqfault binary running as a subprocess.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  *os.File // the write end of the child's stdin
	stdout *output
	stderr *output
	done   chan struct{}
}

// startMqfault starts the built mqfault binary with args, TMPDIR set to tmp.
func startMqfault(t *testing.T, tmp string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(binary(t, mqfaultPkg), args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	c := &child{t: t, cmd: cmd, stdout: newOutput(), stderr: newOutput(), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, c.stdin = r, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close() // the child has its copy
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
		c.stdin.Close()
	})
	return c
}

// waitRead waits until the child has read everything written to its stdin
// (the pipe holds no byte): it is then past main's signal set-up, which
// comes before any read, however slowly a loaded machine started it.
func (c *child) waitRead() {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := unix.IoctlGetInt(int(c.stdin.Fd()), unix.TIOCINQ) // FIONREAD
		switch {
		case err != nil:
			c.t.Fatalf("FIONREAD (TIOCINQ) on the child's stdin: %v", err)
		case n == 0:
			return
		case time.Now().After(deadline):
			c.t.Fatalf("mqfault left %d bytes of its stdin unread for 60 s; stderr: %s", n, c.stderr)
		}
		select {
		case <-c.done:
			c.t.Fatalf("mqfault exited before reading its stdin: %v; stderr: %s", c.cmd.ProcessState, c.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitLine waits until the child has printed a first line on stdout.
func (c *child) waitLine() {
	c.t.Helper()
	select {
	case <-c.stdout.line:
	case <-c.done:
		c.t.Fatalf("mqfault exited before printing a line: %v; stderr: %s", c.cmd.ProcessState, c.stderr)
	case <-time.After(60 * time.Second):
		c.t.Fatalf("mqfault printed no line in 60 s; stderr: %s", c.stderr)
	}
}

// signal sends sig and returns the exit status (-1: killed by a signal).
func (c *child) signal(sig syscall.Signal) int {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("mqfault still running 30 s after %v; stderr: %s", sig, c.stderr)
	}
	return c.cmd.ProcessState.ExitCode()
}

// children returns the pids of pid's child processes (from /proc).
func children(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range stats {
		if ppid, _, ok := procStat(p); ok && ppid == pid {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, n)
		}
	}
	return out
}

// procStat reads a /proc/PID/stat file: the parent's pid and the state.
func procStat(path string) (ppid int, state string, ok bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}

// alive reports whether pid is a process that has not exited.
func alive(pid int) bool {
	_, state, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	return ok && state != "Z" && state != "X"
}

// TestInterruptProbe checks Ctrl-C on `mqfault probe` with the real
// tcp-detector plugin:
//  1. probe runs with --every, so it is still running when interrupted;
//  2. after its first answer, the plugin process is found among its children;
//  3. SIGINT: exit 130, one line on stderr, the plugin process gone, and no
//     plugin socket directory left in TMPDIR.
func TestInterruptProbe(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	plugin := binary(t, tcpDetectorPkg)
	tmp := t.TempDir()
	up := probetest.ListenTCP(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			c := startMqfault(t, tmp, "probe", up, "--plugin", plugin, "--every", "20ms")
			c.waitLine()
			kids := children(t, c.cmd.Process.Pid)
			if len(kids) == 0 {
				t.Fatal("probe has no child process: where is the plugin?")
			}
			code := c.signal(sig)
			if code != exitInterrupted {
				t.Errorf("after %v: exit %d, want %d; stderr: %s", sig, code, exitInterrupted, c.stderr)
			}
			if got, want := c.stderr.String(), "mqfault probe: interrupted\n"; got != want {
				t.Errorf("after %v: stderr = %q, want %q", sig, got, want)
			}
			first, _, _ := strings.Cut(c.stdout.String(), "\n")
			stamp, rest, _ := strings.Cut(first, " ")
			if _, err := time.Parse(timeFormat, stamp); err != nil || rest != up+" reachable" {
				t.Errorf("stdout = %q, want lines of a timestamp and %q", c.stdout.String(), up+" reachable")
			}
			deadline := time.Now().Add(5 * time.Second)
			for _, pid := range kids {
				for alive(pid) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if alive(pid) {
					t.Errorf("child process %d (the plugin) still runs after probe exited", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			left, _ := filepath.Glob(filepath.Join(tmp, "plugin*"))
			if len(left) > 0 {
				t.Errorf("left in TMPDIR after probe exited: %q", left)
			}
		})
	}
}

// TestProbeStdoutClosed is `mqfault probe --every 100ms ... | head -1`: the
// reader of probe's stdout goes away after the first line. probe must stop
// its plugin and exit 141 (what a shell reports for a program ended by
// SIGPIPE, which is what `head` expects), saying nothing, leaving no plugin
// process and no plugin directory behind.
func TestProbeStdoutClosed(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	plugin := binary(t, tcpDetectorPkg)
	tmp := t.TempDir()
	up := probetest.ListenTCP(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(binary(t, mqfaultPkg), "probe", "--every", "100ms", "--plugin", plugin, up)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	stderr := newOutput()
	cmd.Stdout, cmd.Stderr = w, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the child has its copy
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, up+" reachable") {
			t.Fatalf("first line %q, want %q", l, up+" reachable")
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no line in 60 s; stderr: %s", stderr)
	}
	kids := children(t, cmd.Process.Pid)
	if len(kids) == 0 {
		t.Fatal("probe has no child process: where is the plugin?")
	}
	r.Close() // head -1 exits
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("probe still running 30 s after its stdout closed; stderr: %s", stderr)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitBrokenPipe || stderr.String() != "" {
		t.Errorf("after its stdout closed: %v (exit %d), stderr %q; want exit %d and nothing on stderr", cmd.ProcessState, code, stderr.String(), exitBrokenPipe)
	}
	for _, pid := range kids {
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("child process %d (the plugin) still runs after probe exited", pid)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "plugin*")); len(left) > 0 {
		t.Errorf("left in TMPDIR after probe exited: %q", left)
	}
}

// TestInterruptSim checks Ctrl-C on a long `mqfault sim` (a scenario read
// from stdin): exit 130 and one line, not one per strategy.
func TestInterruptSim(t *testing.T) {
	c := startMqfault(t, t.TempDir(), "sim", "--scenario", "-")
	long := strings.Replace(simScenario, "duration: 3s", "duration: 1h", 1)
	if _, err := io.WriteString(c.stdin, long); err != nil {
		t.Fatal(err)
	}
	c.waitRead() // past start-up: the simulation runs
	c.stdin.Close()
	code := c.signal(syscall.SIGINT)
	if code != exitInterrupted {
		t.Errorf("after SIGINT: exit %d, want %d; stderr: %s", code, exitInterrupted, c.stderr)
	}
	if got, want := c.stderr.String(), "mqfault sim: interrupted\n"; got != want {
		t.Errorf("after SIGINT: stderr = %q, want %q", got, want)
	}
	if out := c.stdout.String(); out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
}

// TestInterruptTrace checks Ctrl-C on `mqfault trace -` waiting for its
// next line of input: the read does not hold the command up.
func TestInterruptTrace(t *testing.T) {
	c := startMqfault(t, t.TempDir(), "trace", "-")
	if _, err := io.WriteString(c.stdin, "route brokerA:2,brokerB:2\n"); err != nil {
		t.Fatal(err)
	}
	c.waitRead()                       // started, and read the line
	time.Sleep(100 * time.Millisecond) // blocked reading the next one (the signal is handled either way)
	code := c.signal(syscall.SIGINT)
	if code != exitInterrupted {
		t.Errorf("after SIGINT: exit %d, want %d; stderr: %s", code, exitInterrupted, c.stderr)
	}
	if got, want := c.stderr.String(), "mqfault trace: interrupted\n"; got != want {
		t.Errorf("after SIGINT: stderr = %q, want %q", got, want)
	}
}

// TestDevFull runs the binary with its stdout on /dev/full: the output is
// lost, so the exit status is 1, with one line that says why.
func TestDevFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	defer full.Close()
	for _, args := range [][]string{
		{"trace", "--mode", "v4", "../../testdata/conformance/v4_basic.trace"},
		{"sim", "--print-scenario"},
		{"version"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(binary(t, mqfaultPkg), args...)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = full, &stderr
			err := cmd.Run()
			want := ": writing output: write /dev/stdout: no space left on device\n"
			if code := cmd.ProcessState.ExitCode(); code != exitFailure || !strings.HasSuffix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("mqfault %q > /dev/full = %v (exit %d), stderr %q; want exit %d and one line ending %q", args, err, code, stderr.String(), exitFailure, want)
			}
		})
	}
}
