package latency

import (
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
)

// This file holds the capacity model (Config.Capacity), the
// preset's one account of how much each broker can take.
//
// Every broker has a weight w in (0, 1]: 1 while it has room. A busy
// answer (ClassBusy: SYSTEM_BUSY whatever its remark, TOO_MANY_REQUESTS)
// or a throttled attempt (ClassThrottled: the client's own flow control
// refused it) multiplies w by Capacity.Decrease, never below capacityFloor,
// so the harder a broker pushes back the lower its weight; w climbs back
// towards 1 by 1 every Capacity.Recovery (additive increase over time, as
// AIMD's), so a broker is back at full weight at most Capacity.Recovery
// after its last push-back. Under the model a push-back is capacity, never
// failure: it isolates nothing, marks nothing unreachable, raises no
// backoff level and forgives none, and its latency is not recorded (the
// fault table's latency and the duration table never see it). An answer
// from a broker below full weight waited in its send queue: its latency is
// load too, recorded but isolating nothing (queued). A timeout on a broker
// that answered another send while the attempt waited leaves it reachable,
// and when the other brokers serving have no room it is slowness, not
// failure: isolated as an answer that late would be (slow).
//
// The weight decides the broker's share of picks. A pick of the cascade's
// first stage (a first attempt, or a retry) lands, by round robin, on
// queue p; when p's broker is below full weight, the model compares it with
// a second candidate q (partner: another queue of the route) on another
// broker, not the retry's last one, available and reachable; when w_q >
// w_p the pick moves to q with probability w_q - w_p, drawn from a hash of
// the index value (not a random source, so a pick stays a function of the
// route's index). The candidate is drawn from the pick's number among its
// broker's picks (binding.draw), along a golden-ratio sequence, so the
// picks a broker gives up spread evenly over the others, second by
// second. So a broker's share falls with its weight, and brokers of equal
// weight keep round robin's spread exactly: latency, however noisy, moves
// no share (the duration table's latency isolation handles gross
// slowness). A retry after a push-back starts from a random place of its
// own and leaves the shared index alone (PickInfo.ResetIndex), and a retry
// is placed by the same rules as a first attempt, so the brokers with room
// split the share a broker gives up, first attempts and retries alike.
//
// The state is one atomic word per broker (weight and stamp), written on
// push-back only. A pick reads it for the probed broker, and for the second
// candidate only when the probed broker is below full weight, at the
// table's last seen time (FaultTable.seen): no lock, no allocation, no
// clock read.

// Defaults of the capacity model's settings (the mqfault preset's).
const (
	DefaultCapacityDecrease = 0.75
	DefaultCapacityRecovery = 4 * time.Second
)

// capacityFloor is the least weight a push-back leaves: a broker keeps a
// share of picks (about capacityFloor of its round-robin share), so it
// is never left idle and its answers keep telling when it has room again.
const capacityFloor = 1.0 / 32

// The weight word: the weight at the stamp in the top 16 bits (in units of
// 1/weightScale), the stamp in the low 48 (table time since the table was
// made, in units of 1<<stampShift ns: about 9 years).
const (
	weightScale = 1<<16 - 1
	stampBits   = 48
	stampMask   = 1<<stampBits - 1
	stampShift  = 10
)

