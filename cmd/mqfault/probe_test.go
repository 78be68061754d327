package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
	"github.com/mqfault/mqfault/plugins/host"
)

// patience bounds a wait for a plugin; a guard against a hung test, not a
// speed target.
const patience = 30 * time.Second

// TestProbe runs `mqfault probe` with the tcp-detector plugin, built once.
func TestProbe(t *testing.T) {
	bin := binary(t, tcpDetectorPkg)
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	goodSum := hex.EncodeToString(sum[:])
	notPlugin := filepath.Join(t.TempDir(), "not-a-plugin")
	if err := os.WriteFile(notPlugin, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	up, down := probetest.ListenTCP(t), probetest.ClosedTCP(t)

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string // lines of stdout, in order
		wantStderr string   // a part of stderr
	}{
		{"answers", []string{"--plugin", bin, "--timeout", "2s", up, down, "no-port"}, 0,
			[]string{up + " reachable", down + " unreachable (", "no-port unreachable ("}, ""},
		{"pinned", []string{"--plugin", bin, "--plugin-sha256", goodSum, up}, 0, []string{up + " reachable"}, ""},
		{"checksum mismatch", []string{"--plugin", bin, "--plugin-sha256", strings.Repeat("0", 64), up}, exitFailure, nil, "checksum"},
		{"missing plugin", []string{"--plugin", filepath.Join(t.TempDir(), "none"), up}, exitFailure, nil, "no such file"},
		{"not a plugin", []string{"--plugin", notPlugin, up}, exitFailure, nil, "handshake failed"},
		{"no plugin flag", []string{up}, exitUsage, nil, "--plugin PATH or --tcp is required"},
		{"built-in tcp", []string{"--tcp", "--timeout", "2s", up, down, "no-port"}, 0,
			[]string{up + " reachable", down + " unreachable (", "no-port unreachable ("}, ""},
		{"tcp, fail unreachable", []string{"--tcp", up, down, "--fail-unreachable"}, exitUnreachable,
			[]string{up + " reachable", down + " unreachable ("}, "mqfault probe: 1 of 2 endpoints not reachable"},
		{"tcp and plugin", []string{"--tcp", "--plugin", bin, up}, exitUsage, nil, "--plugin and --tcp exclude each other"},
		{"tcp with plugin-arg", []string{"--tcp", "--plugin-arg=--service", up}, exitUsage, nil, "--plugin-arg is for --plugin"},
		{"tcp with plugin-sha256", []string{"--tcp", "--plugin-sha256", goodSum, up}, exitUsage, nil, "--plugin-sha256 is for --plugin"},
		{"no endpoint", []string{"--plugin", bin}, exitUsage, nil, "no endpoint"},
		{"bad sha", []string{"--plugin", bin, "--plugin-sha256", "xyz", up}, exitUsage, nil, "SHA256"},
		{"bad timeout", []string{"--plugin", bin, "--timeout", "0s", up}, exitUsage, nil, "must be positive"},
		{"flags after the endpoints", []string{up, down, "--plugin", bin, "--timeout", "2s"}, 0,
			[]string{up + " reachable", down + " unreachable ("}, ""},
		{"dash dash", []string{"--plugin", bin, "--", up}, 0, []string{up + " reachable"}, ""},
		{"fail unreachable", []string{up, down, "--fail-unreachable", "--plugin", bin}, exitUnreachable,
			[]string{up + " reachable", down + " unreachable ("}, "mqfault probe: 1 of 2 endpoints not reachable"},
		{"fail unreachable, all up", []string{"--fail-unreachable", "--plugin", bin, up}, 0, []string{up + " reachable"}, ""},
		{"fail unreachable with every", []string{"--fail-unreachable", "--every", "1s", "--plugin", bin, up}, exitUsage, nil, "--fail-unreachable is for one round"},
		{"unknown flag after the endpoint", []string{up, "--bogus"}, exitUsage, nil, "mqfault probe: unknown flag --bogus\nusage: mqfault probe [FLAGS] ENDPOINT..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"probe"}, tt.args...), nil, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("mqfault probe %v = exit %d, want %d; stderr: %s", tt.args, code, tt.wantCode, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if tt.wantOut == nil {
				if stdout.Len() != 0 {
					t.Errorf("stdout = %q, want nothing", stdout.String())
				}
			} else if len(lines) != len(tt.wantOut) {
				t.Errorf("stdout = %q, want %d lines", stdout.String(), len(tt.wantOut))
			} else {
				for i, want := range tt.wantOut {
					if !strings.HasPrefix(lines[i], want) {
						t.Errorf("stdout line %d = %q, want it to start with %q", i+1, lines[i], want)
					}
				}
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

// TestProbeEvery runs probe --every with the built-in TCP detector on a
// manual clock: each round's lines start with the time its probes started,
// on that clock, and the next round waits for --every on it.
func TestProbeEvery(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC))
	up, down := probetest.ListenTCP(t), probetest.ClosedTCP(t)
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	o := probeOptions{tcp: true, timeout: time.Second, every: 10 * time.Second, clock: clk}
	go func() { res <- runProbe(ctx, streams{stdout: &stdout, stderr: &stderr}, o, []string{up, down}) }()
	waitLines := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(patience); strings.Count(stdout.String(), "\n") < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("stdout %q: want %d lines", stdout.String(), n)
			}
		}
	}
	waitLines(2)
	for deadline := time.Now().Add(patience); clk.Pending() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("probe does not wait on the clk")
		}
	}
	clk.Advance(10 * time.Second)
	waitLines(4)
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Errorf("runProbe() = %v after the cancel, want context.Canceled", err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	want := []string{
		"2026-12-01T09:30:00.000Z " + up + " reachable",
		"2026-12-01T09:30:00.000Z " + down + " unreachable (",
		"2026-12-01T09:30:10.000Z " + up + " reachable",
		"2026-12-01T09:30:10.000Z " + down + " unreachable (",
	}
	if len(lines) != len(want) {
		t.Fatalf("stdout = %q, want %d lines", stdout.String(), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], want[i])
		}
	}
}

