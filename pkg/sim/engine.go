package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// Epoch is the wall-clock reading of virtual time zero in every run.
var Epoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Topic is the topic every simulated send goes to.
const Topic = "sim-topic"

type eventKind uint8

const (
	evSend       eventKind = iota // a sender starts a send
	evAttemptEnd                  // a sender's attempt ends
	evDetect                      // a detector round
	evArrive                      // a send arrives (open load)
	evPoll                        // a producer polls the route
	evResume                      // a send that waited for room goes on
)

// event is one entry of the event queue. Events are ordered by time, then by
// the order in which they were scheduled, so one seed gives one run.
type event struct {
	at     int64 // virtual nanoseconds since Epoch
	seq    uint64
	kind   eventKind
	sender int32
}

// eventQueue is a binary min-heap of events.
type eventQueue []event

func (q eventQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// sender is one simulated producer thread (closed load), or the slot of one
// send in flight (open load).
type sender struct {
	drive  producer.Drive // the current send: pick, attempt, report, decide
	start  int64          // when the current send started
	sends  uint64         // sends started so far, the current one included
	drawn  int            // draws the current send's attempts have used
	key    uint64         // senderKey: its attempts' draws follow from it
	out    producer.Outcome
	broker *brokerSim
	prod   *producerSim // whose send it is
}

// producerSim is one producer of a run: its own latency strategy (fault
// table, isolation timers, detector), send-loop policy (retry budget),
// publish info (round-robin index) and timeline. A fleet has
// Scenario.Producers of them, sharing the run's brokers and clock.
type producerSim struct {
	index  int
	strat  *latency.Strategy
	picker producer.Strategy // what sends pick with: strat, or spec.Picker's
	policy *producer.Policy
	info   *route.PublishInfo
	tl     *timeline
	random route.RandomSource // its route indexes' random source
	route  []uint64           // bitset: the brokers its route names
}

// engine runs one strategy over one scenario. It is not safe for concurrent
// use: one goroutine drives it from start to end.
type engine struct {
	sc       *Scenario
	spec     Strategy
	clock    *clock.Manual
	prods    []*producerSim
	brokers  []*brokerSim
	byName   map[string]*brokerSim
	dice     *attemptRand // every attempt's draws
	senders  []sender
	queue    eventQueue
	seq      uint64
	now      int64
	interval int64 // between two sends of one sender
	end      int64 // no send starts at or after end
	period   int64 // detector rounds; 0 when the strategy has no detector
	active   int   // senders that will start another send; open: sends in flight, plus 1 while arrivals go on
	progress func(virtual int64)

	// open load
	arrivals *rand.Rand // the Poisson process: every strategy meets the same arrivals
	nextAt   float64    // the next arrival, virtual ns
	arrived  uint64     // sends arrived so far
	openKey  uint64     // the draws' key of every send (the send number tells them apart)
	free     []int32    // slots of senders not in flight
	owners   *rand.Rand // a fleet's open load: which producer each arrival is

	inFlight int  // sends started and not ended
	atEnd    bool // the run's end (e.end) has been passed: m.inFlightAtEnd is set

	m    metrics
	herd *herding // a fleet's; nil for one producer

	// route changes (Scenario.routeChanges): producers poll the route
	poll    int64                // between two polls of one producer; 0: no polls
	queues  []route.MessageQueue // every broker's queues, in the scenario's order
	scratch []route.MessageQueue // the queues of a route being built
	routed  []uint64             // bitset: the brokers the name server's route names now
}

// Streams of random numbers derived from a scenario's seed, set apart from
// each other: the first producer's route index and fault table, the open
// load's arrivals, a fleet's other producers (fleetStream + 4p: index,
// table) and a fleet's phases and arrival owners.
const (
	indexStream   = 1 << 32
	tableStream   = 1 << 33
	arrivalStream = 1 << 34
	fleetStream   = 1 << 41
	phaseStream   = 1 << 42
	ownerStream   = 1 << 43
	pollStream    = 1 << 44
)

// newEngine builds the run of spec over sc: its own clock, brokers, random
// sources, and its producers (latency strategy, policy, publish info). Its
// series hold seconds points.
func newEngine(sc *Scenario, spec Strategy, seconds int) (*engine, error) {
	e := &engine{
		sc:     sc,
		spec:   spec,
		clock:  clock.NewManual(Epoch),
		byName: make(map[string]*brokerSim, len(sc.Brokers)),
		dice:   newAttemptRand(),
		end:    int64(sc.Duration),
	}
	byAddr := make(map[string]*brokerSim, len(sc.Brokers))
	resolver := probe.StaticResolver{}
	var queues []route.MessageQueue
	for i, b := range sc.Brokers {
		bs := newBrokerSim(b, i, sc.Events)
		e.brokers = append(e.brokers, bs)
		e.byName[b.Name] = bs
		byAddr[bs.addr] = bs
		resolver[b.Name] = bs.addr
		for q := range b.Queues {
			queues = append(queues, route.MessageQueue{Topic: Topic, BrokerName: b.Name, QueueID: q})
		}
	}
	e.m.init(sc, len(e.brokers), seconds)
	e.queues = queues
	e.routed = make([]uint64, (len(e.brokers)+63)/64)
	if sc.routeChanges() {
		e.poll = int64(sc.routePoll())
		e.nameServer(0)
		queues = e.routeQueues(e.routed)
	} else {
		for b := range e.brokers {
			e.routed[b/64] |= 1 << (b % 64)
		}
	}
	n := sc.producers()
	if n > 1 {
		e.herd = newHerding(sc, seconds, n)
	}
	index := brokerIndex(sc)
	detector := &simDetector{clock: e.clock, epoch: Epoch, byAddr: byAddr}
	e.prods = make([]*producerSim, 0, n)
	for p := range n {
		ps, err := e.newProducer(p, queues, resolver, detector, index)
		if err != nil {
			e.close()
			return nil, err
		}
		e.prods = append(e.prods, ps)
	}
	return e, nil
}

// newProducer builds producer p of the run: its random sources, publish
// info, timeline, latency strategy, picker and policy. The first producer's
// random sources are those a run of one producer has.
func (e *engine) newProducer(p int, queues []route.MessageQueue, resolver probe.Resolver, detector *simDetector, index brokerNames) (*producerSim, error) {
	sc, spec := e.sc, e.spec
	idx, tbl := uint64(indexStream), uint64(tableStream)
	if p > 0 {
		idx, tbl = fleetStream+4*uint64(p), fleetStream+4*uint64(p)+2
	}
	indexRand := &lockedRand{r: rand.New(rand.NewPCG(splitmix(sc.Seed, idx), splitmix(sc.Seed, idx+1)))}
	tableRand := &lockedRand{r: rand.New(rand.NewPCG(splitmix(sc.Seed, tbl), splitmix(sc.Seed, tbl+1)))}
	ps := &producerSim{index: p, random: indexRand, route: slices.Clone(e.routed)}
	var err error
	if ps.info, err = route.NewPublishInfoFromQueues(Topic, queues, route.WithRandom(indexRand)); err != nil {
		return nil, err
	}
	// A fleet's timeline is its first producer's; every producer's feeds
	// the herding figure.
	ps.tl = newTimeline(sc, e.clock, index, p == 0)
	if e.herd != nil {
		ps.tl.herd = e.herd.producer(p)
		ps.tl.herd.setRoute(ps.route)
	}
	env := Env{
		Clock:    e.clock,
		Resolver: resolver,
		Detector: detector,
		Random:   tableRand,
		Observer: ps.tl,
	}
	if spec.New != nil {
		ps.strat, err = spec.New(spec.Latency, env)
	} else {
		ps.strat, err = latency.NewStrategy(spec.Latency, env.Options()...)
	}
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", spec.Name, err)
	}
	if ps.strat == nil {
		return nil, fmt.Errorf("strategy %s: New returned no strategy", spec.Name)
	}
	ps.tl.ft = ps.strat.Table()
	ps.picker = ps.strat
	if spec.Picker != nil {
		if ps.picker = spec.Picker(ps.strat); ps.picker == nil {
			_ = ps.strat.Close()
			return nil, fmt.Errorf("strategy %s: Picker returned no strategy", spec.Name)
		}
	}
	pcfg := spec.Producer
	pcfg.Timeout = spec.budget(sc)
	if ps.policy, err = producer.NewPolicy(pcfg, ps.strat.Mode()); err != nil {
		_ = ps.strat.Close()
		return nil, fmt.Errorf("strategy %s: %w", spec.Name, err)
	}
	if _, err := ps.strat.DetectRound(context.Background()); !errors.Is(err, latency.ErrNoDetector) {
		e.period = int64(spec.Latency.DetectPeriod)
	}
	if e.poll > 0 {
		ps.picker.RouteChanged(ps.info) // the route it starts with
	}
	return ps, nil
}

