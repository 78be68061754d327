package observe

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

func newTestStrategy(t *testing.T, clk clock.Clock, counter *latency.StageCounter) *latency.Strategy {
	t.Helper()
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	opts := []latency.Option{latency.WithClock(clk)}
	if counter != nil {
		opts = append(opts, latency.WithStageCounter(counter))
	}
	s, err := latency.NewStrategy(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestTableHandler(t *testing.T) {
	clk := clock.NewManual(t0)
	s := newTestStrategy(t, clk, latency.NewStageCounter())
	s.Update("a", 5*time.Millisecond, false, true)
	s.Update("b", 20*time.Millisecond, true, false) // isolated 10 s (v5 table for 10000 ms)
	info, err := route.NewPublishInfoFromQueues("T", []route.MessageQueue{{Topic: "T", BrokerName: "a"}, {Topic: "T", BrokerName: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Select(info, latency.PickInfo{})
	}
	clk.Advance(4 * time.Second)

	h := NewTableHandler(s, WithHandlerClock(clk))
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/faults", nil))
	if rr.Code != http.StatusOK || rr.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET = %d %q, want 200 application/json", rr.Code, rr.Header().Get("Content-Type"))
	}
	var snap TableSnapshot
	if err := json.Unmarshal(rr.Body.Bytes(), &snap); err != nil {
		t.Fatalf("body is not a TableSnapshot: %v\n%s", err, rr.Body)
	}
	if snap.Mode != "v5" || !snap.FaultTolerance || snap.Detector || snap.Isolated != 1 || snap.Unreachable != 1 || len(snap.Brokers) != 2 {
		t.Fatalf("snapshot = %+v, want v5, fault tolerance on, detector off, 1 isolated, 1 unreachable, 2 brokers", snap)
	}
	a, b := snap.Brokers[0], snap.Brokers[1]
	if a.Broker != "a" || !a.Available || !a.Reachable || a.IsolatedUntil != nil || a.LatencyMS != 5 {
		t.Errorf("broker a = %+v, want available, reachable, never isolated, 5 ms", a)
	}
	if b.Broker != "b" || b.Available || b.Reachable || b.IsolatedUntil == nil || !b.IsolatedUntil.Equal(t0.Add(10*time.Second)) || b.RemainingMS != 6000 {
		t.Errorf("broker b = %+v, want isolated until t0+10s with 6000 ms left, unreachable", b)
	}
	if snap.Picks["available"] != 3 {
		t.Errorf("picks = %v, want 3 answered by available", snap.Picks)
	}
	if !snap.Time.Equal(t0.Add(4 * time.Second)) {
		t.Errorf("time = %v, want the handler clk's %v", snap.Time, t0.Add(4*time.Second))
	}
}

func TestTableHandlerMethods(t *testing.T) {
	s := newTestStrategy(t, clock.NewManual(t0), nil)
	tests := []struct {
		name     string
		strategy *latency.Strategy
		method   string
		code     int
		body     bool
	}{
		{"get", s, http.MethodGet, http.StatusOK, true},
		{"head", s, http.MethodHead, http.StatusOK, false},
		{"post", s, http.MethodPost, http.StatusMethodNotAllowed, true},
		{"delete", s, http.MethodDelete, http.StatusMethodNotAllowed, true},
		{"no strategy", nil, http.MethodGet, http.StatusServiceUnavailable, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr := httptest.NewRecorder()
			NewTableHandler(tt.strategy).ServeHTTP(rr, httptest.NewRequest(tt.method, "/", nil))
			if rr.Code != tt.code || (rr.Body.Len() > 0) != tt.body {
				t.Errorf("%s = %d with %d bytes, want %d (body %v)", tt.method, rr.Code, rr.Body.Len(), tt.code, tt.body)
			}
			if tt.code == http.StatusMethodNotAllowed && rr.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow = %q, want GET, HEAD", rr.Header().Get("Allow"))
			}
		})
	}
	// Without a stage counter, the snapshot has no picks.
	if snap := Snapshot(s, t0); snap.Picks != nil {
		t.Errorf("Snapshot().Picks = %v without a counter, want nil", snap.Picks)
	}
}
