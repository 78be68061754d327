package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
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
	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/pkg/route/filtertest"
	"github.com/mqfault/mqfault/pkg/route/zonefilter"
	"github.com/mqfault/mqfault/plugins/host"
	"github.com/mqfault/mqfault/plugins/protocol"
)

func newDetector(t testing.TB, cfg host.Config) *host.Detector {
	t.Helper()
	d, err := host.NewDetector(cfg)
	if err != nil {
		t.Fatalf("NewDetector() error = %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func newFilter(t testing.TB, cfg host.FilterConfig) *host.Filter {
	t.Helper()
	f, err := host.NewFilter(cfg)
	if err != nil {
		t.Fatalf("NewFilter() error = %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func q(broker string, id int) route.MessageQueue {
	return route.MessageQueue{BrokerName: broker, QueueID: id}
}

// zoneCases are routes for the zone filter plugin (preferring az1 with
// zonesText); the verdicts they must get are the compiled-in filter's.
var zoneCases = func() []filtertest.Case {
	zones, err := zonefilter.ParseZones(strings.NewReader(zonesText))
	if err != nil {
		panic(err)
	}
	routes := [][]route.MessageQueue{
		{q("broker-a", 0), q("broker-a", 1), q("broker-c", 0), q("broker-c", 1), q("broker-b", 0)},
		{q("broker-d", 2), q("broker-e", 0), q("broker-c", 7)},
		{q("broker-b", 0), q("broker-z", 0), q("broker-e", 1), q("broker-b", 1)},
	}
	cases := make([]filtertest.Case, len(routes))
	for i, r := range routes {
		cases[i] = filtertest.Case{Name: fmt.Sprintf("route %d", i), Topic: fmt.Sprintf("T%d", i), Queues: r, Want: zonefilter.Decide("az1", zones, r)}
	}
	return cases
}()

// TestDetectorConformance runs the detector suite on the TCP detector
// served as a plugin.
func TestDetectorConformance(t *testing.T) {
	d := newDetector(t, helper("tcp"))
	probetest.Run(t, d, probetest.Endpoints{
		Reachable:   []string{probetest.ListenTCP(t)},
		Unreachable: []string{probetest.ClosedTCP(t)},
	})
}

// TestDetectorErrorsCrossTheWire checks that a plugin's errors come back as
// the same sentinels.
func TestDetectorErrorsCrossTheWire(t *testing.T) {
	d := newDetector(t, helper("tcp"))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	tests := []struct {
		name     string
		endpoint string
		wantIs   error
	}{
		{"refused", probetest.ClosedTCP(t), syscall.ECONNREFUSED},
		{"invalid endpoint", "no-port", protocol.ErrInvalidEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := d.Detect(ctx, tt.endpoint)
			var pe *probe.Error
			if !errors.Is(err, tt.wantIs) || !errors.As(err, &pe) || errors.Is(err, probe.ErrInconclusive) {
				t.Errorf("Detect(%q) = %v, want an unreachable *ProbeError matching %v", tt.endpoint, err, tt.wantIs)
			}
		})
	}
}

// TestFilterConformance runs the filter suite on the zone filter served as
// a plugin, with the compiled-in zone filter's verdicts as the reference.
func TestFilterConformance(t *testing.T) {
	f := newFilter(t, host.FilterConfig{Config: helper("zone")})
	filtertest.Run(t, func(testing.TB) filtertest.Subject {
		return filtertest.Subject{Filter: f, Update: func(tb testing.TB, info *route.PublishInfo) {
			f.Update(info)
			if err := f.Refresh(context.Background()); err != nil {
				tb.Fatalf("Refresh() error = %v", err)
			}
		}}
	}, zoneCases)
}

// TestFilterInStrategy picks through a strategy with the plugin filter: every
// pick lands in the preferred zone.
func TestFilterInStrategy(t *testing.T) {
	f := newFilter(t, host.FilterConfig{Config: helper("zone")})
	info := filtertest.PublishInfo(t, zoneCases[0], "")
	f.Update(info)
	if err := f.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh() error = %v", err)
	}
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Filters = []route.QueueFilter{f}
	s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(time.Unix(0, 0))))
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		p, ok := s.Select(info, latency.PickInfo{})
		if !ok || p.Queue.BrokerName == "broker-c" {
			t.Fatalf("Select() = %v, %v, want a queue outside broker-c", p, ok)
		}
	}
}