// capacityPolicy registers the capacity model (policy.go).
var capacityPolicy = policyKind{
	name: "capacity model", ablation: "capacity-model",
	knobs: []PolicyKnob{
		settingKnob("capacity_decrease", "0.9", "capacity model: a busy answer or a throttled attempt multiplies the broker's weight (its share of picks) by this, isolating nothing; 0 is off (v5)",
			capacitySettings, func(c *CapacityConfig) *float64 { return &c.Decrease }),
		settingKnob("capacity_recovery", "", "capacity model: how long a broker's weight takes to climb back from 0 to 1 after its last push-back; 0 means 4s",
			capacitySettings, func(c *CapacityConfig) *time.Duration { return &c.Recovery }),
	},
	on: func(c Config) bool { return c.Capacity != nil && c.Capacity.Decrease > 0 },
	validate: func(c Config, l *configerr.List) {
		if c.Capacity == nil {
			return
		}
		if d := c.Capacity.Decrease; math.IsNaN(d) || d < 0 || d >= 1 {
			l.Add(invalid("Capacity.Decrease", d, "must be in [0, 1) (0 turns the capacity model off)"))
		}
		if c.Capacity.Recovery < 0 {
			l.Add(invalid("Capacity.Recovery", c.Capacity.Recovery, "must not be negative (0 means DefaultCapacityRecovery)"))
		}
	},
	install: func(c Config, p *policies) {
		if cc := c.Capacity; cc != nil && cc.Decrease > 0 && cc.Decrease < 1 {
			rec := cc.Recovery
			if rec <= 0 {
				rec = DefaultCapacityRecovery
			}
			recU := max(int64(rec)>>stampShift, 1)
			m := &capacityModel{decrease: cc.Decrease, recU: recU, rateQ: uint64(weightScale) << 32 / uint64(recU), pol: p,
				failureLatency: specOf(c.Mode).isolationLatency}
			p.capacity = m
			p.outcomes = append(p.outcomes, m)
		}
	},
}

// pushBack reports whether class c is a push-back under the model: a busy
// answer or a throttled attempt.
func (c Class) pushBack() bool { return c == ClassBusy || c == ClassThrottled }

// capacitySettings addresses the capacity model's settings in a Config.
func capacitySettings(c *Config) **CapacityConfig { return &c.Capacity }

// capacityModel is the model's settings, and its outcome hook.
type capacityModel struct {
	decrease float64   // what one push-back multiplies the weight by
	recU     int64     // Capacity.Recovery in stamp units: from 0 to full weight
	rateQ    uint64    // weight units regained per stamp unit, times 2^32
	pol      *policies // the strategy's policies: the isolation hook a queued answer's update passes on

	failureLatency time.Duration // the mode's latency charged for a failure (slow)

	stallHeld atomic.Int64 // table time the latest stall isolation ends (stall.go)
}

var _ outcomeHook = (*capacityModel)(nil)

// brokerCapacity is one broker's capacity state. Safe for concurrent use.
type brokerCapacity struct {
	state atomic.Uint64 // the weight word; 0: never pushed back, full weight
	lat   atomic.Int64  // robust moving average of answered latency, ns; 0: none
	latAt atomic.Int64  // table time of lat's last update
	// answered is the table time of the broker's last answer (a send
	// answered, or a busy answer) under the model; 0 none. A failed probe
	// does not mark a broker unreachable that answered a send within the
	// detector's interval: the sends are the stronger evidence.
	answered atomic.Int64
	stall    stallState // stall.go
}

// below reports whether the broker may be below full weight for share:
// it pushed back once, or its latency average is past latencyFloor. Two
// atomic loads, inlined on the fast path so that a broker at full weight
// costs no call.
func (c *brokerCapacity) below() bool {
	return c.state.Load() != 0 || c.lat.Load() >= int64(latencyFloor)
}

// answeredSince reports whether the broker answered a send at or after
// table time t.
func (c *brokerCapacity) answeredSince(t int64) bool {
	a := c.answered.Load()
	return a != 0 && a >= t
}

// The latency term's constants. A sample moves the average by latencyGain
// of its distance, and at most up to latencyClamp times the average, so no
// single tail sample can make a broker look slow; the average fades with
// time constant latencyDecay between samples, so a broker that lost its
// share shows its recovery with the few samples it still gets. A broker
// whose average is below latencyFloor never loses share for latency, and
// above it only to a second candidate latencyRatio times faster.
const (
	latencyGain  = 1.0 / 8
	latencyClamp = 4
	latencyDecay = time.Second
	latencyFloor = 25 * time.Millisecond
	latencyRatio = 4
)

// observe folds answered latency d, seen at table time now, into c's
// average. Concurrent updates may lose one of them.
func (c *brokerCapacity) observe(now int64, d time.Duration) {
	old := float64(c.fadedLat(now))
	c.latAt.Store(now)
	x := float64(max(d, 0))
	if old == 0 {
		// The first sample counts at most latencyFloor: it may be a tail.
		c.lat.Store(max(int64(min(x, float64(latencyFloor))), 1))
		return
	}
	x = min(x, latencyClamp*old)
	c.lat.Store(max(int64(old+(x-old)*latencyGain), 1))
}

