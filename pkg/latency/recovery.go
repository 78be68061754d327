package latency

import (
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
)

// This file holds the rules that bring a recovered broker back, a part of
// the backoff for repeat offenders (backoff.go) that the detector applies:
// the cut of a lengthened isolation once probes have answered for a while,
// with guards (Config.Recovery, on in the mqfault preset; POLICIES.md,
// "A recovered broker comes back", has the measurements).
//
// The backoff lengthens a repeat offender's failure isolation (20 s, 40 s,
// 60 s where the duration table gives 10 s), which is right while the broker
// keeps failing and wrong once it has recovered: on a real 4.9.8 broker
// stopped for 20 s, the preset kept it out of traffic for 12 s after it came
// back. With the cut, once probes answer for a broker whose isolation
// the backoff lengthened, the isolation is cut to what the duration table
// alone gave (from the failure that started it), or ends at once when that
// time has passed. The broker's next attempt then decides, as a half-open
// circuit breaker's trial does: an answer keeps it in service (and forgives
// a step of its level), a failure starts a new failure isolation one level
// longer. The probe only shortens what the backoff added: it never ends an
// isolation the duration table itself gave, so a broker that accepts
// connections but fails sends (the wedged scenario) is still held for the
// table's 10 s each time.

// lengthened returns the unlengthened end of s's running failure isolation
// when the backoff lengthened it. Caller must hold s.mu.
func (s *slot) lengthened() (base int64, ok bool) {
	base = s.rec.baseUntil.Load()
	return base, base != 0 && s.isolated.Load() && s.until.Load() > base
}

// cut ends s's running isolation at base, or at now if that has passed.
// Caller must hold s.mu.
func (s *slot) cut(base, now int64) {
	until := max(base, now)
	s.until.Store(until)
	s.rec.baseUntil.Store(0)
	s.arm(span(now, until))
	s.table.ver.Add(1)
	s.table.bump()
}

// The sustained recovery rule (Config.Recovery) is the rule above made
// safe for brokers that answer probes without having recovered. A TCP probe
// answers for a frozen JVM (the kernel completes the handshake: seen on a
// real 4.9.8 broker stopped with SIGSTOP), for a busy or slow broker and for
// a flapping one in its up phase, so one answer proves nothing, and bringing
// such a broker back costs a second of every sender's time that lands on it
// (its attempts run into the 1 s per-attempt cap). The rule asks three
// things before a lengthened isolation is cut, and bounds what a wrong guess
// costs:
//
//   - sustained: the probes must have answered, every one of them, for
//     Recovery.After since the failure that began the isolation (a probe
//     that fails or times out starts the count again; answers from before
//     the failure do not count), and keep answering until the cut takes
//     effect (a probe that fails before the duration table's end calls the
//     cut off). A flapping broker whose up phase is shorter than that, as
//     the detector samples it, is not cut;
//   - not loaded: a broker that answered busy (ClassBusy) or slowly (an
//     answer the duration table isolates for) within one failure isolation
//     (the table's, 10 s in v5) before the isolation began, or since, is
//     overloaded or degraded rather than down, and answering a probe says
//     nothing about its load: it is not cut. Its way back is a send trial
//     once the duration table's isolation alone would have ended
//     (trial.go): a send, not a probe, shows it answers in time again;
//   - one trial per recovery: the cut is a half-open breaker's trial, which
//     lasts until the isolation would have ended uncut. Answered sends
//     during it forgive nothing (they prove the broker is back; they would
//     not have been made without the cut), and a failure isolation that
//     starts during it (the broker's next sends failed) is one backoff level
//     longer, as always. After a trial, passed or failed, no isolation of
//     the broker is cut again until answered sends forgive every backoff
//     level (Config.Backoff.Decay each). So the rule changes when a broker
//     comes back, not what the backoff remembers of it: a broker that
//     accepts probes but fails sends (a wedged or frozen one) costs one
//     early trial per outage, where the rule above costs one per
//     isolation, and a broker that fails again soon after it came back is
//     held as long as without the rule.
//
// The rule acts in the detector's rounds (after a probe) and on the
// outcomes reported through picks (Done); nothing on the pick path changes.

