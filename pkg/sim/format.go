package sim

import "time"

// FormatMS formats d in milliseconds as the table does: two decimals under
// 10 ms, one under 100 ms, none above.
func FormatMS(d time.Duration) string { return fmtMS(d) }

// Describe says in words what the event does, as the scenario summary does
// ("down: connections refused", "slow: median 600ms, p99 2.5s").
func (e Event) Describe() string { return e.describe() }
