package latency

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/mqfault/mqfault/pkg/route"
)

// PickInfo is the input of a pick.
type PickInfo struct {
	// LastBroker is the broker of the previous attempt of this send ("" for
	// the first attempt): the cascade avoids it.
	LastBroker string
	// ResetIndex asks for the publish info's index to be reset to a random
	// value first (v5, fault tolerance on: every retry of a synchronous send).
	// Under the capacity model (Config.Capacity), a retry after a push-back
	// (LastClass busy or throttled) starts from a random value of its own
	// instead and leaves the shared index, which spreads the first attempts,
	// where it is: the model keeps a broker that pushes back in service, so
	// its retries come all the time, each right after a pick on it, and
	// resets would move every sender's round robin to just after it (the
	// brokers before it would take more than their share).
	ResetIndex bool
	// LastClass is what the previous attempt met (its Outcome's Class),
	// for a retry; a first attempt leaves it zero.
	LastClass Class
}

// Pick is the result of a pick. It is four words, copied by value.
type Pick struct {
	// Queue is the picked queue. It points into the publish info's queue
	// list (or, for v4's least-bad pick, a queue the strategy keeps), so a
	// pick copies nothing; it must not be modified.
	Queue *route.MessageQueue
	// Stage is the cascade stage that answered.
	Stage Stage
	// slot is the picking strategy's handle of the broker's slot (0: none),
	// so Done and Release find the broker's state without a lookup by name,
	// whatever the route has become since the pick (FaultTable.resolve).
	slot handle
	// Reporter takes the attempt's outcome (Done): the Strategy that picked.
	Reporter Reporter
}

// Releaser is implemented by a Reporter that holds something for each pick
// until its attempt ends (a Reporter that counts attempts in flight), so
// that a pick whose attempt never starts can give it back: Pick.Release
// calls it. A Strategy holds nothing per pick and is not one. Release must
// be safe for concurrent use and must not block.
type Releaser interface {
	Release(p Pick)
}

// Release says no attempt was made on the pick (the send ended first): it
// calls the Reporter's Release if the Reporter is a Releaser, else does
// nothing (a Strategy's pick changes no fault state). Call Release or one
// Done that is not Pending per pick, never both. Safe for concurrent use;
// allocates nothing for a Strategy's pick; a zero Pick does nothing.
func (p Pick) Release() {
	// A Strategy's pick, the common one, holds nothing: a comparison of
	// types, inlined, instead of the interface assertion.
	if _, ok := p.Reporter.(*Strategy); !ok {
		release(&p)
	}
}

// release is Release for a pick of another Reporter than a Strategy. It is
// kept out of line so that Release inlines.
//
//go:noinline
func release(p *Pick) {
	if r, ok := p.Reporter.(Releaser); ok && p.Queue != nil {
		r.Release(*p)
	}
}

// Stage names a stage of the selection cascade.
type Stage uint8

const (
	// StageNone: nothing was picked (the route has no queues).
	StageNone Stage = iota
	// StageAvailable: fault tolerance on; a queue on an available broker
	// other than the last one, admitted by the user filters.
	StageAvailable
	// StageReachable: fault tolerance on; a queue on a reachable broker
	// other than the last one, admitted by the user filters (v5).
	StageReachable
	// StageNotLast: fault tolerance off; a queue not on the last broker,
	// admitted by the user filters.
	StageNotLast
	// StageFiltered: a queue the user filters admit, whatever its broker.
	StageFiltered
	// StageLeastBad: v4 with no available broker: a queue on the least bad
	// broker.
	StageLeastBad
	// StageAny: the unfiltered round-robin pick.
	StageAny
	// StageTrial: the mqfault preset's first stage, a send trial to a broker
	// the detector calls unreachable and that nothing isolates (at most one
	// a detect interval, fewer after failed ones; trial.go).
	StageTrial
	numStages
)

var stageNames = [...]string{"none", "available", "reachable", "not_last", "filtered", "least_bad", "any", "trial"}

