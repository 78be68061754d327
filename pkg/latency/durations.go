package latency

import (
	"slices"
	"strconv"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
)

// DurationTable decides how long a send that took latency isolates its broker
// (the reference's latencyMax / notAvailableDuration); zero is not at all. It
// is asked on every fault update: fast, never blocking, safe for concurrent use.
type DurationTable interface {
	Isolation(latency time.Duration) time.Duration
}

// StepTable is the reference's duration table: ascending thresholds and the
// isolation of each; a latency gets that of the highest threshold not above it,
// or 0 below the first. Immutable and safe for concurrent use.
type StepTable struct {
	latencyMax   []time.Duration
	notAvailable []time.Duration
}

var _ DurationTable = (*StepTable)(nil)

// NewStepTable builds a table from its two columns. Unequal lengths, thresholds
// not strictly ascending and negative values are errors (the reference throws
// only on a longer threshold column and accepts thresholds out of order, which
// changes its answers): one *ConfigError per problem, joined, its Field the
// column (latencyMax or notAvailable), its Item the position from 1.
func NewStepTable(latencyMax, notAvailable []time.Duration) (*StepTable, error) {
	var l configerr.List
	if len(latencyMax) != len(notAvailable) {
		l.Add(&ConfigError{Field: "notAvailable", Value: items(len(notAvailable)),
			Reason:  "must have as many items as latencyMax (" + items(len(latencyMax)) + "): the columns go in pairs",
			Related: "latencyMax", Err: ErrInvalidConfig})
	}
	for i, d := range latencyMax {
		switch {
		case d < 0:
			l.Add(&ConfigError{Field: "latencyMax", Item: i + 1, Value: d, Reason: "must not be negative", Err: ErrInvalidConfig})
		case i > 0 && d <= latencyMax[i-1]:
			l.Add(&ConfigError{Field: "latencyMax", Item: i + 1, Value: d,
				Reason: "thresholds must be strictly ascending (the one before is " + latencyMax[i-1].String() + ")", Err: ErrInvalidConfig})
		}
	}
	for i, d := range notAvailable {
		if d < 0 {
			l.Add(&ConfigError{Field: "notAvailable", Item: i + 1, Value: d, Reason: "must not be negative", Err: ErrInvalidConfig})
		}
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return &StepTable{latencyMax: slices.Clone(latencyMax), notAvailable: slices.Clone(notAvailable)}, nil
}

func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return strconv.Itoa(n) + " items"
}

// mustStepTable is NewStepTable for tables known to be valid at compile time;
// it panics on an invalid table.
func mustStepTable(latencyMax, notAvailable []time.Duration) *StepTable {
	t, err := NewStepTable(latencyMax, notAvailable)
	if err != nil {
		panic(err)
	}
	return t
}

// Isolation scans from the highest threshold down and returns the duration of
// the first threshold <= latency, or 0.
func (t *StepTable) Isolation(latency time.Duration) time.Duration {
	for i := len(t.latencyMax) - 1; i >= 0; i-- {
		if latency >= t.latencyMax[i] {
			return t.notAvailable[i]
		}
	}
	return 0
}

// Columns returns copies of the table's two columns.
func (t *StepTable) Columns() (latencyMax, notAvailable []time.Duration) {
	return slices.Clone(t.latencyMax), slices.Clone(t.notAvailable)
}

func ms(v ...int64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

// v5Durations returns RocketMQ 5.x's table: latency >= {50, 100, 550, 1800,
// 3000, 5000, 15000} ms isolates for {0, 0, 2000, 5000, 6000, 10000, 30000} ms.
func v5Durations() *StepTable {
	return &StepTable{latencyMax: ms(50, 100, 550, 1800, 3000, 5000, 15000), notAvailable: ms(0, 0, 2000, 5000, 6000, 10000, 30000)}
}

// v4Durations returns RocketMQ 4.x's table: latency >= {50, 100, 550, 1000,
// 2000, 3000, 15000} ms isolates for {0, 0, 30000, 60000, 120000, 180000,
// 600000} ms.
func v4Durations() *StepTable {
	return &StepTable{latencyMax: ms(50, 100, 550, 1000, 2000, 3000, 15000), notAvailable: ms(0, 0, 30000, 60000, 120000, 180000, 600000)}
}

// durationTableFunc adapts a function to a DurationTable.
type durationTableFunc func(latency time.Duration) time.Duration

// Isolation calls f(latency).
func (f durationTableFunc) Isolation(latency time.Duration) time.Duration { return f(latency) }
