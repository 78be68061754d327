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
	// asyncOverloadEnds makes an async attempt that the transport refused as
	// overloaded end the send instead of being retried (5.x does not retry a
	// RemotingTooMuchRequestException; 4.9.8 retries it as any other
	// transport error).
	asyncOverloadEnds bool
}

// rulesByMode holds each mode's rules; a new mode is one entry.
var rulesByMode = map[latency.Mode]modeRules{
	latency.ModeV5: {retryCodes: RetryCodes5, resetIndex: true, asyncRetryBudget: true, asyncOverloadEnds: true},
	latency.ModeV4: {retryCodes: RetryCodes4},
}
