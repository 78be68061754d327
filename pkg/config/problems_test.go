package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// TestLoadEveryProblemAtOnce checks that LoadEnv reports every problem of a
// file and an environment in one run, one *Error per line: parse errors,
// unknown and repeated keys, range errors of latency's and producer's
// Validate, all in the knobs' names (not latency's Go fields), each with
// its source (the file and line, or the variable), the file's in line
// order, then the environment's.
func TestLoadEveryProblemAtOnce(t *testing.T) {
	tests := []struct {
		name string
		file string // written to c.yaml; "" means no file
		env  []string
		want []string // each line of the error, "c.yaml" standing for the path
	}{
		{
			name: "two range errors",
			file: "timeout: -3s\nretry_times: -1\n",
			want: []string{
				`config: timeout = "-3s" (c.yaml:1): must be positive`,
				`config: retry_times = "-1" (c.yaml:2): must not be negative`,
			},
		},
		{
			name: "parse, shape, key and range errors together",
			file: `mode: v5
timeout: x
retry_times: -1
durations:
  latency_max: [1s, 500ms, -1s]
  not_available: [1s, -2s]
max_isolated_fraction: "50%"
isolation_backoff: 2
max_isolation: 0s
detect_parallel: 0
retry_codes: [17, [1]]
timeuot: 1s
log_interval: -1s
timeout: 2s
`,
			want: []string{
				`config: timeout = "x" (c.yaml:2): must be a duration such as 200ms or 3s`,
				`config: retry_times = "-1" (c.yaml:3): must not be negative`,
				`config: durations = "1s,500ms,-1s;1s,-2s" (c.yaml:4): not_available (2 items): must have as many items as latency_max (3 items): the columns go in pairs`,
				`config: durations = "1s,500ms,-1s;1s,-2s" (c.yaml:4): latency_max item 2 (500ms): thresholds must be strictly ascending (the one before is 1s)`,
				`config: durations = "1s,500ms,-1s;1s,-2s" (c.yaml:4): latency_max item 3 (-1s): must not be negative`,
				`config: durations = "1s,500ms,-1s;1s,-2s" (c.yaml:4): not_available item 2 (-2s): must not be negative`,
				`config: max_isolated_fraction = "50%" (c.yaml:7): must be a number such as 0.5, not a percentage (write 50% as 0.5)`,
				`config: max_isolation = "0s" (c.yaml:9): must be positive while isolation_backoff is on`,
				`config: detect_parallel = "0" (c.yaml:10): must be at least 1`,
				`config: retry_codes (c.yaml:11): item 2: must be a single value, not a list`,
				`config: timeuot = "1s" (c.yaml:12): no such knob (did you mean timeout?)`,
				`config: log_interval = "-1s" (c.yaml:13): must not be negative (0 logs every event)`,
				`config: timeout (c.yaml:14): repeated field (first at line 2)`,
			},
		},
		{
			name: "file and environment",
			file: "{\n  \"timeout\": \"-3s\",\n  \"isolation_backoff\": 0.5\n}\n",
			env:  []string{"MQFAULT_TIMEOUTS=1s", "MQFAULT_BACKOFF_DECAY=x", "MQFAULT_DETECT_TIMEOUT=-1s", "MQFAULT_RETRY_TIMES=-1"},
			want: []string{
				`config: timeout = "-3s" (c.yaml:2): must be positive`,
				`config: isolation_backoff = "0.5" (c.yaml:3): must be 0 (off) or a finite multiplier of at least 1`,
				`config: detect_timeout = "-1s" (MQFAULT_DETECT_TIMEOUT): must be positive`,
				`config: backoff_decay = "x" (MQFAULT_BACKOFF_DECAY): must be a whole number (up to 2147483647)`,
				`config: retry_times = "-1" (MQFAULT_RETRY_TIMES): must not be negative`,
				`config: MQFAULT_TIMEOUTS = "1s": no such variable (did you mean MQFAULT_TIMEOUT?)`,
			},
		},
		{
			// isolation_backoff did not parse, so it keeps the preset's 2;
			// max_isolation 0 is then wrong only because of that problem.
			name: "no knock-on problem",
			file: "isolation_backoff: abc\nmax_isolation: 0s\n",
			want: []string{
				`config: isolation_backoff = "abc" (c.yaml:1): must be a number such as 2`,
			},
		},
		{
			name: "broken JSON on one line",
			file: `{"timeout": "1s", "retry_times": [1, }`,
			want: []string{
				`config: c.yaml:1: not valid JSON at column 38: invalid character '}' looking for beginning of value`,
			},
		},
		{
			name: "environment only",
			env:  []string{"MQFAULT_TIMEOUT=-3s", "MQFAULT_RETRY_TIMES=-1", "MQFAULT_MAX_ISOLATED_FRACTION=2"},
			want: []string{
				`config: max_isolated_fraction = "2" (MQFAULT_MAX_ISOLATED_FRACTION): must be in [0, 1] (0 turns the cap off)`,
				`config: retry_times = "-1" (MQFAULT_RETRY_TIMES): must not be negative`,
				`config: timeout = "-3s" (MQFAULT_TIMEOUT): must be positive`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = t.TempDir() + "/c.yaml"
				writeFile(t, path, tt.file)
			}
			_, err := LoadEnv(path, tt.env)
			if err == nil {
				t.Fatalf("LoadEnv() error = nil, want %d problems", len(tt.want))
			}
			got := err.Error()
			if path != "" {
				got = strings.ReplaceAll(got, path, "c.yaml")
			}
			if want := strings.Join(tt.want, "\n"); got != want {
				t.Errorf("LoadEnv() error =\n%s\nwant\n%s", got, want)
			}
			parts := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				parts = j.Unwrap()
			}
			if len(parts) != len(tt.want) {
				t.Errorf("LoadEnv() error unwraps to %d errors, want %d", len(parts), len(tt.want))
			}
			for _, p := range parts {
				var ce *Error
				if !errors.As(p, &ce) || !errors.Is(p, ErrInvalid) || (ce.Source == "" && !strings.HasPrefix(ce.Knob, EnvPrefix)) {
					t.Errorf("%v: want an *Error matching ErrInvalid with a source", p)
				}
			}
		})
	}
}

