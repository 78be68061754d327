package latency_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

func msd(v ...int64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestDurationPresets(t *testing.T) {
	tests := []struct {
		name               string
		table              *latency.StepTable
		latencyMax, notAva []time.Duration
	}{
		{"v5", latency.V5Durations(), msd(50, 100, 550, 1800, 3000, 5000, 15000), msd(0, 0, 2000, 5000, 6000, 10000, 30000)},
		{"v4", latency.V4Durations(), msd(50, 100, 550, 1000, 2000, 3000, 15000), msd(0, 0, 30000, 60000, 120000, 180000, 600000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lm, na := tt.table.Columns()
			if !slices.Equal(lm, tt.latencyMax) || !slices.Equal(na, tt.notAva) {
				t.Errorf("Columns() = %v, %v, want %v, %v", lm, na, tt.latencyMax, tt.notAva)
			}
			lm[0] = time.Hour // Columns returns copies
			if lm2, _ := tt.table.Columns(); lm2[0] != tt.latencyMax[0] {
				t.Errorf("Columns() returned the table's own slice")
			}
			if _, err := latency.NewStepTable(tt.latencyMax, tt.notAva); err != nil {
				t.Errorf("NewStepTable(preset) error = %v", err)
			}
		})
	}
}

// TestDurationBoundaries: the first threshold <= latency, scanning down,
// gives the isolation; a latency exactly at a threshold takes it.
func TestDurationBoundaries(t *testing.T) {
	tests := []struct {
		table   string
		latency int64
		want    int64
	}{
		{"v5", 0, 0},
		{"v5", 49, 0},
		{"v5", 50, 0},
		{"v5", 549, 0},
		{"v5", 550, 2000},
		{"v5", 1799, 2000},
		{"v5", 1800, 5000},
		{"v5", 3000, 6000},
		{"v5", 4999, 6000},
		{"v5", 5000, 10000},
		{"v5", 10000, 10000}, // a failed send's charge
		{"v5", 14999, 10000},
		{"v5", 15000, 30000},
		{"v5", 1 << 40, 30000},
		{"v5", -5, 0},
		{"v4", 549, 0},
		{"v4", 550, 30000},
		{"v4", 1000, 60000},
		{"v4", 2000, 120000},
		{"v4", 3000, 180000},
		{"v4", 14999, 180000},
		{"v4", 15000, 600000},
		{"v4", 30000, 600000}, // a failed send's charge: ten minutes
	}
	tables := map[string]latency.DurationTable{"v5": latency.V5Durations(), "v4": latency.V4Durations()}
	for _, tt := range tests {
		t.Run(tt.table+"/"+itoa(tt.latency), func(t *testing.T) {
			got := tables[tt.table].Isolation(time.Duration(tt.latency) * time.Millisecond)
			if want := time.Duration(tt.want) * time.Millisecond; got != want {
				t.Errorf("Isolation(%dms) = %v, want %v", tt.latency, got, want)
			}
		})
	}
}

func TestNewStepTable(t *testing.T) {
	tests := []struct {
		name               string
		latencyMax, notAva []time.Duration
		wantField          string // "" means valid
	}{
		{"empty", nil, nil, ""},
		{"one step", msd(10), msd(5), ""},
		{"unequal lengths, thresholds longer", msd(1, 2, 3), msd(1, 2), "notAvailable"},
		{"unequal lengths, durations longer", msd(1, 2), msd(1, 2, 3), "notAvailable"},
		{"equal thresholds", msd(1, 2, 2), msd(1, 2, 3), "latencyMax[2]"},
		{"descending thresholds", msd(1, 3, 2), msd(1, 2, 3), "latencyMax[2]"},
		{"negative threshold", msd(-1, 2), msd(1, 2), "latencyMax[0]"},
		{"negative duration", msd(1, 2), msd(1, -2), "notAvailable[1]"},
		{"durations need not ascend", msd(1, 2), msd(9, 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := latency.NewStepTable(tt.latencyMax, tt.notAva)
			if tt.wantField == "" {
				if err != nil || table == nil {
					t.Fatalf("NewStepTable() = %v, %v, want a table", table, err)
				}
				return
			}
			if table != nil {
				t.Errorf("NewStepTable() = %v, want nil", table)
			}
			if !errors.Is(err, latency.ErrInvalidConfig) {
				t.Fatalf("NewStepTable() error = %v, want one matching ErrInvalidConfig", err)
			}
			var ce *latency.ConfigError
			if !errors.As(err, &ce) || fieldName(ce) != tt.wantField {
				t.Errorf("NewStepTable() error = %#v, want a *ConfigError for %s", err, tt.wantField)
			}
			if !strings.HasPrefix(err.Error(), "latency: "+tt.wantField+" = ") {
				t.Errorf("Error() = %q, want it to start with the field", err)
			}
		})
	}
}

func TestNewStepTableCopiesColumns(t *testing.T) {
	lm, na := msd(10, 20), msd(100, 200)
	table, err := latency.NewStepTable(lm, na)
	if err != nil {
		t.Fatal(err)
	}
	lm[0], na[1] = time.Hour, time.Hour
	if got := table.Isolation(25 * time.Millisecond); got != 200*time.Millisecond {
		t.Errorf("Isolation(25ms) after the caller changed its slices = %v, want 200ms", got)
	}
	if got := table.Isolation(9 * time.Millisecond); got != 0 {
		t.Errorf("Isolation(9ms) = %v, want 0 below the first threshold", got)
	}
}

func TestMustStepTable(t *testing.T) {
	if got := latency.MustStepTable(msd(1), msd(2)).Isolation(time.Millisecond); got != 2*time.Millisecond {
		t.Errorf("MustStepTable(valid).Isolation(1ms) = %v, want 2ms", got)
	}
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.Is(err, latency.ErrInvalidConfig) {
			t.Errorf("MustStepTable(invalid) panicked with %v, want an ErrInvalidConfig error", r)
		}
	}()
	latency.MustStepTable(msd(1, 2), msd(1))
}

