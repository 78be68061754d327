package producer

import "github.com/mqfault/mqfault/pkg/latency"

// modeRules are the send-loop rules a strategy mode fixes, beyond the fault
// updates (latency.UpdateFor): the mode's latency.SendRules (its
// latency.ModeInfo), with each class's stop and network flag, which are the
// class's own (classEnds). NewPolicy builds a mode's rules once; the Loop
// reads them and never asks which mode it follows.
type modeRules struct {
	mode latency.Mode // the mode's name ("" resolved to the default)
	// retryCodes are the broker response codes a sync send retries after
	// when Config.RetryCodes is nil.
	retryCodes []int
	// resetIndex makes a sync retry's pick reset the route's index
	// (latency.PickInfo.ResetIndex).
	resetIndex bool
	// asyncRetryBudget makes an async retry check the send's budget before
	// it starts.
	asyncRetryBudget bool
	// classes is what the loop does after an attempt of each outcome class.
	classes classRules
}

// rulesFor builds mode's send-loop rules from its spec, or reports false
// for a mode latency has not registered.
func rulesFor(mode latency.Mode) (modeRules, bool) {
	info, ok := mode.Info()
	if !ok {
		return modeRules{}, false
	}
	classes := make(classRules, len(info.Send.Classes))
	for c, r := range info.Send.Classes {
		e := classEnd{stop: StopFailed}
		if c < len(classEnds) {
			e = classEnds[c]
		}
		classes[c] = classRule{sync: r.Sync, async: r.Async, stop: e.stop, network: e.network}
	}
	return modeRules{
		mode:             info.Mode,
		retryCodes:       info.Send.RetryCodes,
		resetIndex:       info.Send.ResetIndex,
		asyncRetryBudget: info.Send.AsyncRetryBudget,
		classes:          classes,
	}, true
}

// classRule is what the send loop does after an attempt met one class.
type classRule struct {
	// sync is the rule for a sync or oneway attempt, and for an async first
	// attempt that failed before its request was handed over.
	sync latency.Next
	// async is the rule for an async attempt after its hand-over
	// (latency.PathAsyncAnswer). A failure before the hand-over is reported
	// on latency.PathSend (a first attempt: the sync rule, but never
	// retried) or latency.PathAsyncResend (a retry: retried).
	async latency.Next
	// stop is how a send ends when this class ends it: after NextEnd, a
	// NextRetryCode not retried, or an attempt never retried
	// (Outcome.FailedStop).
	stop Stop
	// network: the network failed the attempt; when the send's ctx is done
	// by the time it returns, the producer counts it as cancelled (the
	// caller gave up; the broker is not at fault).
	network bool
}

// failed reports whether the class is a failure: not an answer, not a
// cancellation. Reported before the hand-over, a failure means the async
// request never left.
func (r classRule) failed() bool { return r.stop == StopFailed || r.stop == StopBrokerError }

// classRules holds a mode's rule for each latency.Class, indexed by class.
type classRules []classRule

// class returns the rule for c. A class without a row (a value outside
// latency.Classes, or a row left out, which latency's
// TestModeSpecsComplete and TestClassRulesEveryClass forbid) is a
// transport failure, as latency.UpdateFor treats an unknown class.
func (rs classRules) class(c latency.Class) classRule {
	if int(c) < len(rs) && rs[c].sync != latency.NextNone {
		return rs[c]
	}
	return rs[latency.ClassTransportFailed]
}

// classEnd is how an attempt of one class ends a send it ends, and whether
// the network failed it: the class's own, the same in every mode.
type classEnd struct {
	stop    Stop
	network bool
}

// classEnds holds each latency.Class's end, indexed by class.
var classEnds = []classEnd{
	latency.ClassAnswered:         {stop: StopAnswered},
	latency.ClassBusy:             {stop: StopBrokerError},
	latency.ClassBroker:           {stop: StopBrokerError},
	latency.ClassTransportFailed:  {stop: StopFailed, network: true},
	latency.ClassTransportTimeout: {stop: StopFailed, network: true},
	latency.ClassTransportNotSent: {stop: StopFailed, network: true},
	latency.ClassThrottled:        {stop: StopFailed, network: true},
	latency.ClassClient:           {stop: StopFailed},
	latency.ClassCancelled:        {stop: StopCancelled},
}

// classStop is the stop of class c: StopFailed for a class without an end.
func classStop(c latency.Class) Stop {
	if int(c) < len(classEnds) && classEnds[c].stop != StopNone {
		return classEnds[c].stop
	}
	return StopFailed
}
