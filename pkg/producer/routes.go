package producer

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/route"
)

// routeCache keeps a publish info per topic, converted from what the
// RouteSource returns. A send finds its topic's publish info with one atomic
// load and a map lookup; a miss looks the topic up, one lookup per topic at a
// time. A refresh asks again for every known topic and rebuilds a publish
// info only when its route data changed, so the round-robin index survives an
// unchanged route as it does in the reference.
//
// A first lookup is shared by every send of its topic that misses while it
// runs, so it belongs to none of them: it runs on a goroutine of the cache,
// under a ctx of its own, bounded by the cache's bound on its clock and done
// at close, and each caller waits for it only as long as its own ctx
// allows. close cancels the lookups in flight and waits for them.
type routeCache struct {
	src     RouteSource
	opts    []route.Option
	clock   clock.Clock
	bound   time.Duration                                         // one lookup's budget on clock
	changed func(entries map[string]*routeEntry) map[string]error // told of the newest entries after every change, outside mu

	ctx    context.Context // done at close
	cancel context.CancelFunc

	flightMu sync.Mutex         // guards flights and closed; orders lookups.Add before close's Wait
	flights  map[string]*flight // the first lookup in flight, per topic
	closed   bool
	lookups  sync.WaitGroup // every lookup goroutine

	mu      sync.Mutex                             // serializes changes to entries
	entries atomic.Pointer[map[string]*routeEntry] // copy on write

	// notifyMu serializes calls of changed, and notified is the entries it
	// was last called with: a change tells changed of the entries current
	// when its turn comes, never of an older snapshot, so overlapping
	// changes cannot deliver a stale one last.
	notifyMu sync.Mutex
	notified *map[string]*routeEntry
}

type routeEntry struct {
	data *route.TopicRouteData
	info *route.PublishInfo
}

// flight is a first lookup of a topic in progress; done is closed when info
// or err is set.
type flight struct {
	done chan struct{}
	info *route.PublishInfo
	err  error
}

var errNoWritableQueue = errors.New("the route has no writable queue on a broker with a master")

// newRouteCache returns a cache over src whose lookups take at most bound on
// clock each; changed is told of the entries after every change.
func newRouteCache(src RouteSource, opts []route.Option, clk clock.Clock, bound time.Duration, changed func(map[string]*routeEntry) map[string]error) *routeCache {
	c := &routeCache{src: src, opts: opts, clock: clk, bound: bound, changed: changed, flights: map[string]*flight{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	m := map[string]*routeEntry{}
	c.entries.Store(&m)
	return c
}

// get returns topic's publish info, looking the topic up when it is not
// cached. The error is a *RouteError.
func (c *routeCache) get(ctx context.Context, topic string) (*route.PublishInfo, error) {
	if info := c.cached(topic); info != nil {
		return info, nil
	}
	return c.lookup(ctx, topic)
}

// cached returns topic's publish info if it is cached, else nil.
func (c *routeCache) cached(topic string) *route.PublishInfo {
	if e := (*c.entries.Load())[topic]; e != nil {
		return e.info
	}
	return nil
}

// lookup returns topic's publish info, joining the topic's lookup in flight
// or starting one, and waits for it until ctx is done (the lookup goes on for
// the others). The error is a *RouteError: the lookup's, or ctx's error.
func (c *routeCache) lookup(ctx context.Context, topic string) (*route.PublishInfo, error) {
	info, f, err := c.join(topic)
	if f == nil {
		return info, err
	}
	select {
	case <-f.done:
		return f.info, f.err
	case <-ctx.Done():
		select {
		case <-f.done: // both: the answer is there, take it
			return f.info, f.err
		default:
		}
		return nil, &RouteError{Topic: topic, Err: ctx.Err()}
	}
}

// join returns topic's cached publish info, or the lookup in flight for it,
// starting one if there is none.
func (c *routeCache) join(topic string) (*route.PublishInfo, *flight, error) {
	c.flightMu.Lock()
	defer c.flightMu.Unlock()
	if c.closed {
		return nil, nil, &RouteError{Topic: topic, Err: ErrClosed}
	}
	if f := c.flights[topic]; f != nil {
		return nil, f, nil
	}
	// A lookup installs its entry before it leaves flights: checked under
	// flightMu, a miss here is a topic no lookup has found yet.
	if info := c.cached(topic); info != nil {
		return info, nil, nil
	}
	f := &flight{done: make(chan struct{})}
	c.flights[topic] = f
	c.lookups.Add(1)
	go c.fly(topic, f)
	return nil, f, nil
}

// fly runs f, the first lookup of topic, and installs what it found. A panic
// anywhere on the way (the RouteSource, or a route filter told of the new
// route) ends f with a *PanicError instead of the process; when it was the
// strategy told of the new route that panicked, the route stays installed
// (see Producer.routesChanged) and the next send uses it.
func (c *routeCache) fly(topic string, f *flight) {
	defer c.lookups.Done()
	defer func() {
		if r := recover(); r != nil {
			f.info, f.err = nil, &RouteError{Topic: topic, Err: recovered("installing the route", r)}
		}
		c.flightMu.Lock()
		delete(c.flights, topic)
		c.flightMu.Unlock()
		close(f.done)
	}()
	data, err := c.ask(c.ctx, topic)
	e, err := c.convert(topic, data, err)
	if err != nil {
		f.err = err
		return
	}
	if err := c.swap(func(m map[string]*routeEntry) bool {
		m[topic] = e
		return true
	})[topic]; err != nil {
		f.err = &RouteError{Topic: topic, Err: err}
		return
	}
	f.info = e.info
}

// ask calls the source for topic under parent, bounded by c.bound on
// c.clock. A panicking source returns a *PanicError.
func (c *routeCache) ask(parent context.Context, topic string) (data *route.TopicRouteData, err error) {
	ctx, cancel := clock.WithTimeout(parent, c.clock, c.bound)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			data, err = nil, recovered("RouteSource.Lookup", r)
		}
	}()
	return c.src.Lookup(ctx, topic)
}

