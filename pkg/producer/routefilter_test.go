package producer_test

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// routeFilterSpy is a route.RouteFilter that records what it was told and
// admits only queues on broker "B" once it knows its topic's route.
type routeFilterSpy struct {
	mu      sync.Mutex
	updates []*route.PublishInfo
	removes []string
	known   map[string]bool
}

func (f *routeFilterSpy) Filter(q route.MessageQueue) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.known[q.Topic] || q.BrokerName == "B"
}

func (f *routeFilterSpy) Update(info *route.PublishInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, info)
	if f.known == nil {
		f.known = map[string]bool{}
	}
	f.known[info.Topic()] = true
}

func (f *routeFilterSpy) Remove(topic string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removes = append(f.removes, topic)
	delete(f.known, topic)
}

func (f *routeFilterSpy) calls() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.updates), append([]string(nil), f.removes...)
}

// TestRouteFiltersFollowRoutes checks that the producer tells the strategy's
// per-route filters of every route it installs, before the first pick on it,
// only when the publish info is new, and of every route it drops.
//
//  1. The first send of T looks T up; the filter learns the route before the
//     pick, so the send goes to B, the only broker it admits.
//  2. A refresh with the same route data tells the filter nothing.
//  3. A changed route is announced once.
//  4. A topic that is gone is removed from the filter.
func TestRouteFiltersFollowRoutes(t *testing.T) {
	clk := clock.NewManual(t0)
	spy := &routeFilterSpy{}
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Filters = []route.QueueFilter{spy}
	strat, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	src := mocks.NewMockRouteSource(gomock.NewController(t))
	var sentTo []string
	tr := producer.TransportFunc(func(_ context.Context, a producer.Attempt) (producer.Result, error) {
		sentTo = append(sentTo, a.Queue.BrokerName)
		return producer.Result{}, nil
	})
	p, err := producer.New(tr, src, strat, producer.Reference5(), producer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		_ = strat.Close()
	})
	ctx := context.Background()
	gomock.InOrder(
		src.EXPECT().Lookup(gomock.Any(), "T").Return(routeData("A", "B", "C"), nil),
		src.EXPECT().Lookup(gomock.Any(), "T").Return(routeData("A", "B", "C"), nil),
		src.EXPECT().Lookup(gomock.Any(), "T").Return(routeData("B", "C"), nil),
		src.EXPECT().Lookup(gomock.Any(), "T").Return(nil, producer.ErrNoRoute),
	)

	for range 3 {
		if _, err := p.SendSync(ctx, &producer.Message{Topic: "T"}); err != nil {
			t.Fatalf("SendSync() error = %v", err)
		}
	}
	if want := []string{"B", "B", "B"}; len(sentTo) != 3 || sentTo[0] != "B" || sentTo[1] != "B" || sentTo[2] != "B" {
		t.Errorf("sends went to %v, want %v: the filter did not know the route before the first pick", sentTo, want)
	}
	info, _ := p.PublishInfo(ctx, "T")
	if n, _ := spy.calls(); n != 1 || spy.updates[0] != info {
		t.Fatalf("after the first lookup the filter got %d updates, want 1 with the installed publish info", n)
	}

	if err := p.RefreshRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := spy.calls(); n != 1 {
		t.Errorf("an unchanged route was announced again: %d updates, want 1", n)
	}

	if err := p.RefreshRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	changed, _ := p.PublishInfo(ctx, "T")
	if n, _ := spy.calls(); n != 2 || spy.updates[1] != changed {
		t.Errorf("a changed route: %d updates, want 2, the last with the new publish info", n)
	}

	if err := p.RefreshRoutes(ctx); err != nil {
		t.Fatal(err)
	}
	if _, removes := spy.calls(); len(removes) != 1 || removes[0] != "T" {
		t.Errorf("a topic whose route is gone: removes = %v, want [T]", removes)
	}
}
