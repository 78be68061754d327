package latency

import "time"

// ModeV5 decides as RocketMQ 5.3.3 does (the default).
const ModeV5 Mode = "v5"

// spec5 is RocketMQ 5.3.3's mode.
var spec5 = modeSpec{
	mode:             ModeV5,
	about:            "RocketMQ 5.3.3",
	cascade:          func(s *Strategy) cascade { return cascade5{s} },
	durations:        func() DurationTable { return v5Durations() },
	isolationLatency: 10000 * time.Millisecond,
	update:           update5,
	rules:            &rules5,
	detector:         true,
	reachability:     true,
	policies:         true,
	send: SendRules{
		RetryCodes:       []int{17, 14, 1, 2, 16, 204, 205, 1500},
		ResetIndex:       true,
		AsyncRetryBudget: true,
		Classes:          send5,
	},
}

// rules5 is RocketMQ 5.3.3's: sendDefaultImpl's catch blocks, and
// MQClientAPIImpl.sendMessageAsync's callbacks and catch.
var rules5 = ruleTable{
	PathSend: {
		ClassAnswered:         ruleAnswered,
		ClassBusy:             ruleFailed, // an MQBrokerException like any other code
		ClassBroker:           ruleFailed,
		ClassTransportFailed:  ruleTransport,
		ClassTransportTimeout: ruleTransport,
		ClassTransportNotSent: ruleTransport,
		ClassThrottled:        ruleTransport,
		ClassClient:           ruleAnswered, // MQClientException: (false, true)
		ClassCancelled:        ruleAnswered, // InterruptedException: (false, true)
	},
	PathAsyncAnswer: {
		ClassAnswered:         ruleAnswered,
		ClassBusy:             ruleCharged,
		ClassBroker:           ruleCharged,
		ClassTransportFailed:  ruleCharged,
		ClassTransportTimeout: ruleCharged,
		ClassTransportNotSent: ruleFailed,
		ClassThrottled:        ruleCharged,
		ClassClient:           ruleFailed,
		ClassCancelled:        ruleAnswered,
	},
	PathAsyncResend: {
		ClassAnswered:         ruleAnswered,
		ClassBusy:             ruleFailed,
		ClassBroker:           ruleFailed,
		ClassTransportFailed:  ruleFailed,
		ClassTransportTimeout: ruleFailed,
		ClassTransportNotSent: ruleFailed,
		ClassThrottled:        ruleFailed,
		ClassClient:           ruleFailed,
		ClassCancelled:        ruleAnswered,
	},
}

// send5 is 5.3.3's sendDefaultImpl and MQClientAPIImpl: a busy answer is a
// broker code like any other (retried when it is a retry code), an async
// answer with an error code is not retried, and neither is an async request
// the client's own flow control refused (RemotingTooMuchRequestException).
var send5 = [numClasses]SendRule{
	ClassAnswered:         sendAnswered,
	ClassBusy:             sendBroker,
	ClassBroker:           sendBroker,
	ClassTransportFailed:  sendTransport,
	ClassTransportTimeout: sendTransport,
	ClassTransportNotSent: sendTransport,
	ClassThrottled:        {Sync: NextRetry, Async: NextEnd},
	ClassClient:           sendClient,
	ClassCancelled:        sendCancelled,
}
