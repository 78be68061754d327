package sim

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fleetScenario is two brokers, broker-b down from 2 s to the end, and
// senders senders split among producers producers.
func fleetScenario(producers, senders int) *Scenario {
	lat := Latency{Median: 3 * time.Millisecond, P99: 20 * time.Millisecond}
	return &Scenario{Name: "fleet", Duration: 20 * time.Second, Seed: 1, Senders: senders, Rate: 400, Producers: producers,
		Brokers: []Broker{{Name: "broker-a", Queues: 4, Latency: lat}, {Name: "broker-b", Queues: 4, Latency: lat}},
		Events:  []Event{{Broker: "broker-b", At: 2 * time.Second, For: 18 * time.Second, State: StateDown}}}
}

// TestFleetOneProducer: producers: 1 is the run without the field, byte for
// byte, and has no fleet figures.
func TestFleetOneProducer(t *testing.T) {
	for _, name := range []string{"small", "open"} {
		sc := loadTestScenario(t, name)
		one := *sc
		one.Producers = 1
		strats := WithStrategies(mustSelect(t, "off", "mqfault")...)
		a, b := mustRun(t, sc, strats), mustRun(t, &one, strats)
		var ta, tb, ja, jb bytes.Buffer
		if err := a.WriteTable(&ta); err != nil {
			t.Fatal(err)
		}
		if err := b.WriteTable(&tb); err != nil {
			t.Fatal(err)
		}
		if err := a.WriteJSON(&ja); err != nil {
			t.Fatal(err)
		}
		if err := b.WriteJSON(&jb); err != nil {
			t.Fatal(err)
		}
		if ta.String() != tb.String() || ja.String() != jb.String() {
			t.Errorf("%s: producers: 1 changed the output:\n%s\nwant\n%s", name, tb.String(), ta.String())
		}
		for _, r := range b.Results {
			if r.Fleet != nil {
				t.Errorf("%s/%s: Fleet = %+v, want nil for one producer", name, r.Name, r.Fleet)
			}
		}
	}
}

// TestFleetIndependent: each producer of a fleet has its own fault table,
// so each one meets the down broker on its own: a fleet of 4 producers of
// one sender each makes several times the first-attempt failures of one
// producer with the 4 senders (which learns once for all of them). Every
// producer isolates broker-b within the second after it goes down, so the
// herding figure reaches 100% on broker-b. So does off's, which isolates
// nothing, from its traffic: its retry skips the rest of broker-b's queues,
// so broker-b gets about one attempt in five of each producer's (a1, a2,
// a3, b0, then the retry's a0), where round robin would give it half.
func TestFleetIndependent(t *testing.T) {
	strats := mustSelect(t, "off", "v5")
	one := mustRun(t, fleetScenario(1, 4), WithStrategies(strats...)).Results[1]
	rep := mustRun(t, fleetScenario(4, 4), WithStrategies(strats...))
	off, fleet := rep.Results[0], rep.Results[1]
	t.Logf("v5 first-attempt failures: one producer %d, four %d", one.FirstAttemptFailures, fleet.FirstAttemptFailures)
	if fleet.FirstAttemptFailures < 3*one.FirstAttemptFailures {
		t.Errorf("a fleet of 4 made %d first-attempt failures, one producer %d: want each producer to learn on its own",
			fleet.FirstAttemptFailures, one.FirstAttemptFailures)
	}
	f := fleet.Fleet
	if f == nil || f.Producers != 4 || len(f.Herding) != fleet.Series.Seconds || len(f.HerdingBroker) != fleet.Series.Seconds {
		t.Fatalf("Fleet = %+v, want 4 producers and a figure per second", f)
	}
	if f.Peak != 1 || f.PeakBroker != "broker-b" || f.PeakAt < 2 || f.PeakAt > 3 {
		t.Errorf("herding peak %v on %q at %ds, want 100%% on broker-b at 2-3 s", f.Peak, f.PeakBroker, f.PeakAt)
	}
	if f.Herding[0] != 0 || f.HerdingBroker[0] != -1 {
		t.Errorf("herding in second 0 = %v (broker %d), want 0 before the fault", f.Herding[0], f.HerdingBroker[0])
	}
	if off.Fleet == nil || off.Fleet.Peak != 1 || off.Fleet.PeakBroker != "broker-b" || off.Fleet.Herding[1] != 0 {
		t.Errorf("off: Fleet = %+v, want all 4 producers off broker-b from its fault on, none before", off.Fleet)
	}
	for _, tl := range off.Timeline {
		if tl.Isolations() != 0 {
			t.Errorf("off isolated %s: want its herding from traffic alone", tl.Name)
		}
	}
	// The counts add up the producers': every send ended once.
	for _, r := range rep.Results {
		if r.Sends != r.Succeeded+r.Failed || r.Sends < 7000 {
			t.Errorf("%s: %d sends, %d succeeded, %d failed; want about 8000, each ended once", r.Name, r.Sends, r.Succeeded, r.Failed)
		}
	}
	// The timeline is the first producer's: broker-b isolated.
	if tl := fleet.Timeline[1]; tl.Name != "broker-b" || tl.Isolations() == 0 {
		t.Errorf("timeline of broker-b = %+v, want the first producer's isolations", tl)
	}
}

