package host_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
	"github.com/mqfault/mqfault/plugins/host"
)

// stopBound is how long past StopTimeout a Close of a hung plugin may take:
// the SIGKILL, the reaping and go-plugin's goroutines. A guard, not a speed
// target; without the bound Close never returns.
const stopBound = 3 * time.Second

// gone reports whether pid has no live process (a zombie waiting for its
// parent counts as gone: it runs nothing and holds no pipe).
func gone(pid int) bool {
	state, ok := procState(pid)
	if !ok {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	return state == 'Z'
}

// procState returns pid's state letter from /proc (R, S, T, Z, ...).
func procState(pid int) (byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}

// waitGone waits until pid is gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Errorf("process %d still runs", pid)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// privateTemp points TMPDIR (where go-plugin makes its plugin-dir*
// socket directories) at a directory of the test's own and returns it.
func privateTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

// noPluginDirs checks that no go-plugin temporary directory is left in dir.
func noPluginDirs(t *testing.T, dir string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(dir, "plugin-dir*"))
	if len(left) != 0 {
		t.Errorf("go-plugin temporary directories left behind: %v", left)
	}
}

// stopProcess SIGSTOPs pid and waits until it is stopped (a signal takes a
// moment to stop every thread of a process; until then it may still answer),
// and kills it when the test ends, unless it is gone by then.
func stopProcess(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("kill -STOP %d: %v", pid, err)
	}
	t.Cleanup(func() {
		if !gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return // no /proc: cannot tell
	}
	for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
		if state, ok := procState(pid); !ok || state == 'T' || state == 't' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped %v after SIGSTOP", pid, patience)
		}
	}
}

// timedClose runs close and returns how long it took, failing the test
// when it does not return within limit.
func timedClose(t *testing.T, limit time.Duration, closeFn func() error) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = closeFn()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("Close() did not return within %v", limit)
	}
	return time.Since(start)
}

// TestCloseStoppedPlugin SIGSTOPs the plugin and closes it: go-plugin's
// graceful shutdown can never complete, so Close must give up after
// StopTimeout, kill the plugin and return, leaving no process and no
// temporary directory.
func TestCloseStoppedPlugin(t *testing.T) {
	for _, kind := range []string{"detector", "filter"} {
		t.Run(kind, func(t *testing.T) {
			tmp := privateTemp(t)
			ev := newEventLog()
			var closeFn func() error
			switch kind {
			case "detector":
				cfg := helper("tcp")
				cfg.OnEvent = ev.record
				d, err := host.NewDetector(cfg)
				if err != nil {
					t.Fatal(err)
				}
				closeFn = d.Close
			case "filter":
				cfg := helper("zone")
				cfg.OnEvent = ev.record
				f, err := host.NewFilter(host.FilterConfig{Config: cfg})
				if err != nil {
					t.Fatal(err)
				}
				closeFn = f.Close
			}
			started := ev.wait(t, host.EventStarted)
			stopProcess(t, started.PID)
			elapsed := timedClose(t, 2*time.Second+stopBound, closeFn)
			t.Logf("Close returned in %v with the plugin stopped", elapsed.Round(10*time.Millisecond))
			ev.wait(t, host.EventStopped)
			waitGone(t, started.PID)
			noPluginDirs(t, tmp)
		})
	}
}

// TestCloseLeavesNothing closes a running plugin: no process, no
// temporary directory.
func TestCloseLeavesNothing(t *testing.T) {
	tmp := privateTemp(t)
	ev := newEventLog()
	cfg := helper("tcp")
	cfg.OnEvent = ev.record
	d, err := host.NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	started := ev.wait(t, host.EventStarted)
	timedClose(t, patience, d.Close)
	waitGone(t, started.PID)
	noPluginDirs(t, tmp)
}

