package detectortest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/latency/detectortest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTCPDetectorConforms runs the suite on the built-in detector.
func TestTCPDetectorConforms(t *testing.T) {
	detectortest.Run(t, latency.TCPDetector{}, detectortest.Endpoints{
		Reachable:   []string{detectortest.ListenTCP(t), detectortest.SilentTCP(t)},
		Unreachable: []string{detectortest.ClosedTCP(t)},
	})
}