func TestVersionMismatch(t *testing.T) {
	_, err := host.NewDetector(helper("v2"))
	if !errors.Is(err, host.ErrIncompatible) || !strings.Contains(err.Error(), "version") {
		t.Errorf("NewDetector(a version 2 plugin) error = %v, want ErrIncompatible naming the versions", err)
	}
}

// TestWrongMagicCookie starts a plugin with the other kind's cookie: it
// refuses to serve, and the host says so.
func TestWrongMagicCookie(t *testing.T) {
	_, err := host.NewDetector(helper("zone"))
	if !errors.Is(err, host.ErrHandshake) || !strings.Contains(err.Error(), "magic cookie") {
		t.Errorf("NewDetector(a filter plugin) error = %v, want ErrHandshake mentioning the magic cookie", err)
	}
	_, err = host.NewFilter(host.FilterConfig{Config: helper("tcp")})
	if !errors.Is(err, host.ErrHandshake) {
		t.Errorf("NewFilter(a detector plugin) error = %v, want ErrHandshake", err)
	}
}

func fileSHA256(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestChecksum(t *testing.T) {
	good := helper("tcp")
	good.SHA256 = strings.ToUpper(fileSHA256(t, good.Path))
	d := newDetector(t, good)
	_ = d.Close()

	bad := helper("tcp")
	bad.SHA256 = strings.Repeat("ab", 32)
	ev := newEventLog()
	bad.OnEvent = ev.record
	_, err := host.NewDetector(bad)
	if !errors.Is(err, host.ErrChecksum) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("NewDetector(wrong sha256) error = %v, want ErrChecksum saying \"checksum\"", err)
	}
	if len(ev.ch) != 0 {
		t.Errorf("events after a refused checksum: %v, want none (nothing started)", <-ev.ch)
	}
}

func TestStartFailures(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(notExec, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		cfg      host.Config
		wantIs   []error
		wantText string
	}{
		{"missing", host.Config{Path: filepath.Join(dir, "missing")}, []error{host.ErrStart, fs.ErrNotExist}, "missing"},
		{"not executable", host.Config{Path: notExec}, []error{host.ErrStart, fs.ErrPermission}, "plain.txt"},
		{"exits at start", helper("exit-at-start"), []error{host.ErrHandshake}, "boom: cannot read my configuration"},
		{"garbage handshake", helper("garbage-handshake"), []error{host.ErrHandshake}, "not a handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := host.NewDetector(tt.cfg)
			for _, want := range tt.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("NewDetector() error = %v, want it to match %v", err, want)
				}
			}
			var se *host.StartError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("NewDetector() error = %v, want a *StartError saying %q", err, tt.wantText)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  host.Config
	}{
		{"no path", host.Config{}},
		{"short sha", host.Config{Path: "x", SHA256: "abcd"}},
		{"sha not hex", host.Config{Path: "x", SHA256: strings.Repeat("zz", 32)}},
		{"env without value", host.Config{Path: "x", Env: []string{"NOVALUE"}}},
		{"env sets the cookie", host.Config{Path: "x", Env: []string{protocol.MagicCookieKey + "=x"}}},
		{"env sets go-plugin's", host.Config{Path: "x", Env: []string{"PLUGIN_PROTOCOL_VERSIONS=9"}}},
		{"env sets the host watch", host.Config{Path: "x", Env: []string{protocol.HostWatchKey + "=none"}}},
		{"negative timeout", host.Config{Path: "x", CallTimeout: -1}},
		{"backoff inverted", host.Config{Path: "x", MinBackoff: time.Minute, MaxBackoff: time.Second}},
		{"negative stop timeout", host.Config{Path: "x", StopTimeout: -1}},
		{"negative health interval", host.Config{Path: "x", HealthInterval: -1}},
		{"negative health timeout", host.Config{Path: "x", HealthTimeout: -1}},
		{"negative health failures", host.Config{Path: "x", HealthFailures: -1}},
		{"negative stable after", host.Config{Path: "x", StableAfter: -1}},
		{"negative output rate", host.Config{Path: "x", OutputRate: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := host.NewDetector(tt.cfg); !errors.Is(err, host.ErrInvalidConfig) {
				t.Errorf("NewDetector(%+v) error = %v, want ErrInvalidConfig", tt.cfg, err)
			}
		})
	}
	if _, err := host.NewFilter(host.FilterConfig{Config: helper("zone"), RefreshInterval: -1}); !errors.Is(err, host.ErrInvalidConfig) {
		t.Errorf("NewFilter(negative refresh) error = %v, want ErrInvalidConfig", err)
	}
}

