package latency

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/route"
)

// This file holds the policies past the reference (DESIGN.md section 4):
// the isolation cap, the backoff for repeat offenders and the probe-failure
// rule. Each is off at its Config zero value, so Reference5 and Reference4
// decide exactly as RocketMQ does; DefaultConfig turns them on. They extend
// mode v5 with the built-in FaultTable: a v4 strategy, or one over another
// FaultTolerance, ignores them.
//
// # The isolation cap on the pick path
//
// A pick must stay a few flag reads. Without the cap a probe reads its
// broker slot's isolated flag; with it, a probe reads that flag and, only
// when it is set, one more flag: whether the cap keeps that broker in service
// ("released"). The released flags live in a capView per route memo
// (binding), computed from the table's state:
//
//   - The table keeps an isolation epoch, bumped whenever a broker's
//     isolation starts, is extended or ends, and when an isolated broker's
//     reachability changes (Update, the expiry timer, the detector, Remove).
//   - A binding holds two capViews and an atomic pointer to the current one,
//     which records the epoch it was computed at. A pick loads the pointer
//     and compares epochs (two atomic loads); when the table has moved on,
//     the goroutine that wins a CAS on the binding's busy flag recomputes
//     into the other view and publishes it, while the others pick with the
//     previous view. A single goroutine (the simulator, a test) therefore
//     always sees the current view. Recomputing reuses the binding's scratch
//     space: nothing is allocated after the binding is built.
//   - A reader that stalls across two recomputes may read a mix of two
//     consecutive views; the cap is a protective policy, and such a pick is
//     one that a pick a moment earlier or later would also have made.
//
// A broker newly isolated is avoided at once (its own flag), before any
// recompute; only keeping a broker in service needs the view. A retry makes
// one pass over the route's own flags first (cascade5), so it reaches a
// released broker only when no broker other than the last is healthy.

// backoff is the repeat-offender policy: a failure isolation grows by
// multiplier for every failure isolation of the same broker that successes
// have not yet forgiven, up to max, and decay answered sends that isolate
// nothing forgive one.
//
// Per slot the count is kept in units of decay (strikes): a new failure
// isolation raises the level (ceil(strikes/decay)) by one and sets strikes
// to level*decay; each forgiving answer takes one unit off.
type backoff struct {
	multiplier float64
	max        time.Duration
	decay      int64
}

// policies holds the policies a strategy runs; zero when all are off.
type policies struct {
	capFraction float64  // Config.MaxIsolatedFraction; 0 when off
	backoff     *backoff // nil unless Config.IsolationBackoff is on
}

func newPolicies(cfg Config) policies {
	return policies{capFraction: cfg.MaxIsolatedFraction, backoff: newBackoff(cfg)}
}

func newBackoff(cfg Config) *backoff {
	if cfg.IsolationBackoff == 0 {
		return nil
	}
	return &backoff{multiplier: cfg.IsolationBackoff, max: cfg.MaxIsolation, decay: int64(cfg.BackoffDecay)}
}

// level is the number of unforgiven failure isolations strikes stands for.
func (b *backoff) level(strikes int64) int64 { return (strikes + b.decay - 1) / b.decay }

// grow is base lengthened for level (base for levels 0 and 1, base x
// multiplier for level 2, ...), bounded by max but never below base; capped
// reports that a higher level would give no more.
func (b *backoff) grow(base time.Duration, level int64) (d time.Duration, capped bool) {
	limit := max(b.max, base)
	f := float64(base)
	for i := int64(1); i < level; i++ {
		f *= b.multiplier
		if f >= float64(limit) {
			return limit, true
		}
	}
	d = time.Duration(f)
	return d, d >= limit || b.multiplier == 1
}

// failureIsolation returns how long a failure at now isolates s (base is
// the duration table's), raising its level when this failure starts a
// failure isolation (s was not already isolated by one). Caller must hold
// s.mu.
func (b *backoff) failureIsolation(s *slot, base time.Duration, now int64) time.Duration {
	strikes := s.strikes.Load()
	level := b.level(strikes)
	if !(s.ended && now < s.until.Load() && s.failed.Load()) {
		if _, capped := b.grow(base, level); !capped || level == 0 {
			level++
		}
		s.strikes.Store(level * b.decay)
	}
	d, _ := b.grow(base, level)
	return d
}

