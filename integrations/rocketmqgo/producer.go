package rocketmqgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe/setup"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// Producer is a rocketmq.Producer whose sends are fault tolerant: SendSync,
// SendAsync and SendOneWay run mqfault's send loop over the client's
// producer, one client call per attempt, each attempt on the queue a
// latency.Strategy picked, avoiding brokers that failed or answered slowly.
//
// Messages with a sharding key (primitive.Message.WithShardingKey) and
// messages with Queue set do not go through the loop: they are sent once, to
// the queue the client's own hash rule gives the key (as
// producer.NewHashQueueSelector does) or to the queue as set, since a retry
// elsewhere would reorder them.
//
// Request and RequestAsync are the client's own, through the embedded
// rocketmq.Producer: not fault tolerant, not retried (see WithoutInterceptor
// for how they fare with interceptors).
//
// All methods are safe for concurrent use. SendSync blocks for at most about
// the send budget (producer.Config.Timeout, 3 s by default); SendAsync
// blocks only while the bound on in-flight async sends is reached; Shutdown
// waits for every async send in flight to end and its callback to return.
// A message must not be modified, or sent again, while a send of it is in
// progress (the client modifies it too).
type Producer struct {
	// Producer is the client's producer, built with the wrapper's options.
	// Its Request and RequestAsync are used as they are.
	rocketmq.Producer

	client   Client
	sel      *selector
	routes   *clientRoutes
	addrs    *addressBook
	strat    *latency.Strategy
	cfg      mqproducer.Config
	prodOpts []mqproducer.Option
	clock    clock.Clock
	log      *slog.Logger
	obs      setup.Observers // the logger's records, the metrics, WithObservers'
	// unregister unregisters the metrics: once, when Shutdown is done or
	// NewProducer fails.
	unregister func()

	sender  atomic.Pointer[mqproducer.Producer] // set by Start
	running atomic.Bool

	mu       sync.RWMutex // guards state; orders direct async sends' wg.Add before Shutdown's Wait
	state    int          // stateNew, stateRunning, stateShut
	wg       sync.WaitGroup
	ctx      context.Context // done when Shutdown starts
	cancel   context.CancelFunc
	refresh  chan struct{} // a learnt route changed
	shutDone chan struct{} // closed when Shutdown has finished
}

const (
	stateNew = iota
	stateRunning
	stateShut
)

var _ rocketmq.Producer = (*Producer)(nil)

// errNilCallback is returned by SendAsync for a nil callback.
var errNilCallback = fmt.Errorf("%w: nil callback", mqproducer.ErrInvalidMessage)

// NewProducer builds the client's producer from clientOpts, the same options
// rocketmq.NewProducer takes, plus the wrapper's own: producer.WithRetry(0)
// and the wrapper's queue selector (they override a WithRetry or
// WithQueueSelector in clientOpts), and, first in the interceptor chain, the
// interceptor that learns broker addresses (unless WithoutInterceptor).
// opts configure the strategy and the send loop; their settings are
// validated here. Call Start before sending and Shutdown when done.
//
// Give each producer of a process its own producer.WithInstanceName: the
// client shares one instance per client id among producers.
func NewProducer(clientOpts []producer.Option, opts ...Option) (*Producer, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	p, err := newProducer(nil, o)
	if err != nil {
		return nil, err
	}
	if !o.noPanics {
		installPanicHandler(o.log)
	}
	all := make([]producer.Option, 0, len(clientOpts)+3)
	if !o.noIntercept {
		all = append(all, producer.WithInterceptor(p.addrs.intercept))
	}
	all = append(all, clientOpts...)
	all = append(all, producer.WithRetry(0), producer.WithQueueSelector(p.sel))
	cp, err := rocketmq.NewProducer(all...)
	if err != nil {
		_ = p.strat.Close()
		p.unregister()
		return nil, err
	}
	p.Producer, p.client = cp, cp
	return p, nil
}

