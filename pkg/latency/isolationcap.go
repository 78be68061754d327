package latency

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
	"github.com/mqfault/mqfault/pkg/route"
)

// The isolation cap, a policy past the reference (Envoy's max ejection
// percent): a release hook, so it acts only on picks, through a per-route
// view of which isolated brokers stay in service.
//
// # The isolation cap on the pick path
//
// A pick must stay a few flag reads. Without the cap a probe reads its
// broker slot's isolated flag; with it, a probe reads that flag and, only
// when it is set, one more flag: whether the cap keeps that broker in service
// ("released"). The released flags live in a capView per route binding,
// with the queue positions of the released brokers as a bitset (so a pass
// seeks over them as over the route's flag summary, routeview.go), computed
// from the table's state:
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

// isolationCapPolicy registers the cap (policy.go).
var isolationCapPolicy = policyKind{
	name: "isolation cap", ablation: "isolation-cap",
	knobs: []PolicyKnob{
		settingKnob("max_isolated_fraction", "0.5", "isolation cap: at most this share of a route's brokers avoided at once (at least one), the least bad kept in service; under the capacity model only while a broker in service has no room; 0 is off (v5)",
			func(c *Config) **IsolationCapConfig { return &c.IsolationCap }, func(s *IsolationCapConfig) *float64 { return &s.MaxFraction }),
	},
	on: func(c Config) bool { return capFraction(c) > 0 },
	validate: func(c Config, l *configerr.List) {
		if c.IsolationCap == nil {
			return
		}
		if f := c.IsolationCap.MaxFraction; math.IsNaN(f) || f < 0 || f > 1 {
			l.Add(invalid("IsolationCap.MaxFraction", f, "must be in [0, 1] (0 turns the cap off)"))
		}
	},
	install: func(c Config, p *policies) {
		if f := capFraction(c); f > 0 {
			p.release = isolationCap{fraction: f}
		}
	},
}

// capFraction is the cap's fraction in c when the cap is on (in (0, 1)),
// else 0.
func capFraction(c Config) float64 {
	if c.IsolationCap == nil {
		return 0
	}
	if f := c.IsolationCap.MaxFraction; f > 0 && f < 1 {
		return f
	}
	return 0
}

// isolationCap is the cap's release hook.
type isolationCap struct {
	fraction float64
}

var _ releaseHook = isolationCap{}

// bind returns the cap's state for a route of the given slots, or nil when
// the cap cannot bind (too few brokers).
func (c isolationCap) bind(slots []*slot, entries []entry, durations *atomic.Pointer[durationsBox]) *capState {
	if limit := capLimit(c.fraction, len(slots)); limit < len(slots) {
		return newCapState(limit, slots, entries, durations)
	}
	return nil
}

// capState is one route binding's isolation cap: the route's broker slots, the
// two views and the scratch space of a recompute.
type capState struct {
	limit     int                           // most brokers of the route picks avoid at once
	slots     []*slot                       // per broker of the route, in the publish info's order
	positions [][]int32                     // per broker of the route, its queue positions
	durations *atomic.Pointer[durationsBox] // the strategy's, to grade latencies
	busy      atomic.Bool
	fills     uint64 // fills made, guarded by busy
	view      atomic.Pointer[capView]
	bufs      [2]capView
	ranks     []rankKey // guarded by busy
	// noRoom, with the capacity model on, reports whether a broker is
	// without room, and then the table time it has room again by its
	// weight's climb (noRoomCounts); nil without the model.
	noRoom func(*slot) (bool, int64)
}

// capView says which isolated brokers of a route the cap keeps in service,
// as of one table epoch, until table time stale at the latest (when a
// broker it counted as without room has room again).
type capView struct {
	gen      atomic.Uint64 // which fill of the cap's state made it, from 1 (roomCache)
	epoch    atomic.Uint64
	stale    atomic.Int64
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
	if v := c.view.Load(); v.epoch.Load() == t.epoch.Load() && t.seen.Load() < v.stale.Load() {
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
	c.fills++
	nv.gen.Store(c.fills)
	nv.epoch.Store(e)
	c.view.Store(nv)
	c.busy.Store(false)
	return nv
}

// fill computes which isolated brokers stay in service: when more than limit
// are isolated, all but the limit worst (worseRules). Caller must hold
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
	limit, stale := c.noRoomCounts()
	v.stale.Store(stale)
	if len(c.ranks) <= limit {
		return
	}
	slices.SortFunc(c.ranks, worseFirst)
	var nRel int64
	for _, r := range c.ranks[limit:] { // the limit worst stay avoided
		v.released[r.i].Store(true)
		for _, p := range c.positions[r.i] {
			v.rel[p>>6].Or(1 << (p & 63))
		}
		nRel += int64(len(c.positions[r.i]))
	}
	v.nRel.Store(nRel)
}

