package probetest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTCPDetectorConforms runs the suite on the built-in detector.
func TestTCPDetectorConforms(t *testing.T) {
	probetest.Run(t, probe.TCPDetector{}, probetest.Endpoints{
		Reachable:   []string{probetest.ListenTCP(t), probetest.SilentTCP(t)},
		Unreachable: []string{probetest.ClosedTCP(t)},
	})
}
