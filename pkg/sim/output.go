package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// jsonReport is the --json shape.
type jsonReport struct {
	Scenario   string         `json:"scenario"`
	Seed       uint64         `json:"seed"`
	Strategies []jsonStrategy `json:"strategies"`
}

type jsonStrategy struct {
	Name                 string                `json:"name"`
	Sends                int64                 `json:"sends"`
	Succeeded            int64                 `json:"succeeded"`
	Failed               int64                 `json:"failed"`
	Attempts             int64                 `json:"attempts"`
	FirstAttemptFailures int64                 `json:"first_attempt_failures"`
	LatencyMS            jsonLatency           `json:"latency_ms"`
	Brokers              map[string]jsonBroker `json:"brokers"` // encoding/json sorts the keys
}

type jsonLatency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

type jsonBroker struct {
	Attempts int64 `json:"attempts"`
	Failures int64 `json:"failures"`
}

// ms converts d to milliseconds rounded to the microsecond, so the JSON
// carries at most three decimals.
func ms(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)/time.Microsecond) / 1000
}

// MarshalJSON encodes the report as
//
//	{"scenario": NAME, "seed": N, "strategies": [{"name": ..., "sends": N,
//	  "succeeded": N, "failed": N, "attempts": N, "first_attempt_failures": N,
//	  "latency_ms": {"p50": X, "p99": X, "p999": X, "max": X},
//	  "brokers": {NAME: {"attempts": N, "failures": N}}}, ...]}
//
// with brokers sorted by name and latencies in milliseconds to the
// microsecond, so one seed always gives the same bytes.
func (r *Report) MarshalJSON() ([]byte, error) {
	out := jsonReport{Seed: r.Seed, Strategies: make([]jsonStrategy, 0, len(r.Results))}
	if r.Scenario != nil {
		out.Scenario = r.Scenario.Name
	}
	for _, res := range r.Results {
		s := jsonStrategy{
			Name: res.Name, Sends: res.Sends, Succeeded: res.Succeeded, Failed: res.Failed,
			Attempts: res.Attempts, FirstAttemptFailures: res.FirstAttemptFailures,
			LatencyMS: jsonLatency{P50: ms(res.Latency.P50), P99: ms(res.Latency.P99),
				P999: ms(res.Latency.P999), Max: ms(res.Latency.Max)},
			Brokers: make(map[string]jsonBroker, len(res.Brokers)),
		}
		for _, b := range res.Brokers {
			s.Brokers[b.Name] = jsonBroker{Attempts: b.Attempts, Failures: b.Failures}
		}
		out.Strategies = append(out.Strategies, s)
	}
	return json.Marshal(out)
}

// WriteJSON writes the report's JSON, indented by two spaces, and a newline.
func (r *Report) WriteJSON(w io.Writer) error {
	raw, err := r.MarshalJSON()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// WriteTable writes the scenario's summary and one row per strategy: sends,
// succeeded, failed, attempts, first-attempt failures, whole-send latency
// percentiles in milliseconds and the share of attempts that met an
// unhealthy broker. Everything it writes is the same for one seed.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	if sc := r.Scenario; sc != nil {
		b.WriteString(sc.Summary(r.Seed))
		b.WriteByte('\n')
	}
	// Every column is right-aligned; names are padded so they read
	// left-aligned.
	width := len("strategy")
	for _, res := range r.Results {
		width = max(width, len(res.Name))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tsends\tsucceeded\tfailed\tattempts\t1st-attempt failures\tp50 ms\tp99 ms\tp999 ms\tmax ms\tunhealthy attempts\t\n", width, "strategy")
	for _, res := range r.Results {
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.1f%%\t\n",
			width, res.Name, res.Sends, res.Succeeded, res.Failed, res.Attempts, res.FirstAttemptFailures,
			fmtMS(res.Latency.P50), fmtMS(res.Latency.P99), fmtMS(res.Latency.P999), fmtMS(res.Latency.Max),
			100*res.UnhealthyShare())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nlatency: whole sends, retries included, failed sends too; unhealthy: attempts made to a broker that was\n" +
		"down, blackholed, slow, busy or flapping-down at that moment. Every strategy met the same brokers and seed.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtMS formats d in milliseconds with a precision that suits its size.
func fmtMS(d time.Duration) string {
	v := ms(d)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// Summary describes the scenario in a few lines: its size and load, then
// one line per event.
func (s *Scenario) Summary(seed uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %q: %d brokers, %d queues, %s of virtual time, %d senders at %g sends/s, send timeout %s, seed %d\n",
		s.Name, len(s.Brokers), s.Queues(), s.Duration, s.Senders, s.Rate, s.sendTimeout(), seed)
	for _, e := range s.Events {
		fmt.Fprintf(&b, "  %6s..%-6s %-10s %s\n", fmtSec(e.At), fmtSec(e.End()), e.Broker, e.describe())
	}
	return b.String()
}

func fmtSec(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// describe says what the event does in words.
func (e Event) describe() string {
	var s string
	switch e.State {
	case StateDown:
		s = "down: connections refused"
	case StateBlackhole:
		s = "blackhole: no answer, attempts time out"
	case StateSlow:
		s = fmt.Sprintf("slow: median %s, p99 %s", e.Latency.Median, e.Latency.P99)
	case StateBusy:
		code := e.Code
		if code == 0 {
			code = SystemBusy
		}
		name := ""
		if code == SystemBusy {
			name = " (SYSTEM_BUSY)"
		}
		s = fmt.Sprintf("busy: %g%% of attempts answered with code %d%s", 100*e.Rate, code, name)
	case StateFlapping:
		s = fmt.Sprintf("flapping: down for %s of every %s", e.Period/2, e.Period)
	default:
		s = string(e.State)
	}
	if e.Probe != ProbeAuto {
		s += fmt.Sprintf("; probes %s", e.Probe)
	}
	return s
}
