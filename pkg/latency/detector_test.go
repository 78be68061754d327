package latency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
)

var discardLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// detectorRig is a v5 strategy on a manual clock with a mocked resolver,
// service detector and observer.
type detectorRig struct {
	s        *latency.Strategy
	clock    *clock.Manual
	resolver *mocks.MockResolver
	service  *mocks.MockServiceDetector
	obs      *mocks.MockObserver
}

func newDetectorRig(t *testing.T, ctrl *gomock.Controller, withService bool, change func(*latency.Config)) *detectorRig {
	t.Helper()
	r := &detectorRig{
		clock:    clock.NewManual(t0),
		resolver: mocks.NewMockResolver(ctrl),
		service:  mocks.NewMockServiceDetector(ctrl),
		obs:      mocks.NewMockObserver(ctrl),
	}
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	if change != nil {
		change(&cfg)
	}
	opts := []latency.Option{latency.WithClock(r.clock), latency.WithResolver(r.resolver), latency.WithObserver(r.obs), latency.WithLogger(discardLog)}
	if withService {
		opts = append(opts, latency.WithServiceDetector(r.service))
	}
	s, err := latency.NewStrategy(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	t.Cleanup(func() { s.Close() })
	r.obs.EXPECT().OnIsolate(gomock.Any()).AnyTimes()
	r.obs.EXPECT().OnRecover(gomock.Any()).AnyTimes()
	return r
}

// isolate gives broker an item: isolated for an hour, reachable or not.
func (r *detectorRig) isolate(broker string, reachable bool) {
	r.s.Table().Update(broker, 5*time.Millisecond, time.Hour, reachable)
}

func (r *detectorRig) round(t *testing.T) latency.RoundReport {
	t.Helper()
	rep, err := r.s.DetectRound(t.Context())
	if err != nil {
		t.Fatalf("DetectRound() error = %v", err)
	}
	return rep
}

func probeEvent(broker string, err error, became bool) gomock.Matcher {
	return gomock.Cond(func(ev latency.ProbeEvent) bool {
		if ev.Broker != broker || ev.Addr != "addr-"+broker || ev.BecameReachable != became {
			return false
		}
		if err == nil {
			return ev.Err == nil
		}
		return errors.Is(ev.Err, err)
	})
}

var errRefused = errors.New("connection refused")

func TestDetectRound(t *testing.T) {
	type step struct {
		advance time.Duration
		want    latency.RoundReport
	}
	tests := []struct {
		name        string
		withService bool
		reachable   bool // the item's reachability before the rounds
		expect      func(r *detectorRig)
		steps       []step
		wantItem    bool // b still has an item afterwards
		wantReach   bool
	}{
		{
			name: "check stamp not due until the interval passed", withService: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true).Times(2)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(errRefused).Times(2)
				r.obs.EXPECT().OnProbe(probeEvent("b", errRefused, false)).Times(2)
			},
			steps: []step{
				{0, latency.RoundReport{Due: 1, Probed: 1, Unreachable: 1}},
				{1999 * time.Millisecond, latency.RoundReport{}},
				{time.Millisecond, latency.RoundReport{Due: 1, Probed: 1, Unreachable: 1}},
			},
			wantItem: true,
		},
		{
			name: "resolver miss removes the item", withService: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("", false)
				r.service.EXPECT().Detect(gomock.Any(), gomock.Any()).Times(0)
				r.obs.EXPECT().OnProbe(gomock.Any()).Times(0)
			},
			steps:     []step{{0, latency.RoundReport{Due: 1, Removed: 1}}, {time.Hour, latency.RoundReport{}}},
			wantReach: true, // an unknown broker is reachable
		},
		{
			name: "no service detector skips the probe",
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.obs.EXPECT().OnProbe(gomock.Any()).Times(0)
			},
			steps:    []step{{0, latency.RoundReport{Due: 1}}},
			wantItem: true,
		},
		{
			name: "probe ok marks reachable", withService: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").DoAndReturn(func(ctx context.Context, _ string) error {
					if _, ok := ctx.Deadline(); !ok {
						return errors.New("probe context has no deadline")
					}
					return nil
				})
				r.obs.EXPECT().OnProbe(probeEvent("b", nil, true))
			},
			steps:     []step{{0, latency.RoundReport{Due: 1, Probed: 1, Reachable: 1}}},
			wantItem:  true,
			wantReach: true,
		},
		{
			name: "probe ok on a reachable broker changes nothing", withService: true, reachable: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(nil)
				r.obs.EXPECT().OnProbe(probeEvent("b", nil, false))
			},
			steps:     []step{{0, latency.RoundReport{Due: 1, Probed: 1, Reachable: 1}}},
			wantItem:  true,
			wantReach: true,
		},
		{
			name: "probe failure leaves it unreachable", withService: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(errRefused)
				r.obs.EXPECT().OnProbe(probeEvent("b", errRefused, false))
			},
			steps:    []step{{0, latency.RoundReport{Due: 1, Probed: 1, Unreachable: 1}}},
			wantItem: true,
		},
		{
			name: "probe failure leaves a reachable broker reachable", withService: true, reachable: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(errRefused)
				r.obs.EXPECT().OnProbe(probeEvent("b", errRefused, false))
			},
			steps:     []step{{0, latency.RoundReport{Due: 1, Probed: 1, Unreachable: 1}}},
			wantItem:  true,
			wantReach: true,
		},
		{
			name: "inconclusive leaves it", withService: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(fmt.Errorf("%w: plugin exited", probe.ErrInconclusive))
				r.obs.EXPECT().OnProbe(probeEvent("b", probe.ErrInconclusive, false))
			},
			steps:    []step{{0, latency.RoundReport{Due: 1, Probed: 1, Inconclusive: 1}}},
			wantItem: true,
		},
		{
			name: "a panicking detector is inconclusive", withService: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").DoAndReturn(func(context.Context, string) error { panic("boom") })
				r.obs.EXPECT().OnProbe(probeEvent("b", probe.ErrInconclusive, false))
			},
			steps:    []step{{0, latency.RoundReport{Due: 1, Probed: 1, Inconclusive: 1}}},
			wantItem: true,
		},
		{
			name: "a probe that reports its own deadline counts as timed out", withService: true,
			expect: func(r *detectorRig) {
				r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
				r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(fmt.Errorf("dial: %w", context.DeadlineExceeded))
				r.obs.EXPECT().OnProbe(probeEvent("b", context.DeadlineExceeded, false))
			},
			steps:    []step{{0, latency.RoundReport{Due: 1, Probed: 1, Unreachable: 1, TimedOut: 1}}},
			wantItem: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			r := newDetectorRig(t, ctrl, tt.withService, nil)
			r.isolate("b", tt.reachable)
			before, _ := r.s.Table().Item("b")
			tt.expect(r)
			for i, st := range tt.steps {
				r.clock.Advance(st.advance)
				if got := r.round(t); got != st.want {
					t.Errorf("round %d: DetectRound() = %+v, want %+v", i+1, got, st.want)
				}
			}
			it, ok := r.s.Table().Item("b")
			if ok != tt.wantItem {
				t.Fatalf("Item(b) ok = %t, want %t", ok, tt.wantItem)
			}
			if got := r.s.Table().IsReachable("b"); got != tt.wantReach {
				t.Errorf("IsReachable(b) = %t, want %t", got, tt.wantReach)
			}
			if ok && (!it.IsolatedUntil.Equal(before.IsolatedUntil) || it.Latency != before.Latency) {
				t.Errorf("the detector touched the isolation: %+v, was %+v", it, before)
			}
		})
	}
}