// TestDetectHang checks the probe's deadline (ctx's, or CallTimeout
// without one) against a plugin that never answers: the probe is
// inconclusive, not unreachable.
func TestDetectHang(t *testing.T) {
	cfg := helper("hang-detector")
	cfg.CallTimeout = 150 * time.Millisecond
	d := newDetector(t, cfg)
	for name, deadline := range map[string]time.Duration{"call timeout": 0, "probe deadline": 80 * time.Millisecond} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if deadline > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), deadline)
			}
			defer cancel()
			err := d.Detect(ctx, "127.0.0.1:1")
			if !errors.Is(err, host.ErrCallTimeout) || !errors.Is(err, probe.ErrInconclusive) {
				t.Errorf("Detect() on a hung plugin = %v, want ErrCallTimeout, inconclusive", err)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- d.Detect(ctx, "127.0.0.1:1") }()
		cancel()
		if err := <-res; !errors.Is(err, context.Canceled) || !errors.Is(err, probe.ErrInconclusive) {
			t.Errorf("Detect() cancelled = %v, want context.Canceled, inconclusive", err)
		}
	})
}

// TestFilterHang checks that a hung filter plugin blocks neither Update nor
// the pick path: its routes are admitted whole, Refresh times out.
func TestFilterHang(t *testing.T) {
	cfg := helper("hang-filter")
	cfg.CallTimeout = 150 * time.Millisecond
	f := newFilter(t, host.FilterConfig{Config: cfg})
	c := zoneCases[0]
	f.Update(filtertest.PublishInfo(t, c, ""))
	for _, qu := range c.Queues {
		qu.Topic = c.Topic
		if !f.Filter(qu) {
			t.Errorf("Filter(%s) = false before any verdict, want true", qu)
		}
	}
	if err := f.Refresh(context.Background()); !errors.Is(err, host.ErrCallTimeout) || !strings.Contains(err.Error(), c.Topic) {
		t.Errorf("Refresh() on a hung plugin = %v, want ErrCallTimeout naming topic %s", err, c.Topic)
	}
}

func TestGarbageAnswers(t *testing.T) {
	d := newDetector(t, helper("garbage-detector"))
	for _, ep := range []string{"verdict-42", "code-99", "empty", "grpc-error", "reachable-with-code"} {
		t.Run(ep, func(t *testing.T) {
			err := d.Detect(context.Background(), ep)
			if !errors.Is(err, host.ErrBadAnswer) || !errors.Is(err, probe.ErrInconclusive) {
				t.Errorf("Detect(%s) = %v, want ErrBadAnswer, inconclusive", ep, err)
			}
		})
	}
	t.Run("filter", func(t *testing.T) {
		f := newFilter(t, host.FilterConfig{Config: helper("garbage-filter")})
		c := zoneCases[0]
		f.Update(filtertest.PublishInfo(t, c, ""))
		if err := f.Refresh(context.Background()); !errors.Is(err, host.ErrBadAnswer) {
			t.Errorf("Refresh() on a garbage filter = %v, want ErrBadAnswer", err)
		}
		for _, qu := range c.Queues {
			qu.Topic = c.Topic
			if !f.Filter(qu) {
				t.Errorf("Filter(%s) = false after a garbage answer, want true (fail open)", qu)
			}
		}
	})
}

