package producer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// Producer sends messages through a Transport, choosing queues with a
// Strategy (a *latency.Strategy, or another selector) and reporting what
// every attempt met through its pick, with the reference's retries and
// budgets (see Loop for the rules, latency.UpdateFor for the fault updates). Routes come from a RouteSource, cached and refreshed.
//
// All methods are safe for concurrent use. SendSync, SendOneway, SendToQueue
// and SendByKey block until the send is over (at most about Config.Timeout
// after the Transport honours its deadlines); SendAsync blocks only while the
// bound on in-flight async sends is reached. A Producer owns one goroutine
// (the route refresher), one per async send in flight and one per first
// route lookup in flight; Close stops and waits for all of them. It does not
// own the Strategy: close that yourself after the Producer.
//
// Delivery is at least once: a message whose attempt timed out may have been
// stored by that broker even though the producer retries it elsewhere, so a
// consumer can see it twice. Every send ends in exactly one result or one
// error (an async send in exactly one callback).
type Producer struct {
	transport Transport
	strat     Strategy
	policy    *Policy
	cfg       Config
	routes    *routeCache
	clock     clock.Clock
	log       *slog.Logger
	obs       Observer

	count *semaphore.Weighted // nil: no bound on async sends in flight
	bytes *semaphore.Weighted // nil: no bound on their bytes

	mu        sync.RWMutex // guards closed; orders async sends' async.Add before Close's Wait
	closed    bool
	isClosed  atomic.Bool // closed, for the send path without the lock
	async     sync.WaitGroup
	ctx       context.Context // done when Close starts
	cancel    context.CancelFunc
	refreshed chan struct{} // closed when the refresher returns
	closeDone chan struct{} // closed when Close has finished

	announcedMu sync.Mutex                    // guards announced
	announced   map[string]*route.PublishInfo // the route each topic's filters were last told of
}

// Callback receives the end of an async send: the broker's answer, or an
// error. It runs on a producer goroutine and should not block for long:
// Close waits for it.
type Callback func(Result, error)

// Option supplies a collaborator of the Producer.
type Option func(*options)

type options struct {
	clock     clock.Clock
	log       *slog.Logger
	obs       Observer
	routeOpts []route.Option
}

// WithClock sets the clock budgets, deadlines and route refreshes are
// measured on (default clock.Real). Give the Strategy's clock.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithLogger sets the logger for what goes wrong in the background (a failed
// route refresh, a panicking callback); default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithObserver sets who is told of every attempt and send.
func WithObserver(obs Observer) Option { return func(o *options) { o.obs = obs } }

// WithRouteOptions sets the options publish infos are built with (for
// instance route.WithRandom, to make the round-robin index deterministic).
func WithRouteOptions(opts ...route.Option) Option {
	return func(o *options) { o.routeOpts = append(o.routeOpts, opts...) }
}

