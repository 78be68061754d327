package latency

import (
	"time"

	"github.com/mqfault/mqfault/internal/configerr"
)

// This file holds the rule that makes the isolation cap follow capacity as
// well as a fixed fraction (Config.ReleaseOnPushBack): beyond what the
// fraction releases, the cap keeps more of the least bad isolated brokers
// in service only while those left in service push back.
//
// A broker pushes back when it answers busy (ClassBusy: SYSTEM_BUSY,
// TOO_MANY_REQUESTS) or answers slower than Config.PushBackLatency (its
// send queue is growing). It stops pushing back when it answers within
// PushBackLatency a send that started at least PushBackHold after its last
// push-back: under a send queue the answers of sends queued before the
// push-back arrive after it and say nothing of the broker's room now, and
// the hold keeps the released set from flapping with every answer.
//
// The cap (isolationcap.go) then keeps in service, on top of what
// MaxIsolatedFraction releases (unchanged), one isolated broker for each
// broker of the route in service that pushes back: the least bad, and only
// a reachable one (a broker whose probe fails adds no capacity, only
// timeouts). So a broker that recovered (its probe answers) comes back as
// soon as the others run out of room, not when its backoff runs out.
//
// Off in every preset: in the simulator it brought slow brokers into
// service where the others' queueing, not their capacity, was the
// push-back (hot-broker-queue), and the variants that also let the
// fraction bind only when no healthy broker was left lost many-slow
// (POLICIES.md, "Release on push-back").

// Defaults of the pushback rule's settings.
const (
	DefaultPushBackLatency = 50 * time.Millisecond // the 5.x table's first tier
	DefaultPushBackHold    = time.Second
)

// pushBackPolicy registers the rule (policy.go). It needs the cap's
// machinery (MaxIsolatedFraction in (0, 1)).
var pushBackPolicy = policyKind{
	validate: func(c Config, l *configerr.List) {
		if c.PushBackLatency < 0 {
			l.Add(invalid("PushBackLatency", c.PushBackLatency, "must not be negative (0 means DefaultPushBackLatency)"))
		}
		if c.PushBackHold < 0 {
			l.Add(invalid("PushBackHold", c.PushBackHold, "must not be negative (0 means DefaultPushBackHold)"))
		}
	},
	install: func(c Config, p *policies) {
		if !c.ReleaseOnPushBack || p.release == nil {
			return
		}
		pb := pushBack{latency: c.PushBackLatency, hold: c.PushBackHold}
		if pb.latency == 0 {
			pb.latency = DefaultPushBackLatency
		}
		if pb.hold == 0 {
			pb.hold = DefaultPushBackHold
		}
		p.outcomes = append(p.outcomes, pb)
		if ic, ok := p.release.(isolationCap); ok {
			ic.onPushBack = true
			p.release = ic
		}
	},
}

// pushBack is the rule's outcome hook: it keeps each broker's push-back
// state and leaves the update to the later hooks and the mode's rules.
type pushBack struct {
	latency time.Duration
	hold    time.Duration
}

var _ outcomeHook = pushBack{}

func (pb pushBack) report(s *Strategy, sl *slot, _ string, o Outcome) (FaultUpdate, bool) {
	if o.Pending || sl == nil {
		return FaultUpdate{}, false
	}
	switch {
	case o.Class == ClassBusy, o.Class == ClassAnswered && o.Latency > pb.latency:
		now := s.table.now()
		if sl.pushing.Swap(now) == 0 {
			s.table.bump()
		}
	case o.Class == ClassAnswered && o.Path == PathAsyncAnswer, o.Class == ClassCancelled, o.Class == ClassClient:
		// Says nothing of the broker's room.
	case o.Class != ClassAnswered:
		// A failure of another class: the broker is failing, not pushing back.
		if sl.pushing.Swap(0) != 0 {
			s.table.bump()
		}
	default:
		last := sl.pushing.Load()
		if last == 0 {
			return FaultUpdate{}, false
		}
		if start := s.table.now() - int64(max(o.Latency, 0)); start >= last+int64(pb.hold) &&
			sl.pushing.CompareAndSwap(last, 0) {
			s.table.bump()
		}
	}
	return FaultUpdate{}, false
}

// PushingBack reports whether broker pushes back now under
// Config.ReleaseOnPushBack (false when the rule is off). Safe for
// concurrent use.
func (s *Strategy) PushingBack(broker string) bool {
	if sl := s.table.lookup(broker); sl != nil {
		return sl.pushing.Load() != 0
	}
	return false
}