// TestDetectRoundCheckStamp: a checked item's stamp is now + interval.
func TestDetectRoundCheckStamp(t *testing.T) {
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, false, func(c *latency.Config) { c.DetectInterval = 700 * time.Millisecond })
	r.isolate("b", false)
	r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
	r.clock.Advance(5 * time.Second)
	r.round(t)
	if it, _ := r.s.Table().Item("b"); ms(it.CheckStamp) != 5700 {
		t.Errorf("CheckStamp = %d ms after t0, want 5700", ms(it.CheckStamp))
	}
}

// TestDetectRoundRefusedDueNextRound: under the probe-failure policy, a
// broker whose probe was refused (failed before its deadline) is due again
// one round period later, not an interval; a probe that timed out or
// answered, or any probe with the policy off, stamps now + interval.
func TestDetectRoundRefusedDueNextRound(t *testing.T) {
	tests := []struct {
		name    string
		on      bool
		err     error
		wantDue int64 // ms after t0
	}{
		{"refused", true, errRefused, 5250},
		{"timed out", true, context.DeadlineExceeded, 6000},
		{"answered", true, nil, 6000},
		{"refused, policy off", false, errRefused, 6000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			r := newDetectorRig(t, ctrl, true, func(c *latency.Config) {
				c.Detector, c.ProbeFailures = true, tt.on
				c.DetectInterval, c.DetectPeriod = time.Second, 250*time.Millisecond
			})
			r.isolate("b", true)
			r.clock.Advance(5 * time.Second)
			r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
			r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(tt.err)
			r.obs.EXPECT().OnProbe(gomock.Any())
			r.round(t)
			if it, _ := r.s.Table().Item("b"); ms(it.CheckStamp) != tt.wantDue {
				t.Errorf("CheckStamp = %d ms after t0, want %d", ms(it.CheckStamp), tt.wantDue)
			}
			// Not due before its stamp: a round then probes nothing.
			r.clock.Advance(200 * time.Millisecond)
			if rep := r.round(t); rep.Probed != 0 {
				t.Errorf("a round 200 ms later probed %d, want 0", rep.Probed)
			}
		})
	}
}

