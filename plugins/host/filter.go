package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/plugins/protocol"
)

// FilterConfig configures a filter plugin.
type FilterConfig struct {
	Config
	// RefreshInterval is how often the verdicts of every known route are
	// fetched again (default 30 s), so a plugin whose decisions change (a
	// zone map edited on disk) is followed without a route change.
	RefreshInterval time.Duration
	// OnDecision, when set, is told of every decision fetched from the
	// plugin: the topic, and nil or why it failed. It is called from the
	// goroutine that fetched (the filter's own, or Refresh's caller) after
	// the verdicts were installed, and must not block.
	OnDecision func(topic string, err error)
}

const defaultRefreshInterval = 30 * time.Second

// Filter is a route.QueueFilter whose verdicts come from a filter plugin.
// Put it in latency.Config.Filters and tell it of every route the producer
// picks from with Update.
//
// Filter (the pick path) reads a cache of the plugin's verdicts: one atomic
// load and two map lookups, no lock, no allocation, never a call to the
// plugin. A queue the cache has no verdict for is admitted: before the first
// verdicts of a route arrive, after a failed decision on a changed route,
// while the plugin is down and after Close, the filter admits everything
// (it fails open), so the strategy's cascade picks as if it were not there.
//
// All methods are safe for concurrent use. Update and Remove do not block
// on the plugin; Refresh does.
type Filter struct {
	sup        *supervisor
	refresh    time.Duration
	onDecision func(topic string, err error)

	snap atomic.Pointer[snapshot] // the verdicts Filter reads

	mu     sync.Mutex // guards routes, dirty, epoch and the replacement of snap
	routes map[string]*routeState
	dirty  map[string]struct{} // topics to fetch
	epoch  uint64              // bumped when the plugin dies: older fetches are void

	seq  atomic.Uint64 // orders fetches
	wake chan struct{} // capacity 1: "there are dirty routes"
	done chan struct{} // closed when the worker returns
}

var _ route.QueueFilter = (*Filter)(nil)

// routeState is what the filter knows of one topic's route.
type routeState struct {
	info         *route.PublishInfo
	gen          uint64 // bumped by every Update
	installedSeq uint64 // the fetch whose verdicts are in snap
	installedGen uint64 // the route generation they belong to
}

// snapshot is an immutable set of verdicts, per topic.
type snapshot struct {
	topics map[string]*verdicts
}

// verdicts are a route's verdicts, per broker.
type verdicts struct {
	brokers map[string]brokerVerdict
}

// brokerVerdict is the verdict on one broker's queues: admit for all of
// them, or per queue id when they differ.
type brokerVerdict struct {
	admit bool
	ids   map[int]bool // nil when every queue of the broker has the verdict admit
}

var emptySnapshot = &snapshot{}