// TestValidateEveryProblem checks Validate on a Config set in code: every
// knob out of range, in the knob table's order, each matching the
// sub-package's sentinel.
func TestValidateEveryProblem(t *testing.T) {
	c := DefaultConfig()
	c.Strategy.DetectTimeout = -1
	c.Producer.Timeout = 0
	c.LogInterval = -1
	err := c.Validate()
	want := []string{
		`config: detect_timeout = "-1ns": must be positive`,
		`config: timeout = "0s": must be positive`,
		`config: log_interval = "-1ns": must not be negative (0 logs every event)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("Validate() =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	if !errors.Is(err, latency.ErrInvalidConfig) || !errors.Is(err, producer.ErrInvalidConfig) || !errors.Is(err, ErrInvalid) {
		t.Errorf("Validate() = %v, want it to match latency's, producer's and config's sentinels", err)
	}
}

// TestDecodeEveryProblem checks that Decode reports every problem of a
// document (and leaves c unchanged).
func TestDecodeEveryProblem(t *testing.T) {
	c := DefaultConfig()
	before := c
	err := c.Decode([]byte("timeout: 2\nretry_times: many\ndurations: {latency_max: [1s], other: [1s]}\n"), "m.yaml")
	want := []string{
		`config: timeout = "2" (m.yaml:1): a duration needs a unit, such as 200ms or 3s`,
		`config: retry_times = "many" (m.yaml:2): must be a whole number (up to 2147483647)`,
		`config: durations (m.yaml:3): other: unknown field (want one of latency_max, not_available)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Decode() =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	if c.Producer.Timeout != before.Producer.Timeout || c.Producer.RetryTimes != before.Producer.RetryTimes {
		t.Errorf("Decode() changed the config on error")
	}
}

// TestKnobFields checks that every knob binds a field, that no two bind
// the same, and that every field of latency.Config and producer.Config but
// Filters (set in code) has a knob, so every error of their Validate names
// a knob.
func TestKnobFields(t *testing.T) {
	seen := map[string]string{}
	for _, k := range knobs {
		if k.field == "" {
			t.Errorf("knob %s binds no field", k.name)
		}
		if other, dup := seen[k.field]; dup {
			t.Errorf("knobs %s and %s bind the same field %s", k.name, other, k.field)
		}
		seen[k.field] = k.name
	}
	for _, f := range []string{"Strategy.Mode", "Strategy.DetectTimeout", "Strategy.Durations", "Strategy.Backoff.Multiplier",
		"Producer.RetryTimes", "Producer.RetryAnotherBrokerWhenNotStoreOK", "LogInterval", "CountStages"} {
		if _, ok := knobByField[f]; !ok {
			t.Errorf("field %s has no knob", f)
		}
	}
	for prefix, typ := range map[string]any{"Strategy.": latency.Config{}, "Producer.": producer.Config{}} {
		for _, name := range exportedFields(typ) {
			if name == "Filters" {
				continue
			}
			if _, ok := knobByField[prefix+name]; !ok {
				t.Errorf("field %s%s has no knob", prefix, name)
			}
		}
	}
}

// exportedFields lists v's exported fields, a pointer to a struct (a
// latency policy's settings) by the paths of its own fields ("Backoff.Max").
func exportedFields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct {
			for _, sub := range exportedFields(reflect.Zero(f.Type.Elem()).Interface()) {
				out = append(out, f.Name+"."+sub)
			}
			continue
		}
		out = append(out, f.Name)
	}
	return out
}