// String returns the stage's name: none, available, reachable, not_last,
// filtered, least_bad, any or trial.
func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// Stages lists every stage that can answer a pick, in cascade order.
func Stages() []Stage {
	return []Stage{StageAvailable, StageTrial, StageReachable, StageNotLast, StageFiltered, StageLeastBad, StageAny}
}

// Select picks a queue of info for one send attempt. ok is false only when
// info has no queues.
//
// v5 with fault tolerance on: reset the index if asked, then (1) a queue on an
// available broker other than in.LastBroker; (2) on a reachable broker other
// than in.LastBroker; (3) any queue. Each stage is a filtered pass of up to
// Len() probes, every probe moving the index by one. With fault tolerance off
// the reset is ignored: (1) a queue not on in.LastBroker; (2) any queue.
// Unknown brokers are available and reachable.
//
// v4 with fault tolerance on: one scan from one move of the index for an
// available broker (in.LastBroker is ignored, as 4.9.8 ignores it); failing
// that, a queue on the least bad broker (see FaultTable.PickLeastBad),
// or, if the route has no writable queue data for it, that broker leaves the
// table and the pick is unfiltered. Off: the publish info's "avoid the last
// broker" pick.
//
// User filters (Config.Filters) join stages (1) and (2), then a pass with
// the user filters alone comes before the unfiltered pick (and before the
// least-bad broker in v4). With no user filters this is exactly the
// reference's cascade.
//
// With the isolation cap on (Config.IsolationCap), a broker that the
// fault table isolates but the cap keeps in service counts as available in
// stage (1), except that a retry (in.LastBroker set) first makes a pass for
// a broker nothing isolates.
//
// Select is safe for concurrent use, never blocks, takes no lock and
// allocates nothing once the strategy knows info (RouteChanged, or a first
// pick on it), however many brokers are isolated.
func (s *Strategy) Select(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	return s.casc.pick(info, in)
}

// cascade is one mode's selection cascade, chosen once by NewStrategy
// (cascade5.go, cascade4.go). pick is Select (which it answers alone, so
// Select inlines): on a route without queues it picks nothing.
type cascade interface {
	pick(info *route.PublishInfo, in PickInfo) (Pick, bool)
}

// picked makes the result for queue p. b is the binding p was picked from,
// nil for the picks that bind nothing (fault tolerance off): those carry no
// handle.
func (s *Strategy) picked(info *route.PublishInfo, b *binding, p int, st Stage) (Pick, bool) {
	if b == nil {
		if s.stages != nil {
			s.stages.add(st)
		}
		return Pick{Queue: info.QueueRef(p), Stage: st, Reporter: s}, true
	}
	sl := b.entries[p].s
	return s.pickedSlot(info, sl, p, s.stageOf(sl, st)), true
}

// stageOf is the stage a pick of slot sl answered by stage st reports:
// st, but a first-stage pick of a broker the detector calls unreachable
// under reachFirst is a send trial, as only a trial passes the first stage
// unreachable.
func (s *Strategy) stageOf(sl *slot, st Stage) Stage {
	if st == StageAvailable && s.policies.reachFirst && !sl.reachable.Load() {
		return StageTrial
	}
	return st
}

// pickedSlot is picked for queue p of a binding, whose slot is sl, with
// the stage to report (stageOf). It is kept small enough to inline into
// the fast path (cascade5.pick).
func (s *Strategy) pickedSlot(info *route.PublishInfo, sl *slot, p int, st Stage) Pick {
	if s.stages != nil {
		s.stages.add(st)
	}
	return Pick{Queue: info.QueueRef(p), Stage: st, slot: sl.handle, Reporter: s}
}

// admit applies the user filters to queue p.
func (s *Strategy) admit(info *route.PublishInfo, p int) bool {
	for _, f := range s.filters {
		if !f.Filter(info.Queue(p)) {
			return false
		}
	}
	return true
}