// close cancels the lookups in flight, refuses new ones (ErrClosed) and
// waits for every lookup goroutine to return.
func (c *routeCache) close() {
	c.flightMu.Lock()
	c.closed = true
	c.flightMu.Unlock()
	c.cancel()
	c.lookups.Wait()
}

func (c *routeCache) convert(topic string, data *route.TopicRouteData, err error) (*routeEntry, error) {
	if err != nil {
		return nil, &RouteError{Topic: topic, Err: err}
	}
	if data == nil {
		return nil, &RouteError{Topic: topic, Err: ErrNoRoute}
	}
	info, err := route.NewPublishInfo(topic, data, c.opts...)
	if err != nil {
		return nil, &RouteError{Topic: topic, Err: err}
	}
	if !info.OK() {
		return nil, &RouteError{Topic: topic, Err: errNoWritableQueue}
	}
	return &routeEntry{data: data, info: info}, nil
}

// swap applies change to a copy of the entries and installs it when change
// reports a change; then it tells c.changed, and returns once c.changed has
// been told of these entries or of newer ones, with what c.changed reported
// failed per topic (nil when another call's notice covered this change).
func (c *routeCache) swap(change func(m map[string]*routeEntry) bool) map[string]error {
	c.mu.Lock()
	m := maps.Clone(*c.entries.Load())
	if !change(m) {
		c.mu.Unlock()
		return nil
	}
	c.entries.Store(&m)
	c.mu.Unlock()
	return c.notify()
}

// notify tells c.changed of the current entries unless it was last told of
// them. Calls are serialized and always read the entries when their turn
// comes, so c.changed sees the entries in the order they were installed (a
// notice may cover several changes) and never an older snapshot after a
// newer one. The cache lock is not held: a lookup of another topic proceeds
// while a filter decides, and waits only to be announced.
func (c *routeCache) notify() map[string]error {
	if c.changed == nil {
		return nil
	}
	c.notifyMu.Lock()
	defer c.notifyMu.Unlock()
	cur := c.entries.Load()
	if cur == c.notified {
		return nil // an overlapping change's notice already covered this one
	}
	failed := c.changed(*cur)
	c.notified = cur
	return failed
}