// New validates cfg and builds a producer over transport, routes and strat,
// following strat's mode (v5 or v4). It starts the route refresher; call
// Close when done. The producer tells strat of every route it installs or
// drops (Strategy.RouteChanged, RouteRemoved); a *latency.Strategy shared by
// several producers learns the routes of all of them.
func New(transport Transport, routes RouteSource, strat Strategy, cfg Config, opts ...Option) (*Producer, error) {
	switch {
	case transport == nil:
		return nil, invalid("transport", nil, "must not be nil")
	case routes == nil:
		return nil, invalid("routes", nil, "must not be nil")
	case isNil(strat):
		return nil, invalid("strategy", nil, "must not be nil")
	}
	policy, err := NewPolicy(cfg, strat.Mode())
	if err != nil {
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
	p := &Producer{
		transport: transport,
		strat:     strat,
		policy:    policy,
		cfg:       cfg,
		clock:     o.clock,
		log:       o.log,
		obs:       o.obs,
		refreshed: make(chan struct{}),
		closeDone: make(chan struct{}),
	}
	p.routes = newRouteCache(routes, o.routeOpts, o.clock, cfg.Timeout, p.routesChanged)
	if cfg.AsyncMaxInFlight > 0 {
		p.count = semaphore.NewWeighted(int64(cfg.AsyncMaxInFlight))
	}
	if cfg.AsyncMaxBytes > 0 {
		p.bytes = semaphore.NewWeighted(cfg.AsyncMaxBytes)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ticker := p.clock.NewTicker(cfg.RouteRefreshInterval)
	go p.refreshLoop(ticker)
	return p, nil
}

// Policy returns the rules the producer's sends follow.
func (p *Producer) Policy() *Policy { return p.policy }

// Strategy returns the producer's strategy when it is mqfault's
// *latency.Strategy (its fault table, switches and detector), or nil when
// another Strategy picks (see Picker).
func (p *Producer) Strategy() *latency.Strategy {
	s, _ := p.strat.(*latency.Strategy)
	return s
}

// Picker returns the Strategy the producer picks with, as given to New.
func (p *Producer) Picker() Strategy { return p.strat }

// isNil reports whether s is nil or a nil *latency.Strategy.
func isNil(s Strategy) bool {
	if s == nil {
		return true
	}
	ls, ok := s.(*latency.Strategy)
	return ok && ls == nil
}

// PublishInfo returns topic's publish info, looking it up if the producer
// does not know it yet; ctx bounds only the wait, not the lookup, which
// others may share. The error is a *RouteError (errors.Is ErrNoRoute; after
// Close also ErrClosed when a lookup was needed).
func (p *Producer) PublishInfo(ctx context.Context, topic string) (*route.PublishInfo, error) {
	return p.routes.get(ctx, topic)
}

// RefreshRoutes asks the RouteSource again for every topic the producer
// knows now, as the background refresher does every
// Config.RouteRefreshInterval, and returns the first lookup error (the
// routes that failed are kept).
func (p *Producer) RefreshRoutes(ctx context.Context) error {
	return p.routes.refresh(ctx)
}

func (p *Producer) refreshLoop(t clock.Ticker) {
	defer close(p.refreshed)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C():
			if err := p.routes.refresh(p.ctx); err != nil && p.ctx.Err() == nil {
				p.log.Warn("producer: route refresh failed (a failed lookup keeps the cached route)", "error", err)
			}
		}
	}
}

// routesChanged runs after every change of the route cache: it tells the
// strategy about new and dropped routes (RouteChanged, RouteRemoved). A call
// that panics (a route filter's Update or Remove, through the strategy) is
// recovered: it is logged, and its topic maps to a *PanicError in the result.
// The route counts as announced all the same: the strategy is not asked again
// until the topic's route changes again, and a filter whose Update panicked
// keeps answering from whatever it decided last.
func (p *Producer) routesChanged(entries map[string]*routeEntry) map[string]error {
	p.announcedMu.Lock()
	defer p.announcedMu.Unlock()
	if p.announced == nil {
		p.announced = map[string]*route.PublishInfo{}
	}
	var failed map[string]error
	fail := func(topic string, err *PanicError) {
		if err == nil {
			return
		}
		p.log.Error("producer: the strategy panicked when told of a route change; the route is installed",
			"topic", topic, "func", err.Func, "panic", err.Value)
		if failed == nil {
			failed = map[string]error{}
		}
		failed[topic] = err
	}
	for topic, e := range entries {
		if p.announced[topic] != e.info {
			fail(topic, catch("Strategy.RouteChanged", func() { p.strat.RouteChanged(e.info) }))
			p.announced[topic] = e.info
		}
	}
	for topic := range p.announced {
		if _, ok := entries[topic]; !ok {
			fail(topic, catch("Strategy.RouteRemoved", func() { p.strat.RouteRemoved(topic) }))
			delete(p.announced, topic)
		}
	}
	return failed
}

var (
	errNilMessage  = fmt.Errorf("%w: nil message", ErrInvalidMessage)
	errEmptyTopic  = fmt.Errorf("%w: empty topic", ErrInvalidMessage)
	errNilCallback = fmt.Errorf("%w: nil callback", ErrInvalidMessage)
	errNilSelector = fmt.Errorf("%w: nil selector", ErrInvalidMessage)
)

func checkMessage(msg *Message) error {
	switch {
	case msg == nil:
		return errNilMessage
	case msg.Topic == "":
		return errEmptyTopic
	}
	return nil
}

