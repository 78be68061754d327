package sim

import (
	"errors"
	"math"
	"time"

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

// at returns the latency of d at quantile u in (0, 1): exp(mu + sigma x
// the standard normal's u-quantile), at least a microsecond and at most ten
// times MaxLatency. It rises with u, so one u gives every distribution the
// same rank: a slow broker's draw is the healthy one's, scaled.
func (d dist) at(u float64) time.Duration {
	if d.sigma == 0 {
		return max(d.median, time.Microsecond)
	}
	ns := math.Exp(d.mu + d.sigma*math.Sqrt2*math.Erfinv(2*u-1))
	switch {
	case ns < float64(time.Microsecond) || math.IsNaN(ns):
		return time.Microsecond
	case ns > float64(10*MaxLatency):
		return 10 * MaxLatency
	}
	return time.Duration(ns)
}

// draws are the random numbers one attempt meets, each uniform in (0, 1):
// the quantile of its latency and the coin a busy broker tosses.
type draws struct {
	latency, busy float64
}

// attemptDraws returns the draws of attempt number attempt (from 0) of
// sender's send number send (from 1) in a run seeded with seed. They are a
// hash of those four numbers alone (common random numbers): every strategy
// run on one scenario and seed meets the same draws on the same attempt of
// the same send, whichever broker it picked, so two strategies that send
// one attempt to equally healthy brokers see the same latency, and their
// difference is their decisions rather than sampling noise.
func attemptDraws(seed uint64, sender int, send uint64, attempt int) draws {
	h := splitmix(seed, attemptStream)
	h = splitmix(h, uint64(sender))
	h = splitmix(h, send)
	h = splitmix(h, uint64(attempt))
	return draws{latency: unit(splitmix(h, 1)), busy: unit(splitmix(h, 2))}
}

// attemptStream sets the attempts' hashes apart from the other streams
// derived from a scenario's seed.
const attemptStream = 1 << 40

// unit maps x to the open interval (0, 1), with 53 bits.
func unit(x uint64) float64 {
	return (float64(x>>11) + 0.5) / (1 << 53)
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
// draws (attemptDraws). It belongs to the run's goroutine, except stateAt,
// which only reads what never changes and may be called by detector probes.
type brokerSim struct {
	cfg     Broker
	index   int
	addr    string
	base    dist
	windows []window // in the scenario's order: the last active one wins

	// token bucket; rate 0 means unlimited
	rate, burst, tokens float64
	last                int64

	errDown, errTimeout, errFull error
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
		burst: max(b.Capacity/20, 1),
		last:  0,
	}
	bs.tokens = bs.burst
	bs.errDown = &producer.TransportError{Broker: b.Name, Addr: bs.addr, Kind: producer.TransportNotSent, Err: errRefused}
	bs.errTimeout = &producer.TransportError{Broker: b.Name, Addr: bs.addr, Kind: producer.TransportTimeout, Err: errNoReply}
	bs.errFull = &producer.BrokerError{Broker: b.Name, Code: SystemBusy, Remark: "[simulated] over capacity"}
	for _, e := range events {
		if e.Broker != b.Name {
			continue
		}
		w := window{from: int64(e.At), to: int64(e.End()), ev: e}
		switch e.State {
		case StateSlow:
			w.slow = newDist(e.Latency)
		case StateBusy:
			code := e.Code
			if code == 0 {
				code = SystemBusy
			}
			w.ev.Code = code
			w.busyErr = &producer.BrokerError{Broker: b.Name, Code: code, Remark: "[simulated] busy"}
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

// stateAt returns the broker's effective state at t (flapping resolved to
// down or up) and the window that sets it (nil when up outside any window).
func (b *brokerSim) stateAt(t int64) (State, *window) {
	for i := len(b.windows) - 1; i >= 0; i-- {
		w := &b.windows[i]
		if t < w.from || t >= w.to {
			continue
		}
		if w.ev.State == StateFlapping {
			p := int64(w.ev.Period)
			if (t-w.from)%p < p/2 {
				return StateDown, w
			}
			return StateUp, w
		}
		return w.ev.State, w
	}
	return StateUp, nil
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
// meets: its outcome (Elapsed included), and whether the broker was not up
// then.
func (b *brokerSim) attempt(t int64, timeout time.Duration, u draws) (producer.Outcome, bool) {
	st, w := b.stateAt(t)
	var o producer.Outcome
	switch st {
	case StateDown:
		o = producer.Outcome{Class: producer.ClassTransport, Transport: producer.TransportNotSent, Err: b.errDown, Elapsed: downLatency}
	case StateBlackhole:
		o = producer.Outcome{Elapsed: timeout + 1} // runs into the timeout below
	default:
		d := b.base
		if st == StateSlow {
			d = w.slow
		}
		o.Elapsed = d.at(u.latency)
		switch {
		case st == StateBusy && u.busy < w.ev.Rate:
			o.Class, o.Code, o.Err = producer.ClassBroker, w.ev.Code, w.busyErr
		case !b.admit(t):
			o.Class, o.Code, o.Err = producer.ClassBroker, SystemBusy, b.errFull
		}
	}
	if o.Elapsed > timeout {
		o = producer.Outcome{Class: producer.ClassTransport, Transport: producer.TransportTimeout, Err: b.errTimeout, Elapsed: timeout + timeoutLag}
	}
	return o, st != StateUp
}

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