// fadedLat is c's latency average faded to table time now.
func (c *brokerCapacity) fadedLat(now int64) int64 {
	l := c.lat.Load()
	if l == 0 {
		return 0
	}
	if el := now - c.latAt.Load(); el > 0 {
		return max(int64(float64(l)*math.Exp(-float64(el)/float64(latencyDecay))), 1)
	}
	return l
}

// units is table time now in stamp units since table t was made.
func (t *FaultTable) units(now int64) int64 { return max(now-t.wall0, 0) >> stampShift }

// weightQ is the weight of word st at u (stamp units), in units of
// 1/weightScale: the weight at the stamp plus what it regained since, at
// most weightScale (full weight). Integer arithmetic only: the pick path
// reads it.
func (m *capacityModel) weightQ(st uint64, u int64) uint64 {
	if st == 0 {
		return weightScale
	}
	el := u - int64(st&stampMask)
	if el >= m.recU {
		return weightScale
	}
	w := st >> stampBits
	if el > 0 {
		w += uint64(el) * m.rateQ >> 32
	}
	return min(w, weightScale)
}

// weight is weightQ as a fraction in (0, 1].
func (m *capacityModel) weight(st uint64, u int64) float64 {
	return float64(m.weightQ(st, u)) / weightScale
}

// pushBack lowers c's weight for a push-back at u (stamp units), and
// reports whether it took the broker from room to none (below roomWeight).
func (m *capacityModel) pushBack(c *brokerCapacity, u int64) (lostRoom bool) {
	for {
		st := c.state.Load()
		w0 := m.weightQ(st, u)
		wq := uint64(max(float64(w0)/weightScale*m.decrease, capacityFloor) * weightScale)
		n := wq<<stampBits | uint64(u)&stampMask
		if c.state.CompareAndSwap(st, n) {
			return w0 >= roomWeight && wq < roomWeight
		}
	}
}

// report takes a push-back under the model: it lowers the broker's weight
// and makes the fault update itself, which isolates nothing. A busy answer
// is an answer: the broker is reachable. A throttled attempt met no broker:
// its reachability stays as it was. A push-back that leaves the broker
// without room bumps the table's isolation epoch: the isolation cap counts
// brokers without room (noRoomCounts). An answer from a broker below full
// weight is queued, and a timeout on a broker that answered while the
// attempt waited is slow: the model makes their updates too (queued, slow). Other classes go to the mode's rules.
func (m *capacityModel) report(a attempt, o Outcome) (FaultUpdate, bool) {
	sl := a.slot
	if o.Class == ClassAnswered && !o.Pending && o.Path != PathAsyncResend && sl != nil {
		now := a.table.seen()
		sl.cap.observe(now, o.Latency)
		sl.cap.answered.Store(now)
		if st := sl.cap.state.Load(); st != 0 && m.weightQ(st, a.table.units(now)) < weightScale {
			return m.queued(a, o), true
		}
	}
	if o.Class == ClassTransportTimeout && !o.Pending && o.Path != PathAsyncResend && sl != nil {
		if now := a.table.seen(); sl.cap.answeredSince(now - int64(max(o.Latency, 0)) + 1) {
			return m.slow(a, o, now), true
		}
	}
	if !o.Class.pushBack() {
		return FaultUpdate{}, false
	}
	u := FaultUpdate{Broker: a.broker, Latency: max(o.Latency, 0), Reachable: true}
	if sl == nil {
		return u, true // fault tolerance off: nothing is recorded
	}
	now := a.table.now()
	a.table.see(now)
	if m.pushBack(&sl.cap, a.table.units(now)) {
		a.table.t.bump()
	}
	if o.Class == ClassBusy && stallRemark(o.Remark) {
		m.stall(a, o, now)
	} else if o.Class == ClassBusy && fullAnswer(o.Remark) {
		m.relieve(a, now)
	}
	if o.Class == ClassThrottled {
		u.Reachable = sl.reachable.Load()
		return u, true
	}
	sl.cap.answered.Store(now)
	if sl.setReachable(true) {
		a.table.changed()
	}
	return u, true
}