// TestDetectRoundMixed checks the report's counts over several brokers, and
// that with one probe at a time they are taken in name order.
func TestDetectRoundMixed(t *testing.T) {
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, true, nil)
	r.obs.EXPECT().OnProbe(gomock.Any()).AnyTimes()
	// e is checked first, so it is not due in the round under test.
	r.isolate("e", false)
	gomock.InOrder(
		r.resolver.EXPECT().Resolve("e").Return("addr-e", true),
		r.service.EXPECT().Detect(gomock.Any(), "addr-e").Return(errRefused),
	)
	r.round(t)
	for _, b := range []string{"d", "c", "b", "a"} {
		r.isolate(b, false)
	}
	gomock.InOrder(
		r.resolver.EXPECT().Resolve("a").Return("", false),
		r.resolver.EXPECT().Resolve("b").Return("addr-b", true),
		r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(nil),
		r.resolver.EXPECT().Resolve("c").Return("addr-c", true),
		r.service.EXPECT().Detect(gomock.Any(), "addr-c").Return(errRefused),
		r.resolver.EXPECT().Resolve("d").Return("addr-d", true),
		r.service.EXPECT().Detect(gomock.Any(), "addr-d").Return(probe.ErrInconclusive),
	)
	want := latency.RoundReport{Due: 4, Removed: 1, Probed: 3, Reachable: 1, Unreachable: 1, Inconclusive: 1}
	if got := r.round(t); got != want {
		t.Errorf("DetectRound() = %+v, want %+v", got, want)
	}
	var reach []bool
	for _, b := range []string{"a", "b", "c", "d", "e"} {
		reach = append(reach, r.s.Table().IsReachable(b))
	}
	if want := []bool{true, true, false, false, false}; fmt.Sprint(reach) != fmt.Sprint(want) {
		t.Errorf("IsReachable(a..e) = %v, want %v", reach, want)
	}
}

func TestDetectRoundCancelled(t *testing.T) {
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, true, nil)
	r.isolate("b", false)
	r.resolver.EXPECT().Resolve(gomock.Any()).Times(0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rep, err := r.s.DetectRound(ctx)
	if err != nil || rep != (latency.RoundReport{}) {
		t.Errorf("DetectRound(cancelled) = %+v, %v, want an empty report", rep, err)
	}
}

