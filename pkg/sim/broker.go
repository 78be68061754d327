package sim

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// downLatency is how long a down broker takes to refuse a connection.
const downLatency = time.Millisecond

// timeoutLag is how long after its deadline a timed-out attempt is seen to
// end. A real timer fires a little late, and the reference measures time in
// whole milliseconds, so the send loop finds the budget spent (a call
// timeout) rather than exactly used up: without the lag, a send whose attempt
// used the whole budget would start another attempt with a zero timeout,
// which fails at once and isolates a healthy broker.
const timeoutLag = time.Millisecond

// z99 is the standard normal's 99th percentile: a log-normal through a
// median m and a p99 q has mu = ln m and sigma = (ln q - ln m) / z99.
const z99 = 2.3263478740408408

// dist is a log-normal latency distribution in nanoseconds.
type dist struct {
	median    time.Duration
	mu, sigma float64
}

func newDist(l Latency) dist {
	d := dist{median: l.Median, mu: math.Log(float64(l.Median))}
	if l.P99 > l.Median {
		d.sigma = (math.Log(float64(l.P99)) - d.mu) / z99
	}
	return d
}

// at returns the latency of d at the standard normal variate z: exp(mu +
// sigma x z), at least a microsecond and at most ten times MaxLatency. It
// rises with z, so one z has the same rank in every distribution: a slow
// broker's latency for it is the healthy one's, scaled.
func (d dist) at(z float64) time.Duration {
	if d.sigma == 0 {
		return max(d.median, time.Microsecond)
	}
	ns := math.Exp(d.mu + d.sigma*z)
	switch {
	case ns < float64(time.Microsecond) || math.IsNaN(ns):
		return time.Microsecond
	case ns > float64(10*MaxLatency):
		return 10 * MaxLatency
	}
	return time.Duration(ns)
}

// draws are the random numbers one attempt meets: a standard normal
// variate that sets its latency, and a coin in [0, 1) that a busy broker
// tosses.
type draws struct {
	z, busy float64
}

// attemptRand gives every attempt of a run its draws from the attempt's
// identity alone: the seed, the sender, the sender's send number and the
// draw number within the send, hashed (splitmix64) into the seed of a PCG
// from which the draws are taken. The draw number is the attempt number,
// except that an attempt that meets a down or blackholed broker draws
// nothing (brokerSim.attempt), so the next one draws what it would have.
//
// These are common random numbers: every strategy run on one scenario and
// seed meets the same draws on the same send, whichever brokers it picked,
// so two strategies whose attempts reach equally healthy brokers see the
// same latencies (one that first met a refused connection pays that
// millisecond on top), and their difference is their decisions rather than
// sampling noise. It belongs to one run's goroutine.
type attemptRand struct {
	src *rand.PCG
	r   *rand.Rand
}

func newAttemptRand() *attemptRand {
	src := rand.NewPCG(0, 0)
	return &attemptRand{src: src, r: rand.New(src)}
}

// attemptStream sets the attempts' hashes apart from the other streams
// derived from a scenario's seed.
const attemptStream = 1 << 40

// senderKey is the part of its attempts' key that a sender keeps for a run
// seeded with seed.
func senderKey(seed uint64, sender int) uint64 {
	return splitmix(splitmix(seed, attemptStream), uint64(sender))
}

// draws returns draw number n (from 0) of send number send (from 1) of the
// sender whose key is key. It allocates nothing.
func (a *attemptRand) draws(key, send uint64, n int) draws {
	h := splitmix(splitmix(key, send), uint64(n))
	a.src.Seed(h, splitmix(h, 1))
	return draws{z: a.r.NormFloat64(), busy: a.r.Float64()}
}

// window is one event on one broker, in virtual nanoseconds from the start.
type window struct {
	from, to int64
	ev       Event
	slow     dist
	busyErr  error
}

// brokerSim is one broker during one run: its scheduled states and its
// token bucket. It has no random source of its own: an attempt brings its
// draws (attemptRand). It belongs to the run's goroutine, except stateAt,
// which only reads what never changes and may be called by detector probes.
type brokerSim struct {
	cfg     Broker
	index   int
	addr    string
	base    dist
	windows []window // in the scenario's order: the last active one wins
	joins   int64    // when the broker joins the name server's route
	gone    []window // when it is out of the route (gone events)

	// token bucket; rate 0 means unlimited
	rate, burst, tokens float64
	last                int64

	// send queue (queueWait > 0): a FIFO served at rate sends per second.
	// free is when the server is next free (virtual ns, as a float64 so
	// that 1e9/rate does not round off a little each send).
	queueWait int64
	service   float64 // ns one send occupies the server: 1e9/rate
	free      float64

	// the current stall (stall): when it ends, the sends accepted to wait
	// for its end, and when the server would have been free without them
	stallEnd int64
	stallN   int
	stallPre float64

	errDown, errTimeout, errFull, errPageCache error
}