// NewFilter starts the filter plugin at cfg.Path and returns once it
// completed the handshake, or a *StartError (see NewDetector) or a
// *ConfigError. It knows no route yet: call Update. Call Close when done.
func NewFilter(cfg FilterConfig) (*Filter, error) {
	if cfg.RefreshInterval < 0 {
		return nil, invalid("RefreshInterval", cfg.RefreshInterval, "must not be negative")
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = defaultRefreshInterval
	}
	sup, err := newSupervisor(cfg.Config, protocol.KindFilter, &protocol.FilterPlugin{})
	if err != nil {
		return nil, err
	}
	f := &Filter{
		sup:        sup,
		refresh:    cfg.RefreshInterval,
		onDecision: cfg.OnDecision,
		routes:     make(map[string]*routeState),
		dirty:      make(map[string]struct{}),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	f.snap.Store(emptySnapshot)
	sup.onDown = f.pluginDown
	sup.onUp = f.pluginUp
	go sup.run()
	go f.work()
	return f, nil
}

// ProvideFilter is NewFilter for dependency injection (google/wire): it
// returns the filter and a cleanup that closes it.
func ProvideFilter(cfg FilterConfig) (*Filter, func(), error) {
	f, err := NewFilter(cfg)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { _ = f.Close() }, nil
}

// Filter reports whether q may be picked: the plugin's cached verdict, or
// true when there is none. It never blocks, never allocates and never calls
// the plugin.
func (f *Filter) Filter(q route.MessageQueue) bool {
	v := f.snap.Load().topics[q.Topic]
	if v == nil {
		return true
	}
	b, ok := v.brokers[q.BrokerName]
	if !ok {
		return true
	}
	if b.ids == nil {
		return b.admit
	}
	a, ok := b.ids[q.QueueID]
	return !ok || a
}

// Update tells the filter of info, the new route of its topic (call it
// whenever the producer builds a new publish info, before or right after
// swapping it in). It returns at once; the plugin's verdicts are fetched in
// the background, and until they arrive the filter answers from the
// previous route's verdicts (a queue new to the route is admitted). A nil
// info is ignored.
func (f *Filter) Update(info *route.PublishInfo) {
	if info == nil {
		return
	}
	f.mu.Lock()
	r := f.routes[info.Topic()]
	if r == nil {
		r = &routeState{}
		f.routes[info.Topic()] = r
	}
	r.info = info
	r.gen++
	f.dirty[info.Topic()] = struct{}{}
	f.mu.Unlock()
	f.kick()
}

// Remove forgets topic's route and its verdicts (its queues are admitted).
func (f *Filter) Remove(topic string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.routes, topic)
	delete(f.dirty, topic)
	if _, ok := f.snap.Load().topics[topic]; ok {
		topics := maps.Clone(f.snap.Load().topics)
		delete(topics, topic)
		f.snap.Store(&snapshot{topics: topics})
	}
}

// Refresh fetches the verdicts of every known route now and waits for them
// (each call bounded by CallTimeout and ctx). It returns the failures,
// joined, each naming its topic; the routes that failed keep the policy of
// the background refresh (see Filter). Refresh is for start-up and tests:
// the background refresh needs no help.
func (f *Filter) Refresh(ctx context.Context) error {
	f.mu.Lock()
	jobs := make([]fetchJob, 0, len(f.routes))
	for topic, r := range f.routes {
		jobs = append(jobs, f.job(topic, r))
	}
	f.mu.Unlock()
	return f.fetch(ctx, jobs)
}

// Close stops the plugin process and the filter's goroutines and waits for
// them. The filter then admits every queue. Close is idempotent.
func (f *Filter) Close() error {
	f.sup.close()
	<-f.done
	f.mu.Lock()
	f.epoch++
	f.snap.Store(emptySnapshot)
	f.mu.Unlock()
	return nil
}

func (f *Filter) kick() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// pluginDown drops every verdict: the filter fails open while the plugin is
// down. Called by the supervisor.
func (f *Filter) pluginDown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epoch++
	f.snap.Store(emptySnapshot)
	for topic := range f.routes {
		f.dirty[topic] = struct{}{}
	}
}

// pluginUp fetches every route again after a restart.
func (f *Filter) pluginUp() {
	f.mu.Lock()
	for topic := range f.routes {
		f.dirty[topic] = struct{}{}
	}
	f.mu.Unlock()
	f.kick()
}

// work fetches dirty routes when kicked, and every route every refresh
// interval, until the filter is closed.
func (f *Filter) work() {
	defer close(f.done)
	ticker := f.sup.cfg.Clock.NewTicker(f.refresh)
	defer ticker.Stop()
	ctx := f.sup.ctx
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-ticker.C():
			f.mu.Lock()
			for topic := range f.routes {
				f.dirty[topic] = struct{}{}
			}
			f.mu.Unlock()
		}
		f.mu.Lock()
		jobs := make([]fetchJob, 0, len(f.dirty))
		for topic := range f.dirty {
			if r := f.routes[topic]; r != nil {
				jobs = append(jobs, f.job(topic, r))
			}
		}
		clear(f.dirty)
		f.mu.Unlock()
		_ = f.fetch(ctx, jobs) // failures are logged
	}
}

// fetchJob is one route to ask the plugin about.
type fetchJob struct {
	topic string
	info  *route.PublishInfo
	gen   uint64
	seq   uint64
	epoch uint64

	verdicts *verdicts // the answer
	err      error
}

