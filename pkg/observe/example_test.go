package observe_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
)

// The fault-table handler serves the strategy's fault table as JSON.
func ExampleNewTableHandler() {
	clk := clock.NewManual(time.Unix(0, 0).Add(time.Hour))
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, _ := latency.NewStrategy(cfg, latency.WithClock(clk))
	defer s.Close()
	s.Update("broker-a", 3*time.Second, false, true) // slow: isolated for 6 s

	rr := httptest.NewRecorder()
	observe.NewTableHandler(s, observe.WithHandlerClock(clk)).ServeHTTP(rr, httptest.NewRequest("GET", "/faults", nil))
	var snap observe.TableSnapshot
	_ = json.Unmarshal(rr.Body.Bytes(), &snap)
	b := snap.Brokers[0]
	fmt.Println(rr.Code, snap.Isolated, b.Broker, b.Available, b.RemainingMS)
	// Output: 200 1 broker-a false 6000
}

// The slog adapter writes one record per broker and kind per interval.
func ExampleNewLogger() {
	clk := clock.NewManual(time.Unix(0, 0))
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "until" {
			return slog.Attr{}
		}
		return a
	}})
	l := observe.NewLogger(slog.New(h), observe.WithInterval(10*time.Second), observe.WithLogClock(clk))
	for range 3 {
		l.OnIsolate(latency.IsolationEvent{Broker: "broker-a", Reason: latency.ReasonFailure, Duration: 10 * time.Second})
	}
	clk.Advance(10 * time.Second)
	l.OnIsolate(latency.IsolationEvent{Broker: "broker-a", Reason: latency.ReasonFailure, Duration: 10 * time.Second})
	// Output:
	// level=WARN msg="mqfault: broker isolated" broker=broker-a reason=failure latency=0s isolation=10s reachable=false
	// level=WARN msg="mqfault: broker isolated" broker=broker-a reason=failure latency=0s isolation=10s reachable=false suppressed=2
}
