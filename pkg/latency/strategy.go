package latency

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// Strategy is the reference's MQFaultStrategy: it picks a queue for each send
// attempt through a cascade of filters over a publish info and records each
// attempt in its fault table; with a Resolver it runs the detector. Select and
// Update are safe for concurrent use, never block, take no lock held across a
// call out and allocate nothing once route and broker are known. The detector
// loop (Start, Close) is the only goroutine a Strategy owns.
type Strategy struct {
	mode    Mode
	spec    *modeSpec // what the mode decides, looked up once
	casc    cascade   // the mode's selection cascade
	filters []route.QueueFilter
	binds   bindings // per topic, what picks over its route read (binding.go)

	// policies are the policies past the reference (policy.go); zero when
	// off, and always off in a mode without them.
	policies policies

	faultOn    atomic.Bool
	detectorOn atomic.Bool
	durations  atomic.Pointer[durationsBox]

	table  *FaultTable
	stages *StageCounter // nil unless WithStageCounter
	routes routeBrokers  // the brokers of the routes announced (routebrokers.go)
	claim  *claim        // the strategy's claim on the table's brokers (routebrokers.go)
	// walkOnly makes every pass probe queue by queue, ignoring the routes'
	// flag summaries and the least-bad order: the reference's own walk,
	// which the differential tests hold the fast path to.
	walkOnly bool

	clock    clock.Clock
	log      *slog.Logger
	obs      *observerGate // nil without an observer; closed by Close
	detector *detector     // nil without a resolver or the built-in table
	period   time.Duration

	mu        sync.Mutex // guards started, closed and loopDone
	started   bool
	closed    bool
	loopDone  chan struct{}
	closeDone chan struct{} // closed when the first Close has finished
	ctx       context.Context
	cancel    context.CancelFunc
}

type durationsBox struct{ t DurationTable }

// Option supplies a collaborator of the Strategy.
type Option func(*options)

type options struct {
	clock    clock.Clock
	resolver probe.Resolver
	service  probe.ServiceDetector
	table    *FaultTable
	tableSet bool
	obs      Observer
	log      *slog.Logger
	random   route.RandomSource
	stages   *StageCounter
}

// WithStageCounter makes every pick count its stage in c (one atomic add).
func WithStageCounter(c *StageCounter) Option { return func(o *options) { o.stages = c } }

// WithClock sets the clock (default clock.Real).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithResolver sets the resolver the detector asks for broker addresses.
// Without one the strategy has no detector.
func WithResolver(r probe.Resolver) Option { return func(o *options) { o.resolver = r } }

// WithServiceDetector sets what probes an address; without one, rounds probe
// nothing and only drop brokers the resolver no longer knows.
func WithServiceDetector(d probe.ServiceDetector) Option { return func(o *options) { o.service = d } }

// withFaultTable makes the strategy keep its fault state in t, a table of
// the strategy's mode, instead of a table of its own: strategies given one
// table share what their sends found. The strategy reads and updates t and
// never changes anything else about it: t's observer (withTableObserver) is
// told of its recoveries, the strategy's observer of the isolations the
// strategy's own updates cause. A route change drops a broker's item only
// when no route announced to any strategy over t names it, and not while a
// strategy over t that was announced no route yet is open (routebrokers.go);
// Close a strategy you are done with, or its routes keep their brokers'
// items in t.
func withFaultTable(t *FaultTable) Option {
	return func(o *options) { o.table, o.tableSet = t, true }
}

// WithObserver sets who is told of isolations, recoveries and probes.
func WithObserver(obs Observer) Option { return func(o *options) { o.obs = obs } }

// WithLogger sets the logger of a panicking detector (slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithRandom sets the least-bad pick's random source (route.DefaultRandom).
func WithRandom(r route.RandomSource) Option { return func(o *options) { o.random = r } }