var (
	errRefused = errors.New("connection refused (simulated broker down)")
	errNoReply = errors.New("no answer before the attempt's timeout (simulated)")
)

func newBrokerSim(b Broker, index int, events []Event) *brokerSim {
	bs := &brokerSim{
		cfg:   b,
		index: index,
		addr:  b.Name + ":10911",
		base:  newDist(b.Latency),
		rate:  b.Capacity,
		burst: max(b.Capacity/20, minBurst),
		last:  0,
	}
	bs.tokens = bs.burst
	if b.QueueWait > 0 && b.Capacity > 0 {
		bs.queueWait, bs.service = int64(b.QueueWait), 1e9/b.Capacity
	}
	bs.errDown = &producer.TransportError{Broker: b.Name, Addr: bs.addr, Class: latency.ClassTransportNotSent, Err: errRefused}
	bs.errTimeout = &producer.TransportError{Broker: b.Name, Addr: bs.addr, Class: latency.ClassTransportTimeout, Err: errNoReply}
	bs.errFull = &producer.BrokerError{Broker: b.Name, Code: SystemBusy, Remark: remarkFull}
	bs.errPageCache = &producer.BrokerError{Broker: b.Name, Code: SystemBusy, Remark: remarkPageCacheBusy}
	bs.joins = int64(b.Joins)
	for _, e := range events {
		if e.Broker != b.Name {
			continue
		}
		w := window{from: int64(e.At), to: int64(e.End()), ev: e}
		if e.State == StateGone {
			// Not a state of the broker: of the name server's route.
			bs.gone = append(bs.gone, w)
			continue
		}
		switch e.State {
		case StateSlow:
			w.slow = newDist(e.Latency)
		case StateBusy:
			code := e.Code
			if code == 0 {
				code = SystemBusy
			}
			w.ev.Code = code
			w.busyErr = &producer.BrokerError{Broker: b.Name, Code: code, Remark: remarkBusy}
		}
		bs.windows = append(bs.windows, w)
	}
	return bs
}

