package config

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const fullYAML = `# every knob
preset: reference5
mode: v5
fault_tolerance: true
detector: on
detect_interval: 1s
detect_timeout: 100ms
detect_period: 2s
detect_parallel: 8
durations:
  latency_max:   [50ms, 550ms, 3s]
  not_available: [0s, 2s, 30s]
retry_times: 3
async_retry_times: 1
retry_codes: [17, 14, 1500]
timeout: 5s
max_timeout_per_request: 800ms
retry_another_broker: yes
async_max_in_flight: 500
async_max_bytes: 8MiB
async_fail_fast: true
route_refresh_interval: 10s
log_interval: 1m
count_stages: false
`

const fullJSON = `{
	"preset": "reference5",
	"mode": "v5",
	"fault_tolerance": true,
	"detector": "on",
	"detect_interval": "1s",
	"detect_timeout": "100ms",
	"detect_period": "2s",
	"detect_parallel": 8,
	"durations": {"latency_max": ["50ms", "550ms", "3s"], "not_available": ["0s", "2s", "30s"]},
	"retry_times": 3,
	"async_retry_times": 1,
	"retry_codes": [17, 14, 1500],
	"timeout": "5s",
	"max_timeout_per_request": "800ms",
	"retry_another_broker": "yes",
	"async_max_in_flight": 500,
	"async_max_bytes": "8MiB",
	"async_fail_fast": true,
	"route_refresh_interval": "10s",
	"log_interval": "1m",
	"count_stages": false
}`

func fullWant() Config {
	c := Reference5()
	c.Strategy.FaultTolerance = true
	c.Strategy.Detector = true
	c.Strategy.DetectInterval = time.Second
	c.Strategy.DetectTimeout = 100 * time.Millisecond
	c.Strategy.DetectPeriod = 2 * time.Second
	c.Strategy.DetectParallel = 8
	d, err := latency.NewStepTable(
		[]time.Duration{50 * time.Millisecond, 550 * time.Millisecond, 3 * time.Second},
		[]time.Duration{0, 2 * time.Second, 30 * time.Second})
	if err != nil {
		panic(err) // the table above is valid
	}
	c.Strategy.Durations = d
	c.Producer.RetryTimes = 3
	c.Producer.AsyncRetryTimes = 1
	c.Producer.RetryCodes = []int{17, 14, 1500}
	c.Producer.Timeout = 5 * time.Second
	c.Producer.MaxTimeoutPerRequest = 800 * time.Millisecond
	c.Producer.RetryAnotherBrokerWhenNotStoreOK = true
	c.Producer.AsyncMaxInFlight = 500
	c.Producer.AsyncMaxBytes = 8 << 20
	c.Producer.AsyncFailFast = true
	c.Producer.RouteRefreshInterval = 10 * time.Second
	c.LogInterval = time.Minute
	c.CountStages = false
	return c
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, file, content string }{
		{"yaml", "mqfault.yaml", fullYAML},
		{"json", "mqfault.json", fullJSON},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := dir + "/" + tt.file
			writeFile(t, path, tt.content)
			got, err := LoadEnv(path, nil)
			if err != nil {
				t.Fatalf("LoadEnv(%s) error = %v", tt.file, err)
			}
			if want := fullWant(); !reflect.DeepEqual(got, want) {
				t.Errorf("LoadEnv(%s) =\n%+v\nwant\n%+v", tt.file, got, want)
			}
		})
	}
}