// queued is the fault update of an answer from a broker below full weight
// (it pushed back within Capacity.Recovery): a broker that rejects sends
// answers the ones it takes late because they waited in its send queue, so
// the answer's latency is load, which the weight already accounts for, not
// a fault. It records the latency and the broker's reachability as the
// mode's rules do for an answer, and isolates nothing however late the
// answer (the duration table would isolate it for 550 ms and up, and on a
// saturated cluster every broker answers that late).
func (m *capacityModel) queued(a attempt, o Outcome) FaultUpdate {
	lat := max(o.Latency, 0)
	t := a.table.t
	t.updateSlot(a.slot, lat, 0, true, ReasonLatency, m.pol.isolation)
	return FaultUpdate{Broker: a.broker, Latency: lat, Reachable: true}
}

// slow is the fault update of a timeout on a broker that answered another
// send while the attempt waited (its last answer is after the attempt's
// start): the broker is slow, not down. A broker that stops
// answering (down, blackholed, frozen) answers nothing after an attempt's
// start, so its timeouts go to the mode's rules. The mode's rules would
// mark it unreachable (with the detector on), and reachable first would
// then keep every first attempt off it, and the cap and the model's room
// would count it out, until a probe answered; but a broker that answers is
// reachable, so slow keeps it so. The isolation depends on the room around
// it (Room):
//   - other brokers serve and none has room (the cluster is full, not
//     broken): the timeout is taken as an answer as late as the attempt
//     waited, isolated as the duration table isolates for that latency (a
//     latency isolation, which the isolation cap releases before a
//     failure's and which raises no backoff level), or, from a broker below
//     full weight, not at all (queued). A per-attempt cap (producer's
//     MaxTimeoutPerRequest) cuts a slow broker's tail into timeouts, and
//     isolated as failed, the slow broker, which still stores messages,
//     was held out while the others refused what it could have taken;
//   - otherwise the failure's isolation, as the mode's rules give it: where
//     another broker has room the sends have somewhere better to go, and
//     where none other serves the slow broker is picked anyway.
func (m *capacityModel) slow(a attempt, o Outcome, now int64) FaultUpdate {
	lat := max(o.Latency, 0)
	u := FaultUpdate{Broker: a.broker, Latency: lat, Isolation: true, Reachable: true}
	d, reason, bo := a.table.isolation(m.failureLatency), ReasonFailure, m.pol.isolation
	if r := a.table.t.room(m, a.broker, now); r.Serving > 0 && r.ServingRoom == 0 {
		u.Isolation, reason = false, ReasonLatency
		d = a.table.isolation(lat)
		if st := a.slot.cap.state.Load(); st != 0 && m.weightQ(st, a.table.units(now)) < weightScale {
			d = 0
		}
		if d == 0 {
			bo = nil // a timeout forgives no backoff level
		}
	}
	t := a.table.t
	if r, ok := t.updateSlot(a.slot, lat, d, true, reason, bo); ok && t.obs != nil {
		t.obs.OnIsolate(t.event(a.broker, reason, lat, r))
	}
	return u
}

// noRoom reports whether broker slot sl is without room (weight below
// roomWeight) at u (stamp units). The isolation cap asks it (noRoomCounts).
func (m *capacityModel) noRoom(sl *slot, u int64) bool {
	return m.weightQ(sl.cap.state.Load(), u) < roomWeight
}

// roomBackAt is the table time at which broker slot sl, without room, has
// room again by its weight's climb alone, if it pushes back no more.
func (m *capacityModel) roomBackAt(t *FaultTable, sl *slot) int64 {
	st := sl.cap.state.Load()
	el := m.recU
	if w := st >> stampBits; w < roomWeight {
		el = min(int64(((roomWeight-w)<<32+m.rateQ-1)/m.rateQ), el)
	}
	return t.wall0 + (int64(st&stampMask)+el+1)<<stampShift
}

