package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
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
	Retries              int64                 `json:"retries"`
	RetriesRefused       int64                 `json:"retries_refused"`
	Waited               int64                 `json:"waited"`
	BusyAnswers          int64                 `json:"busy_answers"`
	Shed                 *int64                `json:"shed,omitempty"`             // open load only
	InFlightAtEnd        *int64                `json:"in_flight_at_end,omitempty"` // open load only
	LatencyMS            jsonLatency           `json:"latency_ms"`
	Brokers              map[string]jsonBroker `json:"brokers"`            // encoding/json sorts the keys
	Ablation             *jsonAblation         `json:"ablation,omitempty"` // ablations only
	// Timeline is Result.Timeline: the brokers the fault table ever held
	// isolated or unreachable, by name (encoding/json sorts the keys).
	Timeline map[string]jsonTimeline `json:"timeline"`
	Fleet    *jsonFleet              `json:"fleet,omitempty"` // fleets only
}

// jsonTimeline is a BrokerTimeline: its spans as [from, to] pairs in
// seconds of virtual time to the microsecond, and whether the last one was
// still open at the end of the run.
type jsonTimeline struct {
	Isolated         [][2]float64 `json:"isolated_s"`
	Unreachable      [][2]float64 `json:"unreachable_s"`
	StillIsolated    bool         `json:"still_isolated"`
	StillUnreachable bool         `json:"still_unreachable"`
}

// jsonSpans turns spans into [from, to] pairs of seconds (an empty list for
// none).
func jsonSpans(spans []Span) [][2]float64 {
	out := make([][2]float64, len(spans))
	for i, s := range spans {
		out[i] = [2]float64{jsonSeconds(s.From), jsonSeconds(s.To)}
	}
	return out
}

// jsonSeconds converts d to seconds rounded to the microsecond.
func jsonSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)/time.Microsecond) / 1e6
}

// jsonFleet is a fleet's figures: the herding peak and the moves peak
// (each a share of the producers, the second it was first reached, the
// broker) and each broker's share of the attempts beside round robin's.
type jsonFleet struct {
	Producers       int                        `json:"producers"`
	Peak            float64                    `json:"herding_peak"`
	PeakAt          int                        `json:"herding_peak_at_s"`
	PeakBroker      string                     `json:"herding_peak_broker"`
	MovesPeak       float64                    `json:"moves_peak"`
	MovesPeakAt     int                        `json:"moves_peak_at_s"`
	MovesPeakBroker string                     `json:"moves_peak_broker"`
	BrokerShare     map[string]jsonBrokerShare `json:"brokers"`
}

type jsonBrokerShare struct {
	Share      float64 `json:"share"`
	RoundRobin float64 `json:"round_robin"`
}

