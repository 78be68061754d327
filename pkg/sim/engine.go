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

// sender is one simulated producer thread.
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
	active   int   // senders that will start another send
	progress func(virtual int64)

	m  metrics
	tl *timeline
}

// newEngine builds the run of spec over sc: its own clock, brokers, random
// sources, latency strategy and publish info.
func newEngine(sc *Scenario, spec Strategy) (*engine, error) {
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
	pcfg := spec.Producer
	pcfg.Timeout = sc.sendTimeout()
	if e.policy, err = producer.NewPolicy(pcfg, e.strat.Mode()); err != nil {
		_ = e.strat.Close()
		return nil, fmt.Errorf("strategy %s: %w", spec.Name, err)
	}
	if _, err := e.strat.DetectRound(context.Background()); !errors.Is(err, latency.ErrNoDetector) {
		e.period = int64(spec.Latency.DetectPeriod)
	}
	e.m.init(sc, len(e.brokers))
	return e, nil
}

func (e *engine) schedule(at int64, kind eventKind, s int) {
	e.seq++
	e.queue.push(event{at: at, seq: e.seq, kind: kind, sender: int32(s)})
}

// run simulates until every send has ended, then closes the strategy.
func (e *engine) run(ctx context.Context) error {
	defer e.strat.Close()
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
	if e.period > 0 {
		e.schedule(e.period, evDetect, -1)
	}
	var reported int64 // the virtual time last reported to e.progress
	for i := 0; e.active > 0 && len(e.queue) > 0; i++ {
		ev := e.queue.pop()
		if ev.at > e.now {
			e.now = ev.at
			e.clock.Set(Epoch.Add(time.Duration(ev.at)))
		}
		switch ev.kind {
		case evSend:
			s := &e.senders[ev.sender]
			s.start = e.now
			s.sends++
			s.drawn = 0
			s.drive.Reset(e.strat, e.info, e.policy, producer.KindSync, e.clock.Now())
			e.step(int(ev.sender))
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
	out, unhealthy, drew := b.attempt(e.now, plan.Timeout, e.dice.draws(s.key, s.sends, s.drawn))
	if drew {
		s.drawn++
	}
	s.out, s.broker = out, b
	e.m.attempt(e.now, b.index, plan.Attempt, out.Class != producer.ClassAnswered, unhealthy)
	e.schedule(e.now+int64(out.Elapsed), evAttemptEnd, i)
}

// endSend records sender i's send and schedules its next one.
func (e *engine) endSend(i int) {
	s := &e.senders[i]
	l := s.drive.Loop()
	e.m.send(s.start, int64(l.Elapsed()), l.Stop() == producer.StopAnswered)
	next := max(e.now, s.start+e.interval)
	if next >= e.end {
		e.active--
		return
	}
	e.schedule(next, evSend, i)
}