// TestHungPluginRestarted SIGSTOPs a detector plugin: it is alive but
// answers nothing. After HealthFailures failed health checks the host
// kills it and starts a new one, which answers.
func TestHungPluginRestarted(t *testing.T) {
	ev := newEventLog()
	cfg := helper("tcp")
	cfg.OnEvent = ev.record
	cfg.HealthInterval = 100 * time.Millisecond
	cfg.HealthTimeout = 500 * time.Millisecond
	cfg.HealthFailures = 3
	cfg.MinBackoff = 10 * time.Millisecond
	d := newDetector(t, cfg)
	started := ev.wait(t, host.EventStarted)
	stopProcess(t, started.PID)
	unresponsive := ev.wait(t, host.EventUnresponsive)
	if unresponsive.PID != started.PID || unresponsive.Err == nil {
		t.Errorf("unresponsive event = %+v, want pid %d with the failed check's error", unresponsive, started.PID)
	}
	restarted := ev.wait(t, host.EventStarted)
	if restarted.PID == started.PID {
		t.Fatalf("restart event %+v names the stopped process", restarted)
	}
	waitGone(t, started.PID)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := d.Detect(ctx, probetest.ListenTCP(t)); err != nil {
		t.Errorf("Detect() through the restarted plugin = %v, want nil", err)
	}
}

// TestWrapperScriptStartTimeout starts a plugin through a shell script that
// never execs: the shell's child holds stdout. The start must fail at
// StartTimeout, and the child must die with the shell (the whole process
// group is killed).
func TestWrapperScriptStartTimeout(t *testing.T) {
	tmp := privateTemp(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := filepath.Join(dir, "wrapper.sh")
	body := "#!/bin/sh\nsleep 60 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := host.NewDetector(host.Config{Path: script, StartTimeout: 500 * time.Millisecond})
		res <- err
	}()
	var err error
	select {
	case err = <-res:
	case <-time.After(500*time.Millisecond + 10*time.Second):
		t.Fatal("NewDetector() of a wrapper script did not return 10 s after its StartTimeout")
	}
	t.Logf("NewDetector() failed after %v: %v", time.Since(start).Round(10*time.Millisecond), err)
	if !errors.Is(err, host.ErrHandshake) || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("NewDetector() = %v, want ErrHandshake for the start timeout", err)
	}
	b, rerr := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if rerr != nil || perr != nil {
		t.Fatalf("the wrapper's child pid: %v %v", rerr, perr)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	waitGone(t, pid)
	noPluginDirs(t, tmp)
}

// TestFloodBeforeHandshake: a plugin that writes more than go-plugin reads
// for a handshake line is refused with what it wrote, not with a guess.
func TestFloodBeforeHandshake(t *testing.T) {
	cfg := helper("flood-handshake")
	cfg.StartTimeout = 5 * time.Second
	_, err := host.NewDetector(cfg)
	if !errors.Is(err, host.ErrHandshake) {
		t.Fatalf("NewDetector() = %v, want ErrHandshake", err)
	}
	msg := err.Error()
	t.Logf("NewDetector() = %v", err)
	if strings.Contains(msg, "magic cookie") || !strings.Contains(msg, `"garbage garbage`) || !strings.Contains(msg, "64 KiB") {
		t.Errorf("NewDetector() error = %q, want it to quote the first bytes the plugin wrote and say no line came within 64 KiB (not blame the magic cookie)", msg)
	}
	if len(msg) > 1000 {
		t.Errorf("NewDetector() error is %d bytes long, want the plugin's output truncated", len(msg))
	}
}