// jsonAblation marks an ablation's row: the strategy it changes, the policy
// switched off, and whether every number of the entry equals that
// strategy's (Report.SameAsBase at least SameNumbers; false when the base is
// not in the report).
type jsonAblation struct {
	Of         string `json:"of"`
	Off        string `json:"off"`
	SameAsBase bool   `json:"same_as_base"`
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
//	  "retries": N, "retries_refused": N, "busy_answers": N,
//	  ["shed": N, "in_flight_at_end": N,]  (open load only)
//	  "latency_ms": {"p50": X, "p99": X, "p999": X, "max": X},
//	  "brokers": {NAME: {"attempts": N, "failures": N}},
//	  ["ablation": {"of": NAME, "off": POLICY, "same_as_base": BOOL}]  (ablations only)
//	  "timeline": {NAME: {"isolated_s": [[FROM, TO], ...], "unreachable_s": [[FROM, TO], ...],
//	    "still_isolated": BOOL, "still_unreachable": BOOL}}
//	}, ...]}
//
// with brokers sorted by name, latencies in milliseconds to the
// microsecond, and the isolation timeline (Result.Timeline) in seconds of
// virtual time to the microsecond, only for the brokers ever isolated or
// unreachable, so one seed always gives the same bytes.
func (r *Report) MarshalJSON() ([]byte, error) {
	out := jsonReport{Seed: r.Seed, Strategies: make([]jsonStrategy, 0, len(r.Results))}
	if r.Scenario != nil {
		out.Scenario = r.Scenario.Name
	}
	for i, res := range r.Results {
		s := jsonStrategy{
			Name: res.Name, Sends: res.Sends, Succeeded: res.Succeeded, Failed: res.Failed,
			Attempts: res.Attempts, FirstAttemptFailures: res.FirstAttemptFailures,
			Retries: res.Retries, RetriesRefused: res.RetriesRefused, Waited: res.Waited, BusyAnswers: res.BusyAnswers,
			LatencyMS: jsonLatency{P50: ms(res.Latency.P50), P99: ms(res.Latency.P99),
				P999: ms(res.Latency.P999), Max: ms(res.Latency.Max)},
			Brokers: make(map[string]jsonBroker, len(res.Brokers)),
		}
		if r.Scenario != nil && r.Scenario.open() {
			s.Shed, s.InFlightAtEnd = &res.Shed, &res.InFlightAtEnd
		}
		for _, b := range res.Brokers {
			s.Brokers[b.Name] = jsonBroker{Attempts: b.Attempts, Failures: b.Failures}
		}
		s.Timeline = make(map[string]jsonTimeline)
		for _, tl := range res.Timeline {
			if len(tl.Isolated) > 0 || len(tl.Unreachable) > 0 {
				s.Timeline[tl.Name] = jsonTimeline{Isolated: jsonSpans(tl.Isolated), Unreachable: jsonSpans(tl.Unreachable),
					StillIsolated: tl.StillIsolated, StillUnreachable: tl.StillUnreachable}
			}
		}
		if f := res.Fleet; f != nil && r.Scenario != nil {
			s.Fleet = &jsonFleet{Producers: f.Producers, Peak: round6(f.Peak), PeakAt: f.PeakAt, PeakBroker: f.PeakBroker,
				MovesPeak: round6(f.MovesPeak), MovesPeakAt: f.MovesPeakAt, MovesPeakBroker: f.MovesPeakBroker,
				BrokerShare: make(map[string]jsonBrokerShare, len(res.Brokers))}
			for b, br := range res.Brokers {
				s.Fleet.BrokerShare[br.Name] = jsonBrokerShare{Share: round6(res.AttemptShare(b)), RoundRobin: round6(r.Scenario.RoundRobinShare(b))}
			}
		}
		if res.Ablated.Of != "" {
			_, same := r.SameAsBase(i)
			s.Ablation = &jsonAblation{Of: res.Ablated.Of, Off: res.Ablated.Policy, SameAsBase: same != Differs}
		}
		out.Strategies = append(out.Strategies, s)
	}
	return json.Marshal(out)
}

// round6 rounds a share to six decimals, so the JSON stays short.
func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// AttemptShare returns broker b's share of the result's attempts (0 when
// there were none).
func (r *Result) AttemptShare(b int) float64 {
	if r.Attempts == 0 {
		return 0
	}
	return float64(r.Brokers[b].Attempts) / float64(r.Attempts)
}

// RoundRobinShare returns the share of the attempts round robin over the
// route gives broker b: its queues over all queues.
func (s *Scenario) RoundRobinShare(b int) float64 {
	return float64(s.Brokers[b].Queues) / float64(s.Queues())
}

// WriteJSON writes the report's JSON, indented by two spaces (a timeline
// span's two numbers on one line), and a newline.
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
	_, err = w.Write(spanPair.ReplaceAll(buf.Bytes(), []byte("[$1, $2]")))
	return err
}

// spanPair matches a timeline span as json.Indent lays it out, over four
// lines, so WriteJSON can put each span on one.
var spanPair = regexp.MustCompile(`\[\s+(-?[0-9][0-9.e+-]*),\s+(-?[0-9][0-9.e+-]*)\s+\]`)