func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/c.yaml"
	writeFile(t, path, "preset: reference5\ntimeout: 5s\nretry_times: 4\n")
	// fileOver is the file's two knobs over preset, timeout possibly overridden.
	fileOver := func(preset func() Config, timeout time.Duration) func() Config {
		return func() Config {
			c := preset()
			c.Producer.Timeout, c.Producer.RetryTimes = timeout, 4
			return c
		}
	}
	tests := []struct {
		name string
		path string
		env  []string
		want func() Config
	}{
		{"nothing: the default preset", "", nil, DefaultConfig},
		{"file over its preset", path, nil, fileOver(Reference5, 5*time.Second)},
		{"environment over the file", path, []string{"MQFAULT_TIMEOUT=7s", "UNRELATED=1"}, fileOver(Reference5, 7*time.Second)},
		{"MQFAULT_PRESET over the file's preset", path, []string{"MQFAULT_PRESET=reference4"}, fileOver(Reference4, 5*time.Second)},
		{"MQFAULT_CONFIG names the file", "", []string{"MQFAULT_CONFIG=" + path}, fileOver(Reference5, 5*time.Second)},
		{"another component's variable is left alone", path, []string{"MQFAULT_PLUGIN=cookie", "MQFAULT_ROUTE_PROBE=1"}, fileOver(Reference5, 5*time.Second)},
		{"an empty variable counts as unset", path, []string{"MQFAULT_TIMEOUT=", "MQFAULT_PRESET="}, fileOver(Reference5, 5*time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadEnv(tt.path, tt.env)
			if err != nil {
				t.Fatalf("LoadEnv() error = %v", err)
			}
			if want := tt.want(); !reflect.DeepEqual(got, want) {
				t.Errorf("LoadEnv() = %+v, want %+v", got, want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(content string) string {
		path := dir + "/" + strings.ReplaceAll(t.Name(), "/", "_") + ".yaml"
		writeFile(t, path, content)
		return path
	}
	tests := []struct {
		name    string
		content string // "" means no file
		path    string // used when content is ""
		env     []string
		knob    string
		source  string // suffix of the source
		reason  string
	}{
		{"unknown key", "detect_intervall: 2s\n", "", nil, "detect_intervall", ".yaml:1", "did you mean detect_interval?"},
		{"key twice", "timeout: 1s\nretry_times: 1\ntimeout: 2s\n", "", nil, "timeout", ".yaml:3", "first at line 1"},
		{"not a mapping", "- timeout\n", "", nil, "", ".yaml:1", "the document is a list, want a mapping of knob names to values"},
		{"syntax", "timeout: [1s\n", "", nil, "", ".yaml:2", "not valid YAML: did not find expected ',' or ']'"},
		{"null value", "timeout:\n", "", nil, "timeout", ".yaml:1", "needs a value"},
		{"list for a scalar", "timeout: [1s, 2s]\n", "", nil, "timeout", ".yaml:1", "not a list"},
		{"mapping for a scalar", "timeout: {a: 1}\n", "", nil, "timeout", ".yaml:1", "not a mapping"},
		{"list item with a comma", "retry_codes: ['1,2']\n", "", nil, "retry_codes", ".yaml:1", "single value"},
		{"nested list", "retry_codes: [[1]]\n", "", nil, "retry_codes", ".yaml:1", "single value"},
		{"table as a list", "durations: [1s]\n", "", nil, "durations", ".yaml:1", "latency_max and not_available"},
		{"table column missing", "durations:\n  latency_max: [1s]\n", "", nil, "durations", ".yaml:2", "needs both"},
		{"table unknown column", "durations: {latency_max: [1s], isolation: [1s]}\n", "", nil, "durations", ".yaml:1", "isolation: unknown field (want one of latency_max, not_available)"},
		{"table columns differ", "durations: {latency_max: [1s, 2s], not_available: [1s]}\n", "", nil, "durations", ".yaml:1", "not_available (1 item): must have as many items as latency_max (2 items)"},
		{"table not ascending", "durations: {latency_max: [2s, 1s], not_available: [1s, 1s]}\n", "", nil, "durations", ".yaml:1", "ascending"},
		{"empty table in env", "", "", []string{"MQFAULT_DURATIONS=;"}, "durations", "MQFAULT_DURATIONS", "empty"},
		{"blank table in env", "", "", []string{"MQFAULT_DURATIONS= ; "}, "durations", "MQFAULT_DURATIONS", "empty"},
		{"empty table in file", "durations: {latency_max: [], not_available: []}\n", "", nil, "durations", ".yaml:1", "empty"},
		{"empty table as a string", "durations: ';'\n", "", nil, "durations", ".yaml:1", "empty"},
		{"bad preset in file", "preset: fast\n", "", nil, "preset", ".yaml:1", "must be one of"},
		{"bad preset in env", "", "", []string{"MQFAULT_PRESET=fast"}, "preset", "MQFAULT_PRESET", "must be one of"},
		{"unknown variable", "", "", []string{"MQFAULT_TIMEOUTS=1s"}, "MQFAULT_TIMEOUTS", "", "did you mean MQFAULT_TIMEOUT?"},
		{"lower-case variable", "", "", []string{"MQFAULT_timeout=1s"}, "MQFAULT_timeout", "", "did you mean MQFAULT_TIMEOUT?"},
		{"missing file", "", "/nonexistent/mqfault.yaml", nil, "", "/nonexistent/mqfault.yaml", "cannot read"},
		{"file too large", "# " + strings.Repeat("x", MaxFileSize) + "\n", "", nil, "", ".yaml", "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if tt.content != "" {
				path = file(tt.content)
			}
			_, err := LoadEnv(path, tt.env)
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("LoadEnv() error = %v, want an *Error", err)
			}
			if ce.Knob != tt.knob || !strings.HasSuffix(ce.Source, tt.source) || !strings.Contains(ce.Reason, tt.reason) {
				t.Errorf("LoadEnv() error = %q (knob %q, source %q), want knob %q, source ...%q, reason containing %q",
					err, ce.Knob, ce.Source, tt.knob, tt.source, tt.reason)
			}
		})
	}
}

func TestDecodeForms(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		knob string
		want string
	}{
		{"empty document", "", "timeout", "1s"},
		{"only comments", "# nothing\n", "timeout", "1s"},
		{"null document", "~\n", "timeout", "1s"},
		{"codes as a string", "retry_codes: '17, 14'\n", "retry_codes", "17,14"},
		{"codes as an empty list", "retry_codes: []\n", "retry_codes", "none"},
		{"codes default", "retry_codes: default\n", "retry_codes", "default"},
		{"table as a string", "durations: '1s,2s;3s,4s'\n", "durations", "1s,2s;3s,4s"},
		{"table default", "durations: default\n", "durations", "default"},
		{"table, one-item column as a scalar", "durations: {latency_max: 1s, not_available: 2s}\n", "durations", "1s;2s"},
		{"anchor and alias", "x: &t 5s\n", "timeout", "1s"},
		{"alias value", "detect_period: &p 5s\ntimeout: *p\n", "timeout", "5s"},
		{"bytes", "async_max_bytes: 3072\n", "async_max_bytes", "3KiB"},
		{"odd bytes", "async_max_bytes: 1536\n", "async_max_bytes", "1536"},
		{"bytes with unit", "async_max_bytes: 2GiB\n", "async_max_bytes", "2GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Producer.Timeout = time.Second
			err := c.Decode([]byte(tt.doc), "t.yaml")
			if tt.name == "anchor and alias" {
				if err == nil {
					t.Fatalf("Decode(%q) = nil, want the unknown key x", tt.doc)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%q) error = %v", tt.doc, err)
			}
			if got := mustGet(c, tt.knob); got != tt.want {
				t.Errorf("Decode(%q): %s = %q, want %q", tt.doc, tt.knob, got, tt.want)
			}
		})
	}
}