// TestHerdingCount checks the count of one producer: an isolation counts in
// every second it is in force, one that began and ended in a second counts
// there; traffic off a broker counts only in a second with at least as many
// attempts as the route has queues.
func TestHerdingCount(t *testing.T) {
	sc := fleetScenario(2, 2) // 2 brokers of 4 queues
	h := newHerding(sc, 10, 2)
	p := h.producer(0)
	p.setRoute([]uint64{3}) // both brokers
	s := func(k int64, frac float64) int64 { return k*sec + int64(frac*float64(sec)) }
	p.isolated(s(1, 0.5), 1, true)  // broker-b isolated from 1.5 s ...
	p.isolated(s(4, 0.2), 1, false) // ... to 4.2 s
	p.isolated(s(5, 0.1), 0, true)  // broker-a isolated and released within second 5
	p.isolated(s(5, 0.3), 0, false)
	for i := range 8 { // second 6: 8 attempts, 1 to broker-b: less than half of round robin's 4
		b := 0
		if i == 0 {
			b = 1
		}
		p.attempt(s(6, float64(i)/10), b)
	}
	for i := range 7 { // second 7: 7 attempts, all to a: too few to judge
		p.attempt(s(7, float64(i)/10), 0)
	}
	p.finish(s(8, 0))
	want := map[int][2]int32{1: {0, 1}, 2: {0, 1}, 3: {0, 1}, 4: {0, 1}, 5: {1, 0}, 6: {0, 1}}
	for k := range 10 {
		got := [2]int32{h.left[2*k], h.left[2*k+1]}
		if got != want[k] {
			t.Errorf("second %d: left %v, want %v", k, got, want[k])
		}
	}
	r := h.result(sc)
	if r.Peak != 0.5 || r.PeakAt != 1 || r.PeakBroker != "broker-b" || r.HerdingBroker[5] != 0 {
		t.Errorf("result = %+v, want a peak of 1 producer in 2 on broker-b from second 1", r)
	}

	// Over a route naming broker-a alone, sending only to it is round
	// robin; the poll that brings broker-b back closes that second under the
	// old route, and the second it came back in is not judged.
	tl := &timeline{herd: h.producer(1)}
	q := tl.herd
	q.setRoute([]uint64{1})
	for i := range 8 {
		q.attempt(s(2, float64(i)/10), 0)
	}
	route := []uint64{3}
	tl.routeChanged(s(3, 0.5), route)
	for i := range 8 {
		q.attempt(s(3, 0.5+float64(i)/20), 0)
	}
	q.finish(s(4, 0))
	// Producer 0's isolation of broker-b (1.5 s to 4.2 s) is all there is.
	if got := [2]int32{h.left[2*2+1], h.left[2*3+1]}; got != [2]int32{1, 1} {
		t.Errorf("broker-b left in seconds 2 and 3 by %v producers, want only producer 0's isolation (1 each)", got)
	}
	route[0] = 0 // the herding count keeps its own copy of the route
	if !q.routes(1) {
		t.Error("the herding count's route changed with the caller's slice")
	}
}