// Trial phases of recoveryState.phase.
const (
	recoveryIdle  int32 = iota // no trial: a lengthened isolation may be cut
	recoveryTrial              // the probe cut the isolation: the broker is on trial until trialUntil
	recoveryHeld               // after a trial: no cut until successes forgive every backoff level
)

// recoveryState is one broker's state under the sustained recovery rule.
type recoveryState struct {
	// baseUntil is when the running failure isolation would end without
	// the backoff's lengthening; 0 when it was not lengthened. Written
	// under the slot's mu.
	baseUntil atomic.Int64
	// since is when the current run of answered probes began (table
	// time); 0 when the last conclusive probe failed, or none answered
	// yet.
	since atomic.Int64
	// began is when the running lengthened failure isolation began (the
	// failure that set baseUntil). Written under the slot's mu.
	began atomic.Int64
	// trialUntil is when the isolation a trial cut would have ended: the
	// trial lasts until then (or until a failure isolation starts). Written
	// under the slot's mu.
	trialUntil atomic.Int64
	// loadedAt is when the broker last answered busy or slowly (table
	// time; 0: never).
	loadedAt atomic.Int64
	// phase is recoveryIdle, recoveryTrial or recoveryHeld.
	phase atomic.Int32
}

// loaded reports whether the broker answered busy or slowly within one
// unlengthened isolation (base - began, the duration table's) before the
// failure that began its running lengthened isolation (unlengthened end
// base), or since: overloaded or degraded rather than down.
func (r *recoveryState) loaded(base int64) bool {
	began := r.began.Load()
	at := r.loadedAt.Load()
	return at != 0 && at >= began-(base-began)
}

// loadedHold reports whether the broker's running failure isolation is
// one the backoff lengthened while the broker was loaded (the hold its
// send trials end, trial.go), with the end the duration table alone gave
// it (base). One atomic load, three while a lengthened isolation runs.
func (r *recoveryState) loadedHold() (base int64, ok bool) {
	base = r.baseUntil.Load()
	return base, base != 0 && r.loaded(base)
}

// reset forgets everything (the broker left the table).
func (r *recoveryState) reset() {
	r.since.Store(0)
	r.began.Store(0)
	r.trialUntil.Store(0)
	r.loadedAt.Store(0)
	r.phase.Store(recoveryIdle)
}

// failureStarted is told that a failure began a new failure isolation of
// the broker (backoff.go, under the slot's mu): a running trial failed.
func (r *recoveryState) failureStarted() { r.phase.CompareAndSwap(recoveryTrial, recoveryHeld) }

// settle ends a trial whose time is over at now (the broker passed it).
// Called on every probe of the broker, so a trial ends within one detector
// period of trialUntil.
func (r *recoveryState) settle(now int64) {
	if r.phase.Load() == recoveryTrial && now >= r.trialUntil.Load() {
		r.phase.CompareAndSwap(recoveryTrial, recoveryHeld)
	}
}

// onTrial reports whether the broker is on trial: answered sends forgive
// nothing then. One atomic load.
func (r *recoveryState) onTrial() bool { return r.phase.Load() == recoveryTrial }

// forgiven is told that answered sends forgave every backoff level of the
// broker (backoff.go): the hold after a trial is over. It takes no lock and
// allocates nothing.
func (r *recoveryState) forgiven() { r.phase.CompareAndSwap(recoveryHeld, recoveryIdle) }