// job describes a fetch of r. Caller must hold mu.
func (f *Filter) job(topic string, r *routeState) fetchJob {
	return fetchJob{topic: topic, info: r.info, gen: r.gen, seq: f.seq.Add(1), epoch: f.epoch}
}

// fetch asks the plugin about every job, one after another, and installs
// the answers in one new snapshot.
func (f *Filter) fetch(ctx context.Context, jobs []fetchJob) error {
	if len(jobs) == 0 {
		return nil
	}
	var errs []error
	for i := range jobs {
		j := &jobs[i]
		j.verdicts, j.err = f.decide(ctx, j.info)
		if j.err != nil {
			f.sup.log.Warn("plugin host: filter decision failed; the route's queues are admitted until one succeeds",
				"topic", j.topic, "err", j.err)
			errs = append(errs, fmt.Errorf("topic %q: %w", j.topic, j.err))
		}
	}
	f.install(jobs)
	if f.onDecision != nil {
		for _, j := range jobs {
			f.onDecision(j.topic, j.err)
		}
	}
	return errors.Join(errs...)
}

// install puts the fetched verdicts in place, skipping answers about a route
// that changed since, answers older than the installed ones, and answers
// from before the plugin last died. A failed fetch of a changed route drops
// the route's previous verdicts (fail open); a failed refresh of an
// unchanged route keeps them.
func (f *Filter) install(jobs []fetchJob) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var topics map[string]*verdicts
	for _, j := range jobs {
		r := f.routes[j.topic]
		if r == nil || r.gen != j.gen || j.epoch != f.epoch || j.seq < r.installedSeq {
			continue
		}
		if topics == nil {
			topics = maps.Clone(f.snap.Load().topics)
			if topics == nil {
				topics = make(map[string]*verdicts)
			}
		}
		switch {
		case j.err == nil:
			topics[j.topic] = j.verdicts
			r.installedSeq, r.installedGen = j.seq, j.gen
		case r.installedGen != j.gen:
			delete(topics, j.topic)
		}
	}
	if topics != nil {
		f.snap.Store(&snapshot{topics: topics})
	}
}

// decide asks the plugin for the verdicts on info's queues.
func (f *Filter) decide(ctx context.Context, info *route.PublishInfo) (*verdicts, error) {
	inst, err := f.sup.current()
	if err != nil {
		return nil, err
	}
	client, ok := inst.raw.(*protocol.FilterClient)
	if !ok {
		return nil, &protocol.BadAnswerError{RPC: "Decide", Problem: "the plugin is no filter"}
	}
	cctx, cancel := clock.WithTimeout(ctx, f.sup.cfg.Clock, f.sup.cfg.CallTimeout)
	defer cancel()
	queues := info.Queues()
	admit, err := client.Decide(cctx, info.Topic(), queues)
	if err != nil {
		if ctx.Err() == nil && (cctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
			return nil, fmt.Errorf("%w: no answer within %v", ErrCallTimeout, f.sup.cfg.CallTimeout)
		}
		return nil, err
	}
	return newVerdicts(queues, admit), nil
}

// newVerdicts indexes admit (one per queue) by broker and queue id. Should a
// queue appear twice, its last verdict counts.
func newVerdicts(queues []route.MessageQueue, admit []bool) *verdicts {
	v := &verdicts{brokers: make(map[string]brokerVerdict)}
	for i, q := range queues {
		b, seen := v.brokers[q.BrokerName]
		switch {
		case !seen:
			b = brokerVerdict{admit: admit[i]}
		case b.ids == nil && b.admit == admit[i]:
			continue
		case b.ids == nil:
			// The broker's queues differ: record each of them.
			b.ids = make(map[int]bool)
			for k := range i {
				if queues[k].BrokerName == q.BrokerName {
					b.ids[queues[k].QueueID] = admit[k]
				}
			}
			b.ids[q.QueueID] = admit[i]
		default:
			b.ids[q.QueueID] = admit[i]
		}
		v.brokers[q.BrokerName] = b
	}
	return v
}