// newProducer checks the options and builds the wrapper over client (set
// later when nil), with its selector, routes, address book, observers
// (metrics registered) and strategy.
func newProducer(client Client, o options) (*Producer, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if _, err := mqproducer.NewPolicy(o.send, o.strategy.Mode); err != nil {
		return nil, err
	}
	obs, unregister, err := setup.New(o.observed(), o.observability(), o.clock)
	switch {
	case errors.Is(err, setup.ErrDuplicateMetrics):
		return nil, fmt.Errorf("rocketmqgo: WithMetrics: %w", err)
	case err != nil:
		return nil, fmt.Errorf("rocketmqgo: %w", err)
	}
	p := &Producer{
		client:     client,
		cfg:        o.send,
		prodOpts:   o.prodOpts,
		clock:      o.clock,
		log:        o.log,
		obs:        obs,
		unregister: unregister,
		refresh:    make(chan struct{}, 1),
		shutDone:   make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.routes = &clientRoutes{probe: p.probe, changed: p.routeChanged, log: o.log}
	p.sel = newSelector(p.routes.learn)
	p.addrs = newAddressBook(p.routes, o.log)
	stratOpts := []latency.Option{
		latency.WithClock(o.clock),
		latency.WithResolver(p.addrs),
		latency.WithServiceDetector(guardedDetector{d: o.detector, addrs: p.addrs}),
	}
	stratOpts = append(stratOpts, obs.StrategyOptions()...)
	strat, err := latency.NewStrategy(o.strategy, append(stratOpts, o.stratOpts...)...)
	if err != nil {
		unregister()
		return nil, err
	}
	obs.Watch(strat)
	p.strat = strat
	return p, nil
}

// BehindProxy reports whether several brokers were learnt at one address,
// as behind a RocketMQ 5.x proxy, where every broker of a route resolves to
// the proxy's address. It is logged once, as a warning, when first seen.
func (p *Producer) BehindProxy() bool { return p.addrs.shared.Load() }

// Strategy returns the strategy that picks the queues, for inspection (its
// fault table) and run-time switches (SetFaultTolerance, SetDetector,
// SetDurations).
func (p *Producer) Strategy() *latency.Strategy { return p.strat }

// Start starts the client's producer, the send loop and the strategy's
// detector. Starting a running producer does nothing; a producer that was
// shut down cannot start again (errors.ErrNotRunning).
func (p *Producer) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.state {
	case stateRunning:
		return nil
	case stateShut:
		return rmqerrors.ErrNotRunning
	}
	if err := p.client.Start(); err != nil {
		return err
	}
	prodOpts := append([]mqproducer.Option{mqproducer.WithClock(p.clock)}, p.obs.ProducerOptions()...)
	prodOpts = append(prodOpts, p.prodOpts...)
	sender, err := mqproducer.New(transport{p}, p.routes, p.strat, p.cfg, prodOpts...)
	if err != nil {
		_ = p.client.Shutdown()
		return err
	}
	if err := p.strat.Start(); err != nil {
		_ = sender.Close()
		_ = p.client.Shutdown()
		return err
	}
	p.sender.Store(sender)
	p.wg.Add(1)
	go p.refreshLoop(sender)
	p.state = stateRunning
	p.running.Store(true)
	return nil
}

// Shutdown stops sending: new sends fail with errors.ErrNotRunning, and it
// waits for every async send in flight to end and its callback to return
// (an attempt in flight completes; no further attempt starts). Then it stops
// the detector and shuts the client's producer down. It is idempotent.
func (p *Producer) Shutdown() error {
	p.mu.Lock()
	switch p.state {
	case stateShut:
		p.mu.Unlock()
		<-p.shutDone
		return nil
	case stateNew:
		p.state = stateShut
		p.mu.Unlock()
		p.cancel()
		err := p.client.Shutdown()
		_ = p.strat.Close()
		p.unregister()
		close(p.shutDone)
		return err
	}
	p.state = stateShut
	p.running.Store(false)
	p.mu.Unlock()
	err := p.sender.Load().Close()
	p.cancel()
	p.wg.Wait()
	err = errors.Join(err, p.strat.Close(), p.client.Shutdown())
	p.unregister()
	close(p.shutDone)
	return err
}

// routeChanged tells the refresh loop that a learnt route changed.
func (p *Producer) routeChanged() {
	select {
	case p.refresh <- struct{}{}:
	default:
	}
}

// refreshLoop makes the send loop take learnt routes that changed at once,
// instead of at its next periodic refresh.
func (p *Producer) refreshLoop(sender *mqproducer.Producer) {
	defer p.wg.Done()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.refresh:
			if err := sender.RefreshRoutes(p.ctx); err != nil && p.ctx.Err() == nil {
				p.log.Warn("rocketmqgo: route refresh failed", "error", err)
			}
		}
	}
}