// TestHungDetectorInStrategy runs detector rounds through a strategy whose
// service detector is a plugin that does not answer (hung in its RPC, or
// SIGSTOPped), with ProbeFailures on: every probe is inconclusive and the
// live broker is never marked unreachable.
func TestHungDetectorInStrategy(t *testing.T) {
	const rounds = 20
	for _, name := range []string{"hung", "stopped"} {
		t.Run(name, func(t *testing.T) {
			ev := newEventLog()
			cfg := helper("hang-detector")
			if name == "stopped" {
				cfg = helper("tcp")
			}
			cfg.OnEvent = ev.record
			cfg.HealthInterval = time.Hour // keep the stopped plugin stopped
			d := newDetector(t, cfg)
			if name == "stopped" {
				stopProcess(t, ev.wait(t, host.EventStarted).PID)
			}
			s := probeStrategy(t, d, 100*time.Millisecond)
			var unreachable, inconclusive int
			for range rounds {
				rep := probeRound(t, s)
				unreachable += rep.Unreachable
				inconclusive += rep.Inconclusive
			}
			t.Logf("%d rounds: %d probes inconclusive, %d unreachable", rounds, inconclusive, unreachable)
			if unreachable != 0 || inconclusive != rounds || !s.Table().IsReachable("broker-a") {
				t.Errorf("%d of %d probes through a %s plugin marked the live broker unreachable (%d inconclusive); want 0 and %d",
					unreachable, rounds, name, inconclusive, rounds)
			}
		})
	}
}

// TestPluginTimeoutVerdictInStrategy is the other side: a plugin whose own
// detector gives up at its deadline ("deadline exceeded", the broker did
// not answer) still marks the broker unreachable through the strategy.
func TestPluginTimeoutVerdictInStrategy(t *testing.T) {
	const rounds = 5
	d := newDetector(t, helper("deadline-detector"))
	s := probeStrategy(t, d, 500*time.Millisecond)
	var timedOut int
	for range rounds {
		rep := probeRound(t, s)
		timedOut += rep.TimedOut
		if rep.Inconclusive != 0 {
			t.Logf("round %+v: the plugin's answer came after the host's margin", rep)
		}
	}
	if timedOut == 0 || s.Table().IsReachable("broker-a") {
		t.Errorf("%d of %d probes timed out, broker-a reachable = %v; want the plugin's deadline verdicts to mark it unreachable",
			timedOut, rounds, s.Table().IsReachable("broker-a"))
	}
}