func TestDurationTableFunc(t *testing.T) {
	f := latency.DurationTableFunc(func(l time.Duration) time.Duration { return 2 * l })
	if got := f.Isolation(time.Second); got != 2*time.Second {
		t.Errorf("Isolation(1s) = %v, want 2s", got)
	}
}

func TestConfigPresets(t *testing.T) {
	tests := []struct {
		name string
		cfg  latency.Config
		want latency.Config
	}{
		{"Reference5", latency.Reference5(), latency.Config{Mode: latency.ModeV5, DetectInterval: 2 * time.Second,
			DetectTimeout: 200 * time.Millisecond, DetectPeriod: 3 * time.Second, DetectParallel: 1}},
		{"Reference4", latency.Reference4(), latency.Config{Mode: latency.ModeV4, DetectInterval: 2 * time.Second,
			DetectTimeout: 200 * time.Millisecond, DetectPeriod: 3 * time.Second, DetectParallel: 1}},
		{"DefaultConfig", latency.DefaultConfig(), latency.Config{Mode: latency.ModeV5, FaultTolerance: true, Detector: true,
			DetectInterval: time.Second, DetectTimeout: 200 * time.Millisecond, DetectPeriod: 250 * time.Millisecond, DetectParallel: 16}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Mode != tt.want.Mode || tt.cfg.FaultTolerance != tt.want.FaultTolerance || tt.cfg.Detector != tt.want.Detector ||
				tt.cfg.DetectInterval != tt.want.DetectInterval || tt.cfg.DetectTimeout != tt.want.DetectTimeout ||
				tt.cfg.DetectPeriod != tt.want.DetectPeriod || tt.cfg.DetectParallel != tt.want.DetectParallel ||
				tt.cfg.Durations != nil || tt.cfg.Filters != nil {
				t.Errorf("%s() = %+v, want %+v", tt.name, tt.cfg, tt.want)
			}
			if err := tt.cfg.Validate(); err != nil {
				t.Errorf("%s().Validate() = %v, want nil", tt.name, err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	var nilFunc route.QueueFilterFunc
	tests := []struct {
		name      string
		change    func(c *latency.Config)
		wantField string // "" means valid
	}{
		{"preset", func(*latency.Config) {}, ""},
		{"empty mode is v5", func(c *latency.Config) { c.Mode = "" }, ""},
		{"unknown mode", func(c *latency.Config) { c.Mode = "v6" }, "Mode"},
		{"zero detect interval", func(c *latency.Config) { c.DetectInterval = 0 }, "DetectInterval"},
		{"negative detect interval", func(c *latency.Config) { c.DetectInterval = -time.Second }, "DetectInterval"},
		{"zero detect timeout", func(c *latency.Config) { c.DetectTimeout = 0 }, "DetectTimeout"},
		{"zero detect period", func(c *latency.Config) { c.DetectPeriod = 0 }, "DetectPeriod"},
		{"zero parallel probes", func(c *latency.Config) { c.DetectParallel = 0 }, "DetectParallel"},
		{"detector in v4", func(c *latency.Config) { c.Mode, c.Detector = latency.ModeV4, true }, "Detector"},
		{"nil filter", func(c *latency.Config) { c.Filters = []route.QueueFilter{route.AvoidBroker("a"), nil} }, "Filters"},
		{"nil filter func", func(c *latency.Config) { c.Filters = []route.QueueFilter{nilFunc} }, "Filters"},
		{"nil step table", func(c *latency.Config) { c.Durations = (*latency.StepTable)(nil) }, "Durations"},
		{"nil duration func", func(c *latency.Config) { c.Durations = latency.DurationTableFunc(nil) }, "Durations"},
		{"custom table", func(c *latency.Config) { c.Durations = latency.MustStepTable(msd(1), msd(1)) }, ""},
		{"negative recovered after", func(c *latency.Config) { c.Recovery = &latency.RecoveryConfig{After: -time.Second} }, "Recovery.After"},
		{"capacity decrease of 1", func(c *latency.Config) { c.Capacity = &latency.CapacityConfig{Decrease: 1} }, "Capacity.Decrease"},
		{"negative capacity recovery", func(c *latency.Config) { c.Capacity = &latency.CapacityConfig{Recovery: -time.Second} }, "Capacity.Recovery"},
		{"capacity model", func(c *latency.Config) { c.Capacity = &latency.CapacityConfig{Decrease: 0.5, Recovery: time.Second} }, ""},
		{"recovered after without the backoff", func(c *latency.Config) { c.Recovery = &latency.RecoveryConfig{After: time.Second} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := latency.Reference5()
			tt.change(&cfg)
			err := cfg.Validate()
			_, serr := latency.NewStrategy(cfg)
			if tt.wantField == "" {
				if err != nil || serr != nil {
					t.Errorf("Validate() = %v, NewStrategy() error = %v, want nil", err, serr)
				}
				return
			}
			var ce *latency.ConfigError
			if !errors.Is(err, latency.ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != tt.wantField {
				t.Errorf("Validate() = %v, want a *ConfigError for %s", err, tt.wantField)
			}
			if !errors.Is(serr, latency.ErrInvalidConfig) {
				t.Errorf("NewStrategy() error = %v, want the validation error", serr)
			}
		})
	}
}

func TestNewStrategyDetectorNeedsResolver(t *testing.T) {
	ctrl := gomock.NewController(t)
	cfg := latency.DefaultConfig()
	_, err := latency.NewStrategy(cfg)
	var ce *latency.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Detector" || !strings.Contains(ce.Reason, "Resolver") {
		t.Errorf("NewStrategy(detector on, no resolver) error = %v, want a Detector error naming the Resolver", err)
	}

	s, err := latency.NewStrategy(cfg, latency.WithResolver(mocks.NewMockResolver(ctrl)))
	if err != nil {
		t.Fatalf("NewStrategy(detector on, resolver) error = %v", err)
	}
	defer s.Close()

	// A table given to the strategy does not spare it the resolver: the
	// detector runs over whatever table the strategy uses.
	_, err = latency.NewStrategy(cfg, latency.WithFaultTable(latency.NewFaultTable(latency.ModeV5, nil)))
	if !errors.As(err, &ce) || ce.Field != "Detector" {
		t.Errorf("NewStrategy(detector on, a table given, no resolver) error = %v, want a Detector error", err)
	}
}

func TestModeValid(t *testing.T) {
	for _, m := range []latency.Mode{"", latency.ModeV5, latency.ModeV4} {
		if !m.Valid() {
			t.Errorf("Mode(%q).Valid() = false, want true", m)
		}
	}
	if latency.Mode("V5").Valid() {
		t.Errorf(`Mode("V5").Valid() = true, want false`)
	}
}

// fieldName is ce's field as Error prints it, with a Go index for an item.
func fieldName(ce *latency.ConfigError) string {
	if ce.Item > 0 {
		return ce.Field + "[" + itoa(ce.Item-1) + "]"
	}
	return ce.Field
}

func TestConfigErrorMessage(t *testing.T) {
	err := &latency.ConfigError{Field: "DetectInterval", Value: time.Duration(0), Reason: "must be positive", Err: latency.ErrInvalidConfig}
	if got, want := err.Error(), "latency: DetectInterval = 0s: must be positive"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if errors.Is(err, latency.ErrClosed) {
		t.Errorf("errors.Is(ConfigError, ErrClosed) = true")
	}
}

// TestStrategyAccessors covers the strategy's switches and settings.
func TestStrategyAccessors(t *testing.T) {
	tests := []struct {
		name          string
		cfg           latency.Config
		wantIsolation time.Duration
		wantTable     *latency.StepTable
	}{
		{"v5", latency.Reference5(), 10 * time.Second, latency.V5Durations()},
		{"v4", latency.Reference4(), 30 * time.Second, latency.V4Durations()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := latency.NewStrategy(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if info, _ := s.Mode().Info(); s.Mode() != tt.cfg.Mode || info.IsolationLatency != tt.wantIsolation {
				t.Errorf("Mode(), its IsolationLatency = %s, %v, want %s, %v", s.Mode(), info.IsolationLatency, tt.cfg.Mode, tt.wantIsolation)
			}
			got, _ := s.Durations().(*latency.StepTable).Columns()
			want, _ := tt.wantTable.Columns()
			if !slices.Equal(got, want) {
				t.Errorf("Durations() thresholds = %v, want %v", got, want)
			}
			if s.FaultToleranceEnabled() || s.DetectorEnabled() {
				t.Errorf("switches start %t, %t, want off (the reference's defaults)", s.FaultToleranceEnabled(), s.DetectorEnabled())
			}
			s.SetFaultTolerance(true)
			s.SetDetector(true)
			if !s.FaultToleranceEnabled() {
				t.Errorf("FaultToleranceEnabled() = false after SetFaultTolerance(true)")
			}
			if want := tt.cfg.Mode == latency.ModeV5; s.DetectorEnabled() != want {
				t.Errorf("DetectorEnabled() after SetDetector(true) = %t, want %t (v4 has no detector)", s.DetectorEnabled(), want)
			}
			custom := latency.MustStepTable(msd(1), msd(7))
			s.SetDurations(custom)
			s.SetDurations(nil)                       // ignored
			s.SetDurations((*latency.StepTable)(nil)) // ignored: it would panic on the next Update
			if s.Durations() != latency.DurationTable(custom) {
				t.Errorf("Durations() = %v, want the table set", s.Durations())
			}
			if s.Table() == nil {
				t.Errorf("Table() = nil, want the built-in table")
			}
		})
	}
}

// TestNewStrategyFaultTableMode: a built-in table handed to a strategy must
// follow the strategy's mode (a v5 table under a v4 strategy would extend
// isolations where 4.9.8 overwrites them).
func TestNewStrategyFaultTableMode(t *testing.T) {
	tests := []struct {
		name      string
		cfg       latency.Config
		table     *latency.FaultTable
		wantField string
	}{
		{"same mode", latency.Reference4(), latency.NewFaultTable(latency.ModeV4, nil), ""},
		{"default modes", latency.Config{DetectInterval: 1, DetectTimeout: 1, DetectPeriod: 1, DetectParallel: 1}, latency.NewFaultTable("", nil), ""},
		{"v5 table, v4 strategy", latency.Reference4(), latency.NewFaultTable(latency.ModeV5, nil), "withFaultTable"},
		{"v4 table, v5 strategy", latency.Reference5(), latency.NewFaultTable(latency.ModeV4, nil), "withFaultTable"},
		{"nil table", latency.Reference5(), nil, "withFaultTable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := latency.NewStrategy(tt.cfg, latency.WithFaultTable(tt.table))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("NewStrategy() error = %v", err)
				}
				s.Close()
				return
			}
			var ce *latency.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.wantField || !errors.Is(err, latency.ErrInvalidConfig) {
				t.Errorf("NewStrategy() error = %v, want a *ConfigError for %s", err, tt.wantField)
			}
		})
	}
}

// TestConfigValidateEveryProblem checks that Validate reports every setting
// out of range at once, one *ConfigError per problem in field order, each
// line of the message one problem, and that a policy setting that depends
// on an invalid one is not reported as a second problem.
func TestConfigValidateEveryProblem(t *testing.T) {
	cfg := latency.DefaultConfig()
	cfg.DetectTimeout = -time.Second
	cfg.DetectParallel = 0
	cfg.IsolationCap.MaxFraction = 2
	cfg.Backoff.Multiplier = 0.5
	cfg.Backoff.Max = 0 // fine while the backoff is invalid: not reported
	cfg.Backoff.Decay = -1
	err := cfg.Validate()
	want := []string{
		"latency: DetectTimeout = -1s: must be positive",
		"latency: DetectParallel = 0: must be at least 1",
		"latency: IsolationCap.MaxFraction = 2: must be in [0, 1] (0 turns the cap off)",
		"latency: Backoff.Multiplier = 0.5: must be 0 (off) or a finite multiplier of at least 1",
		"latency: Backoff.Decay = -1: must not be negative",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("Validate() =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	var ce *latency.ConfigError
	if !errors.As(err, &ce) || ce.Field != "DetectTimeout" || !errors.Is(err, latency.ErrInvalidConfig) {
		t.Errorf("errors.As(Validate()) = %v, want the DetectTimeout *ConfigError first", ce)
	}

	cfg = latency.DefaultConfig()
	cfg.Backoff.Max = 0
	cfg.Backoff.Decay = 0
	err = cfg.Validate()
	if !errors.As(err, &ce) || ce.Field != "Backoff.Max" || ce.Related != "Backoff.Multiplier" || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("Validate() = %v, want Backoff.Max and Backoff.Decay, related to Backoff.Multiplier", err)
	}

	_, err = latency.NewStepTable(msd(2, 1, -1), msd(1, -1))
	wantTable := []string{
		"latency: notAvailable = 2 items: must have as many items as latencyMax (3 items): the columns go in pairs",
		"latency: latencyMax[1] = 1ms: thresholds must be strictly ascending (the one before is 2ms)",
		"latency: latencyMax[2] = -1ms: must not be negative",
		"latency: notAvailable[1] = -1ms: must not be negative",
	}
	if err == nil || err.Error() != strings.Join(wantTable, "\n") {
		t.Errorf("NewStepTable() =\n%v\nwant\n%s", err, strings.Join(wantTable, "\n"))
	}
}
