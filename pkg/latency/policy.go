package latency

import (
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/configerr"
)

// The policies past the reference (DESIGN.md section 4) are the five that
// policyKinds registers, each in its own file:
//
//   - the isolation cap (isolationcap.go, Config.MaxIsolatedFraction): a
//     release hook that keeps the least bad isolated brokers of a route in
//     service when too many of them are isolated;
//   - the backoff for repeat offenders (backoff.go, Config.IsolationBackoff):
//     the isolation hook;
//   - the sustained recovery rule (recovery.go, Config.RecoveredAfter): an
//     outcome hook, read by the detector;
//   - reachable first (reachableFirstPolicy, below: Config.Detector with
//     Config.ProbeFailures): a switch the v5 cascade's first stage reads;
//   - the capacity model (capacity.go, Config.CapacityDecrease): an outcome
//     hook that makes the fault update of a push-back itself, and the
//     weights the v5 cascade's first stage reads on the pick path.
//
// The probe-failure rule is one switch of the detector (Config.ProbeFailures).
// Each is off at its Config zero value, so Reference5 and Reference4 decide
// exactly as RocketMQ does; DefaultConfig turns them on. They extend mode v5
// (a v4 strategy, which reproduces 4.9.8, ignores them).
//
// A policy's file holds its checks and its hooks; the strategy calls each
// kind of hook at a single point, as grpc-go's outlier detection wraps a
// balancer:
//
//   - an isolation hook, on update: how long a failure isolates a broker,
//     and what an answered send that isolates nothing forgives;
//   - a release hook, on pick: per route, which brokers the fault table
//     isolates but picks may still use;
//   - outcome hooks, on Report, in policyKinds' order, with the broker's
//     slot: what an attempt's outcome does before (or instead of) the mode's
//     update rules.
//
// Adding a policy today touches its file, its knobs in Config (config.go),
// one line in policyKinds, its per-broker state in table.go's slot, and the
// lists outside the package that name every knob (pkg/config's knobs.go,
// pkg/sim's ablation.go).

// policyKind is one policy: what it checks in a Config, and how it installs
// its hook in a strategy's policies when the Config turns it on.
type policyKind struct {
	validate func(Config, *configerr.List) // adds every problem of the policy's settings
	install  func(Config, *policies)
}

// policyKinds lists every policy past the reference, in the order their
// settings are checked.
var policyKinds = []policyKind{isolationCapPolicy, backoffPolicy, recoveryPolicy, reachableFirstPolicy, capacityPolicy}

// policies holds the hooks a strategy runs; nil hooks are off.
type policies struct {
	isolation isolationHook  // at most one policy shapes isolations
	release   releaseHook    // at most one policy releases brokers
	outcomes  []outcomeHook  // in order, on every reported outcome
	capacity  *capacityModel // the capacity model (capacity.go); nil when off
	// reachFirst makes the v5 cascade's first stage take only brokers
	// that are available and reachable (reachableFirstPolicy).
	reachFirst bool
}

func newPolicies(cfg Config) policies {
	var p policies
	for _, k := range policyKinds {
		k.install(cfg, &p)
	}
	return p
}

// validatePolicies checks every policy's settings, adding each problem to l.
func validatePolicies(c Config, l *configerr.List) {
	for _, k := range policyKinds {
		k.validate(c, l)
	}
}

// reachableFirstPolicy makes a broker the detector calls unreachable get
// no first-stage pick while a broker that is available and reachable is
// there: with the detector on and ProbeFailures, an unreachable broker is
// one whose probe or last send failed, and the end of its isolation timer
// says nothing of whether it answers again (the reference's first stage
// admits it, each attempt a timeout). Its pick comes from the later stages
// (reachable, then any), as when every broker is isolated.
var reachableFirstPolicy = policyKind{
	validate: func(Config, *configerr.List) {},
	install: func(c Config, p *policies) {
		if c.Detector && c.ProbeFailures {
			p.reachFirst = true
		}
	},
}

// isolationHook shapes what an update does to a broker's isolation.
type isolationHook interface {
	// failureIsolation returns how long a failure at now isolates s, base
	// being the duration table's. Caller must hold s.mu.
	failureIsolation(s *slot, base time.Duration, now int64) time.Duration
	// answered is told of an answered send that isolates nothing; it must
	// not block or allocate.
	answered(s *slot)
}

// outcomeHook is told of every outcome reported through a pick (Report),
// before the mode's update rules, with the broker's slot Report found once
// (nil while fault tolerance is off). It returns ok=true when it made the
// fault update itself (the rules and the later hooks are then skipped),
// with the update made. It must not block or allocate.
type outcomeHook interface {
	report(s *Strategy, sl *slot, broker string, o Outcome) (u FaultUpdate, ok bool)
}

// releaseHook keeps isolated brokers of a route in service.
type releaseHook interface {
	// bind returns the per-route state picks read (its view says which
	// isolated brokers are released), or nil when it cannot release any
	// on a route of these slots.
	bind(slots []*slot, entries []entry, durations *atomic.Pointer[durationsBox]) *capState
}
