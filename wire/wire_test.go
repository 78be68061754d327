package wire_test

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
	mqwire "github.com/mqfault/mqfault/wire"
)

// fastConfig is DefaultConfig with a detector round every 5 ms, so a test
// sees the loop probe without waiting seconds.
func fastConfig() config.Config {
	cfg := config.DefaultConfig()
	cfg.Strategy.DetectPeriod = 5 * time.Millisecond
	cfg.Strategy.DetectInterval = time.Millisecond
	return cfg
}

func routeData(t *testing.T, brokers map[string]int) *route.TopicRouteData {
	t.Helper()
	var sr producer.StaticRoutes
	sr.SetQueues("T", brokers)
	data, err := sr.Lookup(context.Background(), "T")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// collaborators are the mocks a producer injector takes; the resolver knows no
// broker (detector rounds drop what they find) and routes serve topic T with
// the brokers given.
func collaborators(t *testing.T, brokers map[string]int) (*mocks.MockTransport, *mocks.MockRouteSource, *mocks.MockResolver, *mocks.MockServiceDetector) {
	t.Helper()
	ctrl := gomock.NewController(t)
	transport := mocks.NewMockTransport(ctrl)
	routes := mocks.NewMockRouteSource(ctrl)
	res := mocks.NewMockResolver(ctrl)
	res.EXPECT().Resolve(gomock.Any()).Return("", false).AnyTimes()
	routes.EXPECT().Lookup(gomock.Any(), "T").Return(routeData(t, brokers), nil).MinTimes(1)
	return transport, routes, res, mocks.NewMockServiceDetector(ctrl)
}

// TestNewStrategy builds the strategy injector with generated mocks, and shows
// that the cleanup stops the running detector:
//  1. a broker is isolated and marked unreachable;
//  2. the detector loop resolves and probes it, and the probe makes it
//     reachable;
//  3. the cleanup returns with no goroutine left, and the strategy refuses to
//     start again.
func TestNewStrategy(t *testing.T) {
	ctrl := gomock.NewController(t)
	res := mocks.NewMockResolver(ctrl)
	det := mocks.NewMockServiceDetector(ctrl)
	probed := make(chan struct{})
	var once atomic.Bool
	res.EXPECT().Resolve("a").Return("10.0.0.1:10911", true).MinTimes(1)
	det.EXPECT().Detect(gomock.Any(), "10.0.0.1:10911").DoAndReturn(func(context.Context, string) error {
		if once.CompareAndSwap(false, true) {
			close(probed)
		}
		return nil
	}).MinTimes(1)

	s, cleanup, err := mqwire.NewStrategy(fastConfig(), res, det)
	if err != nil {
		t.Fatalf("NewStrategy() error = %v", err)
	}
	if !s.FaultToleranceEnabled() || !s.DetectorEnabled() || s.StageCounter() == nil {
		t.Errorf("strategy: fault tolerance %v, detector %v, stage counter %v; want on, on, set",
			s.FaultToleranceEnabled(), s.DetectorEnabled(), s.StageCounter())
	}
	s.Update("a", time.Millisecond, true, false)
	select {
	case <-probed:
	case <-time.After(10 * time.Second):
		t.Fatal("the detector never probed the isolated broker")
	}
	// The probe has been called, not yet answered: wait for its answer to
	// reach the table before the cleanup, which would cancel it (an
	// unanswered probe is inconclusive and changes nothing).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if item, _ := s.Table().Item("a"); item.Reachable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("broker a stayed unreachable 10 s after a successful probe")
		}
	}
	cleanup()
	goleak.VerifyNone(t)
	if err := s.Start(); !errors.Is(err, latency.ErrClosed) {
		t.Errorf("Start() after cleanup = %v, want latency.ErrClosed", err)
	}
	if item, _ := s.Table().Item("a"); !item.Reachable {
		t.Errorf("broker a after a successful probe: reachable = false, want true")
	}
}

// TestNewProducer builds the producer injector with generated mocks, sends
// once through it, and shows that the cleanup closes the producer and the
// strategy with no goroutine left.
func TestNewProducer(t *testing.T) {
	transport, routes, res, det := collaborators(t, map[string]int{"a": 2})
	transport.EXPECT().Send(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, a producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "m1"}, nil
	})

	p, cleanup, err := mqwire.NewProducer(fastConfig(), transport, routes, res, det)
	if err != nil {
		t.Fatalf("NewProducer() error = %v", err)
	}
	r, err := p.SendSync(context.Background(), &producer.Message{Topic: "T", Body: []byte("x")})
	if err != nil || r.MsgID != "m1" || r.Queue.BrokerName != "a" {
		t.Fatalf("SendSync() = %+v, %v; want m1 on broker a", r, err)
	}
	if got := p.Policy().MaxAttempts(producer.KindSync); got != 3 {
		t.Errorf("MaxAttempts(sync) = %d, want 3 (the default 2 retries)", got)
	}
	if got := p.Strategy().StageCounter().Count(latency.StageAvailable); got != 1 {
		t.Errorf("picks answered by available = %d, want 1", got)
	}
	cleanup()
	goleak.VerifyNone(t)
	if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "T"}); !errors.Is(err, producer.ErrClosed) {
		t.Errorf("SendSync() after cleanup error = %v, want producer.ErrClosed", err)
	}
	if err := p.Strategy().Start(); !errors.Is(err, latency.ErrClosed) {
		t.Errorf("strategy Start() after cleanup = %v, want latency.ErrClosed", err)
	}
}

