package latency

import (
	"sync/atomic"
	"time"
)

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
//
// A failure isolation also holds to its end through an up phase: a
// flapping broker is isolated for the table's 10 s at each down phase, and
// neither its failing probes nor an answered one (which marks it reachable
// but ends no isolation) brings it back before then. So a broker isolated
// for a failure gets trials too, whatever the detector calls it, from the
// fast path's first probe (isolatedTrial), one a detect interval with no
// doubling while the isolation runs; a trial answered in a latency the
// duration table isolates nothing for ends the isolation at once
// (endIsolation), a slower answer leaves it to the table's rules.
//
// A loaded repeat offender (the recovery rule's other half, recovery.go)
// is one of these: a broker that answered busy or slowly and then failed
// again is held by the backoff past the duration table's isolation, and its
// probes, which answer for a slow or busy broker, never cut that hold. Once
// no answer or timeout of it has been slow for one failure isolation, its
// trials bring it back: an answer the table isolates nothing for, and as
// fast as the other brokers' (fastLimit), ends the hold; a slower one
// stamps it slow again and so waits a failure isolation for the next.

// trialState is one broker's send trial. Safe for concurrent use.
type trialState struct {
	// next is the table time from which a trial may be admitted; 0 at once.
	next atomic.Int64
	// level counts the failed trials since the broker was last reachable:
	// each doubles the wait for the next, up to trialMaxLevel.
	level atomic.Int32
	// slowAt is when the broker last answered a send, or failed one, in a
	// latency the duration table isolates for (table time; 0: never),
	// stamped by trialHook.
	slowAt atomic.Int64
	// failedAt is when a failure last isolated the broker (table time),
	// stamped by the isolation's rule (slot.extend): an isolated trial
	// comes one trial gap after it at the earliest.
	failedAt atomic.Int64
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
	return !e.s.isolated.Load() && c5.claimTrial(e)
}

// isolatedTrial reports whether entry e, isolated and not kept in service
// by the isolation cap, takes a first-stage trial pick now, and if so
// claims it: under reachable first, a broker isolated for a failure gets
// send trials while its isolation runs, one trial gap after the failure at
// the earliest, since its probes would never end it early (a flapping
// broker answers sends in its up phase, whether its probes fail or
// answer; a loaded broker's answering probes prove nothing). It gets none
// while it was slow within a failure isolation (recentlySlow). The fast
// path's refused probe calls it; without reachable first there is no trial
// (claimTrial: no trial gap).
func (c5 cascade5) isolatedTrial(e *entry) bool {
	now := c5.s.table.seen.Load()
	if !e.s.failed.Load() || now-e.s.trial.failedAt.Load() < c5.s.policies.trialGap || c5.s.recentlySlow(e.s, now) {
		return false
	}
	return c5.claimTrial(e)
}

// trialHook is the send trial's outcome hook (reachableFirstPolicy
// installs it): it stamps an answer or a failure slow enough for the
// duration table to isolate for on the broker's slot (trialState.slowAt),
// so a degraded or blackholed broker gets no trial and no early end while
// isolated (recentlySlow), and leaves the update to the rules.
type trialHook struct{}

var _ outcomeHook = trialHook{}

// report stamps o on a's slot when its latency is one the duration table
// isolates for. It reads the clock only then, allocates nothing for a
// known broker and takes no lock.
func (trialHook) report(a attempt, o Outcome) (FaultUpdate, bool) {
	if a.slot != nil && !o.Pending && o.Class != ClassBusy && a.table.isolation(max(o.Latency, 0)) > 0 {
		a.slot.trial.slowAt.Store(a.table.now())
	}
	return FaultUpdate{}, false
}

// recentlySlow reports whether s's broker answered a send, or failed one,
// in a latency the duration table isolates for (a slow answer, a timeout)
// within one failure isolation of the table before now: a degraded or
// blackholed broker, whose trials would cost that latency and whose faster
// answers prove little, gets no trial while isolated and no early end.
func (s *Strategy) recentlySlow(sl *slot, now int64) bool {
	at := sl.trial.slowAt.Load()
	return at != 0 && span(at, now) < s.durations.Load().t.Isolation(s.spec.isolationLatency)
}

