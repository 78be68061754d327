package sim

import (
	"errors"
	"strings"
	"testing"
)

// TestParseEveryProblemAtOnce checks that a scenario with N problems, type
// errors and value errors mixed, reports all N in one Parse, each with its
// line and the field's path as the file writes it, one per line, in the
// order of the file, and none twice: a field that did not decode is not
// reported again by the range checks.
func TestParseEveryProblemAtOnce(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each line of the error, in order
	}{
		{
			name: "type errors do not hide value errors",
			yaml: `name: mixed
duration: 90
seed: 1
senders: 0
rate: lots
send_timeout: 3s
brokers:
  - {name: broker-a, queues: 0, latency: {median: 3ms, p99: 1ms}}
  - {name: broker-b, queues: four, latency: {median: 3ms, p99: 20ms}, capacity: -1}
events:
  - {broker: broker-z, at: 10s, for: 30s, state: down}
  - {broker: broker-a, at: soon, for: 0s, state: sleepy}
`,
			want: []string{
				`line 2: duration: "90" is not a duration (write it as 250ms, 30s or 1m30s)`,
				`line 4: senders: 0 must be at least 1`,
				`line 5: rate: "lots" is not a number`,
				`line 8: brokers[0].queues: 0 must be at least 1`,
				`line 8: brokers[0].latency.p99: 1ms is below the median 3ms`,
				`line 9: brokers[1].queues: "four" is not an integer`,
				`line 9: brokers[1].capacity: -1 must be 0 (unlimited) or a positive number of sends per second`,
				`line 11: events[0].broker: "broker-z" is not one of the scenario's brokers`,
				`line 12: events[1].at: "soon" is not a duration (write it as 250ms, 30s or 1m30s)`,
				`line 12: events[1].for: 0s must be positive`,
				`line 12: events[1].state: "sleepy" is not one of down, blackhole, slow, busy, flapping, stall, gone`,
			},
		},
		{
			name: "a code 0 event hides nothing",
			yaml: `name: codes
duration: 60s
senders: 4
rate: 100
brokers:
  - {name: a, queues: 4, latency: {median: 3ms, p99: 20ms}}
  - {name: b, queues: 4, latency: {median: 3ms}}
events:
  - {broker: a, at: 10s, for: 10s, state: busy, rate: 0.5, code: 0}
  - {broker: a, at: 20s, for: 10s, state: busy, rate: 2}
  - {broker: b, at: 30s, for: 10s, state: down, period: 1s}
  - {broker: b, at: 40s, for: 30s, state: flapping}
  - {broker: c, at: 50s, for: 5s, state: slow}
  - {broker: a, at: 59s, for: 5s, state: blackhole, probe: maybe}
`,
			want: []string{
				`line 7: brokers[1].latency.p99: 0s is below the median 3ms`,
				`line 9: events[0].code: 0 is SUCCESS, not an error code: want a positive response code (leave it out for SYSTEM_BUSY, 2)`,
				`line 10: events[1].rate: 2 must be in (0, 1]: the share of attempts answered with the code`,
				`line 11: events[2].period: only a flapping or stall event has a period, not down`,
				`line 12: events[3].for: the window 40s..1m10s ends after the scenario (1m0s)`,
				`line 12: events[3].period: 0s must be positive (one down-then-up cycle)`,
				`line 13: events[4].broker: "c" is not one of the scenario's brokers`,
				`line 13: events[4].latency: missing (want {median: 3ms, p99: 20ms})`,
				`line 14: events[5].for: the window 59s..1m4s ends after the scenario (1m0s)`,
				`line 14: events[5].probe: "maybe" is not one of reachable, unreachable, timeout`,
			},
		},
		{
			name: "a field of the wrong type is reported once",
			yaml: `name: once
duration: 60s
senders: 4
rate: 100
brokers:
  - {name: a, queues: 4, latency: 5ms}
  - {name: [b], queues: 4, latency: {median: 3ms, p99: 20ms}}
events:
  - {broker: b, at: 10s, for: 10s, state: down}
  - {broker: a, at: 10s, for: 10s, state: slow, latency: {median: x, p99: 20ms}}
`,
			want: []string{
				// Not also "latency: missing", nor "events[0].broker: not one
				// of the brokers" (b's name did not decode), nor "median must
				// be positive".
				`line 6: brokers[0].latency: is "5ms", want a mapping with the fields median, p99`,
				`line 7: brokers[1].name: is a list, want a string`,
				`line 10: events[1].latency.median: "x" is not a duration (write it as 250ms, 30s or 1m30s)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse() error = nil, want %d problems", len(tt.want))
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("Parse() error =\n%s\nwant\n%s", got, want)
			}
			var joined interface{ Unwrap() []error }
			if len(tt.want) > 1 && (!errors.As(err, &joined) || len(joined.Unwrap()) != len(tt.want)) {
				t.Errorf("Parse() error does not unwrap to %d errors", len(tt.want))
			}
			for _, e := range joined.Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) || fe.Line == 0 || !errors.Is(e, ErrInvalidScenario) {
					t.Errorf("problem %v is not a *FieldError with a line matching ErrInvalidScenario", e)
				}
			}
		})
	}
}

// TestParseTooManyProblems checks that past the limit the error says how
// many problems it did not show, rather than dropping them silently.
func TestParseTooManyProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: many\nduration: 60s\nsenders: 1\nrate: 1\nbrokers:\n  - {name: a, queues: 1, latency: {median: 1ms, p99: 1ms}}\nevents:\n")
	for range 30 {
		b.WriteString("  - {broker: a, at: 1s, for: 1s, state: busy, rate: 2}\n")
	}
	_, err := Parse([]byte(b.String()))
	if err == nil {
		t.Fatal("Parse() error = nil, want 30 problems")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != "... and 10 more problems" {
		t.Errorf("Parse() error has %d lines ending %q, want %d problems and \"... and 10 more problems\"", len(lines), lines[len(lines)-1], maxErrors)
	}
}