// TestCleanupOrder shows that the producer closes before the strategy:
//  1. an async send is held inside the Transport;
//  2. the cleanup starts; the producer refuses new sends but waits for the
//     send in flight, and meanwhile the strategy is still open;
//  3. the send is released: its fault update reaches the open strategy, and
//     the cleanup then closes the strategy too.
func TestCleanupOrder(t *testing.T) {
	transport, routes, res, det := collaborators(t, map[string]int{"a": 1})
	routes.EXPECT().Lookup(gomock.Any(), "U").Return(nil, producer.ErrNoRoute).AnyTimes()
	entered, release := make(chan struct{}), make(chan struct{})
	transport.EXPECT().Send(gomock.Any(), gomock.Any()).DoAndReturn(func(context.Context, producer.Attempt) (producer.Result, error) {
		close(entered)
		<-release
		return producer.Result{}, nil
	})

	p, cleanup, err := mqwire.NewProducer(fastConfig(), transport, routes, res, det)
	if err != nil {
		t.Fatalf("NewProducer() error = %v", err)
	}
	done := make(chan error, 1)
	if err := p.SendAsync(context.Background(), &producer.Message{Topic: "T"}, func(_ producer.Result, err error) { done <- err }); err != nil {
		t.Fatalf("SendAsync() error = %v", err)
	}
	<-entered
	cleaned := make(chan struct{})
	go func() { cleanup(); close(cleaned) }()
	for { // 2. wait until the producer is closing (U has no route: the send never reaches the Transport)
		if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "U"}); errors.Is(err, producer.ErrClosed) {
			break
		}
		runtime.Gosched()
	}
	if err := p.Strategy().Start(); err != nil {
		t.Errorf("strategy Start() while the producer closes = %v, want nil (still open)", err)
	}
	select {
	case <-cleaned:
		t.Fatal("cleanup returned with an async send in flight")
	default:
	}
	close(release) // 3.
	if err := <-done; err != nil {
		t.Errorf("async send error = %v, want nil", err)
	}
	<-cleaned
	if err := p.Strategy().Start(); !errors.Is(err, latency.ErrClosed) {
		t.Errorf("strategy Start() after cleanup = %v, want latency.ErrClosed", err)
	}
}

type brokerLog struct {
	latency.NopObserver
	isolated atomic.Int32
}

func (b *brokerLog) OnIsolate(latency.IsolationEvent) { b.isolated.Add(1) }

type attemptLog struct {
	producer.NopObserver
	attempts atomic.Int32
}

func (a *attemptLog) OnAttempt(producer.AttemptEvent) { a.attempts.Add(1) }

// TestNewObservedProducer builds the observed injector with a Prometheus
// registry and extra observers, fails one attempt and answers the retry, and
// checks every observer heard of it; the cleanup unregisters the metrics.
func TestNewObservedProducer(t *testing.T) {
	transport, routes, res, det := collaborators(t, map[string]int{"a": 1, "b": 1})
	first := true
	transport.EXPECT().Send(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, a producer.Attempt) (producer.Result, error) {
		if first {
			first = false
			return producer.Result{}, &producer.TransportError{Broker: a.Queue.BrokerName, Class: latency.ClassTransportFailed, Err: errors.New("reset")}
		}
		return producer.Result{}, nil
	}).Times(2)

	reg := prometheus.NewRegistry()
	isolations, attempts := &brokerLog{}, &attemptLog{}
	obs := mqwire.Observability{Registerer: reg, Strategy: isolations, Producer: attempts}
	p, cleanup, err := mqwire.NewObservedProducer(fastConfig(), transport, routes, res, det, obs)
	if err != nil {
		t.Fatalf("NewObservedProducer() error = %v", err)
	}
	if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "T"}); err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	if isolations.isolated.Load() != 1 || attempts.attempts.Load() != 2 {
		t.Errorf("observers heard %d isolations and %d attempts, want 1 and 2", isolations.isolated.Load(), attempts.attempts.Load())
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"mqfault_attempts_total", "mqfault_isolations_total", "mqfault_isolated_brokers", "mqfault_picks_total", "mqfault_send_duration_seconds"} {
		if !names[want] {
			t.Errorf("registry has no %s (has %v)", want, names)
		}
	}
	// A second producer on the same registry collides with the first.
	if _, _, err := mqwire.NewObservedProducer(fastConfig(), transport, routes, res, det, obs); err == nil {
		t.Error("second NewObservedProducer() on one registry: error = nil, want a registration conflict")
	}
	cleanup()
	goleak.VerifyNone(t)
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("registry after cleanup has %d families, want 0", len(mfs))
	}
}