// TestProbePluginOutput runs probe --every with a plugin that logs, writes to
// stderr and writes to stdout on each probe, until three rounds answered
// (without -v) or until a round answered and all three of the plugin's lines
// were printed (with -v):
// without -v none of them is printed, with -v all of them (on stderr; stdout
// has the answers only). Each line is waited for, never raced: the plugin's
// output travels beside its answers, not before them.
func TestProbePluginOutput(t *testing.T) {
	t.Setenv(noisyPluginEnv, "1")
	t.Setenv("GORACE", "atexit_sleep_ms=0") // the plugin exits at once under -race
	up := probetest.ListenTCP(t)
	noisy := []string{"noisy log line", "noisy stderr line", "noisy stdout line"}
	for _, verbose := range []bool{false, true} {
		t.Run(fmt.Sprintf("-v=%v", verbose), func(t *testing.T) {
			args := []string{"probe", "--every", "20ms", "--plugin", os.Args[0], up}
			if verbose {
				args = append(args, "-v")
			}
			var stdout, stderr syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			code := make(chan int, 1)
			go func() { code <- runContext(ctx, args, nil, &stdout, &stderr) }()
			done := func() bool {
				answered := strings.Count(stdout.String(), up+" reachable\n")
				if !verbose || answered == 0 {
					return answered >= 3
				}
				for _, line := range noisy {
					if !strings.Contains(stderr.String(), line) {
						return false
					}
				}
				return true
			}
			for deadline := time.Now().Add(patience); !done(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					break
				}
			}
			cancel()
			if c := <-code; c != exitInterrupted {
				t.Errorf("mqfault %q = exit %d, want %d (interrupted); stderr: %s", args, c, exitInterrupted, stderr.String())
			}
			for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
				if !strings.HasSuffix(l, " "+up+" reachable") {
					t.Errorf("stdout line %q, want a timestamp and %q", l, up+" reachable")
				}
			}
			for _, line := range noisy {
				if got := strings.Contains(stderr.String(), line); got != verbose {
					t.Errorf("-v=%v: stderr has %q: %v, want %v; stderr: %s", verbose, line, got, verbose, stderr.String())
				}
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a command and a test at once.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestProbeLine(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"reachable", nil, "h:1 reachable"},
		{"unreachable", &probe.Error{Endpoint: "h:1", Err: refused}, "h:1 unreachable (dial tcp: connect: connection refused)"},
		{"inconclusive", fmt.Errorf("plugin restarting: %w", probe.ErrInconclusive), "h:1 inconclusive (plugin restarting: probe: inconclusive)"},
		{"cancelled", errors.Join(probe.ErrInconclusive, context.Canceled), "h:1 inconclusive (probe: inconclusive context canceled)"},
		{"other", errors.New("multi\nline"), "h:1 unreachable (multi line)"},
		{"plugin's deadline", &probe.Error{Endpoint: "h:1", Err: fmt.Errorf("probe did not finish within 1.899996305s: %w", context.DeadlineExceeded)},
			"h:1 unreachable (no answer within 2s)"},
		{"host's deadline", fmt.Errorf("%w: %w: detect h:1: no answer within 1.9s", probe.ErrInconclusive, host.ErrCallTimeout),
			"h:1 inconclusive (no answer within 2s)"},
		{"socket deadline", &probe.Error{Endpoint: "h:1", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}},
			"h:1 unreachable (no answer within 2s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := probeLine("h:1", tt.err, 2*time.Second); got != tt.want {
				t.Errorf("probeLine() = %q, want %q", got, tt.want)
			}
		})
	}
}