// nameServer sets e.routed to the brokers the name server's route names at
// t.
func (e *engine) nameServer(t int64) {
	clear(e.routed)
	for i, b := range e.brokers {
		if b.inRoute(t) {
			e.routed[i/64] |= 1 << (i % 64)
		}
	}
}

// routeQueues returns the queues of the brokers in set, in the scenario's
// order, in e.scratch.
func (e *engine) routeQueues(set []uint64) []route.MessageQueue {
	e.scratch = e.scratch[:0]
	for _, q := range e.queues {
		if b := e.byName[q.BrokerName].index; set[b/64]&(1<<(b%64)) != 0 {
			e.scratch = append(e.scratch, q)
		}
	}
	return e.scratch
}

// pollRoute is producer p's route poll at the engine's now: when the name
// server's route differs from p's, p takes it (a new publish info, whose
// index starts afresh, as a client's new route does) and tells its strategy
// (RouteChanged), so sends started from now on pick over it; a send in
// flight keeps the route it started with. A route naming no broker is not
// taken: the name server answers TOPIC_NOT_EXIST, and the client keeps the
// route it has.
func (e *engine) pollRoute(p *producerSim) error {
	e.nameServer(e.now)
	if slices.Equal(e.routed, p.route) || !slices.ContainsFunc(e.routed, func(w uint64) bool { return w != 0 }) {
		return nil
	}
	info, err := route.NewPublishInfoFromQueues(Topic, e.routeQueues(e.routed), route.WithRandom(p.random))
	if err != nil {
		return err
	}
	if p.tl.herd != nil {
		p.tl.routeChanged(e.now, e.routed) // closes the second counted over the old route first
	}
	copy(p.route, e.routed)
	p.info = info
	p.picker.RouteChanged(info)
	return nil
}

