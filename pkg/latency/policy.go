package latency

import (
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
)

// The policies past the reference (DESIGN.md section 4) are the five that
// policyKinds, the registry, lists, each in its own file:
//
//   - the isolation cap (isolationcap.go, Config.IsolationCap): a release
//     hook that keeps the least bad isolated brokers of a route in service
//     when too many of them are isolated;
//   - the backoff for repeat offenders (backoff.go, Config.Backoff): the
//     isolation hook;
//   - the sustained recovery rule (recovery.go, Config.Recovery): an
//     outcome hook, read by the detector;
//   - reachable first (reachableFirstPolicy, below: Config.Detector with
//     Config.ProbeFailures): a switch the v5 cascade's first stage reads;
//   - the capacity model (capacity.go, Config.Capacity): an outcome hook
//     that makes the fault update of a push-back itself, and the weights
//     the v5 cascade's first stage reads on the pick path.
//
// The probe-failure rule is one switch of the detector (Config.ProbeFailures).
// Each is off at its Config zero value (nil settings, or false), so
// Reference5 and Reference4 decide exactly as RocketMQ does; DefaultConfig
// turns them on. They extend mode v5 (a v4 strategy, which reproduces
// 4.9.8, ignores them).
//
// A policy's file holds its checks and its hooks; the strategy calls each
// kind of hook at a single point, as grpc-go's outlier detection wraps a
// balancer:
//
//   - an isolation hook, on update: how long a failure isolates a broker,
//     and what an answered send that isolates nothing forgives;
//   - a release hook, on pick: per route, which brokers the fault table
//     isolates but picks may still use;
//   - outcome hooks, on Report, in policyKinds' order, with the attempt
//     (the broker, its slot and the fault table's time, nothing else of the
//     strategy): what an attempt's outcome does before (or instead of) the
//     mode's update rules.
//
// A policy's registry entry (its policyKind) names it and its ablation,
// lists its knobs (file key, doc, field) and says when its own setting is
// on; pkg/config's knob table and pkg/sim's ablations are derived from it
// (Policies). A policy's settings are a struct of its own behind a pointer
// field of Config, nil when it is off, and its per-broker state a type of
// its own in table.go's slot; so adding a policy touches its file, its
// settings' field in Config (config.go), one line in policyKinds and, when
// it keeps per-broker state, that state's field in the slot.

// policyKind is one policy's registry entry: its names, its knobs, when its
// own setting is on, what it checks in a Config, and how it installs its
// hook in a strategy's policies when the Config turns it on. pkg/config's
// knob table and pkg/sim's ablations are derived from it (Policies).
type policyKind struct {
	name     string       // in words: "isolation cap" (an ablation's label)
	ablation string       // the ablation's short name: "isolation-cap"
	requires []string     // the ablations whose policies this one takes effect with
	knobs    []PolicyKnob // in knob-table order
	on       func(Config) bool
	validate func(Config, *configerr.List) // adds every problem of the policy's settings
	install  func(Config, *policies)
}

// policyKinds is the registry: every policy past the reference, in the
// order of the knob table and of the ablations, their settings are checked
// and their outcome hooks run (the sustained recovery rule's, which only
// notes a busy answer, before the capacity model's, which makes the update).
var policyKinds = []policyKind{isolationCapPolicy, backoffPolicy, reachableFirstPolicy, recoveryPolicy, capacityPolicy}

// Policy describes one registered policy past the reference, for pkg/config's
// knobs and pkg/sim's ablations. Its methods are safe to call concurrently.
type Policy struct {
	// Name is the policy in words ("isolation cap").
	Name string
	// Ablation names the simulator's ablation that turns it off ("isolation-cap").
	Ablation string
	// Requires names the ablations it takes effect with ("detector").
	Requires []string
	// Knobs are its settings, in knob-table order.
	Knobs []PolicyKnob

	on func(Config) bool
}

// On reports whether its own setting is on in c (what it requires aside).
func (p Policy) On(c Config) bool { return p.on(c) }

// Off sets the policy's Config fields (OffFields) in c to nil (false).
func (p Policy) Off(c *Config) {
	v := reflect.ValueOf(c).Elem()
	for _, f := range p.OffFields() {
		v.FieldByName(f).SetZero()
	}
}

