package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

func TestPresets(t *testing.T) {
	tests := []struct {
		name     string
		got      Config
		strategy latency.Config
		producer producer.Config
	}{
		{"default", DefaultConfig(), latency.DefaultConfig(), producer.DefaultConfig()},
		{"reference5", Reference5(), latency.Reference5(), producer.Reference5()},
		{"reference4", Reference4(), latency.Reference4(), producer.Reference4()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got.Strategy, tt.strategy) {
				t.Errorf("Strategy = %+v, want %+v", tt.got.Strategy, tt.strategy)
			}
			if !reflect.DeepEqual(tt.got.Producer, tt.producer) {
				t.Errorf("Producer = %+v, want %+v", tt.got.Producer, tt.producer)
			}
			if err := tt.got.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
			p, err := Preset(strings.ToUpper(tt.name))
			if err != nil || !reflect.DeepEqual(p, tt.got) {
				t.Errorf("Preset(%q) = %+v, %v, want %+v", tt.name, p, err, tt.got)
			}
		})
	}
	if _, err := Preset("reference6"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Preset(reference6) error = %v, want ErrInvalid", err)
	}
}

// The reference presets must hold the reference's values, not just whatever
// the sub-packages return: a change there is caught here too.
func TestReferenceValues(t *testing.T) {
	r5, r4 := Reference5(), Reference4()
	checks := []struct {
		name      string
		got, want any
	}{
		{"r5 mode", r5.Strategy.Mode, latency.ModeV5},
		{"r5 fault tolerance", r5.Strategy.FaultTolerance, false},
		{"r5 detector", r5.Strategy.Detector, false},
		{"r5 interval", r5.Strategy.DetectInterval, 2 * time.Second},
		{"r5 timeout", r5.Strategy.DetectTimeout, 200 * time.Millisecond},
		{"r5 period", r5.Strategy.DetectPeriod, 3 * time.Second},
		{"r5 parallel", r5.Strategy.DetectParallel, 1},
		{"r5 isolation cap", r5.Strategy.IsolationCap == nil, true},
		{"r5 backoff", r5.Strategy.Backoff == nil, true},
		{"r5 probe failures", r5.Strategy.ProbeFailures, false},
		{"r4 isolation cap", r4.Strategy.IsolationCap == nil, true},
		{"r4 backoff", r4.Strategy.Backoff == nil, true},
		{"r4 probe failures", r4.Strategy.ProbeFailures, false},
		{"r5 retries", r5.Producer.RetryTimes, 2},
		{"r5 async retries", r5.Producer.AsyncRetryTimes, 2},
		{"r5 send timeout", r5.Producer.Timeout, 3 * time.Second},
		{"r5 per-attempt cap", r5.Producer.MaxTimeoutPerRequest, time.Duration(0)},
		{"r5 async count", r5.Producer.AsyncMaxInFlight, 10000},
		{"r5 async bytes", r5.Producer.AsyncMaxBytes, int64(100 << 20)},
		{"r5 refresh", r5.Producer.RouteRefreshInterval, 30 * time.Second},
		{"r4 mode", r4.Strategy.Mode, latency.ModeV4},
		{"r4 fault tolerance", r4.Strategy.FaultTolerance, false},
		{"r4 durations", mustGet(r4, "durations"), "default"},
		{"r4 retry codes", mustGet(r4, "retry_codes"), "default"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func mustGet(c Config, name string) string {
	s, ok := c.Get(name)
	if !ok {
		panic("no knob " + name)
	}
	return s
}

// knobCase is one knob with a valid value (and what it gives) and invalid
// values, each written in the knob's environment variable.
type knobCase struct {
	knob    string
	valid   string
	extra   []string // other variables the valid value needs
	got     func(Config) any
	want    any
	invalid []string
}

var knobCases = []knobCase{
	{"mode", "V4", []string{"MQFAULT_DETECTOR=false"},
		func(c Config) any { return c.Strategy.Mode }, latency.ModeV4, []string{"v6", "5", "rocketmq"}},
	{"fault_tolerance", "off", nil,
		func(c Config) any { return c.Strategy.FaultTolerance }, false, []string{"maybe", "2"}},
	{"detector", "no", nil,
		func(c Config) any { return c.Strategy.Detector }, false, []string{"enabled", "-1"}},
	{"detect_interval", "5s", nil,
		func(c Config) any { return c.Strategy.DetectInterval }, 5 * time.Second, []string{"5", "0s", "-1s", "soon"}},
	{"detect_timeout", "1.5s", nil,
		func(c Config) any { return c.Strategy.DetectTimeout }, 1500 * time.Millisecond, []string{"0", "-200ms", "200"}},
	{"detect_period", "1m", nil,
		func(c Config) any { return c.Strategy.DetectPeriod }, time.Minute, []string{"0s", "abc"}},
	{"detect_parallel", "4", nil,
		func(c Config) any { return c.Strategy.DetectParallel }, 4, []string{"0", "-1", "four", "1.5", "99999999999"}},
	{"max_isolated_fraction", "0.25", nil,
		func(c Config) any { return c.Strategy.IsolationCap.MaxFraction }, 0.25, []string{"-0.5", "1.5", "half", "50%", "NaN"}},
	{"isolation_backoff", "1.5", nil,
		func(c Config) any { return c.Strategy.Backoff.Multiplier }, 1.5, []string{"0.5", "-2", "Inf", "twice"}},
	{"max_isolation", "5m", nil,
		func(c Config) any { return c.Strategy.Backoff.Max }, 5 * time.Minute, []string{"0s", "-1s", "60"}},
	{"backoff_decay", "10", nil,
		func(c Config) any { return c.Strategy.Backoff.Decay }, 10, []string{"0", "-1", "ten"}},
	{"probe_failures", "off", nil,
		func(c Config) any { return c.Strategy.ProbeFailures }, false, []string{"sometimes"}},
	{"capacity_decrease", "0.5", nil,
		func(c Config) any { return c.Strategy.Capacity.Decrease }, 0.5, []string{"-0.1", "1", "1.5", "NaN", "half"}},
	{"capacity_recovery", "500ms", nil,
		func(c Config) any { return c.Strategy.Capacity.Recovery }, 500 * time.Millisecond, []string{"-1s", "1"}},
	{"recovered_after", "6s", nil,
		func(c Config) any { return c.Strategy.Recovery.After }, 6 * time.Second, []string{"-1s", "soon", "6"}},
	{"durations", "100ms, 1s ; 0s, 5s", nil,
		func(c Config) any { return mustGet(c, "durations") }, "100ms,1s;0s,5s",
		[]string{"100ms,1s;0s", "1s,100ms;0s,0s", "abc", "1s;2s;3s", "-1s;1s", "1s;-1s", "1;2s", ";", " ; "}},
	{"retry_times", "5", nil,
		func(c Config) any { return c.Producer.RetryTimes }, 5, []string{"-1", "x", "2.0"}},
	{"async_retry_times", "0", nil,
		func(c Config) any { return c.Producer.AsyncRetryTimes }, 0, []string{"-3", "two"}},
	{"retry_codes", "17, 14", nil,
		func(c Config) any { return c.Producer.RetryCodes }, []int{17, 14}, []string{"17,x", "a", "17;14"}},
	{"timeout", "10s", nil,
		func(c Config) any { return c.Producer.Timeout }, 10 * time.Second, []string{"0s", "-1s", "3000"}},
	{"max_timeout_per_request", "0", nil,
		func(c Config) any { return c.Producer.MaxTimeoutPerRequest }, time.Duration(0), []string{"-1s", "1 s"}},
	{"retry_another_broker", "TRUE", nil,
		func(c Config) any { return c.Producer.RetryAnotherBrokerWhenNotStoreOK }, true, []string{"tru"}},
	{"async_max_in_flight", "100", nil,
		func(c Config) any { return c.Producer.AsyncMaxInFlight }, 100, []string{"-1", "1e3"}},
	{"async_max_bytes", "64MiB", nil,
		func(c Config) any { return c.Producer.AsyncMaxBytes }, int64(64 << 20), []string{"-1", "10MB", "9999999999GiB", "MiB"}},
	{"async_fail_fast", "yes", nil,
		func(c Config) any { return c.Producer.AsyncFailFast }, true, []string{"nope"}},
	{"retry_budget", "0.2", nil,
		func(c Config) any { return c.Producer.RetryBudget }, 0.2, []string{"-0.1", "11", "NaN", "20%"}},
	{"retry_budget_floor", "0", nil,
		func(c Config) any { return c.Producer.RetryBudgetFloor }, 0, []string{"-1", "ten"}},
	{"room_wait", "0.05", nil,
		func(c Config) any { return c.Producer.RoomWait }, 0.05, []string{"-0.01", "1.5", "NaN", "1%"}},
	{"route_refresh_interval", "45s", nil,
		func(c Config) any { return c.Producer.RouteRefreshInterval }, 45 * time.Second, []string{"0s", "never"}},
	{"log_interval", "0s", nil,
		func(c Config) any { return c.LogInterval }, time.Duration(0), []string{"-1s", "often"}},
	{"count_stages", "false", nil,
		func(c Config) any { return c.CountStages }, false, []string{"sometimes"}},
}

// TestEveryKnobHasACase keeps knobCases complete: a new knob needs its case.
func TestEveryKnobHasACase(t *testing.T) {
	var names []string
	for _, c := range knobCases {
		names = append(names, c.knob)
	}
	for _, k := range Knobs() {
		if !slices.Contains(names, k.Name) {
			t.Errorf("knob %s has no case in knobCases", k.Name)
		}
	}
}

func TestKnobsFromEnvironment(t *testing.T) {
	for _, tt := range knobCases {
		env := EnvName(tt.knob)
		t.Run(tt.knob+"/valid", func(t *testing.T) {
			cfg, err := LoadEnv("", append([]string{env + "=" + tt.valid}, tt.extra...))
			if err != nil {
				t.Fatalf("LoadEnv(%s=%s) error = %v", env, tt.valid, err)
			}
			if got := tt.got(cfg); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("LoadEnv(%s=%s) = %v, want %v", env, tt.valid, got, tt.want)
			}
			// Every other knob keeps DefaultConfig's value.
			def := DefaultConfig()
			for _, k := range Knobs() {
				if k.Name == tt.knob || slices.ContainsFunc(tt.extra, func(e string) bool { return strings.HasPrefix(e, k.Env+"=") }) {
					continue
				}
				if got, want := mustGet(cfg, k.Name), mustGet(def, k.Name); got != want {
					t.Errorf("%s = %q, want the default %q", k.Name, got, want)
				}
			}
		})
		for _, bad := range tt.invalid {
			t.Run(tt.knob+"/invalid/"+bad, func(t *testing.T) {
				_, err := LoadEnv("", []string{env + "=" + bad})
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("LoadEnv(%s=%s) error = %v, want an *Error", env, bad, err)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("errors.Is(%v, ErrInvalid) = false", err)
				}
				if ce.Knob != tt.knob || ce.Value != bad || ce.Source != env {
					t.Errorf("error names knob %q value %q source %q, want %q %q %q", ce.Knob, ce.Value, ce.Source, tt.knob, bad, env)
				}
				for _, part := range []string{tt.knob, `"` + bad + `"`, env} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not mention %s", err, part)
					}
				}
			})
		}
	}
}

