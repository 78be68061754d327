package sim

import (
	"fmt"
	"time"
)

// FormatMS formats d in milliseconds as the table does: two decimals under
// 10 ms, one under 100 ms, none above.
func FormatMS(d time.Duration) string { return fmtMS(d) }

// Describe says in words what the event does, as the scenario summary does
// ("down: connections refused", "slow: median 600ms, p99 2.5s").
func (e Event) Describe() string { return e.describe() }

// FormatHerding formats a fleet's herding peak as the table does:
// "62% (broker-b, 16s)", or "0%" when no producer left a broker (or f is
// nil).
func FormatHerding(f *FleetResult) string {
	if f == nil {
		return "0%"
	}
	return fmtPeak(f.Peak, f.PeakBroker, f.PeakAt)
}

// FormatMoves formats a fleet's moves peak as the table does: "100%
// (broker-b, 5s)", or "0%" when no producer moved (or f is nil).
func FormatMoves(f *FleetResult) string {
	if f == nil {
		return "0%"
	}
	return fmtPeak(f.MovesPeak, f.MovesPeakBroker, f.MovesPeakAt)
}

// fmtPeak formats a peak share of the producers on broker in second at.
func fmtPeak(share float64, broker string, at int) string {
	if broker == "" {
		return "0%"
	}
	return fmt.Sprintf("%.0f%% (%s, %ds)", 100*share, broker, at)
}
