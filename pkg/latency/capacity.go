package latency

import "github.com/mqfault/mqfault/internal/configerr"

// This file holds the rule that makes the isolation cap follow capacity
// (Config.CapHoldsBusy). The cap (isolationcap.go) keeps the least bad
// isolated brokers in service when more than MaxIsolatedFraction of a route
// is isolated, so a fault that hits many brokers cannot push the traffic
// onto the few left. A broker isolated because it answered busy is the
// opposite case: it said it has no room, and keeping it in service (the
// reference isolates a busy broker as a failure, so it ranks as a failed
// broker the cap may release) sends the most traffic of all to the broker
// that has the least capacity, whose answers then are busy again and retried
// elsewhere. Under this rule a broker whose isolation follows a busy answer
// is never released: it still counts as isolated (it is out of service), and
// when more than the cap's limit are isolated, the least bad of the others
// stay in service. The hold ends when that isolation ends (the expiry timer)
// or a failure of another class is reported for the broker; an answer does
// not end it, since under a send queue the answers of sends queued before
// the busy one arrive after it. POLICIES.md has what the simulator measured
// with and without the rule.

// capHoldPolicy registers the rule (policy.go); it has no settings of its
// own to check.
var capHoldPolicy = policyKind{
	validate: func(Config, *configerr.List) {},
	install: func(c Config, p *policies) {
		if c.CapHoldsBusy && p.release != nil {
			p.outcomes = append(p.outcomes, capHold{})
		}
	},
}

// capHold is the rule's outcome hook: it notes whether a failed attempt was
// a busy answer, and leaves the update to the rules.
type capHold struct{}

var _ outcomeHook = capHold{}

func (capHold) report(s *Strategy, sl *slot, _ string, o Outcome) (FaultUpdate, bool) {
	if sl != nil && o.Class != ClassAnswered && o.Class != ClassCancelled {
		s.notePushBack(sl, o.Class == ClassBusy)
	}
	return FaultUpdate{}, false
}

// notePushBack records whether the failure just reported on slot sl was a
// busy answer, moving the table's isolation epoch on when that changes (the
// cap's views are recomputed on the next pick). It allocates nothing; it
// writes the flag only when it changes.
func (s *Strategy) notePushBack(sl *slot, busy bool) {
	if sl.pushedBack.Load() != busy {
		sl.pushedBack.Store(busy)
		s.table.bump()
	}
}
