package latency

import "time"

// ModeV4 decides as RocketMQ 4.9.8 does: one scan, no last-broker
// avoidance with fault tolerance on, the least-bad fallback, isolation
// overwritten on every update, no reachability and no detector.
const ModeV4 Mode = "v4"

// spec4 is RocketMQ 4.9.8's mode.
var spec4 = modeSpec{
	mode:             ModeV4,
	about:            "RocketMQ 4.9.8",
	cascade:          func(s *Strategy) cascade { return cascade4{s} },
	durations:        func() DurationTable { return v4Durations() },
	isolationLatency: 30000 * time.Millisecond,
	update:           update4,
	rules:            &rules4,
	leastBad:         true,
	send: SendRules{
		RetryCodes: []int{17, 14, 1, 16, 204, 205},
		Classes:    send4,
	},
}

// rules4 is RocketMQ 4.9.8's: isolation only (the reachable flag is always
// reported true), the same on every path.
var rules4 = ruleTable{PathSend: path4, PathAsyncAnswer: path4, PathAsyncResend: path4}

// path4 is 4.9.8's rule for each class, on any path: everything but an
// answer or a cancellation isolates.
var path4 = [numClasses]rule{
	ClassAnswered:         ruleAnswered,
	ClassBusy:             ruleCharged,
	ClassBroker:           ruleCharged,
	ClassTransportFailed:  ruleCharged,
	ClassTransportTimeout: ruleCharged,
	ClassTransportNotSent: ruleCharged,
	ClassThrottled:        ruleCharged,
	ClassClient:           ruleCharged, // 4.9.8 isolates on MQClientException
	ClassCancelled:        ruleAnswered,
}

// send4 is 4.9.8's: as 5.3.3's, but an async request the client's flow
// control refused is retried as any transport failure.
var send4 = [numClasses]SendRule{
	ClassAnswered:         sendAnswered,
	ClassBusy:             sendBroker,
	ClassBroker:           sendBroker,
	ClassTransportFailed:  sendTransport,
	ClassTransportTimeout: sendTransport,
	ClassTransportNotSent: sendTransport,
	ClassThrottled:        sendTransport,
	ClassClient:           sendClient,
	ClassCancelled:        sendCancelled,
}