func TestDetectRoundNoDetector(t *testing.T) {
	for _, cfg := range []latency.Config{latency.Reference5(), latency.Reference4()} {
		t.Run(string(cfg.Mode), func(t *testing.T) {
			ctrl := gomock.NewController(t)
			var opts []latency.Option
			if cfg.Mode == latency.ModeV4 {
				// v4 has no detector even with a resolver.
				opts = append(opts, latency.WithResolver(mocks.NewMockResolver(ctrl)))
			}
			s, err := latency.NewStrategy(cfg, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.DetectRound(t.Context()); !errors.Is(err, latency.ErrNoDetector) {
				t.Errorf("DetectRound() error = %v, want ErrNoDetector", err)
			}
			if err := s.Start(); err != nil {
				t.Errorf("Start() without a detector = %v, want nil", err)
			}
		})
	}
}

// TestDetectProbeHangsPastTimeout: a detector that ignores its deadline
// did not answer. The round waits ProbeGrace past the probe's timeout, then
// counts the probe as inconclusive (ErrNoAnswer): the detector failed, not
// the broker. Close waits for the hung Detect call to return.
func TestDetectProbeHangsPastTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, true, func(c *latency.Config) { c.ProbeFailures = true })
	r.isolate("b", true)
	started, release := make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
	r.service.EXPECT().Detect(gomock.Any(), "addr-b").DoAndReturn(func(context.Context, string) error {
		close(started)
		<-release // ignores its context
		returned.Store(true)
		return nil
	})
	grace := probe.Grace(200 * time.Millisecond)
	r.obs.EXPECT().OnProbe(gomock.Cond(func(ev latency.ProbeEvent) bool {
		return errors.Is(ev.Err, probe.ErrNoAnswer) && errors.Is(ev.Err, probe.ErrInconclusive) &&
			!ev.BecameUnreachable && ev.Elapsed == 200*time.Millisecond+grace
	}))
	reports := make(chan latency.RoundReport)
	go func() {
		rep, _ := r.s.DetectRound(context.Background())
		reports <- rep
	}()
	<-started
	r.clock.Advance(200 * time.Millisecond)
	select {
	case rep := <-reports:
		t.Fatalf("round returned at the probe's deadline, before its grace: %+v", rep)
	default:
	}
	r.clock.Advance(grace)
	want := latency.RoundReport{Due: 1, Probed: 1, Inconclusive: 1, NoAnswer: 1}
	if got := <-reports; got != want {
		t.Errorf("DetectRound() = %+v, want %+v", got, want)
	}
	if !r.s.Table().IsReachable("b") {
		t.Errorf("IsReachable(b) = false after a probe whose detector did not answer, want true (ProbeFailures marks only verdicts)")
	}

	closed := make(chan struct{})
	go func() {
		r.s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close() returned while a Detect call hangs")
	default:
	}
	close(release)
	<-closed
	if !returned.Load() {
		t.Errorf("Close() returned before the hung Detect call did")
	}
}

// TestDetectCloseDuringRound: Close cancels a background round's probe,
// waits for it, and leaves no goroutine behind.
func TestDetectCloseDuringRound(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, true, func(c *latency.Config) { c.Detector = true })
	r.isolate("b", false)
	started, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
	r.service.EXPECT().Detect(gomock.Any(), "addr-b").DoAndReturn(func(ctx context.Context, _ string) error {
		close(started)
		<-ctx.Done()
		close(cancelled)
		<-release
		returned.Store(true)
		return ctx.Err()
	})
	r.obs.EXPECT().OnProbe(probeEvent("b", probe.ErrInconclusive, false)).MaxTimes(1)
	if err := r.s.Start(); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(3 * time.Second) // one tick: a round
	<-started
	closed := make(chan struct{})
	go func() {
		r.s.Close()
		close(closed)
	}()
	<-cancelled
	select {
	case <-closed:
		t.Fatal("Close() returned while a probe is running")
	default:
	}
	close(release)
	<-closed
	if !returned.Load() {
		t.Errorf("Close() returned before the probe did")
	}
	if r.s.Table().IsReachable("b") {
		t.Errorf("IsReachable(b) = true after a cancelled probe")
	}
	if err := r.s.Start(); !errors.Is(err, latency.ErrClosed) {
		t.Errorf("Start() after Close() = %v, want ErrClosed", err)
	}
	if err := r.s.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
}

