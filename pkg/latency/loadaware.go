package latency

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/configerr"
	"github.com/mqfault/mqfault/pkg/route"
)

// This file holds load-aware picks (Config.LoadAware): power of two choices
// among available queues on a per-broker score (Finagle's P2C with
// PeakEWMA, Linkerd's PenaltyPeakEwma).
//
// A v5 pick whose round-robin probe lands on an available broker (the
// cascade's first stage: a first attempt on the fast path, or a retry)
// compares that queue with a second candidate (choose, partner) and takes
// the broker with the lower score
//
//	score = PeakEWMA(latency) x exp(-elapsed/loadDecay) x (attempts in flight + 1)
//	        + what is left of the broker's push-back
//
// where elapsed runs from the PeakEWMA's last update to the latest time the
// table saw an outcome (FaultTable.see: an atomic, not a clock read), and a
// broker never answered scores as defaultRTT. A failure counts at least
// failCost; each busy answer adds busyCost of push-back, at most busyHold
// ahead, worked off as time passes. The later stages and fault tolerance off
// are the cascade's own; ordered sends never come here.
//
// The pick path reads a few atomics per candidate and increments the
// picked broker's in-flight count: no lock, no allocation, no clock read.
// The attempt's end (Pick.Done with an outcome that is not Pending)
// decrements it and folds its latency into the PeakEWMA (Done reads the
// table's clock). A pick whose attempt never starts is uncounted by
// Pick.Release; producer.Drive calls one or the other for every pick. Both
// find the slot the pick was counted on from the handle the pick carries
// (FaultTable.resolve), however the route changed since: the count of a
// broker that left the table and came back is the new slot's alone.

// Load-aware constants: the PeakEWMA's decay time, the score of a broker
// never answered, what one busy answer adds to the broker's push-back
// (RocketMQ's waitTimeMillsInSendQueue: a busy answer means a full queue)
// and the most it adds up to, and the least a failed attempt counts as.
const (
	loadDecay  = time.Second
	defaultRTT = time.Millisecond
	busyCost   = 200 * time.Millisecond
	busyHold   = time.Second
	failCost   = time.Second
)

// loadAwarePolicy registers load-aware picks (policy.go). The knob is a
// bool: nothing to check.
var loadAwarePolicy = policyKind{
	validate: func(Config, *configerr.List) {},
	install: func(c Config, p *policies) {
		if c.LoadAware {
			p.loadAware = true
		}
	},
}

// brokerLoad is one broker's load state. Safe for concurrent use: picks
// read it and count in flight, attempts' ends update it.
type brokerLoad struct {
	inflight atomic.Int64 // attempts picked and not yet ended or released
	peak     atomic.Int64 // PeakEWMA of answered latency, nanoseconds; 0 never answered
	stamp    atomic.Int64 // table time of peak's last update
	// busyUntil is when the broker's push-back is worked off (table
	// time): each busy answer adds busyCost, never reaching
	// more than busyHold past the answer (Linkerd's penalty, as a
	// deadline so that a pick reads it without a clock).
	busyUntil atomic.Int64
}

// score is the broker's load score at table time now (the table's last
// seen time, not a clock read): the PeakEWMA decayed by the time since its
// last update, times the attempts in flight plus one, plus what is left of
// the broker's push-back. The decay is read here, as Finagle's PeakEWMA
// does, so a broker that was slow and then got no traffic does not keep
// its score for ever (it would never be picked to show it recovered).
func (l *brokerLoad) score(now int64) int64 {
	rtt := l.peak.Load()
	if rtt <= 0 {
		rtt = int64(defaultRTT)
	} else if el := now - l.stamp.Load(); el > 0 {
		// Finagle's fade, exp(-elapsed/decay), only for a broker answered
		// at least once: a 600 ms answer weighs less than 1 ms after 6.4 s,
		// where a fade of 1/(1+x) would keep it far longer.
		rtt = max(int64(float64(rtt)*math.Exp(-float64(el)/float64(loadDecay))), int64(defaultRTT))
	}
	// Integer nanoseconds: a PeakEWMA of at most hours times any in-flight
	// count an int64 holds stays far below its range.
	return rtt*(l.inflight.Load()+1) + max(l.busyUntil.Load()-now, 0)
}