// splitmix derives a well-mixed 64-bit value from a seed and a stream number.
func splitmix(seed, stream uint64) uint64 {
	z := seed + stream*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// inRoute reports whether the name server's route names the broker at t:
// it has joined and no gone event holds it out.
func (b *brokerSim) inRoute(t int64) bool {
	if t < b.joins {
		return false
	}
	for i := range b.gone {
		if w := &b.gone[i]; t >= w.from && t < w.to {
			return false
		}
	}
	return true
}

// stateAt returns the broker's effective state at t (flapping resolved to
// down or up) and the window that sets it (nil when up outside any window).
func (b *brokerSim) stateAt(t int64) (State, *window) {
	for i := len(b.windows) - 1; i >= 0; i-- {
		w := &b.windows[i]
		if t < w.from || t >= w.to {
			continue
		}
		switch w.ev.State {
		case StateFlapping:
			p := int64(w.ev.Period)
			if (t-w.from)%p < p/2 {
				return StateDown, w
			}
			return StateUp, w
		case StateStall:
			if (t-w.from)%int64(w.ev.Period) < int64(w.ev.Length) {
				return StateStall, w
			}
			return StateUp, w
		}
		return w.ev.State, w
	}
	return StateUp, nil
}

// enqueue puts a send arriving at t in the broker's send queue. ok=true:
// it is served after waiting wait (ns) behind the sends ahead of it. ok=false:
// it would wait longer than queueWait; it is answered busy after waiting
// queueWait and takes no service (the broker drops it from the queue). ahead
// is how many sends were queued ahead of it when it arrived (the one in
// service included). The queue is first in, first out: a send's service
// starts when the ones ahead of it have been served.
func (b *brokerSim) enqueue(t int64) (wait int64, ahead int, ok bool) {
	start := max(b.free, float64(t))
	w := start - float64(t)
	if w > float64(b.queueWait) {
		return b.queueWait, int(math.Ceil(w / b.service)), false
	}
	b.free = start + b.service
	return int64(w), 0, true
}

// admit takes a token from the bucket at t; false means the broker is over
// its capacity.
func (b *brokerSim) admit(t int64) bool {
	if b.rate <= 0 {
		return true
	}
	if t > b.last {
		b.tokens = min(b.burst, b.tokens+float64(t-b.last)*b.rate/1e9)
		b.last = t
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// attempt is what an attempt started at t with the given timeout and draws
// meets: its outcome (Elapsed included), whether the broker was not up then,
// and whether the attempt used its draws: a broker that is down or
// blackholed answers without drawing anything.
func (b *brokerSim) attempt(t int64, timeout time.Duration, u draws) (o producer.Outcome, unhealthy, drew bool) {
	st, w := b.stateAt(t)
	switch st {
	case StateDown:
		o = producer.Outcome{Class: latency.ClassTransportNotSent, Err: b.errDown, Elapsed: downLatency}
	case StateBlackhole:
		o = producer.Outcome{Elapsed: timeout + 1} // runs into the timeout below
	default:
		d := b.base
		if st == StateSlow {
			d = w.slow
		}
		o.Elapsed, drew = d.at(u.z), true
		switch {
		case st == StateStall:
			wait, ahead, ans := b.stall(t, w)
			switch ans {
			case stallServed:
				o.Elapsed += time.Duration(wait)
			case stallRejected: // at once: the broker's latency alone
				o.Class, o.Code, o.Remark, o.Err = latency.ClassBusy, SystemBusy, remarkPageCacheBusy, b.errPageCache
			default:
				o.Elapsed = time.Duration(wait)
				if ans == stallDrained {
					o.Remark = remarkPageCacheDrain(time.Duration(wait), ahead)
					o.Err = &producer.BrokerError{Broker: b.name(), Code: SystemBusy, Remark: o.Remark}
				} else {
					o.Remark, o.Err = b.queueTimeout(time.Duration(wait), ahead)
				}
				o.Class, o.Code = latency.ClassBusy, SystemBusy
			}
		case st == StateBusy && u.busy < w.ev.Rate:
			o.Class, o.Code, o.Remark, o.Err = latency.BrokerClass(w.ev.Code), w.ev.Code, remarkBusy, w.busyErr
		case b.queueWait > 0:
			wait, ahead, ok := b.enqueue(t)
			if !ok {
				o.Elapsed = time.Duration(wait)
				o.Remark, o.Err = b.queueFull(ahead)
				o.Class, o.Code = latency.ClassBusy, SystemBusy
				break
			}
			o.Elapsed += time.Duration(wait)
		case !b.admit(t):
			o.Class, o.Code, o.Remark, o.Err = latency.ClassBusy, SystemBusy, remarkFull, b.errFull
		}
	}
	if o.Elapsed > timeout {
		o = producer.Outcome{Class: latency.ClassTransportTimeout, Err: b.errTimeout, Elapsed: timeout + timeoutLag}
	}
	return o, st != StateUp, drew
}

// queueFull is the answer to a send that waited queueWait in the queue,
// having found ahead sends queued before it: RocketMQ's BrokerFastFailure
// answer (whose size of queue is the queue's length when it answers; the
// simulator gives the length the send joined), its remark and its error.
func (b *brokerSim) queueFull(ahead int) (remark string, err error) {
	return b.queueTimeout(time.Duration(b.queueWait), ahead)
}

// queueTimeout is the answer to a send that waited wait in the queue, having
// found ahead sends queued before it.
func (b *brokerSim) queueTimeout(wait time.Duration, ahead int) (remark string, err error) {
	remark = remarkQueueTimeout(wait, ahead)
	return remark, &producer.BrokerError{Broker: b.name(), Code: SystemBusy, Remark: remark}
}

// defaultQueueWait is RocketMQ's waitTimeMillsInSendQueue default: how long
// a send waits in the send queue of a stalled broker that has no queue_wait,
// and a family's send queue when the family gives no wait.
const defaultQueueWait = 200 * time.Millisecond

// pageCacheBusyAfter is RocketMQ's osPageCacheBusyTimeOutMills default:
// once a put has held the commit log's lock this long, the broker is "page
// cache busy" (DefaultMessageStore.isOSPageCacheBusy) until the put ends.
// A stall is such a put: the store stopped with the lock held.
const pageCacheBusyAfter = time.Second

// stallAnswer is what a send arriving during a stall meets.
type stallAnswer int8

const (
	stallServed   stallAnswer = iota // served when the stall ends, after waiting wait
	stallTimedOut                    // waited the send queue out: [TIMEOUT_CLEAN_QUEUE] after wait
	stallDrained                     // still queued when the page cache turned busy: [PCBUSY_CLEAN_QUEUE] after wait
	stallRejected                    // arrived while the page cache is busy: [REJECTREQUEST] at once
)

// stall is what a send arriving at t meets during a stall of window w: the
// store serves nothing until the stall ends, then the sends queued for it
// in arrival order (at the broker's capacity when it has a send queue, all
// at once otherwise). stallServed: it is served after waiting wait (ns);
// stallTimedOut: it would wait longer than the send queue allows (the
// broker's queue_wait, or defaultQueueWait) and is answered after waiting
// that long. A stall longer than pageCacheBusyAfter makes the broker page
// cache busy from that moment to the stall's end, as RocketMQ's does: a
// send still queued then is drained at once (stallDrained, after waiting
// wait: BrokerFastFailure's [PCBUSY_CLEAN_QUEUE]), and one arriving after
// it is refused at once (stallRejected: the request processor's
// rejectRequest, [REJECTREQUEST]). ahead is how many sends were queued
// ahead of it: the ones accepted to wait for this stall's end, and those
// still to be served from before it.
func (b *brokerSim) stall(t int64, w *window) (wait int64, ahead int, ans stallAnswer) {
	p := int64(w.ev.Period)
	from := w.from + (t-w.from)/p*p
	end := min(from+int64(w.ev.Length), w.to)
	if end != b.stallEnd {
		b.stallEnd, b.stallN, b.stallPre = end, 0, b.free
	}
	busy := from + int64(pageCacheBusyAfter) // the page cache is busy from here, if the stall lasts
	if busy < end && t >= busy {
		return 0, 0, stallRejected
	}
	limit := b.queueWait
	if limit == 0 {
		limit = int64(defaultQueueWait)
	}
	start := float64(end)
	if b.service > 0 {
		start = max(b.free, start)
	}
	ahead = b.stallN
	switch {
	case b.service == 0:
	case b.stallPre > float64(end): // the queue runs on from before the stall: no gap in it
		ahead = int(math.Ceil((b.free - float64(t)) / b.service))
	case b.stallPre > float64(t):
		ahead += int(math.Ceil((b.stallPre - float64(t)) / b.service))
	}
	d := start - float64(t)
	if busy < end && float64(busy) < float64(t)+min(d, float64(limit)) {
		b.stallN++ // queued until the drain
		return busy - t, ahead, stallDrained
	}
	if d > float64(limit) {
		return limit, ahead, stallTimedOut
	}
	b.stallN++
	if b.service > 0 {
		b.free = start + b.service
	}
	return int64(start) - t, 0, stallServed
}

func (b *brokerSim) name() string { return b.cfg.Name }

// probe is what a detector probe of the broker answers at t: nil when
// reachable, else the error a real probe would meet.
func (b *brokerSim) probe(t int64) error {
	st, w := b.stateAt(t)
	if w != nil && w.ev.Probe != ProbeAuto {
		switch w.ev.Probe {
		case ProbeReachable:
			return nil
		case ProbeTimeout:
			return errProbeTimeout
		}
		return errProbeRefused
	}
	switch st {
	case StateDown:
		return errProbeRefused
	case StateBlackhole:
		return errProbeTimeout
	}
	return nil
}

// The remarks of the simulated brokers' busy answers: a busy event's, and
// RocketMQ's when it refuses a request at once (a broker over its capacity
// without a send queue).
const (
	remarkBusy = "[simulated] busy"
	// remarkFull is RocketMQ's refusal of a request at once when its send
	// pool has no room (NettyRemotingAbstract, on the executor's
	// RejectedExecutionException).
	remarkFull = "[OVERLOAD]system busy, start flow control for a while"
	// remarkPageCacheBusy is RocketMQ's refusal of a request at once while
	// its page cache is busy (NettyRemotingAbstract, when the send
	// processor's rejectRequest is true): a stalled store's.
	remarkPageCacheBusy = "[REJECTREQUEST]system busy, start flow control for a while"
)

// remarkPageCacheDrain is the remark of a send drained from the send queue
// after waiting wait, having found queued sends ahead of it, when the page
// cache turned busy, as RocketMQ's BrokerFastFailure words it.
func remarkPageCacheDrain(wait time.Duration, queued int) string {
	return remarkQueued("[PCBUSY_CLEAN_QUEUE]", wait, queued)
}

// remarkQueueTimeout is the remark of a send that waited wait in the broker's
// send queue, which held queued sends when it joined, as RocketMQ's
// BrokerFastFailure words it (the comma included).
func remarkQueueTimeout(wait time.Duration, queued int) string {
	return remarkQueued("[TIMEOUT_CLEAN_QUEUE]", wait, queued)
}

// remarkQueued is BrokerFastFailure's answer to a send it takes out of the
// send queue, after the tag saying why.
func remarkQueued(tag string, wait time.Duration, queued int) string {
	return tag + "broker busy, start flow control for a while, period in queue: " +
		strconv.FormatInt(wait.Milliseconds(), 10) + "ms, size of queue: " + strconv.Itoa(queued)
}

// minBurst is the fewest tokens the token bucket of a broker with a
// capacity and no send queue holds: it stands for RocketMQ's bounded send
// pool, whose [OVERLOAD] refusal comes when a count of requests is queued,
// not after a fixed time's worth. A bucket of a time's worth (50 ms) at a
// low capacity holds a handful of tokens, which a Poisson load's bursts
// empty at any utilization: at 95% the excess a bucket of this depth must
// absorb reaches it about once in 10^9 arrivals (a deterministic server's
// queue at 95% exceeds k sends with a probability falling about 10% a
// send), so only a load past the capacity is refused.
const minBurst = 200