// refresh asks the source again for every cached topic, each lookup under
// ctx and bounded as a first lookup is. A failed (or panicking) lookup
// keeps the cached route (the reference keeps it too); a topic that is gone
// or has no writable queue left is dropped, so its next send looks it up and
// fails with ErrNoRoute; a changed route gets a new publish info. It returns
// the first lookup error, for the caller to log; when there was none, the
// first topic whose announcement panicked (a route filter's Update), as a
// *RouteError wrapping the *PanicError: the new route is installed all the
// same.
func (c *routeCache) refresh(ctx context.Context) error {
	var firstErr error
	type change struct {
		old, new *routeEntry // new nil: drop
	}
	var changes map[string]change
	for topic, old := range *c.entries.Load() {
		if ctx.Err() != nil {
			break
		}
		data, err := c.ask(ctx, topic)
		if err != nil && !errors.Is(err, ErrNoRoute) {
			firstErr = cmp.Or(firstErr, error(&RouteError{Topic: topic, Err: err}))
			continue
		}
		if err == nil && data != nil && routeDataEqual(old.data, data) {
			continue
		}
		e, cerr := c.convert(topic, data, err)
		if errors.Is(cerr, route.ErrInvalidRoute) { // keep what worked
			firstErr = cmp.Or(firstErr, cerr)
			continue
		}
		if changes == nil {
			changes = map[string]change{}
		}
		changes[topic] = change{old: old, new: e}
	}
	if len(changes) == 0 {
		return firstErr
	}
	failed := c.swap(func(m map[string]*routeEntry) bool {
		changed := false
		for topic, ch := range changes {
			if m[topic] != ch.old { // a lookup replaced it meanwhile
				continue
			}
			changed = true
			if ch.new == nil {
				delete(m, topic)
			} else {
				m[topic] = ch.new
			}
		}
		return changed
	})
	if firstErr == nil && len(failed) > 0 {
		topic := slices.Min(slices.Collect(maps.Keys(failed)))
		firstErr = &RouteError{Topic: topic, Err: failed[topic]}
	}
	return firstErr
}

// routeDataEqual reports whether two route data describe the same route,
// whatever the order of their queue and broker data (the reference's
// topicRouteDataChanged compares sorted copies).
func routeDataEqual(a, b *route.TopicRouteData) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if (a.OrderTopicConf == nil) != (b.OrderTopicConf == nil) ||
		(a.OrderTopicConf != nil && *a.OrderTopicConf != *b.OrderTopicConf) {
		return false
	}
	if len(a.QueueDatas) != len(b.QueueDatas) || len(a.BrokerDatas) != len(b.BrokerDatas) ||
		len(a.TopicQueueMappingByBroker) != len(b.TopicQueueMappingByBroker) {
		return false
	}
	byQueue := func(x, y route.QueueData) int { return cmp.Compare(x.BrokerName, y.BrokerName) }
	qa := slices.SortedStableFunc(slices.Values(a.QueueDatas), byQueue)
	qb := slices.SortedStableFunc(slices.Values(b.QueueDatas), byQueue)
	if !slices.Equal(qa, qb) {
		return false
	}
	byBroker := func(x, y route.BrokerData) int { return cmp.Compare(x.BrokerName, y.BrokerName) }
	ba := slices.SortedStableFunc(slices.Values(a.BrokerDatas), byBroker)
	bb := slices.SortedStableFunc(slices.Values(b.BrokerDatas), byBroker)
	for i := range ba {
		if ba[i].Cluster != bb[i].Cluster || ba[i].BrokerName != bb[i].BrokerName || !maps.Equal(ba[i].BrokerAddrs, bb[i].BrokerAddrs) {
			return false
		}
	}
	for k, ma := range a.TopicQueueMappingByBroker {
		mb, ok := b.TopicQueueMappingByBroker[k]
		if !ok || !mappingEqual(ma, mb) {
			return false
		}
	}
	return true
}

func mappingEqual(a, b route.TopicQueueMappingInfo) bool {
	if (a.Scope == nil) != (b.Scope == nil) || (a.Scope != nil && *a.Scope != *b.Scope) {
		return false
	}
	return a.Topic == b.Topic && a.TotalQueues == b.TotalQueues && a.BrokerName == b.BrokerName &&
		a.Epoch == b.Epoch && a.Dirty == b.Dirty && maps.Equal(a.CurrIDMap, b.CurrIDMap)
}
