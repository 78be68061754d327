package producer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// bannerFilter is a route filter that keeps broker "A" out of every route it
// was told of, and panics in Update (after counting the call) while its
// switch is on; Remove panics too.
type bannerFilter struct {
	boom    atomic.Bool
	updates chan *route.PublishInfo // every Update call's info, panicking or not
	mu      sync.Mutex
	told    map[string]*route.PublishInfo // the last completed Update per topic
}

func (f *bannerFilter) Filter(q route.MessageQueue) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.told[q.Topic] == nil || q.BrokerName != "A"
}

func (f *bannerFilter) Update(info *route.PublishInfo) {
	f.updates <- info
	if f.boom.Load() {
		panic("filter boom")
	}
	f.mu.Lock()
	f.told[info.Topic()] = info
	f.mu.Unlock()
}

func (f *bannerFilter) Remove(topic string) {
	if f.boom.Load() {
		panic("filter boom")
	}
	f.mu.Lock()
	delete(f.told, topic)
	f.mu.Unlock()
}

func (f *bannerFilter) lastTold(topic string) *route.PublishInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.told[topic]
}

// TestRouteFilterUpdatePanicsOnRefresh: a route filter whose Update panics
// while a refresh announces a changed route does not take the process down
// (the background refresher) nor the caller of RefreshRoutes: the refresh
// installs the new route and returns a *RouteError for the topic wrapping a
// *PanicError (Func "Strategy.RouteChanged", ErrPanicked); sends go on over
// the new route, the filter keeping the verdict of its last completed Update
// (A still kept out); the next route change tells the filter again.
func TestRouteFilterUpdatePanicsOnRefresh(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	f := &bannerFilter{updates: make(chan *route.PublishInfo, 16), told: map[string]*route.PublishInfo{}}
	scfg := latency.Reference5()
	scfg.FaultTolerance = true
	scfg.Filters = []route.QueueFilter{f}
	strat, err := latency.NewStrategy(scfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	routes := &producer.StaticRoutes{}
	routes.SetQueues("T", map[string]int{"A": 1, "B": 1})
	p, err := producer.New(&panicky{}, routes, strat, producer.Reference5(), producer.WithClock(clk), producer.WithLogger(discardLogger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		_ = strat.Close()
	})
	first, err := p.PublishInfo(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	recv(t, f.updates, "the first Update")

	// RefreshRoutes: the route grows a broker C; the filter panics.
	f.boom.Store(true)
	routes.SetQueues("T", map[string]int{"A": 1, "B": 1, "C": 1})
	err = p.RefreshRoutes(ctx)
	checkPanicErr(t, err, "Strategy.RouteChanged", "filter boom")
	var re *producer.RouteError
	if !errors.As(err, &re) || re.Topic != "T" {
		t.Errorf("RefreshRoutes() error %v is no *RouteError for T", err)
	}
	second, err := p.PublishInfo(ctx, "T")
	if err != nil || second == first || second.Len() != 3 {
		t.Fatalf("after the panicking refresh PublishInfo() = %v, %v; want the new 3-queue route", second, err)
	}
	if got := recv(t, f.updates, "the panicking Update"); got != second {
		t.Errorf("the filter was asked about %p, want the new route %p", got, second)
	}
	if f.lastTold("T") != first {
		t.Error("the filter's last completed Update is not the first route")
	}
	for i := range 6 {
		res, err := p.SendSync(ctx, msg())
		if err != nil {
			t.Fatalf("send %d after the panicking refresh: %v", i, err)
		}
		if res.Queue.BrokerName == "A" {
			t.Errorf("send %d went to A: the filter's last verdict keeps A out", i)
		}
	}

	// The background refresher: a second change, the filter still panicking.
	routes.SetQueues("T", map[string]int{"A": 1, "B": 1, "C": 1, "D": 1})
	clk.Advance(producer.Reference5().RouteRefreshInterval)
	recv(t, f.updates, "the background refresh's Update")
	if _, err := p.SendSync(ctx, msg()); err != nil {
		t.Fatalf("send after the panicking background refresh: %v", err)
	}

	// Well again: the next change is told.
	f.boom.Store(false)
	routes.SetQueues("T", map[string]int{"A": 1, "B": 1})
	if err := p.RefreshRoutes(ctx); err != nil {
		t.Fatalf("RefreshRoutes() with the filter well = %v", err)
	}
	recv(t, f.updates, "the Update after recovery")
	if now, _ := p.PublishInfo(ctx, "T"); f.lastTold("T") != now {
		t.Error("the filter was not told of the route installed after it recovered")
	}

	// A first lookup whose announcement panics fails with the panic (as
	// before); the route is installed, and the next send uses it.
	f.boom.Store(true)
	routes.SetQueues("U", map[string]int{"B": 1})
	_, err = p.PublishInfo(ctx, "U")
	checkPanicErr(t, err, "Strategy.RouteChanged", "filter boom")
	recv(t, f.updates, "U's first Update")
	if _, err := p.SendSync(ctx, &producer.Message{Topic: "U", Body: []byte("x")}); err != nil {
		t.Errorf("the send after U's panicking first lookup: %v", err)
	}

	// A refresh that drops U, whose removal panics: U is gone all the same,
	// T unharmed.
	routes.Set("U", nil)
	err = p.RefreshRoutes(ctx)
	checkPanicErr(t, err, "Strategy.RouteRemoved", "filter boom")
	if _, err := p.PublishInfo(ctx, "U"); !errors.Is(err, producer.ErrNoRoute) {
		t.Errorf("PublishInfo(U) after its removal = %v, want ErrNoRoute", err)
	}
	if _, err := p.SendSync(ctx, msg()); err != nil {
		t.Errorf("a send to T after U's panicking removal: %v", err)
	}
}

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))
