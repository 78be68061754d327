package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
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
}

// engine runs one strategy over one scenario. It is not safe for concurrent
// use: one goroutine drives it from start to end.
type engine struct {
	sc       *Scenario
	spec     Strategy
	clock    *latency.ManualClock
	strat    *latency.Strategy
	picker   producer.Strategy // what sends pick with: strat, or spec.Picker's
	policy   *producer.Policy
	info     *route.PublishInfo
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

	inFlight int  // sends started and not ended
	atEnd    bool // the run's end (e.end) has been passed: m.inFlightAtEnd is set

	m  metrics
	tl *timeline
}

// newEngine builds the run of spec over sc: its own clock, brokers, random
// sources, latency strategy and publish info. Its series hold seconds
// points.
func newEngine(sc *Scenario, spec Strategy, seconds int) (*engine, error) {
	e := &engine{
		sc:     sc,
		spec:   spec,
		clock:  latency.NewManualClock(Epoch),
		byName: make(map[string]*brokerSim, len(sc.Brokers)),
		dice:   newAttemptRand(),
		end:    int64(sc.Duration),
	}
	byAddr := make(map[string]*brokerSim, len(sc.Brokers))
	resolver := latency.StaticResolver{}
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
	indexRand := &lockedRand{r: rand.New(rand.NewPCG(splitmix(sc.Seed, 1<<32), splitmix(sc.Seed, 1<<32+1)))}
	tableRand := &lockedRand{r: rand.New(rand.NewPCG(splitmix(sc.Seed, 1<<33), splitmix(sc.Seed, 1<<33+1)))}
	var err error
	if e.info, err = route.NewPublishInfoFromQueues(Topic, queues, route.WithRandom(indexRand)); err != nil {
		return nil, err
	}
	e.tl = newTimeline(sc, e.clock)
	env := Env{
		Clock:    e.clock,
		Resolver: resolver,
		Detector: &simDetector{clock: e.clock, epoch: Epoch, byAddr: byAddr},
		Random:   tableRand,
		Observer: e.tl,
	}
	if spec.New != nil {
		e.strat, err = spec.New(spec.Latency, env)
	} else {
		e.strat, err = latency.NewStrategy(spec.Latency, env.Options()...)
	}
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", spec.Name, err)
	}
	if e.strat == nil {
		return nil, fmt.Errorf("strategy %s: New returned no strategy", spec.Name)
	}
	e.tl.ft = e.strat.FaultTolerance()
	e.picker = e.strat
	if spec.Picker != nil {
		if e.picker = spec.Picker(e.strat); e.picker == nil {
			_ = e.strat.Close()
			return nil, fmt.Errorf("strategy %s: Picker returned no strategy", spec.Name)
		}
	}
	pcfg := spec.Producer
	pcfg.Timeout = spec.budget(sc)
	if e.policy, err = producer.NewPolicy(pcfg, e.strat.Mode()); err != nil {
		_ = e.strat.Close()
		return nil, fmt.Errorf("strategy %s: %w", spec.Name, err)
	}
	if _, err := e.strat.DetectRound(context.Background()); !errors.Is(err, latency.ErrNoDetector) {
		e.period = int64(spec.Latency.DetectPeriod)
	}
	e.m.init(sc, len(e.brokers), seconds)
	return e, nil
}

func (e *engine) schedule(at int64, kind eventKind, s int) {
	e.seq++
	e.queue.push(event{at: at, seq: e.seq, kind: kind, sender: int32(s)})
}

// run simulates until every send has ended, then closes the strategy.
func (e *engine) run(ctx context.Context) error {
	defer e.strat.Close()
	if e.sc.open() {
		e.startArrivals()
	} else {
		n := e.sc.Senders
		e.senders = make([]sender, n)
		for i := range e.senders {
			e.senders[i].key = senderKey(e.sc.Seed, i)
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
		e.schedule(e.period, evDetect, -1)
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
		case evAttemptEnd:
			s := &e.senders[ev.sender]
			// Finish reports the outcome through the pick: the fault update.
			if u := s.drive.Finish(s.out).Update; u.Broker != "" {
				e.tl.updated(e.now, s.broker.index)
			}
			e.step(int(ev.sender))
		case evDetect:
			if e.strat.DetectorEnabled() {
				if _, err := e.strat.DetectRound(ctx); err != nil {
					return err
				}
			}
			e.schedule(e.now+e.period, evDetect, -1)
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
	e.m.attempt(e.now, b.index, plan.Attempt, out.Class != producer.ClassAnswered, isBusy(out), unhealthy)
	e.schedule(e.now+int64(out.Elapsed), evAttemptEnd, i)
}

// begin starts a send on sender (or slot) i, whose key and send number are
// set, at the engine's now.
func (e *engine) begin(i int) {
	s := &e.senders[i]
	s.start = e.now
	s.drawn = 0
	s.drive.Reset(e.picker, e.info, e.policy, producer.KindSync, e.clock.Now())
	e.inFlight++
	e.step(i)
}

// arrivalStream sets the open load's arrivals apart from the other streams
// derived from a scenario's seed.
const arrivalStream = 1 << 34

// startArrivals schedules the open load's first arrival. The arrivals are a
// Poisson process at the scenario's rate: exponential gaps drawn from a
// stream of their own, so every strategy meets the same arrivals, and the
// send number n of each has the same draws in every strategy.
func (e *engine) startArrivals() {
	seed := e.sc.Seed
	e.arrivals = rand.New(rand.NewPCG(splitmix(seed, arrivalStream), splitmix(seed, arrivalStream+1)))
	e.openKey = senderKey(seed, 0)
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
func isBusy(o producer.Outcome) bool { return o.Class == producer.ClassBusy }