// killAndRestart kills the plugin started in ev, checks what happens while
// it is down with whileDown, then lets the clock reach the restart and
// returns the new process's start event.
func killAndRestart(t *testing.T, ev *eventLog, clk *clock.Manual, started host.Event, whileDown func()) host.Event {
	t.Helper()
	if err := syscall.Kill(started.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", started.PID, err)
	}
	exited := ev.wait(t, host.EventExited)
	if exited.PID != started.PID || exited.Err == nil || !strings.Contains(exited.Err.Error(), "killed") {
		t.Errorf("exit event = %+v, want pid %d killed", exited, started.PID)
	}
	sched := ev.wait(t, host.EventRestartScheduled)
	if sched.Attempt != 1 || sched.Backoff != time.Second {
		t.Errorf("restart event = %+v, want attempt 1 after 1s", sched)
	}
	whileDown()
	clk.Advance(sched.Backoff)
	restarted := ev.wait(t, host.EventStarted)
	if restarted.PID == started.PID || restarted.Attempt != 1 {
		t.Errorf("restart = %+v, want a new process on attempt 1", restarted)
	}
	return restarted
}

func supervised(name string, clk clock.Clock, ev *eventLog) host.Config {
	cfg := helper(name)
	cfg.Clock = clk
	cfg.OnEvent = ev.record
	cfg.MinBackoff = time.Second
	return cfg
}

