package remotingtest

import "go.uber.org/goleak"

// clientStart is the function whose closures are rmqClient.Start's
// background goroutines in rocketmq-client-go v2.1.2.
const clientStart = "github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1"

// IgnoreClientGoroutines returns goleak options that ignore exactly the
// goroutines rocketmq-client-go v2.1.2 may leave running after every
// producer was shut down and every server closed:
//
//   - the go-cache janitor of the client's package-level
//     RequestResponseFutureMap, started at package init, never stopped;
//   - rmqClient.Start's name-server-address refresher (func1.1) and offset
//     persister (func1.4), which sleep 10 s before they first look at their
//     done channel, and its heartbeat loop (func1.3), which sleeps 1 s;
//   - its route refresher (func1.2), which, when a test closes the name
//     server while the refresher's lookup is in flight, waits out the
//     lookup's 6 s timeout: the client never fails requests pending on a
//     connection that closed.
//
// Each is matched by its own function, so a producer left running still
// fails the check through its rebalance loop (func1.5) and its connection
// readers. The options are meant for goleak.VerifyTestMain or VerifyNone.
func IgnoreClientGoroutines() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
		goleak.IgnoreAnyFunction(clientStart + ".1"),
		goleak.IgnoreAnyFunction(clientStart + ".2"),
		goleak.IgnoreAnyFunction(clientStart + ".3"),
		goleak.IgnoreAnyFunction(clientStart + ".4"),
	}
}