// NewStrategy validates cfg and builds a strategy. It starts no goroutine:
// call Start to run the detector loop, and Close when done.
func NewStrategy(cfg Config, opts ...Option) (*Strategy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.clock == nil {
		o.clock = clock.Real{}
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	var gate *observerGate
	if o.obs != nil {
		gate = newObserverGate(o.obs)
		o.obs = gate // everything below tells the observer through the gate
	}
	mode := cfg.Mode.orDefault()
	spec := modeSpecs[mode]
	if o.tableSet {
		switch t := o.table; {
		case t == nil:
			return nil, invalid("withFaultTable", "(*FaultTable)(nil)", "is a nil table (leave it out for a new one)")
		case t.mode != mode:
			return nil, invalid("withFaultTable", string(t.mode),
				"the fault table's update rules are those of another mode than the strategy's ("+string(mode)+")")
		}
	}
	if cfg.Detector && o.resolver == nil {
		return nil, invalid("Detector", true, "the detector needs a Resolver (WithResolver)")
	}
	s := &Strategy{
		mode:    mode,
		spec:    spec,
		filters: append([]route.QueueFilter(nil), cfg.Filters...),
		clock:   o.clock,
		log:     o.log,
		obs:     gate,
		period:  cfg.DetectPeriod,
		stages:  o.stages,

		closeDone: make(chan struct{}),
	}
	s.casc = spec.cascade(s)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	durations := cfg.Durations
	if durations == nil {
		durations = spec.durations()
	}
	s.durations.Store(&durationsBox{durations})
	s.faultOn.Store(cfg.FaultTolerance)
	s.detectorOn.Store(cfg.Detector)

	if s.table = o.table; s.table == nil {
		s.table = newFaultTable(mode, o.clock, withTableObserver(o.obs))
		if o.random != nil {
			s.table.worst = route.NewIndex(o.random)
		}
	}
	if spec.policies {
		s.policies = newPolicies(cfg)
	}
	if o.resolver != nil && spec.detector {
		d, err := newDetector(detectorConfig{
			Table:          s.table,
			Resolver:       o.resolver,
			Service:        o.service,
			Clock:          o.clock,
			Interval:       cfg.DetectInterval,
			Timeout:        cfg.DetectTimeout,
			Parallel:       cfg.DetectParallel,
			ProbeFailures:  cfg.ProbeFailures,
			RecoveredAfter: recoveredAfter(cfg),
			RefusedGap:     refusedGap(cfg),
			Observer:       o.obs,
			Logger:         o.log,
		})
		if err != nil {
			return nil, err
		}
		s.detector = d
	}
	s.claim = s.table.newClaim() // last: a strategy NewStrategy does not return holds none
	return s, nil
}

// StageCounter returns the counter given with WithStageCounter, or nil.
func (s *Strategy) StageCounter() *StageCounter { return s.stages }

// Mode returns the strategy's mode.
func (s *Strategy) Mode() Mode { return s.mode }

// Table returns the fault table the strategy uses.
func (s *Strategy) Table() *FaultTable { return s.table }

// SetFaultTolerance turns fault tolerance on or off; safe at any time.
func (s *Strategy) SetFaultTolerance(on bool) { s.faultOn.Store(on) }

// FaultToleranceEnabled reports whether fault tolerance is on.
func (s *Strategy) FaultToleranceEnabled() bool { return s.faultOn.Load() }

// SetDetector sets the detector switch (v5; nothing in v4), which gates the
// rounds and how a transport error updates the table; safe at any time.
func (s *Strategy) SetDetector(on bool) {
	if s.spec.detector {
		s.detectorOn.Store(on)
	}
}

// DetectorEnabled reports the detector switch.
func (s *Strategy) DetectorEnabled() bool { return s.detectorOn.Load() }

// SetDurations replaces the duration table (nil is ignored); safe at any time.
func (s *Strategy) SetDurations(t DurationTable) {
	if t != nil && !nilTable(t) {
		s.durations.Store(&durationsBox{t})
	}
}

// Durations returns the duration table in use.
func (s *Strategy) Durations() DurationTable { return s.durations.Load().t }

// Update is the reference's updateFaultItem: unless fault tolerance is off, it
// isolates broker for Durations().Isolation(latency), or, with isolation, for
// ModeInfo.IsolationLatency's (longer with Config.Backoff); v5 keeps
// reachable, v4 ignores it. A negative latency (a clock stepped back) counts
// as 0. Safe for concurrent use; allocates nothing for a known broker.
func (s *Strategy) Update(broker string, latency time.Duration, isolation, reachable bool) {
	s.updateSlot(nil, broker, latency, isolation, reachable)
}

// updateSlot is Update on broker's slot sl, found already (nil: find it by
// name).
func (s *Strategy) updateSlot(sl *slot, broker string, latency time.Duration, isolation, reachable bool) {
	if !s.faultOn.Load() {
		return
	}
	if sl == nil {
		sl = s.table.slotFor(broker)
	}
	latency = max(latency, 0)
	lookup, reason := latency, ReasonLatency
	if isolation {
		lookup, reason = s.spec.isolationLatency, ReasonFailure
	}
	d := s.durations.Load().t.Isolation(lookup)
	if r, ok := s.table.updateSlot(sl, latency, d, reachable, reason, s.policies.isolation); ok && s.obs != nil {
		s.obs.OnIsolate(s.table.event(broker, reason, latency, r))
	}
}

// DetectRound runs one detector round now, whatever the detector switch (which
// gates only the background ticks); ErrNoDetector when there is none. When it
// returns, every broker due has been probed and its verdict applied, and so has
// every broker another round was probing (RoundReport.Awaited; probed again if
// its check stamp has passed by then). ctx cancels the round and the wait;
// probes running then count as inconclusive. Safe for concurrent use; blocks
// while its probes run (each at most DetectTimeout plus ProbeGrace).
func (s *Strategy) DetectRound(ctx context.Context) (RoundReport, error) {
	if s.detector == nil {
		return RoundReport{}, ErrNoDetector
	}
	return s.detector.Round(ctx), nil
}

// Start starts the detector loop: a round every DetectPeriod on the clock while
// the switch is on (nothing without a detector). Starting twice is harmless;
// after Close it returns ErrClosed.
func (s *Strategy) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started || s.detector == nil {
		s.started = true
		return nil
	}
	s.started = true
	ticker := s.clock.NewTicker(s.period)
	s.loopDone = make(chan struct{})
	go func() {
		defer close(s.loopDone)
		defer ticker.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-ticker.C():
				if s.detectorOn.Load() {
					s.detector.Round(s.ctx)
				}
			}
		}
	}()
	return nil
}

// Close stops the detector loop, cancels a round in progress and waits for every
// probe; then it silences the observer, waiting for its calls in progress, so
// that after Close the observer is never called again and route changes drop no
// fault items. Select, Update and DetectRound keep working, and isolations still
// end on time. Close is idempotent.
func (s *Strategy) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closeDone
		return nil
	}
	s.closed = true
	done := s.loopDone
	s.mu.Unlock()
	s.cancel()
	if done != nil {
		<-done
	}
	if s.detector != nil {
		s.detector.wait()
	}
	if s.obs != nil {
		s.obs.close()
	}
	s.table.releaseClaim(s.claim)
	close(s.closeDone)
	return nil
}
