package sim

import (
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// clientGoAttemptTimeout is rocketmq-client-go v2.1.2's timeout of every
// sync attempt: sendSync calls InvokeSync with 3 s, whatever the send has
// used so far.
const clientGoAttemptTimeout = 3 * time.Second

// ClientStrategies returns the contenders that model a client's own
// behaviour rather than a fault-tolerance setting; they are not among
// Strategies (so not run unless named):
//
//   - client-go: rocketmq-client-go v2.1.2 as it is, without the
//     integration: its round-robin queue selector over the whole route,
//     retries that do not avoid the broker that just failed (sendSync
//     declares a new mq inside its loop, so lastBrokerName stays empty), 3
//     retries, a 3 s timeout of its own on every attempt and no budget for
//     the whole send, a retry after every transport error and after codes
//     1, 14, 16 and 17 only (needRetryCode; a SYSTEM_BUSY answer fails the
//     send).
//
// Each call returns a new slice that the caller may change.
func ClientStrategies() []Strategy {
	pc := producer.Reference5()
	pc.RetryTimes = 3 // ClientOptions.RetryTimes
	pc.RetryCodes = []int{1, 14, 16, 17}
	// No budget of its own: each attempt gets its 3 s; the loop's cap
	// makes every attempt but the last ask for 3 s, the transport caps the
	// last (AttemptTimeout).
	pc.MaxTimeoutPerRequest = clientGoAttemptTimeout
	return []Strategy{
		{Name: "client-go", Summary: "rocketmq-client-go v2.1.2 alone: round robin over every queue, 3 retries that may go back to the failed broker, 3 s per attempt",
			Latency: latency.Reference5(), Producer: pc, AttemptTimeout: clientGoAttemptTimeout,
			Picker: func(s *latency.Strategy) producer.Strategy { return &clientGoPicker{Strategy: s} }},
	}
}

// ClientStrategyNames returns the names of ClientStrategies, in order.
func ClientStrategyNames() []string {
	var names []string
	for _, s := range ClientStrategies() {
		names = append(names, s.Name)
	}
	return names
}

// clientGoPicker is rocketmq-client-go v2.1.2's roundRobinQueueSelector as
// its sync send uses it: one counter per producer and topic, starting at 0
// and incremented before each pick, the queue at counter modulo the route's
// length, whatever the send's last broker (its sendSync never passes one).
// It keeps the latency strategy for the rest of producer.Strategy (mode,
// route changes) and reports nothing to it: the client has no fault table.
// Select is safe for concurrent use and allocates nothing.
type clientGoPicker struct {
	*latency.Strategy
	next atomic.Uint32
}

func (c *clientGoPicker) Select(info *route.PublishInfo, _ latency.PickInfo) (latency.Pick, bool) {
	n := info.Len()
	if n == 0 {
		return latency.Pick{}, false
	}
	i := c.next.Add(1) % uint32(n)
	return latency.Pick{Queue: info.QueueRef(int(i)), Stage: latency.StageAny}, true
}