// close closes every producer's strategy.
func (e *engine) close() {
	for _, p := range e.prods {
		_ = p.strat.Close()
	}
}

func (e *engine) schedule(at int64, kind eventKind, s int) {
	e.seq++
	e.queue.push(event{at: at, seq: e.seq, kind: kind, sender: int32(s)})
}

// run simulates until every send has ended, then closes the strategies.
func (e *engine) run(ctx context.Context) error {
	defer e.close()
	nprod := len(e.prods)
	if e.sc.open() {
		e.startArrivals()
	} else {
		n := e.sc.Senders
		e.senders = make([]sender, n)
		for i := range e.senders {
			e.senders[i].key = senderKey(e.sc.Seed, i)
			e.senders[i].prod = e.prods[i%nprod]
		}
		e.interval = int64(float64(n) / e.sc.Rate * 1e9)
		e.interval = max(e.interval, 1)
		for i := range n {
			at := int64(float64(i) / e.sc.Rate * 1e9)
			if at < e.end {
				e.schedule(at, evSend, i)
				e.active++
			}
		}
	}
	if e.period > 0 {
		if nprod == 1 {
			e.schedule(e.period, evDetect, 0)
		} else {
			// A fleet's producers started at different moments: each
			// one's rounds have a phase of their own.
			phases := rand.New(rand.NewPCG(splitmix(e.sc.Seed, phaseStream), splitmix(e.sc.Seed, phaseStream+1)))
			for p := range nprod {
				e.schedule(1+phases.Int64N(e.period), evDetect, p)
			}
		}
	}
	if e.poll > 0 {
		// Each producer started at a moment of its own: its polls have a
		// phase of their own.
		phases := rand.New(rand.NewPCG(splitmix(e.sc.Seed, pollStream), splitmix(e.sc.Seed, pollStream+1)))
		for p := range nprod {
			if at := 1 + phases.Int64N(e.poll); at < e.end {
				e.schedule(at, evPoll, p)
			}
		}
	}
	var reported int64 // the virtual time last reported to e.progress
	for i := 0; e.active > 0 && len(e.queue) > 0; i++ {
		ev := e.queue.pop()
		if !e.atEnd && ev.at >= e.end {
			e.atEnd = true
			e.m.inFlightAtEnd = int64(e.inFlight)
		}
		if ev.at > e.now {
			e.now = ev.at
			e.clock.Set(Epoch.Add(time.Duration(ev.at)))
		}
		switch ev.kind {
		case evSend:
			s := &e.senders[ev.sender]
			s.sends++
			e.begin(int(ev.sender))
		case evArrive:
			e.arrive()
		case evResume:
			e.step(int(ev.sender))
		case evAttemptEnd:
			s := &e.senders[ev.sender]
			// Finish reports the outcome through the pick: the fault update.
			if u := s.drive.Finish(s.out).Update; u.Broker != "" {
				s.prod.tl.updated(e.now, s.broker.index)
			}
			e.step(int(ev.sender))
		case evDetect:
			if p := e.prods[ev.sender]; p.strat.DetectorEnabled() {
				if _, err := p.strat.DetectRound(ctx); err != nil {
					return err
				}
			}
			e.schedule(e.now+e.period, evDetect, int(ev.sender))
		case evPoll:
			if err := e.pollRoute(e.prods[ev.sender]); err != nil {
				return err
			}
			if at := e.now + e.poll; at < e.end {
				e.schedule(at, evPoll, int(ev.sender))
			}
		}
		// Every 256 events (not every 4096, nor every virtual second): where
		// an event is slow (thousands of queues, all isolated) that many
		// took seconds of wall time, so a cancel waited and a terminal saw
		// no progress.
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if e.progress != nil && e.now > reported {
				reported = min(e.now, e.end)
				e.progress(reported)
			}
		}
	}
	if e.herd != nil {
		for _, p := range e.prods {
			p.tl.finish(e.now)
		}
	}
	if e.progress != nil {
		e.progress(e.end)
	}
	return ctx.Err()
}