// probe asks the client for topic's queues without sending anything.
func (p *Producer) probe(ctx context.Context, topic string) error {
	msg := primitive.NewMessage(topic, nil)
	msg.WithProperty(RouteProbeProperty, "true")
	_, err := p.call(ctx, msg, &slot{mode: modeProbe, topic: topic}, mqproducer.KindSync)
	return err
}

// SendSync sends msgs (one message, or a batch of one topic) and waits for
// the answer, retrying on other brokers: up to 1 + RetryTimes attempts
// within the send budget (producer.Config), each on the strategy's pick.
// It returns the client's result of the answered attempt; on error the
// result is nil and the error is a *producer.SendError (errors.As finds the
// last attempt's *producer.BrokerError, *producer.TransportError or
// *producer.ClientError, and errors.Is the client's own error behind them),
// a *producer.RouteError (no queues for the topic), or the client's
// errors.ErrNotRunning, ErrMessageEmpty, ErrTopicEmpty or ErrMultipleTopics.
func (p *Producer) SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	msg, keys, err := p.prepare(msgs)
	if err != nil {
		return nil, err
	}
	if mode, ok := directMode(msg); ok {
		res, err := p.sendDirect(ctx, msg, mode, mqproducer.KindSync)
		return batchIDs(res, err, keys)
	}
	topic := msg.Topic
	res, err := p.sender.Load().SendSync(ctx, &mqproducer.Message{Topic: topic, Body: msg.Body, Native: msg})
	msg.Topic = topic
	if err != nil {
		return nil, err
	}
	r, err := nativeResult(res)
	return batchIDs(r, err, keys)
}

// SendAsync starts sending msgs and returns; f receives the end exactly once,
// on a producer goroutine, with the client's result or an error as
// SendSync's. Retries (up to AsyncRetryTimes) avoid the broker that failed.
// ctx governs the whole send. SendAsync returns an error, and never calls f,
// when the send is not accepted: a nil f, the errors SendSync returns before
// sending, or the send loop's refusal (a *producer.LimitError when the bound
// on in-flight async sends is reached, ctx's error while it waited).
func (p *Producer) SendAsync(ctx context.Context, f func(context.Context, *primitive.SendResult, error), msgs ...*primitive.Message) error {
	if f == nil {
		return errNilCallback
	}
	msg, keys, err := p.prepare(msgs)
	if err != nil {
		return err
	}
	if mode, ok := directMode(msg); ok {
		return p.goDirect(ctx, msg, mode, func(res *primitive.SendResult, err error) {
			res, err = batchIDs(res, err, keys)
			f(ctx, res, err)
		})
	}
	topic := msg.Topic
	return p.sender.Load().SendAsync(ctx, &mqproducer.Message{Topic: topic, Body: msg.Body, Native: msg}, func(res mqproducer.Result, err error) {
		msg.Topic = topic
		var r *primitive.SendResult
		if err == nil {
			r, err = nativeResult(res)
			r, err = batchIDs(r, err, keys)
		}
		f(ctx, r, err)
	})
}

// SendOneWay sends msgs without waiting for an answer: one attempt on the
// strategy's pick, done when the request is written. The error is as
// SendSync's.
func (p *Producer) SendOneWay(ctx context.Context, msgs ...*primitive.Message) error {
	msg, _, err := p.prepare(msgs)
	if err != nil {
		return err
	}
	if mode, ok := directMode(msg); ok {
		_, err := p.sendDirect(ctx, msg, mode, mqproducer.KindOneway)
		return err
	}
	topic := msg.Topic
	err = p.sender.Load().SendOneway(ctx, &mqproducer.Message{Topic: topic, Body: msg.Body, Native: msg})
	msg.Topic = topic
	return err
}

// goDirect runs a direct send on a goroutine Shutdown waits for.
func (p *Producer) goDirect(ctx context.Context, msg *primitive.Message, mode slotMode, done func(*primitive.SendResult, error)) error {
	p.mu.RLock()
	if p.state != stateRunning {
		p.mu.RUnlock()
		return rmqerrors.ErrNotRunning
	}
	p.wg.Add(1)
	p.mu.RUnlock()
	go func() {
		defer p.wg.Done()
		res, err := p.sendDirect(ctx, msg, mode, mqproducer.KindAsync)
		defer func() {
			if r := recover(); r != nil {
				p.log.Error("rocketmqgo: async send callback panicked", "topic", msg.Topic, "panic", r)
			}
		}()
		done(res, err)
	}()
	return nil
}

