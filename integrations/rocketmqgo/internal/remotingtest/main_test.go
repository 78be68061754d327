package remotingtest_test

import (
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"go.uber.org/goleak"
)

// clientGoroutines are the goroutines rocketmq-client-go v2.1.2 leaves
// running after every producer was shut down and every server closed. Each
// is matched by a function of its own, so a producer left running (its
// route-update and rebalance loops, its connection readers) still fails the
// check.
var clientGoroutines = []goleak.Option{
	// The package-level RequestResponseFutureMap holds a go-cache whose
	// janitor starts at package init and is never stopped.
	goleak.IgnoreTopFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
	// rmqClient.Start's name-server-address refresher sleeps 10 s before it
	// first looks at the done channel, so it outlives Shutdown by up to 10 s.
	goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.1"),
	// Its heartbeat loop sleeps 1 s first, likewise.
	goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.3"),
	// Its consumer-offset persister sleeps 10 s first, likewise.
	goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.4"),
}

func TestMain(m *testing.M) {
	// The client logs through logrus to stdout; keep only its errors.
	rlog.SetLogLevel("error")
	goleak.VerifyTestMain(m, clientGoroutines...)
}