// WriteTable writes the scenario's summary and one row per strategy: sends,
// succeeded, failed, attempts, first-attempt failures, whole-send latency
// percentiles in milliseconds, the share of attempts that met an unhealthy
// broker, retries made, retries a retry budget refused and attempts answered
// busy; under an open load also the sends shed and the sends in flight when
// the duration ran out. An ablation's row whose numbers all equal its
// base's (Report.SameAsBase) is folded into a note under the table, which
// names it and says whether the run over time differed. Everything it writes is the same for one seed.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	if sc := r.Scenario; sc != nil {
		b.WriteString(sc.Summary(r.Seed))
		b.WriteByte('\n')
	}
	// Every column is right-aligned; names are padded so they read
	// left-aligned.
	// An ablation with its base's numbers is folded into a note.
	type fold struct{ run, numbers []string }
	folds := map[string]*fold{} // by base name
	var bases []string
	shown := make([]bool, len(r.Results))
	width := len("strategy")
	for i, res := range r.Results {
		_, same := r.SameAsBase(i)
		if same == Differs {
			shown[i] = true
			width = max(width, len(res.Name))
			continue
		}
		f := folds[res.Ablated.Of]
		if f == nil {
			f = &fold{}
			folds[res.Ablated.Of] = f
			bases = append(bases, res.Ablated.Of)
		}
		if same == SameRun {
			f.run = append(f.run, res.Name)
		} else {
			f.numbers = append(f.numbers, res.Name)
		}
	}
	open := r.Scenario != nil && r.Scenario.open()
	fleet := r.Scenario != nil && r.Scenario.producers() > 1
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tsends\tsucceeded\tfailed\tattempts\t1st-attempt failures\tp50 ms\tp99 ms\tp999 ms\tmax ms\tunhealthy attempts\tretries\trefused retries\twaited\tbusy answers\t", width, "strategy")
	if open {
		fmt.Fprint(tw, "shed\tin flight at end\t")
	}
	if fleet {
		fmt.Fprint(tw, "herding\tmoves\t")
	}
	fmt.Fprint(tw, "\n")
	for i, res := range r.Results {
		if !shown[i] {
			continue
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.1f%%\t%d\t%d\t%d\t%d\t",
			width, res.Name, res.Sends, res.Succeeded, res.Failed, res.Attempts, res.FirstAttemptFailures,
			fmtMS(res.Latency.P50), fmtMS(res.Latency.P99), fmtMS(res.Latency.P999), fmtMS(res.Latency.Max),
			100*res.UnhealthyShare(), res.Retries, res.RetriesRefused, res.Waited, res.BusyAnswers)
		if open {
			fmt.Fprintf(tw, "%d\t%d\t", res.Shed, res.InFlightAtEnd)
		}
		if fleet {
			fmt.Fprintf(tw, "%s\t%s\t", FormatHerding(res.Fleet), FormatMoves(res.Fleet))
		}
		fmt.Fprint(tw, "\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if fleet {
		if err := r.writeShares(&b, shown); err != nil {
			return err
		}
	}
	if r.Scenario != nil && r.Scenario.has(StateStall) {
		b.WriteString("\nlatency: whole sends, retries included, failed sends too; unhealthy: attempts made to a broker that was\n" +
			"down, blackholed, slow, busy, flapping-down or stalled at that moment; busy answers: attempts answered SYSTEM_BUSY.\n")
	} else {
		b.WriteString("\nlatency: whole sends, retries included, failed sends too; unhealthy: attempts made to a broker that was\n" +
			"down, blackholed, slow, busy or flapping-down at that moment; busy answers: attempts answered SYSTEM_BUSY.\n")
	}
	for _, of := range ablationBases(r) {
		fmt.Fprintf(&b, "Ablations: %s-POLICY is %s with that one policy switched off.\n", of, of)
	}
	for _, of := range bases {
		if f := folds[of]; len(f.run) > 0 {
			fmt.Fprintf(&b, "Same as %s in every number (the policy changed nothing here): %s.\n", of, strings.Join(f.run, ", "))
		}
		if f := folds[of]; len(f.numbers) > 0 {
			fmt.Fprintf(&b, "Same numbers as %s, a different run over time (isolations or per-second series; see --report): %s.\n", of, strings.Join(f.numbers, ", "))
		}
	}
	if fleet {
		b.WriteString("Fleet: the counts add up every producer's; herding: the largest share of the producers that isolated one\n" +
			"broker, or sent it less than half of what round robin would have, within one second (the peak, its broker and\n" +
			"second); moves: the largest share of the producers that left one broker (by herding's test) or came back to it\n" +
			"in one second, a synchronised storm when most of the fleet moves at once away from a fault's edges (the peak,\n" +
			"its broker and second); share: each broker's share of the attempts, and its ratio to round robin's (its queues\n" +
			"over all).\n")
	}
	if open {
		b.WriteString("Open load: shed sends arrived with " + strconv.Itoa(MaxInFlight) + " sends in flight and failed at once (not in the latencies).\n")
	}
	b.WriteString("Every strategy met the same brokers and seed.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeShares writes, per broker, round robin's share of the attempts and
// each shown strategy's share with its ratio to round robin's.
func (r *Report) writeShares(b *strings.Builder, shown []bool) error {
	b.WriteString("\nattempt share per broker (x: its ratio to round robin's)\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	width := len("broker")
	for _, br := range r.Scenario.Brokers {
		width = max(width, len(br.Name))
	}
	fmt.Fprintf(tw, "  %-*s\tround robin\t", width, "broker")
	for i, res := range r.Results {
		if shown[i] {
			fmt.Fprintf(tw, "%s\t", res.Name)
		}
	}
	fmt.Fprint(tw, "\n")
	for k, br := range r.Scenario.Brokers {
		rr := r.Scenario.RoundRobinShare(k)
		fmt.Fprintf(tw, "  %-*s\t%.1f%%\t", width, br.Name, 100*rr)
		for i := range r.Results {
			if shown[i] {
				res := &r.Results[i]
				fmt.Fprintf(tw, "%.1f%% x%.2f\t", 100*res.AttemptShare(k), res.AttemptShare(k)/rr)
			}
		}
		fmt.Fprint(tw, "\n")
	}
	return tw.Flush()
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
	load := fmt.Sprintf("%d senders at %g sends/s", s.Senders, s.Rate)
	if s.open() {
		load = fmt.Sprintf("open load at %g sends/s (Poisson)", s.Rate)
	}
	if n := s.producers(); n > 1 {
		load += fmt.Sprintf(" from %d producers", n)
	}
	fmt.Fprintf(&b, "scenario %q: %d brokers, %d queues, %s of virtual time, %s, send timeout %s, seed %d\n",
		s.Name, len(s.Brokers), s.Queues(), s.Duration, load, s.sendTimeout(), seed)
	for _, br := range s.Brokers {
		if br.QueueWait > 0 {
			fmt.Fprintf(&b, "  %s serves %g sends/s, a send queue of at most %s\n", br.Name, br.Capacity, br.QueueWait)
		}
		if br.Joins > 0 {
			fmt.Fprintf(&b, "  %s joins the route at %s\n", br.Name, fmtSec(br.Joins))
		}
	}
	if s.routeChanges() {
		fmt.Fprintf(&b, "  each producer polls the route every %s\n", s.routePoll())
	}
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
	case StateGone:
		s = "gone: out of the route (a producer learns at its next poll)"
	case StateStall:
		s = fmt.Sprintf("stall: the store stops serving sends for %s of every %s", e.Length, e.Period)
	default:
		s = string(e.State)
	}
	if e.Probe != ProbeAuto {
		s += fmt.Sprintf("; probes %s", e.Probe)
	}
	return s
}
