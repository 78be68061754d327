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
// failure: isolated as an answer that late would be (slow). What each
// outcome does is capacityoutcome.go's.
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
// The rules are share.go's.
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

// noRoom reports whether broker slot sl is without room (weight below
// roomWeight) at u (stamp units). The isolation cap asks it (noRoomCounts).
func (m *capacityModel) noRoom(sl *slot, u int64) bool {
	return m.weightQ(sl.cap.state.Load(), u) < roomWeight
}

// roomBackAt is a table time by which broker slot sl, without room, has
// room again by its weight's climb alone, if it pushes back no more: the
// start of the stamp unit after roomUnit's.
func (m *capacityModel) roomBackAt(t *FaultTable, sl *slot) int64 {
	return t.wall0 + (m.roomUnit(sl.cap.state.Load())+1)<<stampShift
}

// roomUnit is the first stamp unit at which word st's weight is
// roomWeight or more by its climb alone (weightQ, exactly): its stamp when
// it has room there already.
func (m *capacityModel) roomUnit(st uint64) int64 {
	stamp, w := int64(st&stampMask), st>>stampBits
	if st == 0 || w >= roomWeight {
		return stamp
	}
	el := int64(((roomWeight-w)<<32 + m.rateQ - 1) / m.rateQ)
	return stamp + max(min(el, m.recU), 1)
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