// probeStrategy is a real-clock strategy probing broker-a (a listening
// port) through d with ProbeFailures on.
func probeStrategy(t *testing.T, d probe.ServiceDetector, timeout time.Duration) *latency.Strategy {
	t.Helper()
	cfg := latency.DefaultConfig()
	cfg.FaultTolerance = true
	cfg.ProbeFailures = true
	cfg.DetectTimeout = timeout
	cfg.DetectInterval = time.Millisecond
	s, err := latency.NewStrategy(cfg, latency.WithServiceDetector(d),
		latency.WithResolver(probe.StaticResolver{"broker-a": probetest.ListenTCP(t)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.Table().Update("broker-a", time.Millisecond, time.Hour, true) // isolated, reachable
	return s
}

func probeRound(t *testing.T, s *latency.Strategy) latency.RoundReport {
	t.Helper()
	time.Sleep(2 * time.Millisecond) // the item is due again
	rep, err := s.DetectRound(context.Background())
	if err != nil || rep.Probed != 1 {
		t.Fatalf("DetectRound() = %+v, %v, want one probe", rep, err)
	}
	return rep
}

// TestPinnedStartUnderSwap swaps the plugin file between a good and an
// evil version with hard-link renames while pinned starts run: a pinned
// start either runs the good file or refuses; the evil one never runs.
func TestPinnedStartUnderSwap(t *testing.T) {
	const starts = 40
	dir := t.TempDir()
	marker := filepath.Join(dir, "evil-ran")
	good := filepath.Join(dir, "good.sh")
	evil := filepath.Join(dir, "evil.sh")
	path := filepath.Join(dir, "plugin.sh")
	mustWrite(t, good, "#!/bin/sh\nexec "+os.Args[0]+" \"$@\"\n")
	mustWrite(t, evil, "#!/bin/sh\necho ran >> "+marker+"\nexit 1\n")
	if err := os.Link(good, path); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Go(func() {
		tmp := filepath.Join(dir, "next")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src := good
			if i%2 == 1 {
				src = evil
			}
			_ = os.Remove(tmp)
			if os.Link(src, tmp) == nil && os.Rename(tmp, path) == nil {
				swaps.Add(1)
			}
		}
	})
	cfg := helper("tcp")
	cfg.Path = path
	cfg.SHA256 = fileSHA256(t, good)
	cfg.CopyDir = t.TempDir()
	for swaps.Load() < 1000 {
		time.Sleep(time.Millisecond) // the swapping is under way
	}
	var ran, refused int
	for i := range starts {
		time.Sleep(time.Duration(i%3) * time.Millisecond)
		d, err := host.NewDetector(cfg)
		switch {
		case err == nil:
			ran++
			_ = d.Close()
		case errors.Is(err, host.ErrChecksum):
			refused++
		default:
			t.Logf("pinned start: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	evilRuns := 0
	if b, err := os.ReadFile(marker); err == nil {
		evilRuns = strings.Count(string(b), "ran")
	}
	t.Logf("%d pinned starts during %d swaps: %d ran the pinned file, %d refused, %d ran the unpinned file", starts, swaps.Load(), ran, refused, evilRuns)
	if evilRuns != 0 {
		t.Errorf("%d of %d pinned starts ran the unpinned file", evilRuns, starts)
	}
	if ran == 0 {
		t.Errorf("no pinned start succeeded: the test proves nothing")
	}
	if left, _ := os.ReadDir(cfg.CopyDir); len(left) != 0 {
		t.Errorf("private copies left after Close: %v", left)
	}
}

func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestPinnedCopy checks that a pinned plugin runs from a private copy that
// Close removes, and that restarts run the copy even after the original
// changed.
func TestPinnedCopy(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	ev := newEventLog()
	dir := t.TempDir()
	path := filepath.Join(dir, "plugin.sh")
	mustWrite(t, path, "#!/bin/sh\nexec "+os.Args[0]+" \"$@\"\n")
	cfg := supervised("tcp", clk, ev)
	cfg.Path = path
	cfg.SHA256 = fileSHA256(t, path)
	cfg.CopyDir = t.TempDir()
	d := newDetector(t, cfg)
	started := ev.wait(t, host.EventStarted)
	copies, _ := filepath.Glob(filepath.Join(cfg.CopyDir, "*", "plugin.sh"))
	if len(copies) != 1 {
		t.Fatalf("private copies = %v, want one", copies)
	}
	fi, err := os.Stat(filepath.Dir(copies[0]))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("private copy directory mode = %v (%v), want 0700", fi.Mode(), err)
	}
	mustWrite(t, path, "#!/bin/sh\nexit 1\n") // the original changes under the running plugin
	killAndRestart(t, ev, clk, started, func() {})
	if err := d.Detect(context.Background(), probetest.ListenTCP(t)); err != nil {
		t.Errorf("Detect() after the restart = %v, want nil (the pinned copy runs)", err)
	}
	_ = d.Close()
	if left, _ := os.ReadDir(cfg.CopyDir); len(left) != 0 {
		t.Errorf("private copies left after Close: %v", left)
	}
}

// TestInsecurePluginFile: an unpinned plugin that other users could replace
// is refused; a pinned one runs (from its private copy) with a warning.
func TestInsecurePluginFile(t *testing.T) {
	for _, tt := range []struct {
		name      string
		fileMode  os.FileMode
		dirMode   os.FileMode
		wantWhere string
	}{
		{"file writable by others", 0o757, 0o755, "plugin.sh"},
		{"directory writable by others", 0o755, 0o777, "world"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "world")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "plugin.sh")
			mustWrite(t, path, "#!/bin/sh\nexec "+os.Args[0]+" \"$@\"\n")
			if err := os.Chmod(path, tt.fileMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			cfg := helper("tcp")
			cfg.Path = path
			ev := newEventLog()
			cfg.OnEvent = ev.record
			d, err := host.NewDetector(cfg)
			if err == nil {
				_ = d.Close()
			}
			if !errors.Is(err, host.ErrInsecure) || !strings.Contains(err.Error(), tt.wantWhere) {
				t.Errorf("NewDetector(unpinned) = %v, want ErrInsecure naming %s", err, tt.wantWhere)
			}
			if len(ev.ch) != 0 {
				t.Errorf("an insecure plugin was started: %v", <-ev.ch)
			}
			capture := &logCapture{}
			cfg.Logger = slogNew(capture)
			cfg.SHA256 = fileSHA256(t, path)
			cfg.CopyDir = t.TempDir()
			d = newDetector(t, cfg)
			capture.waitFor(t, "writable by other users")
			_ = d.Close()
		})
	}
}

// hostProcess is the test binary running as a plugin host (hostEnv).
type hostProcess struct {
	cmd    *exec.Cmd
	plugin int // its plugin's pid
	done   chan struct{}
}

// startHost starts a host process with TMPDIR tmp, its pinned plugin's copy
// under copyDir, and waits until its plugin runs. The host and its plugin
// are killed when the test ends, whatever happened.
func startHost(t *testing.T, tmp, copyDir, sum string) *hostProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hostEnv+"="+copyDir, hostSumEnv+"="+sum, "TMPDIR="+tmp, "GORACE=atexit_sleep_ms=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hostProcess{cmd: cmd, done: make(chan struct{})}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-h.done
		if h.plugin > 0 && !gone(h.plugin) && runs(h.plugin, os.Args[0]) {
			_ = syscall.Kill(h.plugin, syscall.SIGKILL) // an orphan: the fix failed
		}
	})
	select {
	case l := <-line:
		if _, err := fmt.Sscanf(l, "plugin %d", &h.plugin); err != nil {
			t.Fatalf("host process said %q (%v); stderr: %s", l, err, stderr.String())
		}
	case <-time.After(patience):
		t.Fatalf("the host process started no plugin within %v", patience)
	}
	return h
}

