package remotingtest_test

import (
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
)

func TestMain(m *testing.M) {
	// The client logs through logrus to stdout; keep only its errors.
	rlog.SetLogLevel("error")
	goleak.VerifyTestMain(m, remotingtest.IgnoreClientGoroutines()...)
}
