package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

const openYAML = `name: open
duration: 30s
seed: 1
load: open
rate: 2000
brokers:
  - {name: broker-a, queues: 4, latency: {median: 3ms, p99: 20ms}, capacity: 1500, queue_wait: 200ms}
  - {name: broker-b, queues: 4, latency: {median: 3ms, p99: 20ms}}
`

func TestParseOpenLoad(t *testing.T) {
	s, err := Parse([]byte(openYAML))
	if err != nil {
		t.Fatalf("Parse() error = %v", err)
	}
	if s.Load != LoadOpen || s.Senders != 0 || s.Rate != 2000 || s.Brokers[0].QueueWait != 200*time.Millisecond || s.Brokers[1].QueueWait != 0 {
		t.Errorf("Parse() = %+v, want an open load at 2000/s, broker-a with a 200ms send queue", s)
	}
	closed, err := Parse([]byte(strings.Replace(validYAML, "seed: 1\n", "seed: 1\nload: closed\n", 1)))
	if err != nil || closed.Load != LoadClosed || closed.open() {
		t.Errorf("Parse(load: closed) = %+v, %v; want a closed load", closed, err)
	}
}

// TestParseLoadErrors checks the bad combinations of the load and queue
// fields, each alone and all in one file (every problem at once, in the
// order of the lines).
func TestParseLoadErrors(t *testing.T) {
	tests := []struct {
		name, old, new, want string
	}{
		{"open with senders", "load: open\n", "load: open\nsenders: 8\n", "line 5: senders: an open load has no senders"},
		{"open with senders 0", "load: open\n", "load: open\nsenders: 0\n", "line 5: senders: an open load has no senders"},
		{"open without rate", "rate: 2000\n", "", "rate: missing (an open load needs the mean sends per second of its arrivals)"},
		{"open with rate 0", "rate: 2000\n", "rate: 0\n", "line 5: rate: missing (an open load needs"},
		{"negative rate", "rate: 2000\n", "rate: -5\n", "line 5: rate: -5 must be positive"},
		{"unknown load", "load: open\n", "load: ajar\n", `line 4: load: "ajar" is not one of closed, open`},
		{"negative queue_wait", "queue_wait: 200ms", "queue_wait: -1ms", "line 7: brokers[0].queue_wait: -1ms must be positive"},
		{"queue_wait not a duration", "queue_wait: 200ms", "queue_wait: 200", `line 7: brokers[0].queue_wait: "200" is not a duration`},
		{"queue_wait without capacity", "capacity: 1500, queue_wait: 200ms", "queue_wait: 200ms", "line 7: brokers[0].queue_wait: a send queue needs a capacity"},
		{"queue_wait too long", "queue_wait: 200ms", "queue_wait: 11m", "brokers[0].queue_wait: 11m0s is longer than 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(openYAML, tt.old, tt.new, 1)
			s, err := Parse([]byte(y))
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error containing %q", s, tt.want)
			}
			if !errors.Is(err, ErrInvalidScenario) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse() error = %q, want ErrInvalidScenario containing %q", err, tt.want)
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
				t.Errorf("Parse() reported %d problems, want 1:\n%v", n, err)
			}
		})
	}
	t.Run("all at once", func(t *testing.T) {
		y := strings.NewReplacer("load: open\n", "load: open\nsenders: 8\n", "rate: 2000\n", "",
			"queue_wait: 200ms}", "queue_wait: -3s}", "latency: {median: 3ms, p99: 20ms}}", "latency: {median: 3ms, p99: 20ms}, queue_wait: 1s}").Replace(openYAML)
		_, err := Parse([]byte(y))
		want := []string{
			"rate: missing (an open load needs the mean sends per second of its arrivals)",
			"line 5: senders: an open load has no senders (sends start at rate whatever earlier sends did): leave the field out",
			"line 7: brokers[0].queue_wait: -3s must be positive (how long a send may wait in the broker's queue)",
			"line 8: brokers[1].queue_wait: a send queue needs a capacity (the sends per second the broker serves)",
		}
		if err == nil || err.Error() != strings.Join(want, "\n") {
			t.Errorf("Parse() error =\n%v\nwant\n%s", err, strings.Join(want, "\n"))
		}
	})
	t.Run("closed without senders", func(t *testing.T) {
		_, err := Parse([]byte(strings.Replace(openYAML, "load: open\n", "", 1)))
		if err == nil || !strings.Contains(err.Error(), "senders: missing (required under closed load") {
			t.Errorf("Parse() error = %v, want senders missing for a closed load", err)
		}
	})
}