// sendDirect makes the one client call of a send that bypasses the
// fault-tolerant path (sharding key or explicit queue), within the send
// budget, and maps its error as an attempt's.
func (p *Producer) sendDirect(ctx context.Context, msg *primitive.Message, mode slotMode, kind mqproducer.Kind) (*primitive.SendResult, error) {
	start := p.clock.Now()
	sctx, cancel := clock.WithTimeout(ctx, p.clock, p.cfg.Timeout)
	defer cancel()
	sl := &slot{mode: mode, topic: msg.Topic}
	res, err := p.call(sctx, msg, sl, kind)
	if err == nil && (kind == mqproducer.KindOneway || res != nil) {
		return res, nil
	}
	broker := ""
	if sl.chosen != nil {
		broker = sl.chosen.BrokerName
	}
	if err != nil {
		err = mapError(sctx, broker, p.addrs.addr(broker), err)
	} else {
		err = &mqproducer.TransportError{Broker: broker, Err: errNoAnswer}
	}
	stop := mqproducer.Classify(mqproducer.Result{}, err).FailedStop()
	var brokers []string
	if broker != "" {
		brokers = []string{broker}
	}
	return nil, &mqproducer.SendError{Topic: sl.topic, Kind: kind, Attempts: 1, Brokers: brokers,
		Elapsed: p.clock.Now().Sub(start), Stop: stop, Err: err}
}

// call makes one client call for msg with sl in its slot, and puts the topic
// the client prefixed with the namespace back.
func (p *Producer) call(ctx context.Context, msg *primitive.Message, sl *slot, kind mqproducer.Kind) (*primitive.SendResult, error) {
	release := p.sel.hold(msg, sl)
	defer func() {
		release()
		msg.Topic = sl.topic
	}()
	if kind == mqproducer.KindOneway {
		return nil, p.client.SendOneWay(ctx, msg)
	}
	return p.client.SendSync(ctx, msg)
}

// directMode says whether msg bypasses the fault-tolerant path, and how its
// queue is chosen: Queue set → that queue; a sharding key → the client's
// hash rule.
func directMode(msg *primitive.Message) (slotMode, bool) {
	switch {
	case msg.Queue != nil:
		return modeManual, true
	case msg.GetShardingKey() != "":
		return modeHash, true
	}
	return modePick, false
}

// prepare refuses sends while the producer is not running, then encodes msgs.
func (p *Producer) prepare(msgs []*primitive.Message) (*primitive.Message, []string, error) {
	if !p.running.Load() {
		return nil, nil, rmqerrors.ErrNotRunning
	}
	return encode(msgs)
}

// encode checks msgs as the client does and returns the message to send:
// the message itself, or for several a batch message encoded as the client
// encodes one, each message given a unique key first (the client gives
// batched messages none) so that every attempt resends the same keys. keys
// are those unique keys (nil for a single message).
func encode(msgs []*primitive.Message) (*primitive.Message, []string, error) {
	if len(msgs) == 0 || msgs[0] == nil {
		return nil, nil, rmqerrors.ErrMessageEmpty
	}
	topic := msgs[0].Topic
	if topic == "" {
		return nil, nil, rmqerrors.ErrTopicEmpty
	}
	for _, m := range msgs[1:] {
		switch {
		case m == nil:
			return nil, nil, rmqerrors.ErrMessageEmpty
		case m.Topic != topic:
			return nil, nil, rmqerrors.ErrMultipleTopics
		}
	}
	if len(msgs) == 1 {
		return msgs[0], nil, nil
	}
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		if m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex) == "" {
			m.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, primitive.CreateUniqID())
		}
		keys[i] = m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
	}
	batch := &primitive.Message{Topic: topic, Queue: msgs[0].Queue, Body: producer.MarshalMessageBatch(msgs...), Batch: true}
	return batch, keys, nil
}

// batchIDs sets a batch's result MsgID to its messages' unique keys joined
// by commas (the client joins the keys of the messages it was given, which
// for a batch is the batch message, with none).
func batchIDs(res *primitive.SendResult, err error, keys []string) (*primitive.SendResult, error) {
	if err == nil && res != nil && keys != nil && res.MsgID == "" {
		res.MsgID = strings.Join(keys, ",")
	}
	return res, err
}

// nativeResult returns the client's result carried by res.
func nativeResult(res mqproducer.Result) (*primitive.SendResult, error) {
	if r, ok := res.Native.(*primitive.SendResult); ok && r != nil {
		return r, nil
	}
	return nil, errNoAnswer
}