// uncount takes one attempt off the in-flight count, never below 0: a pick
// counted before its broker had a slot (fault tolerance off, no update yet)
// was counted nowhere, and its end must not push the new slot negative.
// It stays a compare-and-swap: a plain Add(-1) that puts back what went
// below 0 lets a concurrent pick's own end see the dip, put it back too, and
// leave the count one too high for good.
func (l *brokerLoad) uncount() {
	for {
		n := l.inflight.Load()
		if n <= 0 || l.inflight.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// end ends an attempt counted in flight at now, with outcome o.
func (l *brokerLoad) end(now int64, o Outcome) {
	l.uncount()
	switch o.Class {
	case ClassClient, ClassCancelled, ClassTransportNotSent, ClassThrottled:
		return // no request met the broker: its latency says nothing
	case ClassBusy:
		// A fast refusal must not look fast (Linkerd's PenaltyPeakEwma):
		// a busy answer is push-back, worked off at the clock's pace.
		for {
			u := l.busyUntil.Load()
			n := min(max(u, now)+int64(busyCost), now+int64(busyHold))
			if n <= u || l.busyUntil.CompareAndSwap(u, n) {
				return
			}
		}
	case ClassAnswered:
		l.observe(now, max(o.Latency, 0))
		return
	}
	// A failure: a refused connection is fast, and must look worse than
	// any answer (a send to it is lost and retried).
	l.observe(now, max(o.Latency, failCost))
}

// observe folds latency lat, seen at now, into the PeakEWMA: a higher
// latency is taken at once (the peak), a lower one decays towards it with
// time constant loadDecay. Concurrent updates may lose one of them.
func (l *brokerLoad) observe(now int64, lat time.Duration) {
	prev := l.stamp.Swap(now)
	old := l.peak.Load()
	if int64(lat) >= old || old == 0 {
		l.peak.Store(int64(lat))
		return
	}
	w := 0.0
	if el := now - prev; el > 0 {
		w = math.Exp(-float64(el) / float64(loadDecay))
	} else {
		w = 1
	}
	l.peak.Store(int64(float64(old)*w + float64(lat)*(1-w)))
}

// twoChoices is the v5 fast path's first stage under load-aware picks: p is
// the round-robin probe, on an available broker, and idx the index value it
// stands on.
func (c5 cascade5) twoChoices(info *route.PublishInfo, b *binding, v *capView, p int, idx int32) (Pick, bool) {
	p = c5.choose(b, v, p, -1, idx, false)
	sl := b.entries[p].s
	sl.load.inflight.Add(1)
	return c5.s.made(info, sl, p, StageAvailable)
}

// choose is the power of two choices among available queues: p is the
// cascade's available pick (first attempt or retry; last is the broker a
// retry avoids, -1 for none), idx the index value its probe stood on. The
// second candidate is another queue of the route chosen by idx (a
// multiplicative hash, reduced to the route without a division), so it
// varies from pick to pick while staying deterministic under the route's
// index: with a fixed partner (the queue half the route further on, as
// first built) a broker is only ever weighed against one other. The
// candidate must be on another broker than p's and last, and available
// (with strict, the cap's retry pass: not isolated at all). The lower
// score wins; a tie keeps p.
func (c5 cascade5) choose(b *binding, v *capView, p int, last int32, idx int32, strict bool) int {
	n := len(b.entries)
	if n < 2 || !c5.s.policies.loadAware || len(c5.s.filters) != 0 {
		return p
	}
	q := partner(p, n, idx)
	e, e2 := &b.entries[p], &b.entries[q]
	if e2.broker == e.broker || e2.broker == last {
		return p
	}
	if iso := e2.s.isolated.Load(); iso && (strict || !v.releases(e2.broker)) {
		return p
	}
	now := c5.s.table.seen.Load()
	if e2.s.load.score(now) < e.s.load.score(now) {
		return q
	}
	return p
}

// partner is the second candidate for position p of n (n > 1) at index
// value idx: another position, spread over all n-1 of them as idx moves.
func partner(p, n int, idx int32) int {
	q := p + 1 + int((uint64(uint32(idx)*0x9E3779B9)*uint64(n-1))>>32)
	if q >= n {
		q -= n
	}
	return q
}

// Release implements Releaser: it uncounts a pick that was never attempted
// from its broker's attempts in flight under load-aware picks (the slot the
// pick was counted on, found from its handle), and does nothing otherwise.
// Safe for concurrent use; allocates nothing.
func (s *Strategy) Release(p Pick) {
	if !s.policies.loadAware || p.Queue == nil {
		return
	}
	if held, _ := s.table.resolve(p.slot, p.Queue.BrokerName); held != nil {
		held.load.uncount()
	}
}

// InFlight returns the attempts picked on broker and not yet ended (Done
// with an outcome that is not Pending) or released, under load-aware picks;
// 0 otherwise. Safe for concurrent use.
func (s *Strategy) InFlight(broker string) int64 {
	if sl := s.table.lookup(broker); sl != nil {
		return sl.load.inflight.Load()
	}
	return 0
}

// LoadLatency returns broker's PeakEWMA of answered latency under
// load-aware picks (0 when never answered). Safe for concurrent use.
func (s *Strategy) LoadLatency(broker string) time.Duration {
	if sl := s.table.lookup(broker); sl != nil {
		return time.Duration(sl.load.peak.Load())
	}
	return 0
}