func TestDecodeLeavesConfigOnError(t *testing.T) {
	c := DefaultConfig()
	want := c
	if err := c.Decode([]byte("timeout: 9s\nretry_times: x\n"), "t.yaml"); err == nil {
		t.Fatal("Decode() = nil, want an error")
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Decode() changed the config on error: %+v", c)
	}
	if err := c.ApplyEnv([]string{"MQFAULT_TIMEOUT=9s", "MQFAULT_RETRY_TIMES=x"}); err == nil {
		t.Fatal("ApplyEnv() = nil, want an error")
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("ApplyEnv() changed the config on error: %+v", c)
	}
}

func TestSetGet(t *testing.T) {
	c := DefaultConfig()
	for _, k := range Knobs() {
		v := mustGet(c, k.Name)
		if err := c.Set(k.Name, v); err != nil {
			t.Errorf("Set(%s, Get() = %q) error = %v", k.Name, v, err)
		}
	}
	if !reflect.DeepEqual(c, DefaultConfig()) {
		t.Errorf("Set(Get()) changed the config: %+v", c)
	}
	if err := c.Set("timeuot", "1s"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "did you mean timeout?") {
		t.Errorf("Set(timeuot) error = %v, want a suggestion", err)
	}
	if _, ok := c.Get("timeuot"); ok {
		t.Error("Get(timeuot) ok = true, want false")
	}
	c.Strategy.Durations = zeroTable{}
	if got := mustGet(c, "durations"); got != "custom" {
		t.Errorf("Get(durations) of a custom table = %q, want custom", got)
	}
	if !strings.Contains(string(c.Encode()), "# durations: custom") {
		t.Errorf("Encode() of a custom table does not say it is custom:\n%s", c.Encode())
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	custom := fullWant()
	custom.Producer.RetryCodes = []int{}
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"default", DefaultConfig()},
		{"reference5", Reference5()},
		{"reference4", Reference4()},
		{"custom", custom},
		{"full", fullWant()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.cfg.Encode()
			var got Config
			if err := got.Decode(doc, "encoded"); err != nil {
				t.Fatalf("Decode(Encode()) error = %v\n%s", err, doc)
			}
			if !reflect.DeepEqual(got, tt.cfg) {
				t.Errorf("Decode(Encode()) = %+v, want %+v\n%s", got, tt.cfg, doc)
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := LoadEnv("", []string{"MQFAULT_DETECT_TIMEOUT=-1s"})
	want := `config: detect_timeout = "-1s" (MQFAULT_DETECT_TIMEOUT): must be positive`
	if err == nil || err.Error() != want {
		t.Errorf("LoadEnv() error = %v, want %s", err, want)
	}
	if !errors.Is(err, latency.ErrInvalidConfig) {
		t.Errorf("errors.Is(%v, latency.ErrInvalidConfig) = false", err)
	}
}

func TestKnobsListing(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Knobs() {
		if seen[k.Env] {
			t.Errorf("Knobs() lists %s twice", k.Env)
		}
		seen[k.Env] = true
		if k.Env != "MQFAULT_"+strings.ToUpper(k.Name) || k.Doc == "" {
			t.Errorf("Knobs() entry %+v: want Env MQFAULT_<NAME> and a Doc", k)
		}
	}
}

// zeroTable is a custom duration table: it never isolates.
type zeroTable struct{}

func (zeroTable) Isolation(time.Duration) time.Duration { return 0 }
