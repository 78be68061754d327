package producer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

var t0 = time.UnixMilli(1_000_000)

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// fixedRandom makes publish infos start their index at 0 and every reset
// store 0, so picks are predictable: over queues [A:0 B:0 C:0] a first
// attempt picks B, and a retry (reset, avoiding the last broker and isolated
// ones) C, then A when B is isolated.
type fixedRandom struct{}

func (fixedRandom) Int32() int32       { return 0 }
func (fixedRandom) Int32n(int32) int32 { return 0 }

// recorder is an Observer keeping every event.
type recorder struct {
	mu       sync.Mutex
	attempts []producer.AttemptEvent
	sends    []producer.SendEvent
}

func (r *recorder) OnAttempt(ev producer.AttemptEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, ev)
}

func (r *recorder) OnSend(ev producer.SendEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sends = append(r.sends, ev)
}

func (r *recorder) updates() []producer.FaultUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []producer.FaultUpdate
	for _, ev := range r.attempts {
		out = append(out, ev.Update)
	}
	return out
}

// harness is a producer over a mock Transport, a real strategy with fault
// tolerance on, and a manual clock; topic T has one queue on each of brokers
// A, B and C.
type harness struct {
	clock  *clock.Manual
	strat  *latency.Strategy
	tr     *mocks.MockTransport
	routes *producer.StaticRoutes
	p      *producer.Producer
	rec    *recorder
}

type harnessOpts struct {
	mode     latency.Mode
	cfg      *producer.Config
	detector bool
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	clk := clock.NewManual(t0)
	scfg := latency.Reference5()
	if o.mode == latency.ModeV4 {
		scfg = latency.Reference4()
	}
	scfg.FaultTolerance = true
	sopts := []latency.Option{latency.WithClock(clk)}
	if o.detector {
		scfg.Detector = true
		sopts = append(sopts, latency.WithResolver(probe.StaticResolver{"A": "a", "B": "b", "C": "c"}))
	}
	strat, err := latency.NewStrategy(scfg, sopts...)
	if err != nil {
		t.Fatalf("NewStrategy() error = %v", err)
	}
	routes := &producer.StaticRoutes{}
	routes.SetQueues("T", map[string]int{"A": 1, "B": 1, "C": 1})
	cfg := producer.Reference5()
	if o.cfg != nil {
		cfg = *o.cfg
	}
	h := &harness{clock: clk, strat: strat, routes: routes, rec: &recorder{}}
	h.tr = mocks.NewMockTransport(gomock.NewController(t))
	h.p, err = producer.New(h.tr, routes, strat, cfg, producer.WithClock(clk), producer.WithObserver(h.rec),
		producer.WithRouteOptions(route.WithRandom(fixedRandom{})))
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	t.Cleanup(func() {
		_ = h.p.Close()
		_ = strat.Close()
	})
	return h
}

// call is one expected Transport call: on broker, taking lat on the clock,
// returning res, err.
type call struct {
	broker string
	lat    time.Duration
	res    producer.Result
	err    error
	check  func(ctx context.Context, a producer.Attempt) // optional, inside the call
}

// expect sets up the calls in order; any other call fails the test.
func (h *harness) expect(calls ...call) {
	var order []any
	for _, c := range calls {
		order = append(order, h.tr.EXPECT().Send(gomock.Any(), onBroker(c.broker)).DoAndReturn(
			func(ctx context.Context, a producer.Attempt) (producer.Result, error) {
				if c.check != nil {
					c.check(ctx, a)
				}
				h.clock.Advance(c.lat)
				return c.res, c.err
			}).Times(1))
	}
	gomock.InOrder(order...)
}

// item returns broker's fault item.
func (h *harness) item(t *testing.T, broker string) latency.FaultItem {
	t.Helper()
	it, ok := h.strat.Table().Item(broker)
	if !ok {
		t.Fatalf("no fault item for broker %s", broker)
	}
	return it
}

type brokerMatcher string

func onBroker(b string) gomock.Matcher { return brokerMatcher(b) }

func (m brokerMatcher) Matches(x any) bool {
	a, ok := x.(producer.Attempt)
	return ok && a.Queue.BrokerName == string(m)
}

func (m brokerMatcher) String() string { return fmt.Sprintf("an attempt on broker %s", string(m)) }

func msg() *producer.Message { return &producer.Message{Topic: "T", Body: []byte("hello")} }
