package rocketmqgo

import (
	"log/slog"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
)

// quietLog discards what the strategy and the send loop log.
var quietLog = slog.New(slog.DiscardHandler)

// TestMain checks that no test leaves a goroutine behind, besides exactly
// the client's own leftovers (remotingtest.IgnoreClientGoroutines lists
// them: its cache janitor, and Start goroutines that sleep before they look
// at their done channel).
func TestMain(m *testing.M) {
	rlog.SetLogLevel("error") // the client logs through logrus to stdout
	goleak.VerifyTestMain(m, remotingtest.IgnoreClientGoroutines()...)
}