// share is the model's pick among the cascade's first-stage candidates: p
// is the queue the round robin landed on (available, and reachable), idx
// the index value its probe stood on, last the broker a retry avoids (-1
// for none); with strict (the cap's retry pass) the second candidate must
// be one nothing isolates. It returns p, or the queue the rules move the
// pick to. The rules, in the order share applies them, each deciding a
// case the later ones would decide otherwise:
//
//  1. trialStays: a send trial stays on p.
//  2. isolatedPartnerStays: an isolated partner takes share only when the
//     cap releases it or, outside the strict pass, no broker has room.
//  3. movesByWeight: the pick moves to the partner with probability
//     w_q - w_p, the latency term (latencyScaled) scaling w_p.
//
// A retry is placed by the same rules as a first attempt, from a random
// start (PickInfo.ResetIndex), so the brokers with room split the retries
// as they split the first attempts. Between them, a
// pick at full weight and not slow stays (no rule has anything to move);
// the partner is on another broker (partnerOf), and one on last or
// unreachable is no candidate. It takes no lock, allocates nothing and
// reads no clock (the table's last seen time stands for now): it is on the
// pick path.
func (c5 cascade5) share(b *binding, v *capView, p int, last int32, idx int32, strict bool) int {
	s := c5.s
	m := s.policies.capacity
	n := len(b.entries)
	if m == nil || n < 2 || len(s.filters) != 0 {
		return p
	}
	e := &b.entries[p]
	if trialStays(e) {
		return p
	}
	sp := e.s.cap.state.Load()
	if sp == 0 && e.s.cap.lat.Load() < int64(latencyFloor) {
		return p // never pushed back and not slow: full weight
	}
	now := s.table.seen.Load()
	u := s.table.units(now)
	wp := m.weightQ(sp, u)
	lp := e.s.cap.lat.Load()
	if lp >= int64(latencyFloor) {
		lp = e.s.cap.fadedLat(now)
	}
	if wp >= weightScale && lp < int64(latencyFloor) {
		return p
	}
	q := b.partnerOf(p, e.broker, last, b.draw(idx, p, e.broker))
	e2 := &b.entries[q]
	if e2.broker == e.broker || e2.broker == last || !e2.s.reachable.Load() {
		return p
	}
	if e2.s.isolated.Load() {
		// p has no room, nor has any other broker the first stage takes.
		noRoom := wp < roomWeight && !c5.roomElsewhere(b, v, e.broker, last, strict, u)
		if isolatedPartnerStays(v, e2, strict, noRoom) {
			return p
		}
	}
	wq := m.weightQ(e2.s.cap.state.Load(), u)
	if lp >= int64(latencyFloor) {
		wp = latencyScaled(wp, lp, e2.s.cap.fadedLat(now))
	}
	if movesByWeight(wq, wp, idx) {
		return q
	}
	return p
}

// trialStays is share's first rule: a pick on an unreachable broker stays
// on p. The first stage takes an unreachable broker only as a send trial
// that reachOK claimed (trial.go): the pick is the trial, and moved
// elsewhere it would send nothing to the broker it is to test.
func trialStays(e *entry) bool { return !e.s.reachable.Load() }

// isolatedPartnerStays is share's second rule: a pick whose partner e2 is
// isolated stays on p, unless outside the cap's retry pass (strict false)
// the cap releases the partner or no broker the first stage takes has
// room (noRoom). With no room anywhere, a broker that answers (reachable)
// but is isolated for its latency or a failure is room the cluster would
// otherwise lose, as the reference's reachable stage uses it once busy
// answers have isolated every broker; the strict pass wants a broker
// nothing isolates.
func isolatedPartnerStays(v *capView, e2 *entry, strict, noRoom bool) bool {
	return e2.s.isolated.Load() && (strict || (!noRoom && !v.releases(e2.broker)))
}

// movesByWeight is share's third rule: the pick moves to the partner
// with probability wq - wp (the partner's weight and p's), what the partner
// has of room that p has not, so brokers that both push back keep round
// robin's spread and neither is left idle. The draw is the hash of the
// index value idx, so it reads no random source.
func movesByWeight(wq, wp uint64, idx int32) bool {
	// The hash's fraction h/2^32 below (wq - wp)/weightScale.
	return wq > wp && uint64(shareHash(idx))*weightScale < (wq-wp)<<32
}