// TestDetectorKilled kills a detector plugin with SIGKILL mid-run: probes are
// inconclusive while it is down, a detector round goes on, the host restarts
// it after the backoff, and Close leaves no process.
func TestDetectorKilled(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	ev := newEventLog()
	d := newDetector(t, supervised("tcp", clk, ev))
	started := ev.wait(t, host.EventStarted)
	up := probetest.ListenTCP(t)
	ctx := context.Background()
	if err := d.Detect(ctx, up); err != nil {
		t.Fatalf("Detect(up) = %v, want nil", err)
	}
	cfg := latency.DefaultConfig()
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithServiceDetector(d),
		latency.WithResolver(probe.StaticResolver{"broker-a": up}))
	if err != nil {
		t.Fatal(err)
	}
	s.Update("broker-a", 0, true, false) // isolated and unreachable
	restarted := killAndRestart(t, ev, clk, started, func() {
		if err := d.Detect(ctx, up); !errors.Is(err, host.ErrUnavailable) || !errors.Is(err, probe.ErrInconclusive) {
			t.Errorf("Detect() while the plugin is down = %v, want ErrUnavailable, inconclusive", err)
		}
		rep, err := s.DetectRound(ctx)
		if err != nil || rep.Inconclusive != 1 || s.Table().IsReachable("broker-a") {
			t.Errorf("DetectRound() while down = %+v, %v, want 1 inconclusive probe and broker-a still unreachable", rep, err)
		}
	})
	if err := d.Detect(ctx, up); err != nil {
		t.Errorf("Detect(up) after the restart = %v, want nil", err)
	}
	_ = d.Close()
	ev.wait(t, host.EventStopped)
	if err := syscall.Kill(restarted.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -0 %d after Close = %v, want ESRCH (no process left)", restarted.PID, err)
	}
	if err := d.Detect(ctx, up); !errors.Is(err, host.ErrClosed) || !errors.Is(err, probe.ErrInconclusive) {
		t.Errorf("Detect() after Close = %v, want ErrClosed, inconclusive", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
}

// TestFilterKilled kills a filter plugin with SIGKILL while picks run: no pick
// fails, the filter admits everything while the plugin is down, and its
// verdicts come back after the restart.
func TestFilterKilled(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	ev := newEventLog()
	f := newFilter(t, host.FilterConfig{Config: supervised("zone", clk, ev), RefreshInterval: time.Hour})
	started := ev.wait(t, host.EventStarted)
	c := zoneCases[0]
	info := filtertest.PublishInfo(t, c, "")
	f.Update(info)
	if err := f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	outside := route.MessageQueue{Topic: c.Topic, BrokerName: "broker-c", QueueID: 0}
	if f.Filter(outside) {
		t.Fatalf("Filter(%s) = true, want false", outside)
	}
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Filters = []route.QueueFilter{f}
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	var picks, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok := s.Select(info, latency.PickInfo{}); ok {
					picks.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	killAndRestart(t, ev, clk, started, func() {
		if !f.Filter(outside) {
			t.Errorf("Filter(%s) = false while the plugin is down, want true (fail open)", outside)
		}
	})
	if err := f.Refresh(context.Background()); err != nil {
		t.Errorf("Refresh() after the restart = %v", err)
	}
	if f.Filter(outside) {
		t.Errorf("Filter(%s) = true after the restart, want false", outside)
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 || picks.Load() == 0 {
		t.Errorf("picks = %d, failed = %d; want picks and no failure", picks.Load(), failed.Load())
	}
}

// TestRestartBackoff makes restarts fail and checks that the delay doubles
// up to MaxBackoff, and that a good restart ends it.
func TestRestartBackoff(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "plugin.sh")
	good := "#!/bin/sh\nexec " + os.Args[0] + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(good), 0o755); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewManual(time.Unix(1000, 0))
	ev := newEventLog()
	cfg := supervised("tcp", clk, ev)
	cfg.Path = script
	cfg.MaxBackoff = 3 * time.Second
	newDetector(t, cfg)
	started := ev.wait(t, host.EventStarted)
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho broken install >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(started.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev.wait(t, host.EventExited)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		sched := ev.wait(t, host.EventRestartScheduled)
		if sched.Backoff != want || sched.Attempt != i+1 {
			t.Errorf("restart %d scheduled after %v (attempt %d), want %v", i+1, sched.Backoff, sched.Attempt, want)
		}
		if i == 2 {
			if err := os.WriteFile(script, []byte(good), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(sched.Backoff)
		if i < 2 {
			failed := ev.wait(t, host.EventRestartFailed)
			if !errors.Is(failed.Err, host.ErrHandshake) || !strings.Contains(failed.Err.Error(), "broken install") {
				t.Errorf("restart failure = %v, want ErrHandshake with the plugin's output", failed.Err)
			}
		}
	}
	if e := ev.wait(t, host.EventStarted); e.Attempt != 3 {
		t.Errorf("restarted on attempt %d, want 3", e.Attempt)
	}
}

// TestCrashLoopBackoff kills the plugin right after each start: each restart
// waits twice as long as the one before (up to MaxBackoff) instead of
// starting over at MinBackoff, and the log says it is a crash loop; once the
// plugin stayed up for StableAfter, the next restart waits MinBackoff again.
func TestCrashLoopBackoff(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	ev := newEventLog()
	capture := &logCapture{}
	cfg := supervised("tcp", clk, ev)
	cfg.Logger = slogNew(capture)
	cfg.MaxBackoff = 3 * time.Second
	newDetector(t, cfg)
	started := ev.wait(t, host.EventStarted)
	kill := func() (exited, sched host.Event) {
		t.Helper()
		if err := syscall.Kill(started.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		return ev.wait(t, host.EventExited), ev.wait(t, host.EventRestartScheduled)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		exited, sched := kill()
		if sched.Backoff != want || sched.Attempt != 1 {
			t.Errorf("exit %d right after the start: restart scheduled after %v (attempt %d), want %v (attempt 1)", i+1, sched.Backoff, sched.Attempt, want)
		}
		if exited.QuickExits != i+1 || sched.QuickExits != i+1 || exited.Uptime != 0 {
			t.Errorf("exit %d: QuickExits %d and %d, uptime %v; want %d, %d, 0", i+1, exited.QuickExits, sched.QuickExits, exited.Uptime, i+1, i+1)
		}
		clk.Advance(sched.Backoff)
		started = ev.wait(t, host.EventStarted)
	}
	r := capture.waitFor(t, "crash loop")
	if n, _ := attr(r, "quick_exits"); r.Level != slog.LevelWarn || n.Int64() != 2 {
		t.Errorf("crash loop logged at %v with quick_exits=%v, want WARN, 2 (the first exit that backs off)", r.Level, n)
	}
	clk.Advance(time.Minute) // the plugin stays up: StableAfter's default
	exited, sched := kill()
	if sched.Backoff != time.Second || exited.QuickExits != 0 || exited.Uptime != time.Minute {
		t.Errorf("exit after a minute up: restart after %v, QuickExits %d, uptime %v; want MinBackoff (1s), 0, 1m", sched.Backoff, exited.QuickExits, exited.Uptime)
	}
}

// TestCrashLoopUnresponsive: a plugin killed for failing its health checks
// ran healthy only until the first failed check, however long it then took
// to be killed.
func TestCrashLoopUnresponsive(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	ev := newEventLog()
	capture := &logCapture{}
	cfg := supervised("tcp", clk, ev)
	cfg.Logger = slogNew(capture)
	cfg.HealthInterval = time.Second
	cfg.HealthTimeout = 500 * time.Millisecond
	cfg.HealthFailures = 2
	cfg.StableAfter = 10 * time.Second
	newDetector(t, cfg)
	started := ev.wait(t, host.EventStarted)
	stopProcess(t, started.PID)
	// pending waits until n timers are on the clock: the health ticker, and
	// the timeout of a check under way.
	pending := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(patience); clk.Pending() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d timers on the clk, want %d", clk.Pending(), n)
			}
		}
	}
	pending(1)
	clk.Advance(time.Second) // the first check
	pending(2)
	clk.Advance(cfg.HealthTimeout) // fails
	capture.waitFor(t, "health check failed")
	// The second check, a minute later, fails too: the plugin is killed.
	// Its timeout may fall due within this move of the clock, or need one.
	clk.Advance(time.Minute)
	for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
		if e, ok := ev.next(); ok && e.Kind == host.EventUnresponsive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hung plugin was not killed")
		}
		if clk.Pending() >= 2 {
			clk.Advance(cfg.HealthTimeout)
		}
	}
	want := time.Second + cfg.HealthTimeout
	if exited := ev.wait(t, host.EventExited); exited.Uptime != want || exited.QuickExits != 1 {
		t.Errorf("hung plugin's exit: uptime %v, QuickExits %d; want %v (to its first failed check), 1", exited.Uptime, exited.QuickExits, want)
	}
}

