package observe

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// TableSnapshot is what the fault-table handler serves: the strategy's
// switches, every broker's fault item, and (when the strategy counts them)
// picks by cascade stage.
type TableSnapshot struct {
	// Time is when the snapshot was taken, on the handler's clock.
	Time           time.Time `json:"time"`
	Mode           string    `json:"mode"`
	FaultTolerance bool      `json:"fault_tolerance"`
	Detector       bool      `json:"detector"`
	// Isolated and Unreachable count the brokers that are.
	Isolated    int           `json:"isolated"`
	Unreachable int           `json:"unreachable"`
	Brokers     []BrokerState `json:"brokers"`
	// Picks counts picks by the stage that answered them (none, available,
	// reachable, not_last, filtered, least_bad, any); absent when the
	// strategy has no latency.StageCounter.
	Picks map[string]uint64 `json:"picks,omitempty"`
}

// BrokerState is one broker's fault item in a TableSnapshot.
type BrokerState struct {
	Broker string `json:"broker"`
	// LatencyMS is the latency of the broker's last send, in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
	Available bool    `json:"available"`
	Reachable bool    `json:"reachable"`
	// IsolatedUntil is when the broker's isolation ends; absent when it was
	// never isolated.
	IsolatedUntil *time.Time `json:"isolated_until,omitempty"`
	// RemainingMS is how much of the isolation is left, in milliseconds
	// (0 when available).
	RemainingMS float64 `json:"remaining_ms"`
	// NextCheck is when the detector may probe the broker next; absent when
	// it may now.
	NextCheck *time.Time `json:"next_check,omitempty"`
}

// TableHandlerOption configures the fault-table handler.
type TableHandlerOption func(*tableHandler)

// WithHandlerClock sets the clock the snapshot's time and remaining
// isolations are read on (default clock.Real): give the strategy's.
func WithHandlerClock(c clock.Clock) TableHandlerOption {
	return func(h *tableHandler) {
		if c != nil {
			h.clock = c
		}
	}
}

// NewTableHandler returns a read-only http.Handler serving a snapshot of s's
// fault table as JSON (a TableSnapshot). It answers GET and HEAD, and 405
// Method Not Allowed to anything else. A nil s serves 503 Service
// Unavailable. It is safe for concurrent use; a request takes the snapshot
// (FaultTable.Items) and does not touch the pick path.
func NewTableHandler(s *latency.Strategy, opts ...TableHandlerOption) http.Handler {
	h := &tableHandler{s: s, clock: clock.Real{}}
	for _, opt := range opts {
		opt(h)
	}
	return h
}

type tableHandler struct {
	s     *latency.Strategy
	clock clock.Clock
}

func (h *tableHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: the fault table is read-only", http.StatusMethodNotAllowed)
		return
	}
	if h.s == nil {
		http.Error(w, "no strategy", http.StatusServiceUnavailable)
		return
	}
	body, err := json.MarshalIndent(Snapshot(h.s, h.clock.Now()), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(append(body, '\n'))
	}
}

// Snapshot returns s's fault table and switches as of now. It is safe for
// concurrent use with everything the strategy does.
func Snapshot(s *latency.Strategy, now time.Time) TableSnapshot {
	items := s.Table().Items()
	snap := TableSnapshot{
		Time:           now,
		Mode:           string(s.Mode()),
		FaultTolerance: s.FaultToleranceEnabled(),
		Detector:       s.DetectorEnabled(),
		Brokers:        make([]BrokerState, 0, len(items)),
	}
	for _, it := range items {
		b := BrokerState{
			Broker:    it.Broker,
			LatencyMS: float64(it.Latency) / float64(time.Millisecond),
			Available: it.Available,
			Reachable: it.Reachable,
		}
		if it.IsolatedUntil.After(time.Unix(0, 0)) {
			until := it.IsolatedUntil
			b.IsolatedUntil = &until
			if !it.Available && until.After(now) {
				b.RemainingMS = float64(until.Sub(now)) / float64(time.Millisecond)
			}
		}
		if it.CheckStamp.After(now) {
			next := it.CheckStamp
			b.NextCheck = &next
		}
		if !it.Available {
			snap.Isolated++
		}
		if !it.Reachable {
			snap.Unreachable++
		}
		snap.Brokers = append(snap.Brokers, b)
	}
	if c := s.StageCounter(); c != nil {
		snap.Picks = make(map[string]uint64)
		for _, st := range latency.Stages() {
			snap.Picks[st.String()] = c.Count(st)
		}
	}
	return snap
}