// claimTrial claims e's trial if its broker is in the table and its next
// trial time has come.
func (c5 cascade5) claimTrial(e *entry) bool {
	gap := c5.s.policies.trialGap
	if gap <= 0 || !e.s.present.Load() {
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
		if o.Class == ClassAnswered && !o.Pending {
			s.trialAnswered(sl, o.Latency)
		}
		return FaultUpdate{}, false
	}
	// While an isolation runs, a trial that failed in a latency the
	// duration table isolates nothing for (refused, not timed out) keeps
	// the wait at one gap: the trials are then the only way back before the
	// isolation's end, and each costs little.
	lv := int32(0)
	if !sl.isolated.Load() || s.durations.Load().t.Isolation(max(o.Latency, 0)) > 0 {
		lv = min(sl.trial.level.Add(1), trialMaxLevel)
	}
	sl.trial.next.Store(s.table.now() + s.policies.trialGap<<lv)
	return FaultUpdate{Broker: broker, Latency: u.Latency, Reachable: sl.reachable.Load()}, true
}

// endIsolation ends s's running isolation at now: its send trial was
// answered in a latency the duration table isolates nothing for. The end
// is the expiry's (expire), as a stall's is (endStall); the timer armed for
// the old end then finds nothing to do.
func (s *slot) endIsolation(now int64) {
	s.mu.Lock()
	end := s.isolated.Load()
	if end {
		s.until.Store(now)
		s.rec.baseUntil.Store(0)
	}
	s.mu.Unlock()
	if end {
		s.expire()
	}
}

// trialAnswered takes a send trial's answer in latency d: it ends the
// broker's running isolation when the duration table isolates nothing for
// d and the broker answered no send slowly (an answer the table isolates
// for) within one failure isolation of the table: a degraded broker's
// faster answers do not bring it back. A loaded repeat offender's trial
// must also answer as the others do (within fastLimit): a broker slow at
// a 600 ms median answers under the table's first step (550 ms in v5)
// nearly half the time, and each early end put it back into service
// slow. An answer slower than that stamps it slow, so its next trial
// waits a failure isolation.
func (s *Strategy) trialAnswered(sl *slot, d time.Duration) {
	t := s.durations.Load().t
	if !sl.isolated.Load() || t.Isolation(max(d, 0)) > 0 {
		return
	}
	now := s.table.now()
	if s.recentlySlow(sl, now) {
		return
	}
	if _, held := sl.rec.loadedHold(); held && d > s.table.fastLimit(sl, now) {
		sl.trial.slowAt.Store(now)
		return
	}
	sl.endIsolation(now)
}

// fastLimit is the latency within which broker slot sl answers as the
// others do at table time now: latencyRatio times the least average
// latency of the other brokers that have one, and at least latencyFloor
// (share.go's measure of a slow broker). Off the pick path: it reads every
// slot.
func (t *FaultTable) fastLimit(sl *slot, now int64) time.Duration {
	least := int64(0)
	if slots := t.slots.Load(); slots != nil {
		for _, o := range *slots {
			if l := o.cap.fadedLat(now); o != sl && l > 0 && (least == 0 || l < least) {
				least = l
			}
		}
	}
	return max(latencyRatio*time.Duration(least), latencyFloor)
}

// dueTrial looks, at most trialScans times a trial gap per route, for a
// broker of binding b whose send trial is due (trial, isolatedTrial) and
// claims it: a trial waits for the round robin's first probe to land on
// its broker, and a first probe never lands on a broker whose queues follow
// an isolated broker's in the route (the probe refused on the isolated
// one, the cascade walks on past the queues after it and claims the index
// for them), so without the scan a flapping broker behind a down one got no
// trial until the down one came back. It returns the position of the
// trial's queue (its broker's first) and true, or false. The fast path's
// refused probe calls it after the probe's own trial; no lock, no
// allocation, no clock read.
func (c5 cascade5) dueTrial(b *binding) (int, bool) {
	gap := c5.s.policies.trialGap
	if gap <= 0 {
		return 0, false
	}
	now := c5.s.table.seen.Load()
	at := b.trialScan.Load()
	if now < at || !b.trialScan.CompareAndSwap(at, now+gap/trialScans) {
		return 0, false
	}
	for bi, sl := range b.slots {
		e := &b.entries[b.firstPos[bi]]
		if e.s != sl || !sl.present.Load() {
			continue
		}
		ok := false
		if sl.isolated.Load() {
			ok = c5.isolatedTrial(e)
		} else if c5.s.policies.reachFirst && !sl.reachable.Load() {
			ok = c5.trial(e)
		}
		if ok {
			return int(b.firstPos[bi]), true
		}
	}
	return 0, false
}

// trialScans is how many times a trial gap a route's refused probes look
// for a due trial (dueTrial).
const trialScans = 10
