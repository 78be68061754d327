package latency

import "sync/atomic"

// This file holds reachable first's send trial (reachableFirstPolicy,
// policy.go): sends outweigh probes.
//
// Under reachable first, a broker the detector calls unreachable gets no
// first-stage pick while one that is available and reachable is there.
// Only an answered probe or an answered send marks it reachable again, and
// without picks it answers no send: a broker whose probes fail while it
// answers sends (a probe port filtered, a detector that cannot reach it, a
// broker slow to answer probes but storing messages) would stay out for
// good, its capacity lost to the cluster. So once nothing isolates such a
// broker (its isolation timer ended, or no send ever failed on it), the
// first stage admits one trial attempt to it at a time, at most one a
// detect interval (policies.trialGap): an answered trial marks it reachable
// (the mode's answered update); a failed one isolates nothing, raises no
// backoff, and doubles the wait for the next trial, up to trialMaxLevel
// doublings. A broker the detector rightly calls unreachable thus costs one
// attempt per trial, fewer and fewer, where the reference's first stage
// sends it every attempt of its share once its isolation is over.

// trialState is one broker's send trial. Safe for concurrent use.
type trialState struct {
	// next is the table time from which a trial may be admitted; 0 at once.
	next atomic.Int64
	// level counts the failed trials since the broker was last reachable:
	// each doubles the wait for the next, up to trialMaxLevel.
	level atomic.Int32
}

// trialMaxLevel bounds the doubling: at most trialGap<<trialMaxLevel
// between two trials.
const trialMaxLevel = 6

// trial reports whether entry e, unreachable, takes a first-stage trial
// pick now (StageTrial: Strategy.picked labels it), and if so claims it:
// nothing isolates e's broker and its next trial time has come. One CAS on
// the pick path, no lock, no allocation, no clock read (the table's last
// seen time).
func (c5 cascade5) trial(e *entry) bool {
	gap := c5.s.policies.trialGap
	if gap <= 0 || e.s.isolated.Load() || !e.s.present.Load() {
		return false
	}
	now := c5.s.table.seen.Load()
	t := e.s.trial.next.Load()
	if now < t {
		return false
	}
	return e.s.trial.next.CompareAndSwap(t, now+gap)
}

// trialDone takes the outcome of a trial's attempt (a pick of StageTrial)
// on slot sl. A failed trial makes no isolation and raises no backoff (the
// broker is out of the first stage already, and may have come back while
// the trial was in flight), and doubles the wait for the next trial: it
// returns the update it made (none to the table) and true. Any other
// outcome goes to the mode's rules (an answered one marks the broker
// reachable) and resets the doubling: it returns false.
func (s *Strategy) trialDone(sl *slot, broker string, o Outcome) (FaultUpdate, bool) {
	u := s.spec.rules.update(broker, o, s.detectorOn.Load())
	if !u.Isolation {
		sl.trial.level.Store(0)
		return FaultUpdate{}, false
	}
	lv := min(sl.trial.level.Add(1), trialMaxLevel)
	sl.trial.next.Store(s.table.now() + s.policies.trialGap<<lv)
	return FaultUpdate{Broker: broker, Latency: u.Latency, Reachable: sl.reachable.Load()}, true
}
