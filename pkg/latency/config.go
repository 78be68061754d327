package latency

import (
	"time"

	"github.com/mqfault/mqfault/pkg/route"
)

// Mode selects whose decisions the strategy reproduces.
type Mode string

const (
	// ModeV5 decides as RocketMQ 5.3.3 does (the default).
	ModeV5 Mode = "v5"
	// ModeV4 decides as RocketMQ 4.9.8 does: one scan, no last-broker
	// avoidance with fault tolerance on, the least-bad fallback, isolation
	// overwritten on every update, no reachability and no detector.
	ModeV4 Mode = "v4"
)

// Valid reports whether m is a known mode (the empty mode counts as ModeV5).
func (m Mode) Valid() bool { return m == "" || m == ModeV5 || m == ModeV4 }

func (m Mode) orDefault() Mode {
	if m == "" {
		return ModeV5
	}
	return m
}

// Config holds the strategy's settings. Collaborators (clock, resolver,
// detector, fault table) are Options of NewStrategy.
type Config struct {
	// Mode is ModeV5 (default) or ModeV4.
	Mode Mode
	// FaultTolerance turns latency fault tolerance on (the reference's
	// sendLatencyFaultEnable). Off, Update does nothing and Select only
	// avoids the last broker.
	FaultTolerance bool
	// Detector turns the detector on (startDetectorEnable, v5 only): it gates
	// the background rounds, and a transport error then marks the broker
	// unreachable instead of only isolating it.
	Detector bool
	// DetectInterval is how long a broker's check stamp holds after it is
	// checked: a broker is probed at most once per interval (reference 2 s).
	DetectInterval time.Duration
	// DetectTimeout bounds each probe (reference 200 ms).
	DetectTimeout time.Duration
	// DetectPeriod is how often the background loop runs a round
	// (reference 3 s).
	DetectPeriod time.Duration
	// DetectParallel bounds how many probes of one round run at once. The
	// reference probes one after another: 1.
	DetectParallel int
	// Durations is the duration table; nil means the mode's own
	// (V5Durations or V4Durations).
	Durations DurationTable
	// Filters are user filters joined into the cascade (see Strategy.Select).
	Filters []route.QueueFilter
}

// Reference5 returns RocketMQ 5.3.3's defaults exactly: mode v5, fault
// tolerance off, detector off, interval 2 s, timeout 200 ms, a round every 3 s,
// one probe at a time, the 5.x table.
func Reference5() Config {
	return Config{
		Mode:           ModeV5,
		DetectInterval: 2000 * time.Millisecond,
		DetectTimeout:  200 * time.Millisecond,
		DetectPeriod:   3 * time.Second,
		DetectParallel: 1,
	}
}

// Reference4 returns RocketMQ 4.9.8's defaults exactly: mode v4, fault
// tolerance off, the 4.x table. (4.x has no detector; its settings are kept
// valid so a Config can switch modes.)
func Reference4() Config {
	c := Reference5()
	c.Mode = ModeV4
	return c
}

// DefaultConfig returns the recommended settings: the 5.3.3 semantics with
// fault tolerance and the detector on, and probes of one round run 16 at a
// time so a round over many isolated brokers takes about one probe timeout.
func DefaultConfig() Config {
	c := Reference5()
	c.FaultTolerance = true
	c.Detector = true
	c.DetectParallel = 16
	return c
}

// Validate reports the first setting that is out of range, as a *ConfigError.
func (c Config) Validate() error {
	switch {
	case !c.Mode.Valid():
		return &ConfigError{Field: "Mode", Value: string(c.Mode), Reason: `must be "v5" or "v4"`}
	case c.DetectInterval <= 0:
		return &ConfigError{Field: "DetectInterval", Value: c.DetectInterval, Reason: "must be positive"}
	case c.DetectTimeout <= 0:
		return &ConfigError{Field: "DetectTimeout", Value: c.DetectTimeout, Reason: "must be positive"}
	case c.DetectPeriod <= 0:
		return &ConfigError{Field: "DetectPeriod", Value: c.DetectPeriod, Reason: "must be positive"}
	case c.DetectParallel < 1:
		return &ConfigError{Field: "DetectParallel", Value: c.DetectParallel, Reason: "must be at least 1"}
	case c.Mode == ModeV4 && c.Detector:
		return &ConfigError{Field: "Detector", Value: true, Reason: "mode v4 has no detector"}
	}
	for i, f := range c.Filters {
		if f == nil {
			return &ConfigError{Field: "Filters", Value: i, Reason: "filter is nil"}
		}
		if fn, ok := f.(route.QueueFilterFunc); ok && fn == nil {
			return &ConfigError{Field: "Filters", Value: i, Reason: "filter is a nil QueueFilterFunc"}
		}
	}
	if c.Durations != nil && nilTable(c.Durations) {
		return &ConfigError{Field: "Durations", Value: c.Durations, Reason: "is a nil table (leave it nil for the mode's own)"}
	}
	return nil
}

// nilTable reports whether t is a typed nil of the package's own table types,
// which would panic when consulted.
func nilTable(t DurationTable) bool {
	switch v := t.(type) {
	case *StepTable:
		return v == nil
	case DurationTableFunc:
		return v == nil
	}
	return false
}