// TestNewTCPProducer builds the injector with the built-in TCP detector and
// runs a round against a real loopback listener and a closed port.
func TestNewTCPProducer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()

	ctrl := gomock.NewController(t)
	res := probe.StaticResolver{"up": ln.Addr().String(), "down": deadAddr}
	cfg := config.DefaultConfig()
	cfg.Strategy.Detector = false // no background rounds: the test runs one
	p, cleanup, err := mqwire.NewTCPProducer(cfg, mocks.NewMockTransport(ctrl), mocks.NewMockRouteSource(ctrl), res, mqwire.Observability{})
	if err != nil {
		t.Fatalf("NewTCPProducer() error = %v", err)
	}
	defer cleanup()
	s := p.Strategy()
	s.Update("up", time.Millisecond, true, false)
	s.Update("down", time.Millisecond, true, false)
	rep, err := s.DetectRound(context.Background())
	if err != nil || rep.Probed != 2 || rep.Reachable != 1 || rep.Unreachable != 1 {
		t.Errorf("DetectRound() = %+v, %v; want 2 probed, 1 reachable, 1 unreachable", rep, err)
	}
	if item, _ := s.Table().Item("up"); !item.Reachable {
		t.Error("broker up: reachable = false after a probe that connected")
	}
}

// TestInjectorErrors: an invalid config fails every injector with an error
// naming the knob, and leaves nothing running.
func TestInjectorErrors(t *testing.T) {
	ctrl := gomock.NewController(t)
	bad := config.DefaultConfig()
	bad.Producer.Timeout = 0
	noResolver := config.DefaultConfig() // the detector needs a resolver
	tests := []struct {
		name  string
		build func(config.Config) (func(), error)
		cfg   config.Config
		knob  string
	}{
		{"strategy", func(c config.Config) (func(), error) {
			_, cl, err := mqwire.NewStrategy(c, mocks.NewMockResolver(ctrl), nil)
			return cl, err
		}, bad, "timeout"},
		{"producer", func(c config.Config) (func(), error) {
			_, cl, err := mqwire.NewProducer(c, mocks.NewMockTransport(ctrl), mocks.NewMockRouteSource(ctrl), mocks.NewMockResolver(ctrl), nil)
			return cl, err
		}, bad, "timeout"},
		{"observed", func(c config.Config) (func(), error) {
			_, cl, err := mqwire.NewObservedProducer(c, mocks.NewMockTransport(ctrl), mocks.NewMockRouteSource(ctrl), nil, nil, mqwire.Observability{Registerer: prometheus.NewRegistry()})
			return cl, err
		}, noResolver, "Detector"},
		{"tcp", func(c config.Config) (func(), error) {
			_, cl, err := mqwire.NewTCPProducer(c, mocks.NewMockTransport(ctrl), mocks.NewMockRouteSource(ctrl), mocks.NewMockResolver(ctrl), mqwire.Observability{})
			return cl, err
		}, bad, "timeout"},
		{"producer without a transport", func(c config.Config) (func(), error) {
			_, cl, err := mqwire.NewProducer(c, nil, mocks.NewMockRouteSource(ctrl), mocks.NewMockResolver(ctrl), nil)
			return cl, err
		}, config.DefaultConfig(), "transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanup, err := tt.build(tt.cfg)
			if err == nil || cleanup != nil {
				t.Fatalf("injector = cleanup %v, error %v; want no cleanup and an error", cleanup != nil, err)
			}
			if !strings.Contains(err.Error(), tt.knob) {
				t.Errorf("error %q does not name %s", err, tt.knob)
			}
			goleak.VerifyNone(t)
		})
	}
}

// TestReadmeListsEveryVariable keeps the root README's table of environment
// variables complete.
func TestReadmeListsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{config.EnvPrefix + "PRESET", config.EnvPrefix + "CONFIG"}
	for _, k := range config.Knobs() {
		want = append(want, k.Env)
	}
	for _, env := range want {
		if !strings.Contains(string(readme), "`"+env+"`") {
			t.Errorf("README.md does not list `%s`", env)
		}
	}
}