// runs reports whether pid is a process started as argv0 (its pid may have
// been reused since).
func runs(pid int, argv0 string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\x00")
	return first == argv0
}

// hostDirs returns the directories hosts made: pinned plugins' private
// copies under copyDir and go-plugin's socket directories under tmp.
func hostDirs(t *testing.T, tmp, copyDir string) []string {
	t.Helper()
	copies, _ := filepath.Glob(filepath.Join(copyDir, "mqfault-plugin-*"))
	sockets, _ := filepath.Glob(filepath.Join(tmp, "plugin-dir*"))
	return append(copies, sockets...)
}

// TestHostKilled SIGKILLs a plugin host (the test binary, re-executed as the
// host of the pinned "tcp" helper plugin), which can clean nothing up: its
// plugin must notice that its host is gone and exit, and the next host start
// must remove the private copy and the socket directory the dead host left,
// and nothing of a host that still runs.
func TestHostKilled(t *testing.T) {
	tmp := privateTemp(t)
	copyDir := t.TempDir()
	sum := fileSHA256(t, os.Args[0])
	dead := startHost(t, tmp, copyDir, sum)
	left := hostDirs(t, tmp, copyDir)
	if len(left) != 2 {
		t.Fatalf("directories of a running host: %q, want its private copy and its socket directory", left)
	}
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-dead.done
	deadline := time.Now().Add(patience)
	for !gone(dead.plugin) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !gone(dead.plugin) {
		t.Errorf("the plugin (pid %d) still runs %v after its host was killed", dead.plugin, patience)
	}
	for _, dir := range left {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("%s is gone after its host was killed: the test proves nothing (%v)", dir, err)
		}
	}

	live := startHost(t, tmp, copyDir, sum) // a host start: it sweeps
	for _, dir := range left {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s, left by the killed host, is still there after the next host start", dir)
		}
	}
	kept := hostDirs(t, tmp, copyDir)
	cfg := helper("tcp")
	cfg.SHA256 = sum
	cfg.CopyDir = copyDir
	d := newDetector(t, cfg) // another start, beside the live host
	for _, dir := range kept {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s of a host that runs was removed by another host's start: %v", dir, err)
		}
	}
	if gone(live.plugin) {
		t.Errorf("the live host's plugin (pid %d) is gone", live.plugin)
	}
	_ = d.Close()
}
