package producer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// routeData is a route with one writable queue on each broker, queue and
// broker data in the order given.
func routeData(brokers ...string) *route.TopicRouteData {
	d := &route.TopicRouteData{}
	for _, b := range brokers {
		d.QueueDatas = append(d.QueueDatas, route.QueueData{BrokerName: b, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6})
		d.BrokerDatas = append(d.BrokerDatas, route.BrokerData{BrokerName: b, BrokerAddrs: map[int64]string{0: "addr-" + b}})
	}
	return d
}

// routeHarness is a producer over a mock RouteSource and a no-op Transport.
type routeHarness struct {
	clock *clock.Manual
	strat *latency.Strategy
	src   *mocks.MockRouteSource
	p     *producer.Producer
}

func newRouteHarness(t *testing.T) *routeHarness {
	t.Helper()
	clk := clock.NewManual(t0)
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	strat, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	src := mocks.NewMockRouteSource(gomock.NewController(t))
	ok := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) { return producer.Result{}, nil })
	p, err := producer.New(ok, src, strat, producer.Reference5(), producer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		_ = strat.Close()
	})
	return &routeHarness{clock: clk, strat: strat, src: src, p: p}
}

// TestRoutesNoRoute checks every way a topic can have no route: the error
// matches ErrNoRoute and names the topic, and no attempt is made.
func TestRoutesNoRoute(t *testing.T) {
	lookupErr := errors.New("name server unreachable")
	readOnly := routeData("A")
	readOnly.QueueDatas[0].Perm = route.PermRead
	for _, tt := range []struct {
		name    string
		data    *route.TopicRouteData
		err     error
		wantErr error
	}{
		{name: "topic does not exist", err: producer.ErrNoRoute, wantErr: producer.ErrNoRoute},
		{name: "nil data", wantErr: producer.ErrNoRoute},
		{name: "lookup failed", err: lookupErr, wantErr: lookupErr},
		{name: "no writable queue", data: readOnly, wantErr: producer.ErrNoRoute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newRouteHarness(t)
			h.src.EXPECT().Lookup(gomock.Any(), "orders").Return(tt.data, tt.err)
			_, err := h.p.SendSync(context.Background(), &producer.Message{Topic: "orders"})
			var re *producer.RouteError
			if !errors.As(err, &re) || re.Topic != "orders" || !errors.Is(err, producer.ErrNoRoute) || !errors.Is(err, tt.wantErr) {
				t.Fatalf("SendSync() error = %v, want a RouteError for orders matching ErrNoRoute and %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), `"orders"`) {
				t.Errorf("error %q does not name the topic", err)
			}
		})
	}
}

// TestRoutesOneLookupInFlight checks that concurrent sends to an unknown
// topic make one lookup between them.
func TestRoutesOneLookupInFlight(t *testing.T) {
	h := newRouteHarness(t)
	release := make(chan struct{})
	h.src.EXPECT().Lookup(gomock.Any(), "T").DoAndReturn(func(context.Context, string) (*route.TopicRouteData, error) {
		<-release
		return routeData("A", "B"), nil
	}).Times(1)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := h.p.SendSync(context.Background(), msg())
			errs <- err
		})
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("SendSync() error = %v", err)
		}
	}
}