func lastBrokerIndex(info *route.PublishInfo, last string) int32 {
	if last == "" {
		return -1
	}
	if b, ok := info.BrokerIndex(last); ok {
		return int32(b)
	}
	return -1
}

// finish runs the last stages: user filters alone (when there are any), then
// the unfiltered pick. b is the binding picked from, nil for none.
func (s *Strategy) finish(info *route.PublishInfo, b *binding, c *cursor, n int) (Pick, bool) {
	if len(s.filters) > 0 {
		for range n {
			p := c.next()
			if s.admit(info, p) {
				c.done()
				return s.picked(info, b, p, StageFiltered)
			}
		}
	}
	p := c.next()
	c.done()
	return s.picked(info, b, p, StageAny)
}

// cursor walks queue positions as consecutive calls of the index's next()
// would, touching the shared index once at the start (Add(1), the claim) and
// once at the end (Add of the remaining moves), so a pass over a long
// isolated block costs two atomic operations, and one goroutine sees exactly
// the reference's index.
type cursor struct {
	idx     *route.Index // nil for an own cursor (binding.ownCursor)
	m       uint64       // n's fastPosition constant; 0: divide
	v       int32        // stored index value of the last probe (the claim's minus one before any)
	pos     int          // position of the last probe, when posOK
	n       int
	moved   int32 // probes made
	pub     int32 // moves published so far (the claim)
	claimed bool
	posOK   bool
}

func newCursor(idx *route.Index, n int) cursor { return cursor{idx: idx, n: n} }

// cursor returns a cursor over info, b's publish info, that finds
// positions without a division (fastPosition).
func (b *binding) cursor(info *route.PublishInfo) cursor {
	return cursor{idx: info.Index(), n: len(b.entries), m: b.posM}
}

// draw returns the number of the pick at position p, on broker br, of
// index value v among the picks of its broker's queues: the route's cycles
// before v times the broker's queues, plus p's place among them. The picks
// a broker's queues take, one per queue a cycle, have consecutive numbers,
// so a draw from the number (the capacity model's second candidate)
// follows a low-discrepancy sequence for them, where one from v would step
// by the route's length. Integer arithmetic, with no division on a route
// of two or more queues (the only ones share draws for): the pick path.
func (b *binding) draw(v int32, p int, br int32) int32 {
	u := uint64(uint32(v) & route.PositiveMask)
	var cyc uint64
	if b.posM == 0 {
		cyc = u / uint64(max(len(b.entries), 1))
	} else {
		cyc, _ = bits.Mul64(b.posM, u)
	}
	return int32(cyc)*b.nq[br] + int32(p) - b.firstPos[br]
}

// ownCursor returns a cursor over info, b's publish info, that starts
// after index value v and never touches the shared index: its moves are
// its own (done publishes nothing).
func (b *binding) ownCursor(v int32) cursor {
	return cursor{n: len(b.entries), m: b.posM, v: v, claimed: true}
}

// positionConst is n's constant for fastPosition, 0 for n < 2 (route.Position
// then divides).
func positionConst(n int) uint64 {
	if n < 2 || uint64(n) > math.MaxUint32 {
		return 0
	}
	return math.MaxUint64/uint64(n) + 1
}

// fastPosition is route.Position(v, n) with m = positionConst(n), without
// a division (Lemire, Kaser and Kurz, "Faster remainder by direct
// computation", 2019: exact for every 32-bit dividend and divisor), which
// keeps a division off a first-stage pick.
func fastPosition(v int32, m uint64, n int) int {
	hi, _ := bits.Mul64(m*uint64(uint32(v)&route.PositiveMask), uint64(n))
	return int(hi)
}

// claim makes the index's first move, which the first probe stands on.
func (c *cursor) claim() { c.claimAhead(1) }

// claimAhead is claim for a pick that knows it will move the index at
// least k times: one atomic add instead of two.
func (c *cursor) claimAhead(k int32) {
	if !c.claimed {
		c.v = c.idx.Add(k) - k
		c.pub = k
		c.claimed = true
	}
}