// step moves sender s's send on at the engine's now: the next attempt, or
// the send's end.
func (e *engine) step(i int) {
	s := &e.senders[i]
	now := e.clock.Now()
	if !s.drive.Next(now) {
		if until, ok := s.drive.Parked(); ok {
			// Waiting for room: the send goes on at until.
			e.schedule(max(until.Sub(Epoch).Nanoseconds(), e.now), evResume, i)
			return
		}
		e.endSend(i)
		return
	}
	plan, ok := s.drive.Start(now)
	if !ok {
		e.endSend(i)
		return
	}
	b := e.byName[plan.Queue.BrokerName]
	timeout := plan.Timeout
	if t := e.spec.AttemptTimeout; t > 0 {
		timeout = min(timeout, t)
	}
	out, unhealthy, drew := b.attempt(e.now, timeout, e.dice.draws(s.key, s.sends, s.drawn))
	if drew {
		s.drawn++
	}
	s.out, s.broker = out, b
	e.m.attempt(e.now, b.index, plan.Attempt, out.Class != latency.ClassAnswered, isBusy(out), unhealthy)
	if e.herd != nil {
		s.prod.tl.attempted(e.now, b.index)
	}
	e.schedule(e.now+int64(out.Elapsed), evAttemptEnd, i)
}