// latencyScaled is the third rule's latency term: p's weight wp scaled
// down by the latency ratio when p's faded latency lp is more than
// latencyRatio times the partner's lq (and more than latencyFloor), so a
// slow broker gives share to a fast one even when neither pushes back.
func latencyScaled(wp uint64, lp, lq int64) uint64 {
	if lim := max(latencyRatio*lq, int64(latencyFloor)); lp > lim {
		return wp * uint64(lim) / uint64(lp)
	}
	return wp
}

// roomElsewhere reports whether a broker other than broker and last has
// room (weight at least roomWeight), is reachable, and is not isolated
// (or, unless strict, is one the cap releases). Only a pick on a broker
// without room asks it: no lock, no allocation, no clock read.
func (c5 cascade5) roomElsewhere(b *binding, v *capView, broker int32, last int32, strict bool, u int64) bool {
	m := c5.s.policies.capacity
	for i := range b.entries {
		e := &b.entries[i]
		if e.broker == broker || e.broker == last || !e.s.reachable.Load() {
			continue
		}
		if e.s.isolated.Load() && (strict || !v.releases(e.broker)) {
			continue
		}
		if m.weightQ(e.s.cap.state.Load(), u) >= roomWeight {
			return true
		}
	}
	return false
}

// shareHash spreads the index value over 32 bits (a multiply and a
// xorshift, independent of partner's multiplier), so consecutive index
// values draw fractions spread over [0, 1).
func shareHash(idx int32) uint32 {
	h := uint32(idx) * 0x85EBCA6B
	h ^= h >> 15
	h *= 0xC2B2AE35
	h ^= h >> 13
	return h
}

// partnerOf is the second candidate for position p, whose broker is broker,
// for draw number k (binding.draw): a position on another broker, and not
// on last (a retry's last broker; -1 for none) while there is one. It
// draws partner with k and, while the draw is on either, with
// partnerDraws-1 more hashes of k, then walks on from the last draw to the
// first position on neither (the last draw when there is none). Drawing
// again rather than walking keeps the candidate spread over the other
// brokers whatever the order of the route's queues. No lock, no
// allocation: it is on the pick path.
func (b *binding) partnerOf(p int, broker, last int32, k int32) int {
	n := len(b.entries)
	q := partner(p, n, k)
	for d := 1; d < partnerDraws; d++ {
		if br := b.entries[q].broker; br != broker && br != last {
			return q
		}
		q = partner(p, n, int32(shareHash(k+int32(d))))
	}
	for range n {
		if br := b.entries[q].broker; br != broker && br != last {
			return q
		}
		if q++; q == n {
			q = 0
		}
	}
	return q
}

// partnerDraws is how many draws partnerOf makes before it walks.
const partnerDraws = 4

// partner is a second candidate for position p of n (n > 1) for draw k:
// another position, p plus an offset whose fraction of n-1 is k times the
// golden ratio's (mod 1), so consecutive draws spread evenly over all n-1.
func partner(p, n int, k int32) int {
	q := p + 1 + int((uint64(uint32(k)*0x9E3779B9)*uint64(n-1))>>32)
	if q >= n {
		q -= n
	}
	return q
}

// Weight returns broker's capacity weight now: 1 at full capacity (or the
// model off), lower for a while after it pushed back. Concurrency-safe.
func (s *Strategy) Weight(broker string) float64 {
	m := s.policies.capacity
	sl := s.table.lookup(broker)
	if m == nil || sl == nil {
		return 1
	}
	return m.weight(sl.cap.state.Load(), s.table.units(s.table.now()))
}

// roomWeight is the least weight (in units of 1/weightScale) at which
// the model counts a broker as having room (noRoom, Room): a broker that pushed back
// once or twice lately (a burst, a busy event's share of its answers) still
// takes most of what it is sent.
const roomWeight = weightScale / 2

// FullRemark reports whether a busy answer's remark says the broker refused at
// once for want of room ("[OVERLOAD]...": its send pool was full); a send
// queue's timeout, a busy page cache's refusal (a stall) or any other is not.
func FullRemark(remark string) bool {
	return strings.HasPrefix(remark, "[OVERLOAD]")
}