// SendSync sends msg and waits for the broker's answer, retrying on other
// brokers as the reference's sync send does: up to 1 + Config.RetryTimes
// attempts within Config.Timeout, each picked by the strategy, each teaching
// the fault table (see Loop). It returns the answer, which is not
// necessarily SendOK: a stored-but-not-OK status is returned with a nil error
// (after retries elsewhere when Config.RetryAnotherBrokerWhenNotStoreOK).
// Otherwise the error is a *RouteError (no route), a *SendError (matching
// ErrCallTimeout when the budget ran out before an attempt, wrapping the last
// attempt's error), or ErrClosed / ErrInvalidMessage.
//
// ctx cancels the send: an attempt in flight when it is done ends as
// cancelled (and the send with it), and no attempt starts once it is done.
// The budget is Config.Timeout on the producer's Clock, whatever ctx's
// deadline.
func (p *Producer) SendSync(ctx context.Context, msg *Message) (Result, error) {
	return p.send(ctx, msg, KindSync)
}

// SendOneway sends msg without waiting for an answer: one attempt, picked by
// the strategy, whose success (the request written) makes the fault update
// (isolation false, reachable true). The error is as SendSync's.
func (p *Producer) SendOneway(ctx context.Context, msg *Message) error {
	_, err := p.send(ctx, msg, KindOneway)
	return err
}

func (p *Producer) send(ctx context.Context, msg *Message, kind Kind) (Result, error) {
	if err := checkMessage(msg); err != nil {
		return Result{}, err
	}
	if p.isClosed.Load() {
		return Result{}, ErrClosed
	}
	start := p.clock.Now()
	info, now, err := p.route(ctx, msg.Topic, kind, start)
	if err != nil {
		p.routeFailed(msg.Topic, kind, start, err)
		return Result{}, err
	}
	var d Drive
	d.Reset(p.strat, info, p.policy, kind, start)
	p.run(ctx, &d, msg, now)
	return p.end(d.Loop(), msg.Topic)
}

// route returns topic's publish info and the time after finding it: start
// itself when it was cached (a map lookup takes no time worth a clock read),
// else the clock after the lookup, which counts against the budget as in the
// reference. When ctx is done before the lookup answers, the send of kind is
// aborted before any attempt (a *SendError): the lookup goes on for the
// other senders of topic, and its route may well be fine.
func (p *Producer) route(ctx context.Context, topic string, kind Kind, start time.Time) (*route.PublishInfo, time.Time, error) {
	if info := p.routes.cached(topic); info != nil {
		return info, start, nil
	}
	info, err := p.routes.lookup(ctx, topic)
	now := p.clock.Now()
	if cerr := ctx.Err(); err != nil && cerr != nil && errors.Is(err, cerr) {
		err = &SendError{Topic: topic, Kind: kind, Elapsed: now.Sub(start), Stop: StopAborted, Err: cerr}
	}
	return info, now, err
}

func (p *Producer) routeFailed(topic string, kind Kind, start time.Time, err error) {
	if p.obs != nil {
		p.obs.OnSend(SendEvent{Topic: topic, Kind: kind, Elapsed: p.clock.Now().Sub(start), Stop: StopAborted, Err: err})
	}
}

// run drives d to its end, from now: the producer's own driver of the
// shared step. It reads the clock once per attempt, at its end; that time is
// also the next attempt's start (the reference reads its clock again after
// the fault update and the pick, a fraction of a microsecond later). A send
// waiting for room (Drive.Parked) blocks here until its wait is over, its
// ctx is done or the producer closes.
func (p *Producer) run(ctx context.Context, d *Drive, msg *Message, now time.Time) {
	for {
		now = p.drive(ctx, d, msg, now)
		until, ok := d.Parked()
		if !ok {
			return
		}
		if err := p.park(ctx, until.Sub(now)); err != nil {
			d.Abort(err)
			return
		}
		now = p.clock.Now()
	}
}

