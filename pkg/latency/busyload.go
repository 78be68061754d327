package latency

import (
	"math"
	"sync"
	"time"

	"github.com/mqfault/mqfault/internal/configerr"
)

// This file holds the busy-is-load policy (Config.BusyDecay): a broker's
// flow-control answer (ClassBusy: SYSTEM_BUSY, TOO_MANY_REQUESTS) is load,
// not failure. The reference isolates a busy broker for the failure
// duration (10 s in v5) and marks it unreachable, so when capacity is short
// the load concentrates on fewer brokers, which then push back too. Under
// this policy a busy answer instead adds one unit to the broker's load
// penalty, which fades exponentially with time constant BusyDecay (Linkerd's
// PenaltyPeakEwma: a 429 is load that fades, not an ejection). The answer
// marks nothing unreachable, raises no backoff level and forgives none.
//
// The isolation rule: a broker whose penalty reaches BusyIsolateAfter (it
// answered busy about that many times within one decay time, faster than
// the penalty fades) is saturated; it gets a load isolation of BusyDecay
// (ReasonBusy: reachable, not a failure, so the isolation cap ranks it with
// the slow brokers, ahead of the failed ones), long enough for its send
// queue to drain and short against the failure isolation. A broker that
// answers busy now and then is never isolated for it.

// ReasonBusy: a broker answered busy fast enough for its load penalty to
// reach Config.BusyIsolateAfter (the busy-is-load policy).
const ReasonBusy Reason = "busy"

// busyLoadPolicy registers the busy-is-load policy (policy.go).
var busyLoadPolicy = policyKind{
	validate: func(c Config, l *configerr.List) {
		if c.BusyDecay < 0 {
			l.Add(invalid("BusyDecay", c.BusyDecay, "must not be negative (0 turns the busy-is-load policy off)"))
		}
		if c.BusyIsolateAfter < 0 {
			l.Add(invalid("BusyIsolateAfter", c.BusyIsolateAfter, "must not be negative (0 never isolates for busy answers)"))
		}
	},
	install: func(c Config, p *policies) {
		if c.BusyDecay > 0 {
			p.outcomes = append(p.outcomes, &busyLoad{decay: c.BusyDecay, isolateAt: float64(c.BusyIsolateAfter)})
		}
	},
}

// busyLoad is the busy-is-load policy's outcome hook.
type busyLoad struct {
	decay     time.Duration
	isolateAt float64
}

var _ outcomeHook = (*busyLoad)(nil)

// penalty is one broker's load penalty: a value that fades exponentially
// from its stamp. Written on busy answers only (never on the pick path);
// the lock is held for a few float operations.
type penalty struct {
	mu    sync.Mutex
	value float64
	stamp int64 // table time of value
}

// add fades the penalty to now with time constant decay, adds one and
// returns the result.
func (p *penalty) add(now int64, decay time.Duration) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.value = fade(p.value, now-p.stamp, decay) + 1
	p.stamp = now
	return p.value
}

// at returns the penalty faded to now.
func (p *penalty) at(now int64, decay time.Duration) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fade(p.value, now-p.stamp, decay)
}

// fade is v after elapsed nanoseconds of exponential decay with time
// constant decay (a clock that stepped back fades nothing).
func fade(v float64, elapsed int64, decay time.Duration) float64 {
	if v == 0 || elapsed <= 0 {
		return v
	}
	return v * math.Exp(-float64(elapsed)/float64(decay))
}

// report takes a busy answer under the policy: it adds to the broker's
// penalty and, when the penalty reaches the threshold, isolates the broker
// for the decay time as load. The broker stays reachable; a busy answer
// neither raises nor forgives a backoff level. Other classes go to the
// mode's rules.
func (b *busyLoad) report(s *Strategy, sl *slot, broker string, o Outcome) (FaultUpdate, bool) {
	if o.Class != ClassBusy {
		return FaultUpdate{}, false
	}
	u := FaultUpdate{Broker: broker, Latency: max(o.Latency, 0), Reachable: true}
	if sl == nil {
		return u, true
	}
	level := sl.busy.add(s.table.now(), b.decay)
	d := s.durations.Load().t.Isolation(u.Latency) // a busy answer that waited long is slow too
	if b.isolateAt > 0 && level >= b.isolateAt {
		d, u.Isolation = max(d, b.decay), true
	}
	if r, ok := s.table.updateSlot(sl, u.Latency, d, true, ReasonBusy, nil); ok && s.obs != nil {
		s.obs.OnIsolate(s.table.event(broker, ReasonBusy, u.Latency, r))
	}
	return u, true
}

// BusyPenalty returns broker's load penalty now (about how many busy answers
// it gave within the last Config.BusyDecay, older ones fading): 0 when the
// busy-is-load policy is off or the broker never answered busy. Safe for
// concurrent use.
func (s *Strategy) BusyPenalty(broker string) float64 {
	var b *busyLoad
	for _, h := range s.policies.outcomes {
		if bl, ok := h.(*busyLoad); ok {
			b = bl
		}
	}
	if b == nil {
		return 0
	}
	sl := s.table.lookup(broker)
	if sl == nil {
		return 0
	}
	return sl.busy.at(s.table.now(), b.decay)
}