// healthServer serves grpc.health.v1 on a loopback port until the test ends:
// the server as a whole SERVING, "orders" SERVING, "billing" NOT_SERVING.
func healthServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	h := health.NewServer()
	h.SetServingStatus("orders", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus("billing", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(s, h)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() {
		h.Shutdown()
		s.Stop()
		<-done
	})
	return l.Addr().String()
}

// TestProbePluginArgs runs `mqfault probe` with the grpc-health-detector
// plugin: --plugin-arg reaches the plugin's command line (--service picks
// the service whose health is checked), --fail-unreachable turns a
// NOT_SERVING answer into exit 3, and a probe that runs out of time is
// reported with the --timeout given.
//
// "no answer in time" times probe (and so the plugin host) on a manual clock
// the test never moves: probe's deadline never passes, and the plugin's own
// verdict at its deadline, "unreachable", is what is printed, with no timer
// of probe's to race it on a loaded machine.
func TestProbePluginArgs(t *testing.T) {
	bin := binary(t, grpcHealthPkg)
	srv, silent := healthServer(t), probetest.SilentTCP(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"whole server", []string{srv}, 0, srv + " reachable\n"},
		{"serving service", []string{"--plugin-arg=--service", "--plugin-arg", "orders", srv}, 0, srv + " reachable\n"},
		{"service not serving", []string{srv, "--plugin-arg=--service", "--plugin-arg=billing", "--fail-unreachable"}, exitUnreachable, srv + " unreachable ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"probe", "--plugin", bin}, tt.args...), nil, &stdout, &stderr)
			if code != tt.wantCode || !strings.HasPrefix(stdout.String(), tt.wantOut) {
				t.Errorf("mqfault probe %q = exit %d, stdout %q; want %d, %q; stderr: %s", tt.args, code, stdout.String(), tt.wantCode, tt.wantOut, stderr.String())
			}
		})
	}
	t.Run("no answer in time", func(t *testing.T) {
		clk := clock.NewManual(time.Unix(1000, 0))
		var stdout, stderr bytes.Buffer
		res := make(chan error, 1)
		go func() {
			o := probeOptions{plugin: bin, timeout: 300 * time.Millisecond, clock: clk}
			res <- runProbe(context.Background(), streams{stdout: &stdout, stderr: &stderr}, o, []string{silent})
		}()
		var err error
		select {
		case err = <-res:
		case <-time.After(patience):
			clk.Advance(time.Second) // probe's deadline: it returns
			<-res
			t.Fatalf("probe did not return within %v: the plugin never answered", patience)
		}
		if want := silent + " unreachable (no answer within 300ms)\n"; err != nil || stdout.String() != want {
			t.Errorf("probe --timeout 300ms %s = %v, stdout %q; want nil, %q; stderr: %s", silent, err, stdout.String(), want, stderr.String())
		}
	})
	var stderr bytes.Buffer
	code := run([]string{"probe", "--plugin", bin, "--plugin-arg=--bogus", srv}, nil, io.Discard, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "mqfault probe: ") {
		t.Errorf("a plugin refusing its arguments: exit %d, stderr %q; want %d and why", code, stderr.String(), exitFailure)
	}
}