// probeFailed is told that a probe of the broker failed or timed out at
// now: the run of answered probes starts again, and a cut that has not yet
// taken effect (the isolation, cut to the duration table's end, still runs)
// is called off: the isolation gets back its lengthened end, as if it had
// never been cut. It takes s's lock only then.
func (s *slot) probeFailed(now int64) {
	s.rec.since.Store(0)
	s.rec.settle(now)
	if s.rec.phase.Load() != recoveryTrial {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.phase.Load() != recoveryTrial || !s.isolated.Load() || now >= s.until.Load() {
		return
	}
	s.rec.phase.Store(recoveryIdle)
	s.rec.baseUntil.Store(s.until.Load())
	until := s.rec.trialUntil.Load()
	s.until.Store(until)
	s.arm(span(now, until))
	s.table.ver.Add(1)
	s.table.bump()
}

// probeAnswered is told that a probe of the broker answered at now: under
// the sustained recovery rule with hold Recovery.After, it cuts the running
// lengthened failure isolation as endBackoffEarly does once the probes have
// answered for hold since the failure that began it, unless the broker was
// loaded or is held (see the rule above); the cut starts a trial. Called by
// the detector; it takes s's lock (off the pick path).
func (s *slot) probeAnswered(now int64, hold time.Duration) {
	s.rec.settle(now)
	since := s.rec.since.Load()
	if since == 0 {
		s.rec.since.Store(now)
		since = now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	base, ok := s.lengthened()
	if !ok {
		return
	}
	began := s.rec.began.Load()
	if since < began { // answers from before the failure prove nothing
		since = now
		s.rec.since.Store(now)
	}
	if span(since, now) < hold || s.rec.phase.Load() != recoveryIdle {
		return
	}
	if s.rec.loaded(base) {
		return
	}
	s.rec.phase.Store(recoveryTrial)
	s.rec.trialUntil.Store(s.until.Load())
	s.cut(base, now)
}

// recoveredAfter is the hold the detector applies: Recovery.After when the
// backoff is on (without it nothing is lengthened), else 0.
func recoveredAfter(c Config) time.Duration {
	if c.Backoff == nil || c.Backoff.Multiplier == 0 || c.Recovery == nil {
		return 0
	}
	return max(c.Recovery.After, 0)
}

// recoveryPolicy registers the sustained recovery rule (policy.go).
var recoveryPolicy = policyKind{
	name: "recovered broker comes back", ablation: "recovered-after", requires: []string{"backoff", "detector"},
	knobs: []PolicyKnob{
		settingKnob("recovered_after", "", "probes answering this long since a failure cut its backoff-lengthened isolation to the table's, never for a busy or slow broker, once per recovery; 0 is off (v5)",
			func(c *Config) **RecoveryConfig { return &c.Recovery }, func(r *RecoveryConfig) *time.Duration { return &r.After }),
	},
	on: func(c Config) bool { return c.Recovery != nil && c.Recovery.After > 0 },
	validate: func(c Config, l *configerr.List) {
		if c.Recovery != nil && c.Recovery.After < 0 {
			l.Add(invalid("Recovery.After", c.Recovery.After, "must not be negative (0 turns the rule off)"))
		}
	},
	install: func(c Config, p *policies) {
		if recoveredAfter(c) > 0 {
			p.outcomes = append(p.outcomes, recoveryHook{})
		}
	},
}

// recoveryHook is the rule's outcome hook: it notes when the broker
// answered busy or slowly, and leaves the update to the rules.
type recoveryHook struct{}

var _ outcomeHook = recoveryHook{}

// report stamps a busy answer, or an answer slow enough for the duration
// table to isolate for, on the broker's slot. It reads the clock only for
// those, allocates nothing for a known broker and takes no lock.
func (recoveryHook) report(a attempt, o Outcome) (FaultUpdate, bool) {
	switch {
	case a.slot == nil:
	case o.Class == ClassBusy:
		a.slot.rec.loadedAt.Store(a.table.now())
	case o.Class == ClassAnswered && !o.Pending && a.table.isolation(max(o.Latency, 0)) > 0:
		a.slot.rec.loadedAt.Store(a.table.now())
	}
	return FaultUpdate{}, false
}
