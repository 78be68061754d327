package sim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// validYAML is a scenario every loader case starts from; a case replaces
// one line of it (or appends lines).
const validYAML = `name: example
duration: 90s
seed: 1
senders: 8
rate: 2000
send_timeout: 3s
brokers:
  - {name: broker-a, queues: 4, latency: {median: 3ms, p99: 20ms}, capacity: 1500}
  - {name: broker-b, queues: 4, latency: {median: 3ms, p99: 20ms}}
events:
  - {broker: broker-b, at: 10s, for: 30s, state: down}
  - {broker: broker-a, at: 20s, for: 20s, state: slow, latency: {median: 800ms, p99: 2500ms}}
  - {broker: broker-b, at: 30s, for: 40s, state: busy, rate: 0.5, code: 2}
  - {broker: broker-a, at: 50s, for: 30s, state: flapping, period: 2s}
  - {broker: broker-a, at: 85s, for: 3s, state: blackhole, probe: reachable}
`

func TestParseValid(t *testing.T) {
	got, err := Parse([]byte(validYAML))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	want := &Scenario{
		Name: "example", Duration: 90 * time.Second, Seed: 1, Senders: 8, Rate: 2000, SendTimeout: 3 * time.Second,
		Brokers: []Broker{
			{Name: "broker-a", Queues: 4, Latency: Latency{3 * time.Millisecond, 20 * time.Millisecond}, Capacity: 1500},
			{Name: "broker-b", Queues: 4, Latency: Latency{3 * time.Millisecond, 20 * time.Millisecond}},
		},
		Events: []Event{
			{Broker: "broker-b", At: 10 * time.Second, For: 30 * time.Second, State: StateDown},
			{Broker: "broker-a", At: 20 * time.Second, For: 20 * time.Second, State: StateSlow,
				Latency: Latency{800 * time.Millisecond, 2500 * time.Millisecond}},
			{Broker: "broker-b", At: 30 * time.Second, For: 40 * time.Second, State: StateBusy, Rate: 0.5, Code: 2},
			{Broker: "broker-a", At: 50 * time.Second, For: 30 * time.Second, State: StateFlapping, Period: 2 * time.Second},
			{Broker: "broker-a", At: 85 * time.Second, For: 3 * time.Second, State: StateBlackhole, Probe: ProbeReachable},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse() = %+v, want %+v", got, want)
	}
}

// TestParseErrors checks that every kind of bad field is refused with a
// message naming the field's path and line.
func TestParseErrors(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(validYAML, old) {
			panic("validYAML has no " + old)
		}
		return strings.Replace(validYAML, old, new, 1)
	}
	tests := []struct {
		name string
		yaml string
		want string // the error text must contain it
	}{
		{"empty", "", "the scenario is empty"},
		{"comment only", "# nothing\n", "the scenario is empty"},
		{"not yaml", "name: [unclosed\n", "not valid YAML"},
		{"two documents", validYAML + "---\nname: other\n", "one YAML document"},
		{"not a mapping", "- a\n- b\n", `(scenario): is a list, want a mapping`},
		{"unknown field", replace("seed: 1", "sead: 1"), `line 3: sead: unknown field (did you mean seed? want one of name, duration, seed,`},
		{"repeated field", replace("seed: 1", "seed: 1\nseed: 2"), "line 4: seed: repeated field"},
		{"missing name", replace("name: example\n", ""), "name: missing"},
		{"duration not a duration", replace("duration: 90s", "duration: 90"), `line 2: duration: "90" is not a duration`},
		{"duration a list", replace("duration: 90s", "duration: [1]"), "line 2: duration: is a list, want a duration"},
		{"duration negative", replace("duration: 90s", "duration: -1s"), "duration: -1s must be positive"},
		{"duration too long", replace("duration: 90s", "duration: 25h"), "duration: 25h0m0s is longer than 24h0m0s"},
		{"seed negative", replace("seed: 1", "seed: -1"), `line 3: seed: "-1" is not a non-negative integer`},
		{"senders not an integer", replace("senders: 8", "senders: eight"), `line 4: senders: "eight" is not an integer`},
		{"senders a float", replace("senders: 8", "senders: 8.5"), `senders: "8.5" is not an integer`},
		{"senders zero", replace("senders: 8", "senders: 0"), "senders: 0 must be at least 1"},
		{"rate zero", replace("rate: 2000", "rate: 0"), "rate: 0 must be positive"},
		{"rate not finite", replace("rate: 2000", "rate: .inf"), `rate: ".inf" is not a number`},
		{"too many sends", replace("rate: 2000", "rate: 100000"), "more than 5000000"},
		{"send_timeout zero", replace("send_timeout: 3s", "send_timeout: 0s"), "send_timeout: 0s must be positive"},
		{"no brokers", replace("brokers:\n  - {name: broker-a, queues: 4, latency: {median: 3ms, p99: 20ms}, capacity: 1500}\n  - {name: broker-b, queues: 4, latency: {median: 3ms, p99: 20ms}}\n", "brokers: []\n"),
			"brokers: missing"},
		{"brokers a mapping", replace("brokers:\n  -", "brokers: {a: 1}\nx:\n  -"), "brokers: is a mapping, want a list"},
		{"broker unknown field", replace("capacity: 1500}", "capcity: 1500}"), "line 8: brokers[0].capcity: unknown field (did you mean capacity? want one of name, queues, latency, capacity, queue_wait, joins)"},
		{"broker name missing", replace("{name: broker-a, ", "{"), "brokers[0].name: missing"},
		{"broker name odd", replace("{name: broker-a,", "{name: broker a,"), `brokers[0].name: "broker a" may hold only letters`},
		{"broker name repeated", replace("{name: broker-b, queues: 4", "{name: broker-a, queues: 4"), `line 9: brokers[1].name: "broker-a" is also the name of brokers[0]`},
		{"queues zero", replace("queues: 4, latency: {median: 3ms, p99: 20ms}, capacity", "queues: 0, latency: {median: 3ms, p99: 20ms}, capacity"), "brokers[0].queues: 0 must be at least 1"},
		{"queues too many", replace("queues: 4, latency: {median: 3ms, p99: 20ms}, capacity", "queues: 5000, latency: {median: 3ms, p99: 20ms}, capacity"), "brokers[0].queues: 5000 is more than 1024"},
		{"latency missing", replace("latency: {median: 3ms, p99: 20ms}, capacity", "capacity"), "line 8: brokers[0].latency: missing (want {median: 3ms, p99: 20ms})"},
		{"p99 below median", replace("latency: {median: 3ms, p99: 20ms}, capacity", "latency: {median: 30ms, p99: 20ms}, capacity"), "brokers[0].latency.p99: 20ms is below the median 30ms"},
		{"median zero", replace("latency: {median: 3ms, p99: 20ms}, capacity", "latency: {median: 0s, p99: 20ms}, capacity"), "brokers[0].latency.median: 0s must be positive"},
		{"latency unknown field", replace("latency: {median: 3ms, p99: 20ms}, capacity", "latency: {median: 3ms, p95: 20ms}, capacity"), "brokers[0].latency.p95: unknown field (did you mean p99? want one of median, p99)"},
		{"capacity negative", replace("capacity: 1500", "capacity: -1"), "brokers[0].capacity: -1 must be 0 (unlimited) or a positive number"},
		{"event state unknown", replace("state: down", "state: sleepy"), `line 11: events[0].state: "sleepy" is not one of down, blackhole, slow, busy, flapping, stall, gone`},
		{"event state missing", replace(", state: down}", "}"), "events[0].state: missing (one of down, blackhole, slow, busy, flapping, stall, gone)"},
		{"event broker unknown", replace("{broker: broker-b, at: 10s", "{broker: broker-z, at: 10s"), `events[0].broker: "broker-z" is not one of the scenario's brokers`},
		{"event at negative", replace("at: 10s", "at: -1s"), "events[0].at: -1s must not be negative"},
		{"event after the end", replace("at: 85s, for: 3s", "at: 95s, for: 3s"), "events[4].at: 1m35s is not before the end of the scenario (1m30s)"},
		{"event window past the end", replace("at: 85s, for: 3s", "at: 85s, for: 10s"), "events[4].for: the window 1m25s..1m35s ends after the scenario (1m30s)"},
		{"event for zero", replace("at: 10s, for: 30s", "at: 10s, for: 0s"), "events[0].for: 0s must be positive"},
		{"slow without latency", replace(", latency: {median: 800ms, p99: 2500ms}}", "}"), "events[1].latency: missing"},
		{"down with latency", replace("state: down}", "state: down, latency: {median: 1s, p99: 2s}}"), "events[0].latency: only a slow event has a latency, not down"},
		{"busy rate zero", replace("rate: 0.5", "rate: 0"), "events[2].rate: 0 must be in (0, 1]"},
		{"busy rate above one", replace("rate: 0.5", "rate: 1.5"), "events[2].rate: 1.5 must be in (0, 1]"},
		{"busy code zero", replace("code: 2", "code: 0"), "line 13: events[2].code: 0 is SUCCESS"},
		{"busy code negative", replace("code: 2", "code: -3"), "events[2].code: -3 must be a positive response code"},
		{"rate on down", replace("state: down}", "state: down, rate: 0.5}"), "events[0].rate: only a busy event has a rate, not down"},
		{"flapping without period", replace(", period: 2s}", "}"), "events[3].period: 0s must be positive"},
		{"flapping period too long", replace("period: 2s", "period: 40s"), "events[3].period: 40s is longer than the event (30s)"},
		{"period on slow", replace("state: slow,", "state: slow, period: 1s,"), "events[1].period: only a flapping or stall event has a period, not slow"},
		{"probe unknown", replace("probe: reachable", "probe: maybe"), `events[4].probe: "maybe" is not one of reachable, unreachable, timeout`},
		{"event not a mapping", replace("  - {broker: broker-b, at: 10s, for: 30s, state: down}", "  - down"), `line 11: events[0]: is "down", want a mapping`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error containing %q", s, tt.want)
			}
			if !errors.Is(err, ErrInvalidScenario) {
				t.Errorf("Parse() error %v does not match ErrInvalidScenario", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("Parse() error %v is not a *FieldError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse() error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	y := strings.NewReplacer("senders: 8", "senders: 0", "state: down", "state: sleepy").Replace(validYAML)
	_, err := Parse([]byte(y))
	if err == nil {
		t.Fatal("Parse() error = nil, want two problems")
	}
	for _, want := range []string{"line 4: senders:", "line 11: events[0].state:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Parse() error = %q, want it to contain %q", err, want)
		}
	}
}

func TestParseAliases(t *testing.T) {
	y := strings.Replace(validYAML, "  - {name: broker-a, queues: 4, latency: {median: 3ms, p99: 20ms}, capacity: 1500}",
		"  - {name: broker-a, queues: 4, latency: &fast {median: 3ms, p99: 20ms}, capacity: 1500}", 1)
	y = strings.Replace(y, "  - {name: broker-b, queues: 4, latency: {median: 3ms, p99: 20ms}}", "  - {name: broker-b, queues: 4, latency: *fast}", 1)
	s, err := Parse([]byte(y))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if got, want := s.Brokers[1].Latency, (Latency{3 * time.Millisecond, 20 * time.Millisecond}); got != want {
		t.Errorf("Brokers[1].Latency = %v, want %v", got, want)
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := Parse(make([]byte, MaxScenarioBytes+1))
	if !errors.Is(err, ErrInvalidScenario) {
		t.Errorf("Parse(huge) error = %v, want ErrInvalidScenario", err)
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(validYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadFile(path)
	if err != nil || s.Name != "example" {
		t.Fatalf("LoadFile() = %v, %v; want the example scenario", s, err)
	}
	_, err = LoadFile(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(missing) error = %v, want os.ErrNotExist", err)
	}
}

// TestValidateInCode checks Validate on scenarios built in code, where
// there are no lines and zero values take defaults.
func TestValidateInCode(t *testing.T) {
	ok := Scenario{Name: "x", Duration: time.Second, Senders: 1, Rate: 10,
		Brokers: []Broker{{Name: "a", Queues: 1, Latency: Latency{Median: time.Millisecond, P99: time.Millisecond}}},
		Events:  []Event{{Broker: "a", At: 0, For: time.Second, State: StateBusy, Rate: 1}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil (send timeout and code default)", err)
	}
	bad := ok
	bad.Brokers = nil
	err := bad.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "brokers" || fe.Line != 0 {
		t.Errorf("Validate() = %v, want a *FieldError for brokers without a line", err)
	}
}

func TestDefaultScenario(t *testing.T) {
	s := DefaultScenario()
	if err := s.Validate(); err != nil {
		t.Fatalf("DefaultScenario().Validate() = %v", err)
	}
	if len(s.Brokers) != 4 || s.Queues() != 16 || s.Duration < 60*time.Second {
		t.Errorf("DefaultScenario() has %d brokers, %d queues, %s; want 4 x 4 queues and at least 60s",
			len(s.Brokers), s.Queues(), s.Duration)
	}
	states := map[State]bool{}
	for _, e := range s.Events {
		states[e.State] = true
	}
	for _, st := range []State{StateDown, StateSlow, StateBusy} {
		if !states[st] {
			t.Errorf("DefaultScenario() has no %s event", st)
		}
	}
	if s2 := DefaultScenario(); s2 == s {
		t.Error("DefaultScenario() returned the same pointer twice, want a new scenario per call")
	}
}