// noRoomCounts is how many isolated brokers the cap lets picks avoid. Without
// the capacity model it is the cap's limit. With the model, the cap binds
// only for want of room: while every broker nothing isolates has room, it
// is all brokers but one (the least bad of all isolated stays in service),
// since an isolated broker kept in service then only costs the picks it
// fails or slows; once some of them are without room, it is the limit less
// those brokers. The capacity model's share already moves picks off a
// broker without room, so it is avoided as much as an isolated one; with
// it counted, when push-back leaves no room among the brokers in service,
// the cap keeps the isolated brokers that may have room (a slow broker that
// answers) in service rather than send every pick where it is refused. The
// model bumps the table's epoch when a broker loses its room, so the view
// is recomputed; stale is the earliest table time a broker counted has room
// again by its weight's climb, when the view is recomputed too (MaxInt64:
// none counted).
func (c *capState) noRoomCounts() (limit int, stale int64) {
	limit, stale = c.limit, math.MaxInt64
	if c.noRoom == nil {
		return limit, stale
	}
	short := 0 // brokers in service without room
	for _, s := range c.slots {
		if s.isolated.Load() {
			continue
		}
		if none, back := c.noRoom(s); none {
			short++
			stale = min(stale, back)
		}
	}
	if short == 0 {
		return len(c.slots) - 1, stale
	}
	return max(limit-short, 0), stale
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
// least: by the first of worseRules that tells them apart.
func worseFirst(a, b rankKey) int {
	for i := range worseRules {
		if c := worseRules[i].compare(a, b); c != 0 {
			return c
		}
	}
	return 0
}

// worseRule is one rule of the cap's order: compare is negative when a is
// worse (more worth avoiding) than b, positive when b is, 0 when the rule
// cannot tell them apart.
type worseRule struct {
	name    string
	compare func(a, b rankKey) int
}

// worseRules are the cap's release rules: of a route's isolated brokers,
// fill keeps the limit worst avoided and releases the rest, worse as the
// first rule that tells two apart says, each rule weighing more than the
// next. The order was chosen with the simulator (pkg/latency/POLICIES.md):
// putting "unreachable" after "slower" kept a recovered broker, whose probe
// answered, isolated behind brokers that were still failing.
var worseRules = []worseRule{
	// A slow broker still stores messages, a failing one does not.
	{"failed before slow", func(a, b rankKey) int { return trueFirst(a.failed, b.failed) }},
	// A broker that a transport error or a failed probe found unreachable
	// fails the next send too, while one whose probe answered since (it
	// recovered, or it is only flow-controlled) may well store it.
	{"unreachable before reachable", func(a, b rankKey) int { return trueFirst(a.unreachable, b.unreachable) }},
	// The slower last send, graded by the duration table (the isolation
	// it gives that latency): a failure that took its whole attempt
	// timeout (a blackhole) costs the next send that time as well, while a
	// refused connection or a SYSTEM_BUSY answer costs a millisecond and a
	// retry.
	{"slower last send", func(a, b rankKey) int { return cmp.Compare(b.slowness, a.slowness) }},
	// The table's own judgement of the last outcome, repeat offenders'
	// backoff included.
	{"longer remaining isolation", func(a, b rankKey) int { return cmp.Compare(b.until, a.until) }},
	{"higher latency", func(a, b rankKey) int { return cmp.Compare(b.latency, a.latency) }},
	// So that the order is total.
	{"name", func(a, b rankKey) int { return strings.Compare(a.name, b.name) }},
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

// released returns the brokers of info that the isolation cap keeps in
// service right now although the fault table isolates them, in the publish
// info's broker order; nil when the cap is off or does not bind for this
// route. It brings the route's view up to date first, as a pick would. Safe
// for concurrent use; it allocates the result.
func (s *Strategy) released(info *route.PublishInfo) []string {
	if s.policies.release == nil || info.Len() == 0 {
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
