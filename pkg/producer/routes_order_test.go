package producer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// lastToldFilter is a route.RouteFilter that remembers, per topic, the last
// thing it was told: the publish info of its last Update, or nil after a
// Remove. It admits every queue.
type lastToldFilter struct {
	mu   sync.Mutex
	last map[string]*route.PublishInfo
}

func (f *lastToldFilter) Filter(route.MessageQueue) bool { return true }

func (f *lastToldFilter) Update(info *route.PublishInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[string]*route.PublishInfo{}
	}
	f.last[info.Topic()] = info
}

func (f *lastToldFilter) Remove(topic string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[string]*route.PublishInfo{}
	}
	f.last[topic] = nil
}

func (f *lastToldFilter) told(topic string) (*route.PublishInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, ok := f.last[topic]
	return info, ok
}

// TestRouteNoticesFollowTheNewestRoutes checks that overlapping route changes
// reach the strategy's per-route filters and the fault table's eviction in
// order: 8 goroutines make the first send of 8 topics (topic i on broker Bi
// alone) at once. Afterwards every topic's filter was last told that topic's
// cached publish info (the same pointer; never a RouteRemoved for a cached
// topic, which an older snapshot delivered last would send), and every
// broker keeps the fault item its send made (an older snapshot delivered
// last evicts brokers only the newer one names). Again with refreshes that
// change every route running all along. Run it with -cpu 1,2,4 -count 10.
func TestRouteNoticesFollowTheNewestRoutes(t *testing.T) {
	t.Run("first sends", func(t *testing.T) { testRouteNotices(t, false) })
	t.Run("first sends and refreshes", func(t *testing.T) { testRouteNotices(t, true) })
}

// testRouteNotices runs the rounds; with refresh, a goroutine refreshes the
// routes meanwhile, and every lookup of topic i answers brokers Bi and one
// of X0 and X1 in turn, so refreshes change routes while first lookups
// install theirs (Xk's queue is read-only, so sends still go to Bi).
func testRouteNotices(t *testing.T, refresh bool) {
	const topics, rounds = 8, 40
	for round := range rounds {
		clk := clock.NewManual(t0)
		spy := &lastToldFilter{}
		scfg := latency.Reference5()
		scfg.FaultTolerance = true
		scfg.Filters = []route.QueueFilter{spy}
		strat, err := latency.NewStrategy(scfg, latency.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int64
		src := producer.RouteSourceFunc(func(_ context.Context, topic string) (*route.TopicRouteData, error) {
			var i int
			if _, err := fmt.Sscanf(topic, "T%d", &i); err != nil {
				return nil, producer.ErrNoRoute
			}
			if refresh { // Xk read-only: sends still go to Bi
				d := routeData(fmt.Sprintf("B%d", i), fmt.Sprintf("X%d", calls.Add(1)%2))
				d.QueueDatas[1].Perm = route.PermRead
				return d, nil
			}
			return routeData(fmt.Sprintf("B%d", i)), nil
		})
		ok := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
			return producer.Result{}, nil
		})
		p, err := producer.New(ok, src, strat, producer.Reference5(), producer.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}

		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range topics {
			wg.Go(func() {
				<-start
				if _, err := p.SendSync(context.Background(), &producer.Message{Topic: fmt.Sprintf("T%d", i)}); err != nil {
					t.Errorf("SendSync(T%d) error = %v", i, err)
				}
			})
		}
		stop := make(chan struct{})
		var refresher sync.WaitGroup
		if refresh {
			refresher.Go(func() {
				<-start
				for {
					select {
					case <-stop:
						return
					default:
					}
					_ = p.RefreshRoutes(context.Background())
				}
			})
		}
		close(start)
		wg.Wait()
		close(stop)
		refresher.Wait()

		for i := range topics {
			topic := fmt.Sprintf("T%d", i)
			cached, err := p.PublishInfo(context.Background(), topic)
			if err != nil {
				t.Fatalf("round %d: PublishInfo(%s) error = %v", round, topic, err)
			}
			switch told, ok := spy.told(topic); {
			case !ok:
				t.Errorf("round %d: the filter was never told of %s", round, topic)
			case told == nil:
				t.Errorf("round %d: the filter was last told %s was removed, but it is cached", round, topic)
			case told != cached:
				t.Errorf("round %d: the filter was last told another publish info of %s than the cached one", round, topic)
			}
			if _, ok := strat.Table().Item(fmt.Sprintf("B%d", i)); !ok {
				t.Errorf("round %d: broker B%d lost the fault item its send made, though %s's cached route names it", round, i, topic)
			}
		}
		_ = p.Close()
		_ = strat.Close()
		if t.Failed() {
			return
		}
	}
}