// TestFleetOutput: a fleet's table has the herding and moves columns and
// the share of each broker beside round robin's, its JSON the fleet's
// figures, its summary the producers. broker-b goes down at 2 s and stays
// down: every producer leaves it in second 2, so both peaks are 100% there.
func TestFleetOutput(t *testing.T) {
	rep := mustRun(t, fleetScenario(4, 8), WithStrategies(mustSelect(t, "v5")...))
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8 senders at 400 sends/s from 4 producers", "herding", "  moves", "100% (broker-b, 2s)  100% (broker-b, 2s)",
		"attempt share per broker", "round robin", "50.0%", "x1.", "moves: the largest share of the producers that left one broker"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Strategies []struct {
			Fleet *struct {
				Producers  int     `json:"producers"`
				Peak       float64 `json:"herding_peak"`
				PeakBroker string  `json:"herding_peak_broker"`
				Moves      float64 `json:"moves_peak"`
				MovesAt    int     `json:"moves_peak_at_s"`
				MovesOn    string  `json:"moves_peak_broker"`
				Brokers    map[string]struct {
					Share      float64 `json:"share"`
					RoundRobin float64 `json:"round_robin"`
				} `json:"brokers"`
			} `json:"fleet"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal(js.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	f := out.Strategies[0].Fleet
	if f == nil || f.Producers != 4 || f.Peak != 1 || f.PeakBroker != "broker-b" || f.Brokers["broker-a"].RoundRobin != 0.5 ||
		f.Brokers["broker-a"].Share <= 0.5 {
		t.Errorf("JSON fleet = %+v, want 4 producers, a peak of 1 on broker-b, broker-a above its round-robin half", f)
	}
	if r := rep.Results[0].Fleet; f == nil || f.Moves != 1 || f.MovesAt != r.MovesPeakAt || f.MovesAt != 2 || f.MovesOn != "broker-b" {
		t.Errorf("JSON fleet = %+v, want a moves peak of 1 on broker-b at 2 s (Result.Fleet: %v at %d s)", f, r.MovesPeak, r.MovesPeakAt)
	}
}

// TestParseProducers checks the producers field: at least 1, at most
// MaxProducers, no more than the senders of a closed load, and the product
// with the queues bounded.
func TestParseProducers(t *testing.T) {
	base := `name: p
duration: 10s
senders: 4
rate: 100
brokers:
  - {name: a, queues: 4, latency: {median: 3ms, p99: 20ms}}
`
	tests := []struct{ line, want string }{
		{"producers: 0", "line 7: producers: 0 must be at least 1 (leave the field out for one producer)"},
		{"producers: -2", "line 7: producers: -2 must be at least 1"},
		{"producers: 5", "line 7: producers: 5 producers need at least 5 senders (sender i is producer i mod 5's), not 4"},
		{"producers: 20000", "line 7: producers: 20000 is more than 10000"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(base + tt.line + "\n"))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%s) error = %v, want %q", tt.line, err, tt.want)
		}
	}
	if sc, err := Parse([]byte(base + "producers: 4\n")); err != nil || sc.Producers != 4 {
		t.Errorf("Parse(producers: 4) = %v, %v; want 4 producers", sc, err)
	}
	big := fleetScenario(MaxProducers, MaxProducers)
	big.Brokers[0].Queues, big.Brokers[1].Queues = 1000, 1000
	if err := big.Validate(); err == nil || !strings.Contains(err.Error(), "producers x queues is 10000 producers x 2000 queues") {
		t.Errorf("Validate(10000 producers x 2000 queues) = %v, want the product named", err)
	}
}

// TestFleetMoves: Moves counts a producer when it leaves a broker and when
// it comes back, where Herding counts it in every second it stays away.
// broker-b is down from 5 s to 6 s: every v5 producer leaves it within
// seconds 5-6 and isolates it for 10 s, so all come back together about
// 10 s later (a synchronised move); in between they all stay away
// (Herding 100%) and none moves (Moves 0). Without the fault nobody moves.
func TestFleetMoves(t *testing.T) {
	sc := fleetScenario(10, 10)
	sc.Events[0].At, sc.Events[0].For = 5*time.Second, time.Second
	r := mustRun(t, sc, WithStrategies(mustSelect(t, "v5")...)).Results[0]
	f := r.Fleet
	if f == nil || len(f.Moves) != r.Series.Seconds || len(f.MovesBroker) != r.Series.Seconds {
		t.Fatalf("Fleet = %+v, want a Moves figure per second", f)
	}
	t.Logf("herding %v", f.Herding)
	t.Logf("moves   %v", f.Moves)
	if f.MovesPeak != 1 || f.MovesPeakBroker != "broker-b" || f.MovesPeakAt < 5 || f.MovesPeakAt > 6 {
		t.Errorf("moves peak %v on %q at %ds, want every producer leaving broker-b at 5-6 s", f.MovesPeak, f.MovesPeakBroker, f.MovesPeakAt)
	}
	left, came := 0.0, 0.0
	for k := 5; k <= 6; k++ {
		left += f.Moves[k]
	}
	for k := 8; k <= 13; k++ {
		if f.Herding[k] != 1 || f.Moves[k] != 0 {
			t.Errorf("second %d: herding %v, moves %v; want 100%% away and nobody moving", k, f.Herding[k], f.Moves[k])
		}
	}
	for k := 14; k <= 17; k++ {
		came += f.Moves[k]
		if f.Moves[k] > 0 && f.MovesBroker[k] != 1 {
			t.Errorf("second %d: moves on broker %d, want broker-b's", k, f.MovesBroker[k])
		}
	}
	if left < 1 || came < 1 {
		t.Errorf("moves: %v in seconds 5-6, %v in 14-17; want every producer leaving, then coming back", left, came)
	}
	for k := range 5 {
		if f.Moves[k] != 0 || f.MovesBroker[k] != -1 {
			t.Errorf("second %d, before the fault: moves %v on broker %d, want none", k, f.Moves[k], f.MovesBroker[k])
		}
	}

	healthy := fleetScenario(10, 10)
	healthy.Events = nil
	if f := mustRun(t, healthy, WithStrategies(mustSelect(t, "v5")...)).Results[0].Fleet; f.MovesPeak != 0 || f.MovesPeakBroker != "" {
		t.Errorf("no fault: moves peak %v on %q at %ds, want 0", f.MovesPeak, f.MovesPeakBroker, f.MovesPeakAt)
	}
}

// TestMovesCount checks the count of one producer's moves: leaving by
// traffic counts in the judged second it starts, a second too thin to judge
// keeps the verdict (no move), and coming back counts in the judged second
// it ends; an isolation counts where it begins and where the second after
// its last one begins.
func TestMovesCount(t *testing.T) {
	sc := fleetScenario(1, 1) // 2 brokers of 4 queues
	h := newHerding(sc, 10, 1)
	p := h.producer(0)
	p.setRoute([]uint64{3})
	s := func(k int64, frac float64) int64 { return k*sec + int64(frac*float64(sec)) }
	send := func(k int64, toA, toB int) {
		for i := range toA + toB {
			b := 0
			if i >= toA {
				b = 1
			}
			p.attempt(s(k, float64(i)/float64(toA+toB+1)), b)
		}
	}
	send(0, 4, 4)                   // round robin
	send(1, 7, 1)                   // off broker-b: leaves it
	send(2, 3, 0)                   // too few to judge: still off
	send(3, 7, 1)                   // still off
	send(4, 4, 4)                   // back
	p.isolated(s(6, 0.5), 0, true)  // broker-a isolated from 6.5 s ...
	p.isolated(s(8, 0.2), 0, false) // ... to 8.2 s: back in second 9
	p.finish(s(10, 0))
	wantGone := map[int][2]int32{1: {0, 1}, 6: {1, 0}}
	wantBack := map[int][2]int32{4: {0, 1}, 9: {1, 0}}
	for k := range 10 {
		if got := [2]int32{h.gone[2*k], h.gone[2*k+1]}; got != wantGone[k] {
			t.Errorf("second %d: left %v, want %v", k, got, wantGone[k])
		}
		if got := [2]int32{h.back[2*k], h.back[2*k+1]}; got != wantBack[k] {
			t.Errorf("second %d: came back %v, want %v", k, got, wantBack[k])
		}
	}
	r := h.result(sc)
	if r.MovesPeak != 1 || r.MovesPeakAt != 1 || r.MovesPeakBroker != "broker-b" || r.MovesBroker[6] != 0 || r.MovesBroker[5] != -1 {
		t.Errorf("result = %+v, want the first move on broker-b in second 1", r)
	}
}
