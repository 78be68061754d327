package producer

import "github.com/mqfault/mqfault/pkg/latency"

// modeRules are the send-loop rules a strategy mode fixes, beyond the fault
// updates (latency.UpdateFor): the places where RocketMQ 5.3.3's and 4.9.8's
// send loops differ. NewPolicy picks a mode's rules once; the Loop reads
// them and never asks which mode it follows.
type modeRules struct {
	// retryCodes are the broker response codes a sync send retries after
	// when Config.RetryCodes is nil.
	retryCodes func() []int
	// resetIndex makes a sync retry's pick reset the route's index
	// (latency.PickInfo.ResetIndex: 5.x's sendDefaultImpl resetIndex; 4.9.8
	// has none).
	resetIndex bool
	// asyncRetryBudget makes an async retry check the send's budget before
	// it starts (5.x's onExceptionImpl ends the send once Timeout has passed;
	// 4.9.8 retries whatever the time).
	asyncRetryBudget bool
	// classes is what the loop does after an attempt of each outcome class.
	classes classRules
}

// rulesByMode holds each mode's rules; a new mode is one entry.
var rulesByMode = map[latency.Mode]modeRules{
	latency.ModeV5: {retryCodes: RetryCodes5, resetIndex: true, asyncRetryBudget: true, classes: classes5},
	latency.ModeV4: {retryCodes: RetryCodes4, classes: classes4},
}

// next is what the send loop does after an attempt, by its class.
type next uint8

const (
	// nextNone is a missing row: TestClassRulesEveryClass fails on it, and
	// the loop treats it as a transport failure (classRules.class).
	nextNone next = iota
	// nextAnswer keeps the answer and ends the send (a sync send retries a
	// status other than SendOK with RetryAnotherBrokerWhenNotStoreOK).
	nextAnswer
	// nextRetry starts the next attempt, if one is left.
	nextRetry
	// nextRetryCode retries when the broker's code is a retry code, else
	// ends the send with its last answer or the row's stop.
	nextRetryCode
	// nextEnd ends the send with the row's stop.
	nextEnd
	// nextUnsent (async only): the request never left the client, so the
	// attempt is a failure before dispatch whenever it is reported.
	nextUnsent
)

// classRule is what the send loop does after an attempt met one class.
type classRule struct {
	// sync is the rule for a sync or oneway attempt, and for an async first
	// attempt that failed before its request was handed over.
	sync next
	// async is the rule for an async attempt after its hand-over
	// (latency.PathAsyncAnswer). A failure before the hand-over is reported
	// on latency.PathSend (a first attempt: the sync rule, but never
	// retried) or latency.PathAsyncResend (a retry: retried).
	async next
	// stop is how a send ends when this class ends it: after nextEnd, a
	// nextRetryCode not retried, or an attempt never retried
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
// latency.Classes, or a row left out, which TestClassRulesEveryClass
// forbids) is a transport failure, as latency.UpdateFor treats an unknown
// class.
func (rs classRules) class(c latency.Class) classRule {
	if int(c) < len(rs) && rs[c].sync != nextNone {
		return rs[c]
	}
	return rs[latency.ClassTransportFailed]
}

var (
	ruleAnswered  = classRule{sync: nextAnswer, async: nextAnswer, stop: StopAnswered}
	ruleBroker    = classRule{sync: nextRetryCode, async: nextEnd, stop: StopBrokerError}
	ruleTransport = classRule{sync: nextRetry, async: nextRetry, stop: StopFailed, network: true}
	ruleClient    = classRule{sync: nextRetry, async: nextUnsent, stop: StopFailed}
	ruleCancelled = classRule{sync: nextEnd, async: nextEnd, stop: StopCancelled}
)

// classes5 is RocketMQ 5.3.3's sendDefaultImpl and MQClientAPIImpl: a busy
// answer is a broker code like any other (retried when it is a retry code),
// an async answer with an error code is not retried, and neither is an async
// request the client's own flow control refused
// (RemotingTooMuchRequestException).
var classes5 = classRules{
	latency.ClassAnswered:         ruleAnswered,
	latency.ClassBusy:             ruleBroker,
	latency.ClassBroker:           ruleBroker,
	latency.ClassTransportFailed:  ruleTransport,
	latency.ClassTransportTimeout: ruleTransport,
	latency.ClassTransportNotSent: ruleTransport,
	latency.ClassThrottled:        {sync: nextRetry, async: nextEnd, stop: StopFailed, network: true},
	latency.ClassClient:           ruleClient,
	latency.ClassCancelled:        ruleCancelled,
}

// classes4 is RocketMQ 4.9.8's: as 5.3.3's, but an async request the
// client's flow control refused is retried as any transport failure.
var classes4 = classRules{
	latency.ClassAnswered:         ruleAnswered,
	latency.ClassBusy:             ruleBroker,
	latency.ClassBroker:           ruleBroker,
	latency.ClassTransportFailed:  ruleTransport,
	latency.ClassTransportTimeout: ruleTransport,
	latency.ClassTransportNotSent: ruleTransport,
	latency.ClassThrottled:        ruleTransport,
	latency.ClassClient:           ruleClient,
	latency.ClassCancelled:        ruleCancelled,
}
