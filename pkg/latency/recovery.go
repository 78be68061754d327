package latency

// This file holds the rule that brings a recovered broker back
// (Config.ProbeEndsBackoff), a part of the backoff for repeat offenders
// (backoff.go) that the detector applies.
//
// The backoff lengthens a repeat offender's failure isolation (20 s, 40 s,
// 60 s where the duration table gives 10 s), which is right while the broker
// keeps failing and wrong once it has recovered: on a real 4.9.8 broker
// stopped for 20 s, the preset kept it out of traffic for 12 s after it came
// back. With this rule, when a probe answers for a broker whose isolation
// the backoff lengthened, the isolation is cut to what the duration table
// alone gave (from the failure that started it), or ends at once when that
// time has passed. The broker's next attempt then decides, as a half-open
// circuit breaker's trial does: an answer keeps it in service (and forgives
// a step of its level), a failure starts a new failure isolation one level
// longer. The probe only shortens what the backoff added: it never ends an
// isolation the duration table itself gave, so a broker that accepts
// connections but fails sends (the wedged scenario) is still held for the
// table's 10 s each time.

// endBackoffEarly cuts s's running failure isolation to its unlengthened
// end, if the backoff lengthened it. Called by the detector when a probe of
// s answered; it takes s's lock (off the pick path).
func (s *slot) endBackoffEarly() {
	s.mu.Lock()
	base := s.baseUntil.Load()
	if base == 0 || !s.isolated.Load() || s.until.Load() <= base {
		s.mu.Unlock()
		return
	}
	now := s.table.now()
	until := max(base, now)
	s.until.Store(until)
	s.baseUntil.Store(0)
	s.arm(span(now, until))
	s.mu.Unlock()
	s.table.ver.Add(1)
	s.table.bump()
}