func TestKnobsFromFile(t *testing.T) {
	for _, tt := range knobCases {
		t.Run(tt.knob, func(t *testing.T) {
			doc := tt.knob + ": " + yamlQuote(tt.valid) + "\n"
			if tt.extra != nil {
				doc = "detector: false\n" + doc
			}
			cfg := DefaultConfig()
			if err := cfg.Decode([]byte(doc), "f.yaml"); err != nil {
				t.Fatalf("Decode(%q) error = %v", doc, err)
			}
			if got := tt.got(cfg); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode(%q) = %v, want %v", doc, got, tt.want)
			}
			for _, bad := range tt.invalid {
				doc := "\n" + tt.knob + ": " + yamlQuote(bad) + "\n"
				cfg := DefaultConfig()
				err := cfg.Decode([]byte(doc), "f.yaml")
				if err == nil {
					err = cfg.Validate()
				}
				var ce *Error
				if !errors.As(err, &ce) || ce.Knob != tt.knob {
					t.Errorf("Decode(%q) then Validate() error = %v, want an *Error for %s", doc, err, tt.knob)
					continue
				}
				if ce.Source != "" && ce.Source != "f.yaml:2" {
					t.Errorf("Decode(%q) error source = %q, want f.yaml:2", doc, ce.Source)
				}
			}
		})
	}
}

func yamlQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestValidateNamesTheSource(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/mqfault.yaml"
	writeFile(t, path, "preset: reference4\nretry_times: 3\n")
	tests := []struct {
		name       string
		env        []string
		knob, src  string
		wantSubstr string
	}{
		{"detector on in v4 from env", []string{"MQFAULT_DETECTOR=on"}, "detector", "MQFAULT_DETECTOR", "mode v4 has no detector"},
		{"range from env over file", []string{"MQFAULT_RETRY_TIMES=-2"}, "retry_times", "MQFAULT_RETRY_TIMES", "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadEnv(path, tt.env)
			var ce *Error
			if !errors.As(err, &ce) || ce.Knob != tt.knob || ce.Source != tt.src || !strings.Contains(err.Error(), tt.wantSubstr) {
				t.Fatalf("LoadEnv() error = %v, want knob %s from %s saying %q", err, tt.knob, tt.src, tt.wantSubstr)
			}
		})
	}
	writeFile(t, path, "mode: v4\n")
	_, err := LoadEnv(path, nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.Knob != "detector" || !errors.Is(err, latency.ErrInvalidConfig) {
		t.Fatalf("LoadEnv(mode v4 over the default preset) error = %v, want the detector knob, matching latency.ErrInvalidConfig", err)
	}
	writeFile(t, path, "mode: v4\nretry_times: -1\n")
	_, err = LoadEnv(path, []string{"MQFAULT_PRESET=reference4"})
	if !errors.As(err, &ce) || ce.Knob != "retry_times" || ce.Source != path+":2" || !errors.Is(err, producer.ErrInvalidConfig) {
		t.Fatalf("LoadEnv() error = %v, want retry_times from %s:2, matching producer.ErrInvalidConfig", err, path)
	}
}