// TestDetectParallelBound: with DetectParallel 2 no more than two probes
// run at once, and two do.
func TestDetectParallelBound(t *testing.T) {
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, true, func(c *latency.Config) { c.DetectParallel = 2 })
	r.obs.EXPECT().OnProbe(gomock.Any()).AnyTimes()
	brokers := []string{"a", "b", "c", "d", "e"}
	for _, b := range brokers {
		r.isolate(b, false)
	}
	var inflight, peak atomic.Int32
	entered := make(chan string)
	release := make(chan struct{})
	r.resolver.EXPECT().Resolve(gomock.Any()).DoAndReturn(func(b string) (string, bool) { return "addr-" + b, true }).Times(len(brokers))
	r.service.EXPECT().Detect(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, addr string) error {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		entered <- addr
		<-release
		inflight.Add(-1)
		return nil
	}).Times(len(brokers))
	reports := make(chan latency.RoundReport)
	go func() {
		rep, _ := r.s.DetectRound(context.Background())
		reports <- rep
	}()
	<-entered
	<-entered // two probes run at once
	for range len(brokers) - 2 {
		release <- struct{}{}
		<-entered
	}
	release <- struct{}{}
	release <- struct{}{}
	rep := <-reports
	if rep.Probed != len(brokers) || rep.Reachable != len(brokers) {
		t.Errorf("DetectRound() = %+v, want %d probes, all reachable", rep, len(brokers))
	}
	if got := peak.Load(); got != 2 {
		t.Errorf("at most %d probes ran at once, want 2", got)
	}
}