// begin starts a send on sender (or slot) i, whose key and send number are
// set, at the engine's now.
func (e *engine) begin(i int) {
	s := &e.senders[i]
	s.start = e.now
	s.drawn = 0
	p := s.prod
	s.drive.Reset(p.picker, p.info, p.policy, producer.KindSync, e.clock.Now())
	e.inFlight++
	e.step(i)
}

// startArrivals schedules the open load's first arrival. The arrivals are a
// Poisson process at the scenario's rate: exponential gaps drawn from a
// stream of their own, so every strategy meets the same arrivals, and the
// send number n of each has the same draws in every strategy.
func (e *engine) startArrivals() {
	seed := e.sc.Seed
	e.arrivals = rand.New(rand.NewPCG(splitmix(seed, arrivalStream), splitmix(seed, arrivalStream+1)))
	e.openKey = senderKey(seed, 0)
	if len(e.prods) > 1 {
		e.owners = rand.New(rand.NewPCG(splitmix(seed, ownerStream), splitmix(seed, ownerStream+1)))
	}
	e.nextAt = e.arrivals.ExpFloat64() / e.sc.Rate * 1e9
	if int64(e.nextAt) < e.end {
		e.active++ // the arrival process
		e.schedule(int64(e.nextAt), evArrive, -1)
	}
}

// arrive starts the open load's next send, or sheds it when MaxInFlight
// sends are in flight, and schedules the arrival after it.
func (e *engine) arrive() {
	e.arrived++
	owner := e.prods[0]
	if e.owners != nil {
		// Each arrival is a producer's at random: each producer's arrivals
		// are a Poisson process at rate / producers.
		owner = e.prods[e.owners.IntN(len(e.prods))]
	}
	if e.inFlight >= MaxInFlight {
		e.m.shedSend(e.now)
	} else {
		var i int
		if n := len(e.free); n > 0 {
			i = int(e.free[n-1])
			e.free = e.free[:n-1]
		} else {
			e.senders = append(e.senders, sender{key: e.openKey})
			i = len(e.senders) - 1
		}
		e.senders[i].sends = e.arrived
		e.senders[i].prod = owner
		e.active++
		e.begin(i)
	}
	e.nextAt += e.arrivals.ExpFloat64() / e.sc.Rate * 1e9
	if at := int64(e.nextAt); at < e.end {
		e.schedule(at, evArrive, -1)
	} else {
		e.active--
	}
}

// endSend records sender i's send and schedules its next one (closed load),
// or frees its slot (open load).
func (e *engine) endSend(i int) {
	s := &e.senders[i]
	l := s.drive.Loop()
	answered := l.Stop() == producer.StopAnswered
	e.m.send(s.start, int64(l.Elapsed()), answered)
	if l.Waited() {
		e.m.waited++
	}
	if !answered { // Result would build a success's broker list
		_, err := l.Result()
		e.m.sendEnded(err)
	}
	e.inFlight--
	if e.sc.open() {
		e.free = append(e.free, int32(i))
		e.active--
		return
	}
	next := max(e.now, s.start+e.interval)
	if next >= e.end {
		e.active--
		return
	}
	e.schedule(next, evSend, i)
}

// isBusy reports whether an attempt's outcome is a flow-control answer.
func isBusy(o producer.Outcome) bool { return o.Class == latency.ClassBusy }