// openScenario is one healthy broker under an open load of rate for d.
func openScenario(rate float64, d time.Duration) *Scenario {
	return &Scenario{Name: "poisson", Duration: d, Seed: 5, Load: LoadOpen, Rate: rate,
		Brokers: []Broker{{Name: "a", Queues: 4, Latency: Latency{Median: time.Millisecond, P99: 5 * time.Millisecond}}}}
}

// TestOpenLoadPoisson checks the arrivals of an open load at 100 sends a
// second over 1000 s (seeded) against a Poisson process's: the counts per
// second have mean 100 and variance 100. The bounds are four standard
// errors: of the mean, sqrt(100/1000) = 0.32; of the sample variance,
// 100 x sqrt(2/999) = 4.5 (plus the fourth cumulant's share, 100/1000).
// Counts per 10 ms (mean 1) have variance 1 too: the arrivals are not
// evenly spaced at any scale. Every strategy meets the same arrivals.
func TestOpenLoadPoisson(t *testing.T) {
	if raceEnabled {
		t.Skip("100,000 sends are slow under the race detector; TestOpenLoadShort covers the code")
	}
	sc := openScenario(100, 1000*time.Second)
	strategies, err := SelectStrategies("off", "v5")
	if err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, sc, WithStrategies(strategies...))
	counts := rep.Results[0].Series.Sends[:1000]
	var sum, sq float64
	for _, c := range counts {
		sum += float64(c)
	}
	mean := sum / 1000
	for _, c := range counts {
		sq += (float64(c) - mean) * (float64(c) - mean)
	}
	variance := sq / 999
	t.Logf("per second: mean %.2f, variance %.2f", mean, variance)
	if math.Abs(mean-100) > 4*0.32 {
		t.Errorf("mean arrivals per second = %.2f, want 100 +- 1.3", mean)
	}
	if math.Abs(variance-100) > 4*4.6 {
		t.Errorf("variance of arrivals per second = %.2f, want 100 +- 18 (Poisson: equal to the mean)", variance)
	}
	for _, c := range rep.Results[0].Series.Sends[1000:] {
		if c != 0 {
			t.Errorf("sends started after the duration: %v", rep.Results[0].Series.Sends[1000:])
			break
		}
	}
	if a, b := rep.Results[0].Series.Sends, rep.Results[1].Series.Sends; !equalInts(a, b) {
		t.Error("off and v5 met different arrivals, want the same (their own stream)")
	}
	if r := rep.Results[0]; r.Sends != r.Succeeded || r.Failed != 0 || r.Retries != 0 || r.InFlightAtEnd > 5 {
		t.Errorf("healthy broker: %+v, want every send answered, no retry, hardly any in flight at the end", r)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOpenLoadPoissonFine checks the gaps at a finer scale on the arrival
// stream itself: 200,000 gaps at 1000 a second have mean 1 ms and standard
// deviation 1 ms (exponential), to 1%.
func TestOpenLoadPoissonFine(t *testing.T) {
	e := &engine{sc: openScenario(1000, time.Hour), end: int64(time.Hour)}
	e.startArrivals()
	prev, n := e.nextAt, 200000
	var sum, sq float64
	for range n {
		e.nextAt += e.arrivals.ExpFloat64() / e.sc.Rate * 1e9
		gap := (e.nextAt - prev) / 1e6
		prev = e.nextAt
		sum += gap
		sq += gap * gap
	}
	mean := sum / float64(n)
	sd := math.Sqrt(sq/float64(n) - mean*mean)
	if math.Abs(mean-1) > 0.01 || math.Abs(sd-1) > 0.01 {
		t.Errorf("gaps: mean %.4f ms, sd %.4f ms; want 1 and 1 (exponential)", mean, sd)
	}
}

// TestOpenLoadDoesNotWait: under an open load the sends keep arriving while
// every send to a blackholed broker waits out its budget; a closed load
// slows down instead. The open load's sends then pile up in flight.
func TestOpenLoadDoesNotWait(t *testing.T) {
	sc := openScenario(200, 10*time.Second)
	sc.SendTimeout = time.Second
	sc.Events = []Event{{Broker: "a", At: 5 * time.Second, For: 5 * time.Second, State: StateBlackhole}}
	strategies, err := SelectStrategies("off")
	if err != nil {
		t.Fatal(err)
	}
	open := mustRun(t, sc, WithStrategies(strategies...)).Results[0]
	cl := *sc
	cl.Load, cl.Senders = LoadClosed, 4
	closed := mustRun(t, &cl, WithStrategies(strategies...)).Results[0]
	t.Logf("open: %d sends, %d failed, %d in flight at end; closed: %d sends", open.Sends, open.Failed, open.InFlightAtEnd, closed.Sends)
	if open.Sends < 1800 || open.Sends > 2200 {
		t.Errorf("open load made %d sends, want about 2000 (200/s for 10 s, whatever the broker did)", open.Sends)
	}
	if open.Failed < 800 || open.InFlightAtEnd < 150 {
		t.Errorf("open load: %d failed, %d in flight at the end; want about 1000 failed and 200 in flight (1 s budget at 200/s)", open.Failed, open.InFlightAtEnd)
	}
	if closed.Sends > 1200 {
		t.Errorf("closed load made %d sends, want its 4 senders stuck on 1 s timeouts for the last 5 s (at most 1000+20)", closed.Sends)
	}
	if open.Succeeded+open.Failed != open.Sends {
		t.Errorf("%d succeeded + %d failed != %d sends", open.Succeeded, open.Failed, open.Sends)
	}
}

// TestOpenLoadShort runs every strategy on a small open-load scenario with
// a send queue (fast, also under the race detector): every send ends once,
// and the counters add up.
func TestOpenLoadShort(t *testing.T) {
	sc, err := Parse([]byte(strings.Replace(openYAML, "duration: 30s", "duration: 3s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	sc.Brokers[0].Capacity = 500 // a third of the load each way round robin sends it
	rep := mustRun(t, sc)
	var v5Busy int64
	for _, r := range rep.Results {
		if r.Name == "v5" {
			v5Busy = r.BusyAnswers
		}
	}
	for _, r := range rep.Results {
		if r.Succeeded+r.Failed != r.Sends || r.Sends < 5000 || r.Sends > 7000 {
			t.Errorf("%s: %d succeeded + %d failed of %d sends, want every one of about 6000 ended once", r.Name, r.Succeeded, r.Failed, r.Sends)
		}
		if r.Retries != r.Attempts-r.Sends+r.Shed {
			t.Errorf("%s: %d retries, want attempts - sends = %d", r.Name, r.Retries, r.Attempts-r.Sends)
		}
		switch r.Name {
		case "v4": // isolates the busy broker for 30 s at its first slow answer
		case "mqfault": // load-aware picks weigh the queue: fewer busy answers than v5
			if r.BusyAnswers >= v5Busy {
				t.Errorf("%s: %d busy answers, v5 %d: want fewer (load-aware picks)", r.Name, r.BusyAnswers, v5Busy)
			}
		default: // round robin sends the small broker about 1000/s
			if r.BusyAnswers == 0 {
				t.Errorf("%s: no busy answer from a broker at 500/s offered about 1000/s", r.Name)
			}
		}
		var sumRetries, sumBusy int64
		for s := range r.Series.Seconds {
			sumRetries += r.Series.Retries[s]
			sumBusy += r.Series.Busy[s]
		}
		if sumRetries != r.Retries || sumBusy != r.BusyAnswers {
			t.Errorf("%s: per-second retries/busy sum to %d/%d, want %d/%d", r.Name, sumRetries, sumBusy, r.Retries, r.BusyAnswers)
		}
	}
}

// TestRetryStormTerminates offers 30,000 sends a second for 3 s to two
// brokers that serve 100 a second each with a 1 s send queue, with a 10
// minute send budget: almost every attempt waits 1 s and is answered busy,
// every send retries, and sends pile up in flight past MaxInFlight. The
// run ends (in seconds of real time), sheds the arrivals over the bound as
// failed sends, and accounts for every send once. The preset's retry budget
// keeps its retries to half the sends (plus the floor).
func TestRetryStormTerminates(t *testing.T) {
	if raceEnabled {
		t.Skip("90,000 sends are slow under the race detector")
	}
	b := Broker{Queues: 4, Latency: Latency{Median: time.Millisecond, P99: 5 * time.Millisecond}, Capacity: 100, QueueWait: time.Second}
	sc := &Scenario{Name: "storm", Duration: 3 * time.Second, Seed: 3, Load: LoadOpen, Rate: 30000, SendTimeout: 10 * time.Minute}
	for _, n := range []string{"a", "b"} {
		b.Name = n
		sc.Brokers = append(sc.Brokers, b)
	}
	strategies, err := SelectStrategies("v5", "mqfault")
	if err != nil {
		t.Fatal(err)
	}
	// The preset's retry budget stops the storm (checked below); the storm
	// itself is the preset's without it.
	budgeted := strategies[1]
	strategies[1].Name = "mqfault without the retry budget"
	strategies[1].Producer.RetryBudget = 0
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, sc, WithStrategies(strategies...))
	if err != nil {
		t.Fatalf("Run() error = %v, want the storm to end", err)
	}
	for _, r := range rep.Results {
		t.Logf("%s: %d sends, %d failed, %d shed, %d retries, %d busy, %d in flight at end (wall %s)",
			r.Name, r.Sends, r.Failed, r.Shed, r.Retries, r.BusyAnswers, r.InFlightAtEnd, r.Wall)
		if r.Shed == 0 || r.InFlightAtEnd > MaxInFlight {
			t.Errorf("%s: %d shed, %d in flight at the end; want sheds and at most %d in flight", r.Name, r.Shed, r.InFlightAtEnd, MaxInFlight)
		}
		if r.Succeeded+r.Failed != r.Sends || r.Sends < 88000 || r.Sends > 92000 {
			t.Errorf("%s: %d + %d of %d sends, want every one of about 90,000 arrivals ended once", r.Name, r.Succeeded, r.Failed, r.Sends)
		}
		if r.Retries == 0 || r.BusyAnswers == 0 {
			t.Errorf("%s: %d retries, %d busy answers; want a storm", r.Name, r.Retries, r.BusyAnswers)
		}
	}
	rep, err = Run(ctx, sc, WithStrategies(budgeted))
	if err != nil {
		t.Fatalf("Run(mqfault) error = %v", err)
	}
	r := rep.Results[0]
	t.Logf("%s: %d sends, %d failed, %d shed, %d retries, %d refused, %d in flight at end",
		r.Name, r.Sends, r.Failed, r.Shed, r.Retries, r.RetriesRefused, r.InFlightAtEnd)
	// At most half the sends plus 10 a second, over any 10 s window (the
	// run is 3 s, and the last sends' retries may run past it).
	limit := r.Sends/2 + 10*10
	if r.Retries > limit || r.RetriesRefused == 0 || r.Succeeded+r.Failed != r.Sends {
		t.Errorf("%s: %d retries (%d refused) of %d sends; want at most %d, refusals, every send ended once",
			r.Name, r.Retries, r.RetriesRefused, r.Sends, limit)
	}
}

// TestOpenLoadOutput: the open-load columns appear in the table and the
// JSON of an open load, and only there (pkg/sim/report's
// TestReportOpenLoad checks the HTML report's).
func TestOpenLoadOutput(t *testing.T) {
	strategies, err := SelectStrategies("v5")
	if err != nil {
		t.Fatal(err)
	}
	open := mustRun(t, openScenario(200, 2*time.Second), WithStrategies(strategies...))
	closedSc := openScenario(200, 2*time.Second)
	closedSc.Load, closedSc.Senders = LoadClosed, 2
	closed := mustRun(t, closedSc, WithStrategies(strategies...))
	for _, tt := range []struct {
		rep  *Report
		open bool
	}{{open, true}, {closed, false}} {
		var table strings.Builder
		if err := tt.rep.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		js := string(jsonOf(t, tt.rep))
		for _, c := range []struct{ where, text, what string }{
			{table.String(), "refused retries  waited  busy answers", "table"},
			{js, `"waited": 0`, "JSON"},
			{js, `"busy_answers": 0`, "JSON"},
			{js, `"retries_refused": 0`, "JSON"},
		} {
			if !strings.Contains(c.where, c.text) {
				t.Errorf("open=%v: the %s lacks %q", tt.open, c.what, c.text)
			}
		}
		for _, c := range []struct{ where, text, what string }{
			{table.String(), "in flight at end", "table"},
			{js, `"in_flight_at_end"`, "JSON"},
			{js, `"shed"`, "JSON"},
		} {
			if strings.Contains(c.where, c.text) != tt.open {
				t.Errorf("open=%v: the %s holds %q: %v, want %v", tt.open, c.what, c.text, !tt.open, tt.open)
			}
		}
	}
}

// refusedErr is an error a retry budget's refusal could end a send with.
type refusedErr struct{ error }

func (refusedErr) RetryRefused() bool { return true }

// TestRetriesRefusedCounted: a send whose error says a retry budget refused
// its retry (an error in its chain with RetryRefused() true) is counted;
// other errors and successes are not, and a success allocates nothing.
func TestRetriesRefusedCounted(t *testing.T) {
	var m metrics
	m.sendEnded(nil)
	m.sendEnded(errors.New("plain"))
	m.sendEnded(fmt.Errorf("send: %w", refusedErr{errors.New("busy")}))
	if m.refused != 1 {
		t.Errorf("refused = %d, want 1", m.refused)
	}
	if n := testing.AllocsPerRun(100, func() { m.sendEnded(nil) }); n != 0 {
		t.Errorf("sendEnded(nil) allocates %v times, want 0", n)
	}
}
