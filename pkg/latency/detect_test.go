package latency_test

import (
	"testing"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
)

// TestTCPDetectorInStrategy runs a detector round with the built-in TCP
// detector on a manual clock: the listener's broker becomes reachable, the
// closed port's stays unreachable.
func TestTCPDetectorInStrategy(t *testing.T) {
	open, closed := probetest.ListenTCP(t), probetest.ClosedTCP(t)
	cfg := latency.DefaultConfig()
	clk := clock.NewManual(t0)
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk),
		latency.WithResolver(probe.StaticResolver{"up": open, "down": closed}),
		latency.WithServiceDetector(probe.TCPDetector{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Update("up", 0, true, false) // a transport error with the detector on
	s.Update("down", 0, true, false)
	rep, err := s.DetectRound(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reachable != 1 || rep.Unreachable != 1 {
		t.Errorf("DetectRound() = %+v, want one reachable, one unreachable", rep)
	}
	if !s.Table().IsReachable("up") || s.Table().IsReachable("down") {
		t.Errorf("IsReachable(up), IsReachable(down) = %t, %t, want true, false",
			s.Table().IsReachable("up"), s.Table().IsReachable("down"))
	}
}