// TestRoutesRefresh checks a refresh:
//
//  1. route data equal but differently ordered keeps the publish info (and
//     its index);
//  2. a failed lookup keeps the route and is reported;
//  3. changed data gets a new publish info, and the fault item of the broker
//     that left every route is dropped, while the others stay;
//  4. a topic that is gone is dropped: its next send fails with ErrNoRoute.
func TestRoutesRefresh(t *testing.T) {
	h := newRouteHarness(t)
	ctx := context.Background()
	first := routeData("A", "B", "C")
	h.src.EXPECT().Lookup(gomock.Any(), "T").Return(first, nil)
	info, err := h.p.PublishInfo(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	h.strat.Update("A", ms(10), true, true)
	h.strat.Update("C", ms(10), true, true)

	reordered := routeData("C", "B", "A")
	failure := errors.New("timeout")
	gomock.InOrder(
		h.src.EXPECT().Lookup(gomock.Any(), "T").Return(reordered, nil),
		h.src.EXPECT().Lookup(gomock.Any(), "T").Return(nil, failure),
		h.src.EXPECT().Lookup(gomock.Any(), "T").Return(routeData("A", "B"), nil),
		h.src.EXPECT().Lookup(gomock.Any(), "T").Return(nil, producer.ErrNoRoute),
		h.src.EXPECT().Lookup(gomock.Any(), "T").Return(nil, producer.ErrNoRoute),
	)

	if err := h.p.RefreshRoutes(ctx); err != nil {
		t.Fatalf("RefreshRoutes() error = %v", err)
	}
	if got, _ := h.p.PublishInfo(ctx, "T"); got != info {
		t.Error("an unchanged route got a new publish info")
	}

	if err := h.p.RefreshRoutes(ctx); !errors.Is(err, failure) {
		t.Errorf("RefreshRoutes() error = %v, want the lookup's", err)
	}
	if got, _ := h.p.PublishInfo(ctx, "T"); got != info {
		t.Error("a failed lookup replaced the route")
	}

	if err := h.p.RefreshRoutes(ctx); err != nil {
		t.Fatalf("RefreshRoutes() error = %v", err)
	}
	got, _ := h.p.PublishInfo(ctx, "T")
	if got == info || got.Len() != 2 {
		t.Errorf("a changed route kept its publish info (%d queues)", got.Len())
	}
	if _, ok := h.strat.Table().Item("C"); ok {
		t.Error("broker C left the route but kept its fault item")
	}
	if _, ok := h.strat.Table().Item("A"); !ok {
		t.Error("broker A is still in the route but lost its fault item")
	}

	if err := h.p.RefreshRoutes(ctx); err != nil {
		t.Fatalf("RefreshRoutes() error = %v", err)
	}
	if _, err := h.p.PublishInfo(ctx, "T"); !errors.Is(err, producer.ErrNoRoute) {
		t.Errorf("PublishInfo() of a topic gone = %v, want ErrNoRoute", err)
	}
}

// TestRoutesBackgroundRefresh checks that routes are refreshed every
// RouteRefreshInterval on the producer's clock, and that Close stops it.
func TestRoutesBackgroundRefresh(t *testing.T) {
	h := newRouteHarness(t)
	h.src.EXPECT().Lookup(gomock.Any(), "T").Return(routeData("A"), nil)
	if _, err := h.p.PublishInfo(context.Background(), "T"); err != nil {
		t.Fatal(err)
	}
	refreshed := make(chan struct{})
	h.src.EXPECT().Lookup(gomock.Any(), "T").DoAndReturn(func(context.Context, string) (*route.TopicRouteData, error) {
		close(refreshed)
		return routeData("A"), nil
	})
	h.clock.Advance(producer.Reference5().RouteRefreshInterval)
	<-refreshed
	if err := h.p.Close(); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(producer.Reference5().RouteRefreshInterval) // no lookup expected now
}

// TestStaticRoutes checks the RouteSource for routes set in code.
func TestStaticRoutes(t *testing.T) {
	var s producer.StaticRoutes
	ctx := context.Background()
	if _, err := s.Lookup(ctx, "T"); !errors.Is(err, producer.ErrNoRoute) {
		t.Errorf("Lookup() of an empty StaticRoutes error = %v, want ErrNoRoute", err)
	}
	s.SetQueues("T", map[string]int{"b": 2, "a": 1, "c": 0})
	d, err := s.Lookup(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := route.NewPublishInfo("T", d)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range info.Queues() {
		got = append(got, q.String())
	}
	if want := []string{"a:0", "b:0", "b:1"}; !slices.Equal(got, want) {
		t.Errorf("queues = %v, want %v", got, want)
	}
	s.Set("T", nil)
	if _, err := s.Lookup(ctx, "T"); !errors.Is(err, producer.ErrNoRoute) {
		t.Errorf("Lookup() after Set(nil) error = %v, want ErrNoRoute", err)
	}
}