// position returns queue position of index value v, as route.Position
// would, without a division where it can (fastPosition).
func (b *binding) position(v int32) int {
	if b.posM != 0 {
		return fastPosition(v, b.posM, len(b.entries))
	}
	return route.Position(v, len(b.entries))
}

// probed returns the cursor over info, b's publish info, that has claimed
// the index's first move, to value v, and made its probe, at position p.
func (b *binding) probed(info *route.PublishInfo, v int32, p int) cursor {
	return cursor{idx: info.Index(), n: len(b.entries), m: b.posM, v: v, pos: p, moved: 1, pub: 1, claimed: true, posOK: true}
}

// next moves to the next probe and returns its position.
func (c *cursor) next() int {
	c.claim()
	c.v++
	c.moved++
	if !c.posOK {
		if c.m != 0 {
			c.pos = fastPosition(c.v, c.m, c.n)
		} else {
			c.pos = route.Position(c.v, c.n)
		}
		c.posOK = true
	} else if c.v&route.PositiveMask == 0 {
		c.pos = 0
	} else if c.pos++; c.pos == c.n {
		c.pos = 0
	}
	return c.pos
}

// skip makes k probes that find nothing.
func (c *cursor) skip(k int) {
	if k <= 0 {
		return
	}
	c.claim()
	if c.posOK && c.moved > 0 && k <= c.n && int64(uint32(c.v)&route.PositiveMask)+int64(k) <= route.PositiveMask {
		// No wrap of the index on the way: the position moves by k.
		if c.pos += k; c.pos >= c.n {
			c.pos -= c.n
		}
	} else {
		c.posOK = false
	}
	c.v += int32(k)
	c.moved += int32(k)
}

// done publishes the moves made after the claim (none for an own cursor).
func (c *cursor) done() {
	if c.claimed && c.moved != c.pub && c.idx != nil {
		c.idx.Add(c.moved - c.pub)
	}
}

// seek makes up to k probes, as next() would, for the first position that
// is in set or in extra (nil for none) and that accept admits (nil admits
// all). Positions in neither set cost nothing: the probe sequence runs
// through consecutive positions between the index's wraps at 2^31, so seek
// finds the next candidate by scanning set words, and probes that find none
// only add up. It reports whether it found one (then at c.pos).
func (c *cursor) seek(k int, set, extra bitset, accept func(p int) bool) bool {
	if k <= 0 {
		return false
	}
	c.claim()
	n := c.n
	done := 0
	u := uint32(c.v+1) & route.PositiveMask // the next probe's value, sign bit cleared
	var p int
	switch {
	case u == 0:
	case c.posOK && c.moved > 0:
		if p = c.pos + 1; p == n {
			p = 0
		}
	default:
		p = int(u % uint32(n))
	}
	for done < k {
		// Positions run p, p+1, ... (wrapping at n) for seg probes, until
		// the index's own wrap sends the next probe to position 0.
		seg := k - done
		if r := (1 << 31) - int64(u); int64(seg) > r {
			seg = int(r)
		}
		for seg > 0 {
			d, ok := set.next(p, n, seg)
			if extra != nil {
				if d2, ok2 := extra.next(p, n, seg); ok2 && (!ok || d2 < d) {
					d, ok = d2, true
				}
			}
			if !ok {
				done += seg
				u += uint32(seg)
				p = (p + seg) % n
				break
			}
			q := p + d
			if q >= n {
				q -= n
			}
			done += d + 1
			seg -= d + 1
			u += uint32(d + 1)
			if accept == nil || accept(q) {
				c.v += int32(done)
				c.moved += int32(done)
				c.pos, c.posOK = q, true
				return true
			}
			if p = q + 1; p == n {
				p = 0
			}
		}
		if u == 1<<31 {
			u, p = 0, 0
		}
	}
	c.v += int32(k)
	c.moved += int32(k)
	c.posOK = false
	return false
}