// park blocks for d on the producer's Clock, and returns nil when it is
// over, ErrClosed when the producer closes first, or ctx's error when ctx is
// done first.
func (p *Producer) park(ctx context.Context, d time.Duration) error {
	if err := p.interrupted(ctx); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	over := make(chan struct{})
	t := p.clock.AfterFunc(d, func() { close(over) })
	defer t.Stop()
	select {
	case <-over:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.ctx.Done():
		return ErrClosed
	}
}

// drive makes d's attempts from now until Next says no more may start
// (the send is over, or waits for room), and returns the time it last read.
func (p *Producer) drive(ctx context.Context, d *Drive, msg *Message, now time.Time) time.Time {
	kind := d.Loop().Kind()
	for d.Next(now) {
		if err := p.interrupted(ctx); err != nil {
			d.Abort(err)
			return now
		}
		plan, ok := d.Start(now)
		if !ok {
			return now
		}
		if kind == KindAsync {
			// A blocking Transport hands the request over when it is
			// called, right now: make the dispatch update (latency 0) before
			// the call, as the reference does right after its non-blocking
			// dispatch.
			d.Dispatched(0)
		}
		o := p.attempt(ctx, msg, plan, kind)
		now = plan.Start.Add(o.Elapsed)
		st := d.Finish(o)
		if p.obs != nil {
			p.obs.OnAttempt(AttemptEvent{Topic: msg.Topic, Kind: kind, Attempt: plan.Attempt, Queue: plan.Queue, Outcome: o, Update: st.Update, Retry: st.Retry})
		}
	}
	return now
}