// forgive takes one unit off s's strikes (an answered send that isolates
// nothing); it allocates nothing and takes no lock.
func (s *slot) forgive() {
	for {
		n := s.strikes.Load()
		if n <= 0 || s.strikes.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// BackoffLevel returns how many failure isolations of broker the backoff
// still counts (0 when none, or when the broker has no item): its next
// failure isolation is the duration table's times IsolationBackoff to that
// power, up to MaxIsolation. It is 0 unless Config.IsolationBackoff is on.
// Safe for concurrent use.
func (s *Strategy) BackoffLevel(broker string) int {
	if s.policies.backoff == nil {
		return 0
	}
	sl := s.table.lookup(broker)
	if sl == nil || !sl.present.Load() {
		return 0
	}
	return int(s.policies.backoff.level(sl.strikes.Load()))
}

// capLimit is how many of a route's n brokers the cap lets picks avoid. As
// Envoy counts its max ejection percent, one more broker may be avoided while
// fewer than frac of them are: ceil(frac x n), so at least one. It is n or
// more when the cap cannot bind.
func capLimit(frac float64, n int) int {
	if frac <= 0 || frac >= 1 {
		return n
	}
	return max(1, int(math.Ceil(frac*float64(n)-1e-9)))
}

// capState is one route memo's isolation cap: the route's broker slots, the
// two views and the scratch space of a recompute.
type capState struct {
	limit     int                           // most brokers of the route picks avoid at once
	slots     []*slot                       // per broker of the route, in the publish info's order
	positions [][]int32                     // per broker of the route, its queue positions
	durations *atomic.Pointer[durationsBox] // the strategy's, to grade latencies
	busy      atomic.Bool
	view      atomic.Pointer[capView]
	bufs      [2]capView
	ranks     []rankKey // guarded by busy
}

// capView says which isolated brokers of a route the cap keeps in service,
// as of one table epoch.
type capView struct {
	epoch    atomic.Uint64
	released []atomic.Bool // per broker of the route
	rel      bitset        // the queue positions of released brokers
	nRel     atomic.Int64  // how many
}

// releases reports whether v keeps broker bi in service although its slot
// is isolated. A nil view (no cap) releases nothing.
func (v *capView) releases(bi int32) bool { return v != nil && v.released[bi].Load() }

func newCapState(limit int, slots []*slot, entries []entry, durations *atomic.Pointer[durationsBox]) *capState {
	c := &capState{limit: limit, slots: slots, durations: durations, ranks: make([]rankKey, 0, len(slots))}
	c.positions = make([][]int32, len(slots))
	for p, e := range entries {
		c.positions[e.broker] = append(c.positions[e.broker], int32(p))
	}
	for i := range c.bufs {
		c.bufs[i].released = make([]atomic.Bool, len(slots))
		c.bufs[i].rel = newBitset(len(entries))
	}
	c.bufs[0].epoch.Store(math.MaxUint64) // never an epoch: the first pick computes
	c.view.Store(&c.bufs[0])
	return c
}

// current returns the view to pick with, recomputing it first when the
// table's epoch has moved and no other goroutine is already doing so.
func (c *capState) current(t *FaultTable) *capView {
	if v := c.view.Load(); v.epoch.Load() == t.epoch.Load() {
		return v
	}
	return c.recompute(t)
}

// recompute brings the view up to date unless another goroutine is already
// doing so, and returns the view to pick with.
func (c *capState) recompute(t *FaultTable) *capView {
	v := c.view.Load()
	if !c.busy.CompareAndSwap(false, true) {
		return v
	}
	e := t.epoch.Load() // before reading any slot: a later change bumps it again
	nv := &c.bufs[0]
	if nv == v {
		nv = &c.bufs[1]
	}
	c.fill(nv)
	nv.epoch.Store(e)
	c.view.Store(nv)
	c.busy.Store(false)
	return nv
}

// fill computes which isolated brokers stay in service: when more than limit
// are isolated, all but the limit worst (see worseFirst). Caller must hold
// busy.
func (c *capState) fill(v *capView) {
	c.ranks = c.ranks[:0]
	durations := c.durations.Load().t
	for i, s := range c.slots {
		if s.isolated.Load() {
			lat := s.latency.Load()
			c.ranks = append(c.ranks, rankKey{
				failed:      s.failed.Load(),
				slowness:    durations.Isolation(time.Duration(lat)),
				unreachable: !s.reachable.Load(),
				until:       s.until.Load(),
				latency:     lat,
				name:        s.name,
				i:           int32(i),
			})
		}
	}
	for i := range v.released {
		v.released[i].Store(false)
	}
	for i := range v.rel {
		v.rel[i].Store(0)
	}
	v.nRel.Store(0)
	if len(c.ranks) <= c.limit {
		return
	}
	slices.SortFunc(c.ranks, worseFirst)
	var nRel int64
	for _, r := range c.ranks[c.limit:] {
		v.released[r.i].Store(true)
		for _, p := range c.positions[r.i] {
			v.rel[p>>6].Or(1 << (p & 63))
		}
		nRel += int64(len(c.positions[r.i]))
	}
	v.nRel.Store(nRel)
}

// rankKey is what the cap ranks an isolated broker by.
type rankKey struct {
	failed      bool          // isolated by a failed send, not only a slow answer
	slowness    time.Duration // the duration table's isolation for the last latency
	unreachable bool
	until       int64 // isolation end: a later end is a longer remaining isolation
	latency     int64
	name        string
	i           int32
}

// worseFirst orders isolated brokers from the one most worth avoiding to the
// least, each key weighing more than the next:
//
//  1. isolated by a failure before isolated for latency only: a slow broker
//     still stores messages, a failing one does not;
//  2. unreachable before reachable: a broker that a transport error or a
//     failed probe found unreachable fails the next send too, while one
//     whose probe answered since (it recovered, or it is only
//     flow-controlled) may well store it;
//  3. the slower last send, graded by the duration table (the isolation it
//     gives that latency): a failure that took its whole attempt timeout
//     (a blackhole) costs the next send that time as well, while a refused
//     connection or a SYSTEM_BUSY answer costs a millisecond and a retry;
//  4. the longer remaining isolation: the table's own judgement of the last
//     outcome, repeat offenders' backoff included;
//  5. the higher latency; then the name, so the order is total.
//
// The order was chosen with the simulator (pkg/latency/POLICIES.md):
// putting the second key after the third kept a recovered broker, whose
// probe answered, isolated behind brokers that were still failing.
func worseFirst(a, b rankKey) int {
	if c := trueFirst(a.failed, b.failed); c != 0 {
		return c
	}
	if c := trueFirst(a.unreachable, b.unreachable); c != 0 {
		return c
	}
	if c := cmp.Compare(b.slowness, a.slowness); c != 0 {
		return c
	}
	if c := cmp.Compare(b.until, a.until); c != 0 {
		return c
	}
	if c := cmp.Compare(b.latency, a.latency); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// trueFirst orders true before false.
func trueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// Released returns the brokers of info that the isolation cap keeps in
// service right now although the fault table isolates them, in the publish
// info's broker order; nil when the cap is off or does not bind for this
// route. It brings the route's view up to date first, as a pick would. Safe
// for concurrent use; it allocates the result.
func (s *Strategy) Released(info *route.PublishInfo) []string {
	if s.policies.capFraction == 0 || info.Len() == 0 {
		return nil
	}
	b := s.bind(info)
	if b.cap == nil {
		return nil
	}
	v := b.cap.current(s.table)
	var out []string
	for i, name := range b.brokers {
		if b.cap.slots[i].isolated.Load() && v.releases(int32(i)) {
			out = append(out, name)
		}
	}
	return out
}