// OffFields returns the Config fields holding its settings ("IsolationCap").
func (p Policy) OffFields() []string {
	var out []string
	for _, k := range p.Knobs {
		f, _, _ := strings.Cut(k.Field, ".")
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// PolicyKnob is one setting of a policy: its file key, doc and Config field.
type PolicyKnob struct {
	// Key is its key in a configuration file ("max_isolated_fraction").
	Key string
	// Field is the Config field it binds, as Validate's errors name it ("IsolationCap.MaxFraction").
	Field string
	// Doc says what it does, in one line.
	Doc string
	// Example is a valid value a parse error shows ("0.5"), or empty.
	Example string

	get func(Config) any
	set func(*Config, any)
}

// Get returns the knob's value in c: a float64, int, bool or time.Duration,
// zero when c has no settings for the policy (it is off).
func (k PolicyKnob) Get(c Config) any { return k.get(c) }

// Set sets the knob's value in c to v, of Get's type (it panics on another),
// giving c a copy of the policy's settings first (zero ones when c has none,
// unless v is zero: then c stays as it is, the policy off).
func (k PolicyKnob) Set(c *Config, v any) { k.set(c, v) }

// knobKind is what a policy knob may hold.
type knobKind interface {
	float64 | int | bool | time.Duration
}

// settingKnob binds a knob to the field that field addresses in the
// policy's settings S, which settings addresses in a Config.
func settingKnob[S any, T knobKind](key, example, doc string, settings func(*Config) **S, field func(*S) *T) PolicyKnob {
	return PolicyKnob{Key: key, Field: fieldName(settings) + "." + fieldName(field), Doc: doc, Example: example,
		get: func(c Config) any {
			if s := *settings(&c); s != nil {
				return *field(s)
			}
			var zero T
			return zero
		},
		set: func(c *Config, v any) {
			x, p := v.(T), settings(c)
			var zero T
			switch {
			case *p != nil:
				cp := **p
				*p = &cp
			case x == zero:
				return
			default:
				*p = new(S)
			}
			*field(*p) = x
		}}
}

// switchKnob binds a knob to a bool field of Config, ptr's.
func switchKnob(key, doc string, ptr func(*Config) *bool) PolicyKnob {
	return PolicyKnob{Key: key, Field: fieldName(ptr), Doc: doc,
		get: func(c Config) any { return *ptr(&c) },
		set: func(c *Config, v any) { *ptr(c) = v.(bool) }}
}

// fieldName returns the name of the exported field of S that ptr addresses,
// found by address in a zero S; it panics (at package init) when ptr
// addresses none.
func fieldName[S, T any](ptr func(*S) *T) string {
	var s S
	addr := reflect.ValueOf(ptr(&s)).Pointer()
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		if v.Field(i).Addr().Pointer() == addr && v.Type().Field(i).IsExported() {
			return v.Type().Field(i).Name
		}
	}
	panic("latency: a policy knob binds no field of " + v.Type().Name())
}

// Policies lists the policies in order (new slices); safe for concurrent use.
func Policies() []Policy {
	out := make([]Policy, len(policyKinds))
	for i, k := range policyKinds {
		out[i] = Policy{Name: k.name, Ablation: k.ablation, Requires: slices.Clone(k.requires), Knobs: slices.Clone(k.knobs), on: k.on}
	}
	return out
}

// policies holds the hooks a strategy runs; nil hooks are off.
type policies struct {
	isolation isolationHook  // at most one policy shapes isolations
	release   releaseHook    // at most one policy releases brokers
	outcomes  []outcomeHook  // in order, on every reported outcome
	capacity  *capacityModel // the capacity model (capacity.go); nil when off
	// reachFirst makes the v5 cascade's first stage take only brokers
	// that are available and reachable (reachableFirstPolicy), but for a
	// send trial (trial.go) to an unreachable broker nothing isolates at
	// most once every trialGap (table time). reachFirst is trialGap > 0
	// (DetectInterval is always positive), kept as a field: a method in
	// its place takes cascade5.reachOK over the inlining budget
	// (TestPickFastPathInlines).
	reachFirst bool
	trialGap   int64
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
	name: "probe failures", ablation: "probe-failures", requires: []string{"detector"},
	knobs: []PolicyKnob{
		switchKnob("probe_failures", "a failed detector probe marks the broker unreachable (v5)",
			func(c *Config) *bool { return &c.ProbeFailures }),
	},
	on:       func(c Config) bool { return c.ProbeFailures },
	validate: func(Config, *configerr.List) {},
	install: func(c Config, p *policies) {
		if c.Detector && c.ProbeFailures {
			p.reachFirst = true
			p.trialGap = int64(c.DetectInterval)
			p.outcomes = append(p.outcomes, trialHook{})
		}
	},
}

// refusedGap is the detector's RefusedGap for cfg: under the probe-failure
// policy, when rounds come more often than a broker's check stamp holds, a
// broker whose probe was refused is probed again at the next round; 0
// (off) otherwise, and always in the reference presets.
func refusedGap(cfg Config) time.Duration {
	if cfg.ProbeFailures && cfg.DetectPeriod < cfg.DetectInterval {
		return cfg.DetectPeriod
	}
	return 0
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
// before the mode's update rules, with the attempt: the broker, the slot
// Report found once for it, and the fault table's time; it is given
// nothing else of the strategy. It returns ok=true when it made the fault
// update itself (the rules and the later hooks are then skipped), with the
// update made. It must not block or allocate.
type outcomeHook interface {
	report(a attempt, o Outcome) (u FaultUpdate, ok bool)
}

// attempt is what an outcome hook is told of the attempt besides its
// outcome.
type attempt struct {
	broker string
	slot   *slot     // the broker's slot; nil while fault tolerance is off
	table  tableTime // the fault table's time, and its change counter
}

// tableTime is the part of the strategy an outcome hook may use: the fault
// table's clock, its last seen time (FaultTable.see), the capacity model's
// stamp units, the table's change counter, and the duration table. Its
// methods take no lock and allocate nothing; safe for concurrent use.
type tableTime struct {
	t         *FaultTable
	durations *atomic.Pointer[durationsBox]
}

// now reads the table's clock (table time).
func (tt tableTime) now() int64 { return tt.t.now() }

// seen is the latest table time an outcome was reported at.
func (tt tableTime) seen() int64 { return tt.t.seen.Load() }

// see raises the table's last seen time to now.
func (tt tableTime) see(now int64) { tt.t.see(now) }

// units is table time now in the capacity model's stamp units.
func (tt tableTime) units(now int64) int64 { return tt.t.units(now) }

// changed tells the table that a slot changed what picks read (its ver).
func (tt tableTime) changed() { tt.t.ver.Add(1) }

// isolation is the duration table's isolation for latency d.
func (tt tableTime) isolation(d time.Duration) time.Duration {
	return tt.durations.Load().t.Isolation(d)
}

// releaseHook keeps isolated brokers of a route in service.
type releaseHook interface {
	// bind returns the per-route state picks read (its view says which
	// isolated brokers are released), or nil when it cannot release any
	// on a route of these slots.
	bind(slots []*slot, entries []entry, durations *atomic.Pointer[durationsBox]) *capState
}