// TestDetectorSwitchTicks drives the background loop through a mocked clock
// whose ticker channel is unbuffered: a tick is sent only when the loop
// takes it, so the loop has finished with tick k when tick k+1 is taken.
func TestDetectorSwitchTicks(t *testing.T) {
	tests := []struct {
		name       string
		on         bool
		wantRounds int
	}{
		{"switch off: no rounds", false, 0},
		{"switch on: a round per tick", true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			ctrl := gomock.NewController(t)
			clk := mocks.NewMockClock(ctrl)
			ticker := mocks.NewMockTicker(ctrl)
			resolver := mocks.NewMockResolver(ctrl)
			ticks := make(chan time.Time)
			var now atomic.Int64
			now.Store(t0.UnixNano())
			clk.EXPECT().Now().DoAndReturn(func() time.Time { return time.Unix(0, now.Load()) }).AnyTimes()
			clk.EXPECT().Elapsed().DoAndReturn(func() time.Duration { return time.Duration(now.Load() - t0.UnixNano()) }).AnyTimes()
			clk.EXPECT().NewTicker(7 * time.Second).Return(ticker).Times(1)
			ticker.EXPECT().C().Return(ticks).AnyTimes()
			ticker.EXPECT().Stop().Times(1)
			resolved := make(chan struct{})
			resolver.EXPECT().Resolve("b").DoAndReturn(func(string) (string, bool) {
				resolved <- struct{}{}
				return "addr-b", true
			}).Times(tt.wantRounds)

			cfg := latency.Reference5()
			cfg.FaultTolerance = true
			cfg.Detector = tt.on
			cfg.DetectPeriod = 7 * time.Second
			s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithResolver(resolver))
			if err != nil {
				t.Fatal(err)
			}
			s.Table().Update("b", 0, 0, false) // an item, no isolation: no timer
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(); err != nil { // harmless
				t.Fatal(err)
			}
			for range 3 {
				now.Add(int64(7 * time.Second))
				ticks <- time.Unix(0, now.Load())
				if tt.on {
					<-resolved // the round read the clk before it resolved
				}
			}
			// Taken only once the loop is done with the third tick; nothing
			// is due at this time, so it makes no round either way.
			ticks <- time.Unix(0, now.Load())
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDetectorLoopManualClock: with the switch on, each DetectPeriod of the
// manual clock makes a round; turning the switch off stops them (the mocked
// ticker of TestDetectorSwitchTicks proves that one deterministically).
func TestDetectorLoopManualClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, false, func(c *latency.Config) { c.Detector = true })
	r.isolate("b", false)
	resolved := make(chan time.Time, 8)
	r.resolver.EXPECT().Resolve("b").DoAndReturn(func(string) (string, bool) {
		resolved <- r.clock.Now()
		return "addr-b", true
	}).Times(2)
	if err := r.s.Start(); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(3 * time.Second)
	if got := ms(<-resolved); got != 3000 {
		t.Errorf("first round at %d ms, want 3000", got)
	}
	r.clock.Advance(3 * time.Second)
	if got := ms(<-resolved); got != 6000 {
		t.Errorf("second round at %d ms, want 6000", got)
	}
	// Switched off, the ticks go on but make no round (the item is due).
	r.s.SetDetector(false)
	for range 3 {
		r.clock.Advance(3 * time.Second)
	}
	if err := r.s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestResolverAdapters(t *testing.T) {
	tests := []struct {
		name     string
		resolver probe.Resolver
		broker   string
		want     string
		wantOK   bool
	}{
		{"static hit", probe.StaticResolver{"b": "10.0.0.1:10911"}, "b", "10.0.0.1:10911", true},
		{"static miss", probe.StaticResolver{"b": "10.0.0.1:10911"}, "c", "", false},
		{"func", probe.ResolverFunc(func(b string) (string, bool) { return b + ":1", b != "" }), "x", "x:1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.resolver.Resolve(tt.broker)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Resolve(%q) = %q, %t, want %q, %t", tt.broker, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestObserverConcurrentProbes: observers are called from probe goroutines
// in parallel; a race-free observer sees every probe.
func TestObserverConcurrentProbes(t *testing.T) {
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, true, func(c *latency.Config) { c.DetectParallel = 8 })
	var mu sync.Mutex
	seen := map[string]bool{}
	r.obs.EXPECT().OnProbe(gomock.Any()).Do(func(ev latency.ProbeEvent) {
		mu.Lock()
		seen[ev.Broker] = ev.BecameReachable
		mu.Unlock()
	}).Times(16)
	for i := range 16 {
		r.isolate("b"+itoa(i), false)
	}
	r.resolver.EXPECT().Resolve(gomock.Any()).DoAndReturn(func(b string) (string, bool) { return "addr-" + b, true }).AnyTimes()
	r.service.EXPECT().Detect(gomock.Any(), gomock.Any()).Return(nil).AnyTimes()
	if rep := r.round(t); rep.Reachable != 16 {
		t.Errorf("DetectRound() = %+v, want 16 reachable", rep)
	}
	for b, became := range seen {
		if !became {
			t.Errorf("probe of %s: BecameReachable = false", b)
		}
	}
}

// TestDetectRoundEndsUnderProbe: when the round's own context ends while a
// probe runs (cancelled, or its deadline passed), the probe is inconclusive,
// not a timeout of the broker.
func TestDetectRoundEndsUnderProbe(t *testing.T) {
	tests := []struct {
		name  string
		cause error
	}{
		{"cancelled", context.Canceled},
		{"round deadline", context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			r := newDetectorRig(t, ctrl, true, nil)
			r.isolate("b", false)
			started := make(chan struct{})
			r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
			r.service.EXPECT().Detect(gomock.Any(), "addr-b").DoAndReturn(func(ctx context.Context, _ string) error {
				close(started)
				<-ctx.Done()
				return ctx.Err()
			})
			r.obs.EXPECT().OnProbe(probeEvent("b", probe.ErrInconclusive, false))
			ctx, cancel := context.WithCancelCause(context.Background())
			reports := make(chan latency.RoundReport)
			go func() {
				rep, _ := r.s.DetectRound(ctx)
				reports <- rep
			}()
			<-started
			cancel(tt.cause)
			want := latency.RoundReport{Due: 1, Probed: 1, Inconclusive: 1}
			if got := <-reports; got != want {
				t.Errorf("DetectRound() = %+v, want %+v", got, want)
			}
		})
	}
}

// TestNewDetector: NewDetector names every bad input at once, and a Detector
// it builds runs the reference's round over the table it was given (due
// items stamped, an unknown broker dropped, an answered probe making its
// broker reachable, isolation kept).
func TestNewDetector(t *testing.T) {
	_, err := latency.NewDetector(latency.DetectorConfig{Parallel: -1, RecoveredAfter: -time.Second})
	if !errors.Is(err, latency.ErrInvalidConfig) {
		t.Fatalf("NewDetector(zero config) error = %v, want ErrInvalidConfig", err)
	}
	for _, field := range []string{"Table", "Resolver", "Interval", "Timeout", "Parallel", "RecoveredAfter"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("NewDetector(zero config) error %q does not name %s", err, field)
		}
	}
	var ce *latency.ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("NewDetector error %v is no *ConfigError", err)
	}
	v4 := latency.NewFaultTable(latency.ModeV4, clock.Real{})
	_, err = latency.NewDetector(latency.DetectorConfig{Table: v4, Resolver: probe.ResolverFunc(func(string) (string, bool) { return "", false }), Interval: time.Second, Timeout: time.Second})
	if !errors.Is(err, latency.ErrInvalidConfig) || !strings.Contains(err.Error(), "v4") {
		t.Errorf("NewDetector(v4 table) error = %v, want a v4 ConfigError", err)
	}

	ctrl := gomock.NewController(t)
	clk := clock.NewManual(t0)
	table := latency.NewFaultTable(latency.ModeV5, clk)
	table.Update("a", 5*time.Millisecond, time.Hour, false)
	table.Update("gone", 5*time.Millisecond, time.Hour, false)
	service := mocks.NewMockServiceDetector(ctrl)
	service.EXPECT().Detect(gomock.Any(), "addr-a").Return(nil)
	obs := mocks.NewMockObserver(ctrl)
	obs.EXPECT().OnProbe(probeEvent("a", nil, true))
	d, err := latency.NewDetector(latency.DetectorConfig{
		Table: table,
		Resolver: probe.ResolverFunc(func(b string) (string, bool) {
			return "addr-" + b, b == "a"
		}),
		Service:  service,
		Clock:    clk,
		Interval: 2 * time.Second,
		Timeout:  200 * time.Millisecond,
		Observer: obs,
		Logger:   discardLog,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep, want := d.Round(t.Context()), (latency.RoundReport{Due: 2, Removed: 1, Probed: 1, Reachable: 1}); rep != want {
		t.Errorf("first Round() = %+v, want %+v", rep, want)
	}
	if !table.IsReachable("a") || table.IsAvailable("a") {
		t.Errorf("a: reachable %v available %v, want reachable and still isolated", table.IsReachable("a"), table.IsAvailable("a"))
	}
	if _, ok := table.Item("gone"); ok {
		t.Error("the broker the resolver does not know is still in the table")
	}
	if rep := d.Round(t.Context()); rep != (latency.RoundReport{}) {
		t.Errorf("Round() within the interval = %+v, want nothing due", rep)
	}
}

// TestDetectRoundAwaitsProbeInFlight: a DetectRound that finds a broker
// not due because another round (the background loop's, here a concurrent
// DetectRound) claimed its check stamp and is still probing it returns only
// once that probe's verdict is applied, and counts it as Awaited.
func TestDetectRoundAwaitsProbeInFlight(t *testing.T) {
	ctrl := gomock.NewController(t)
	r := newDetectorRig(t, ctrl, true, nil)
	r.isolate("b", false)
	started, release := make(chan struct{}), make(chan struct{})
	r.resolver.EXPECT().Resolve("b").Return("addr-b", true)
	r.service.EXPECT().Detect(gomock.Any(), "addr-b").DoAndReturn(func(context.Context, string) error {
		close(started)
		<-release
		return nil
	})
	r.obs.EXPECT().OnProbe(probeEvent("b", nil, true))
	awaiting := make(chan struct{})
	latency.OnAwait(r.s, func() { close(awaiting) })
	first := make(chan latency.RoundReport)
	go func() { first <- r.round(t) }()
	<-started
	second := make(chan latency.RoundReport)
	go func() { second <- r.round(t) }()
	var got latency.RoundReport
	select {
	case got = <-second: // returned without waiting: the verdict may not be applied
	case <-awaiting:
		close(release)
		got = <-second
	}
	if !r.s.Table().IsReachable("b") {
		t.Errorf("DetectRound returned before the in-flight probe of b made it reachable")
	}
	if want := (latency.RoundReport{Awaited: 1}); got != want {
		t.Errorf("second DetectRound() = %+v, want %+v", got, want)
	}
	select {
	case <-release:
	default:
		close(release)
	}
	if want := (latency.RoundReport{Due: 1, Probed: 1, Reachable: 1}); <-first != want {
		t.Errorf("first DetectRound() != %+v", want)
	}
}

// TestDetectRoundReprobesStaleInFlight: a DetectRound that waits for
// another round's probe begun before the clock passed the broker's check
// stamp probes the broker again itself, so its verdict comes from a probe
// begun during the call (here: b failed while refusing, answers now).
func TestDetectRoundReprobesStaleInFlight(t *testing.T) {
	ctrl := gomock.NewController(t)
	// A timeout past the clock's move: the first probe ends when released.
	r := newDetectorRig(t, ctrl, true, func(c *latency.Config) { c.DetectTimeout = time.Hour })
	r.isolate("b", false)
	started, release := make(chan struct{}), make(chan struct{})
	r.resolver.EXPECT().Resolve("b").Return("addr-b", true).Times(2)
	gomock.InOrder(
		r.service.EXPECT().Detect(gomock.Any(), "addr-b").DoAndReturn(func(context.Context, string) error {
			close(started)
			<-release
			return errors.New("connection refused")
		}),
		r.service.EXPECT().Detect(gomock.Any(), "addr-b").Return(nil),
	)
	r.obs.EXPECT().OnProbe(gomock.Any()).Times(2)
	latency.OnAwait(r.s, func() { close(release) })
	first := make(chan latency.RoundReport)
	go func() { first <- r.round(t) }()
	<-started
	r.clock.Advance(latency.Reference5().DetectInterval)
	got := r.round(t)
	if want := (latency.RoundReport{Due: 1, Probed: 1, Reachable: 1, Awaited: 1}); got != want {
		t.Errorf("second DetectRound() = %+v, want %+v", got, want)
	}
	if !r.s.Table().IsReachable("b") {
		t.Errorf("b unreachable after a round that probed it answering")
	}
	if got, want := <-first, (latency.RoundReport{Due: 1, Probed: 1, Unreachable: 1}); got != want {
		t.Errorf("first DetectRound() = %+v, want %+v", got, want)
	}
}

// TestDetectorOwnTableRound: a detector over a table of its own, one round
// over a table where a and b are isolated and unreachable and c is a broker
// the resolver does not know: c is dropped, a answers and becomes reachable,
// b is refused; a config without Resolver, Interval and Timeout names all three.
func TestDetectorOwnTableRound(t *testing.T) {
	var got strings.Builder
	clk := clock.NewManual(time.UnixMilli(1000000))
	table := latency.NewFaultTable(latency.ModeV5, clk)
	for _, b := range []string{"a", "b", "c"} {
		table.Update(b, 0, 30*time.Second, false)
	}
	d, err := latency.NewDetector(latency.DetectorConfig{
		Table:    table,
		Resolver: probe.StaticResolver{"a": "10.0.0.1:10911", "b": "10.0.0.2:10911"},
		Service: probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
			if addr == "10.0.0.1:10911" {
				return nil
			}
			return errors.New("connection refused")
		}),
		Clock:    clk,
		Interval: 2 * time.Second,
		Timeout:  200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&got, "%+v\n", d.Round(context.Background()))
	for _, it := range table.Items() {
		fmt.Fprintln(&got, it.Broker, it.Reachable, it.Available)
	}
	_, err = latency.NewDetector(latency.DetectorConfig{Table: table})
	fmt.Fprintln(&got, err)
	want := `{Due:3 Removed:1 Probed:2 Reachable:1 Unreachable:1 Inconclusive:0 TimedOut:0 NoAnswer:0 Awaited:0}
a true false
b false false
latency: Resolver = <nil>: is required
latency: Interval = 0s: must be positive
latency: Timeout = 0s: must be positive
`
	if got.String() != want {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want)
	}
}