// interrupted says why no attempt may start now: the producer closed, or the
// send's ctx is done.
func (p *Producer) interrupted(ctx context.Context) error {
	if p.isClosed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// attempt makes one Transport call for plan and classifies what it returned.
// A panicking Transport counts as a transport failure.
func (p *Producer) attempt(ctx context.Context, msg *Message, plan Plan, kind Kind) (o Outcome) {
	actx := newAttemptCtx(ctx, p.clock, plan.Deadline)
	defer func() {
		if r := recover(); r != nil {
			releaseAttemptCtx(actx)
			p.log.Error("producer: Transport.Send panicked", "broker", plan.Queue.BrokerName, "panic", r)
			err := &TransportError{Broker: plan.Queue.BrokerName, Err: recovered("Transport.Send", r)}
			o = Outcome{Class: latency.ClassTransportFailed, Err: err, Elapsed: p.clock.Now().Sub(plan.Start)}
		}
	}()
	res, err := p.transport.Send(actx, Attempt{
		Message: msg, Queue: plan.Queue, Kind: kind, Number: plan.Attempt, Timeout: plan.Timeout, Deadline: plan.Deadline,
	})
	releaseAttemptCtx(actx)
	o = Classify(res, err)
	if p.policy.rules.classes.class(o.Class).network && ctx.Err() != nil {
		o.Class = latency.ClassCancelled // the caller gave up; the broker is not at fault
	}
	o.Elapsed = p.clock.Now().Sub(plan.Start)
	return o
}

func (p *Producer) end(l *Loop, topic string) (Result, error) {
	res, err := l.Result()
	if p.obs != nil {
		p.obs.OnSend(SendEvent{Topic: topic, Kind: l.Kind(), Attempts: l.Attempts(), Elapsed: l.Elapsed(), Stop: l.Stop(), Status: res.Status, Err: err,
			RetryRefused: l.RetryRefused(), Waited: l.Waited()})
	}
	return res, err
}

// SendToQueue sends msg to queue q and waits for the answer: one attempt,
// no strategy pick, no retry and no fault update, as the reference's send to
// a given queue. An ordered send must not be retried elsewhere: a retry on
// another queue would put the message behind later messages of the same
// key. q.Topic must be msg.Topic. The error is a *SendError wrapping the
// attempt's error (ErrCallTimeout if the budget was spent before it).
func (p *Producer) SendToQueue(ctx context.Context, msg *Message, q route.MessageQueue) (Result, error) {
	if err := checkMessage(msg); err != nil {
		return Result{}, err
	}
	if q.Topic != msg.Topic {
		return Result{}, fmt.Errorf("%w: queue %s is of topic %q, the message of topic %q", ErrInvalidMessage, q, q.Topic, msg.Topic)
	}
	if p.isClosed.Load() {
		return Result{}, ErrClosed
	}
	return p.sendOrdered(ctx, msg, q, p.clock.Now())
}

// SendByKey sends msg to the queue sel picks for key among the topic's
// queues (HashSelector keeps a key on one queue while the route is
// unchanged), then as SendToQueue: one attempt, no retry, no fault update.
func (p *Producer) SendByKey(ctx context.Context, msg *Message, sel Selector, key string) (Result, error) {
	if err := checkMessage(msg); err != nil {
		return Result{}, err
	}
	if sel == nil {
		return Result{}, errNilSelector
	}
	if p.isClosed.Load() {
		return Result{}, ErrClosed
	}
	start := p.clock.Now()
	info, _, err := p.route(ctx, msg.Topic, KindSync, start)
	if err != nil {
		p.routeFailed(msg.Topic, KindSync, start, err)
		return Result{}, err
	}
	q, ok := sel.SelectQueue(info, msg, key)
	if !ok {
		err := &SendError{Topic: msg.Topic, Kind: KindSync, Elapsed: p.clock.Now().Sub(start), Stop: StopAborted,
			Err: &ClientError{Err: errors.New("the selector returned no queue")}}
		p.sendDone(SendEvent{Topic: msg.Topic, Kind: KindSync, Ordered: true, Elapsed: err.Elapsed, Stop: StopAborted, Err: err})
		return Result{}, err
	}
	return p.sendOrdered(ctx, msg, q, start)
}

func (p *Producer) sendDone(ev SendEvent) {
	if p.obs != nil {
		p.obs.OnSend(ev)
	}
}

func (p *Producer) sendOrdered(ctx context.Context, msg *Message, q route.MessageQueue, start time.Time) (Result, error) {
	now := p.clock.Now()
	cost := now.Sub(start)
	ev := SendEvent{Topic: msg.Topic, Kind: KindSync, Ordered: true}
	if p.policy.timeout < cost {
		err := &SendError{Topic: msg.Topic, Kind: KindSync, Elapsed: cost, Stop: StopCallTimeout}
		ev.Elapsed, ev.Stop, ev.Err = cost, StopCallTimeout, err
		p.sendDone(ev)
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		err := &SendError{Topic: msg.Topic, Kind: KindSync, Elapsed: cost, Stop: StopAborted, Err: err}
		ev.Elapsed, ev.Stop, ev.Err = cost, StopAborted, err
		p.sendDone(ev)
		return Result{}, err
	}
	left := p.policy.timeout - cost
	plan := Plan{Queue: q, Start: now, Timeout: left, Deadline: now.Add(left)}
	o := p.attempt(ctx, msg, plan, KindSync)
	ev.Attempts, ev.Elapsed = 1, p.clock.Now().Sub(start)
	if o.Class == latency.ClassAnswered {
		res := o.Result
		if res.Queue == (route.MessageQueue{}) {
			res.Queue = q
		}
		res.Attempts, res.Brokers = 1, nil
		ev.Stop, ev.Status = StopAnswered, res.Status
		p.sendDone(ev)
		return res, nil
	}
	stop := p.policy.rules.classes.class(o.Class).stop
	err := &SendError{Topic: msg.Topic, Kind: KindSync, Attempts: 1, Brokers: []string{q.BrokerName}, Elapsed: ev.Elapsed, Stop: stop, Err: o.Err}
	ev.Stop, ev.Err = stop, err
	p.sendDone(ev)
	return Result{}, err
}

// Close stops the route refresher, refuses new sends (ErrClosed), and waits
// for every async send in flight to end and its callback to return: an
// attempt in flight completes (Close does not cancel it; the Transport's
// deadline bounds it), and no further attempt starts (the send then ends
// with ErrClosed, or with its earlier answer). Sync sends in progress end
// the same way, on their callers' goroutines. Close is idempotent; every call
// returns once the producer is closed. It does not close the Strategy.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.closeDone
		return nil
	}
	p.closed = true
	p.isClosed.Store(true)
	p.mu.Unlock()
	p.cancel()
	<-p.refreshed
	p.routes.close()
	p.async.Wait()
	close(p.closeDone)
	return nil
}