// TestCloseDuringBackoff closes while a restart is pending.
func TestCloseDuringBackoff(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	ev := newEventLog()
	d := newDetector(t, supervised("tcp", clk, ev))
	started := ev.wait(t, host.EventStarted)
	_ = syscall.Kill(started.PID, syscall.SIGKILL)
	ev.wait(t, host.EventRestartScheduled)
	if err := d.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

// TestFilterClose checks the filter after Close: it admits everything, and
// Update and Refresh do no harm.
func TestFilterClose(t *testing.T) {
	ev := newEventLog()
	cfg := helper("zone")
	cfg.OnEvent = ev.record
	f := newFilter(t, host.FilterConfig{Config: cfg})
	started := ev.wait(t, host.EventStarted)
	c := zoneCases[0]
	f.Update(filtertest.PublishInfo(t, c, ""))
	if err := f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if err := syscall.Kill(started.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -0 %d after Close = %v, want ESRCH", started.PID, err)
	}
	outside := route.MessageQueue{Topic: c.Topic, BrokerName: "broker-c"}
	if !f.Filter(outside) {
		t.Errorf("Filter(%s) after Close = false, want true", outside)
	}
	f.Update(filtertest.PublishInfo(t, c, ""))
	if err := f.Refresh(context.Background()); !errors.Is(err, host.ErrClosed) {
		t.Errorf("Refresh() after Close = %v, want ErrClosed", err)
	}
}

// TestFilterBackground checks that Update fetches in the background and
// that the refresh interval refetches every route.
func TestFilterBackground(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	decided := make(chan string, 16)
	cfg := helper("zone")
	cfg.Clock = clk
	f := newFilter(t, host.FilterConfig{Config: cfg, RefreshInterval: time.Minute, OnDecision: func(topic string, err error) {
		if err != nil {
			topic += ": " + err.Error()
		}
		decided <- topic
	}})
	c := zoneCases[0]
	f.Update(filtertest.PublishInfo(t, c, ""))
	waitDecision := func() {
		t.Helper()
		select {
		case got := <-decided:
			if got != c.Topic {
				t.Errorf("decision for %q, want %q", got, c.Topic)
			}
		case <-time.After(patience):
			t.Fatal("no decision")
		}
	}
	waitDecision()
	outside := route.MessageQueue{Topic: c.Topic, BrokerName: "broker-c"}
	if f.Filter(outside) {
		t.Errorf("Filter(%s) = true after the background decision, want false", outside)
	}
	clk.Advance(time.Minute)
	waitDecision()
	f.Remove(c.Topic)
	if !f.Filter(outside) {
		t.Errorf("Filter(%s) = false after Remove, want true", outside)
	}
}

// TestLogsRouted checks that the plugin's log lines, stderr and stdout reach
// the host's slog logger.
func TestLogsRouted(t *testing.T) {
	capture := &logCapture{}
	cfg := helper("logger")
	cfg.Logger = slogNew(capture)
	d := newDetector(t, cfg)
	if err := d.Detect(context.Background(), "ep:1"); err != nil {
		t.Fatalf("Detect() = %v", err)
	}
	r := capture.waitFor(t, "probing")
	if ep, _ := attr(r, "endpoint"); ep.String() != "ep:1" || r.Level.String() != "WARN" {
		t.Errorf("plugin log record = %v %q endpoint=%v, want WARN probing endpoint=ep:1", r.Level, r.Message, ep)
	}
	if p, ok := attr(r, "plugin"); !ok || p.String() != filepath.Base(os.Args[0]) {
		t.Errorf("plugin log record's plugin = %v, want %s", p, filepath.Base(os.Args[0]))
	}
	if _, ok := attr(r, "pid"); !ok {
		t.Error("plugin log record has no pid")
	}
	capture.waitFor(t, "plain stderr line for ep:1")
	capture.waitFor(t, "plain stdout line for ep:1")
}

// TestOutputLogger: with OutputLogger set, the plugin's output goes there
// and the host's own messages to Logger.
func TestOutputLogger(t *testing.T) {
	hostLog, out := &logCapture{}, &logCapture{}
	cfg := helper("logger")
	cfg.Logger, cfg.OutputLogger = slogNew(hostLog), slogNew(out)
	d := newDetector(t, cfg)
	if err := d.Detect(context.Background(), "ep:1"); err != nil {
		t.Fatalf("Detect() = %v", err)
	}
	for _, text := range []string{"probing", "plain stderr line for ep:1", "plain stdout line for ep:1"} {
		out.waitFor(t, text)
	}
	_ = d.Close()
	if hostLog.waitFor(t, "plugin stopped"); len(hostLog.matching("line for")) != 0 || len(hostLog.matching("probing")) != 0 {
		t.Error("the plugin's output reached Logger too")
	}
	if len(out.matching("plugin host:")) != 0 {
		t.Errorf("host messages on OutputLogger: %v", out.matching("plugin host:"))
	}
}

// TestOutputRateLimited: a plugin that floods its output (log lines, stderr
// and stdout) reaches the host's logger at no more than the output rate; the
// rest is dropped, and counted in WARN lines, so that every line the plugin
// wrote is either logged or counted.
func TestOutputRateLimited(t *testing.T) {
	const rate = 20 // lines a second, in bursts of as many
	capture, hostLog := &logCapture{}, &logCapture{}
	cfg := helper("flood")
	cfg.Logger = slogNew(hostLog)
	cfg.OutputLogger = slogNew(capture)
	cfg.OutputRate = rate
	start := time.Now()
	d := newDetector(t, cfg)
	if err := d.Detect(context.Background(), "x:1"); err != nil {
		t.Fatalf("Detect() = %v", err)
	}
	var logged, dropped int
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		logged, dropped = len(capture.matching("flood line")), 0
		for _, r := range capture.matching("plugin output dropped") {
			n, _ := attr(r, "dropped")
			dropped += int(n.Int64())
		}
		if logged+dropped >= floodLines || time.Now().After(deadline) {
			break
		}
	}
	elapsed := time.Since(start)
	bound := rate + int(rate*elapsed.Seconds())
	t.Logf("%d lines written in %v: %d logged (bound %d), %d dropped", floodLines, elapsed.Round(time.Millisecond), logged, bound, dropped)
	if logged > bound {
		t.Errorf("%d of the plugin's %d lines logged in %v, want at most %d (%d a second, in bursts of as many)", logged, floodLines, elapsed, bound, rate)
	}
	if logged+dropped != floodLines {
		t.Errorf("%d lines logged and %d counted as dropped, want the %d the plugin wrote", logged, dropped, floodLines)
	}
	if n := len(hostLog.matching("flood line")) + len(hostLog.matching("dropped")); n != 0 {
		t.Errorf("%d of the plugin's lines (or drop reports) on Logger, want them all on OutputLogger", n)
	}
}
