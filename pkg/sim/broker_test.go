package sim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

const sec = int64(time.Second)

func testBroker(capacity float64, events ...Event) *brokerSim {
	b := Broker{Name: "a", Queues: 1, Latency: Latency{Median: 2 * time.Millisecond, P99: 2 * time.Millisecond}, Capacity: capacity}
	for i := range events {
		events[i].Broker = "a"
	}
	return newBrokerSim(b, 0, events)
}

func TestStateAt(t *testing.T) {
	b := testBroker(0,
		Event{At: time.Second, For: 4 * time.Second, State: StateSlow, Latency: Latency{time.Second, time.Second}},
		Event{At: 2 * time.Second, For: time.Second, State: StateDown}, // listed later: wins where both apply
		Event{At: 10 * time.Second, For: 4 * time.Second, State: StateFlapping, Period: 2 * time.Second},
	)
	tests := []struct {
		at   int64
		want State
	}{
		{0, StateUp},
		{sec, StateSlow},
		{2 * sec, StateDown},
		{3*sec - 1, StateDown},
		{3 * sec, StateSlow},
		{5 * sec, StateUp}, // windows end exclusive
		{10 * sec, StateDown},
		{11*sec - 1, StateDown},
		{11 * sec, StateUp},
		{12 * sec, StateDown},
		{13 * sec, StateUp},
		{14 * sec, StateUp},
	}
	for _, tt := range tests {
		if got, _ := b.stateAt(tt.at); got != tt.want {
			t.Errorf("stateAt(%s) = %s, want %s", time.Duration(tt.at), got, tt.want)
		}
	}
}

func TestAttemptOutcomes(t *testing.T) {
	timeout := 500 * time.Millisecond
	tests := []struct {
		name      string
		ev        Event
		class     latency.Class
		code      int
		elapsed   time.Duration // -1: any
		unhealthy bool
		drew      bool // the attempt used its draws
	}{
		{"up", Event{State: StateBusy, Rate: 1, At: time.Hour, For: time.Second}, latency.ClassAnswered, 0, 2 * time.Millisecond, false, true},
		{"down", Event{State: StateDown, For: time.Second}, latency.ClassTransportNotSent, 0, time.Millisecond, true, false},
		{"blackhole", Event{State: StateBlackhole, For: time.Second}, latency.ClassTransportTimeout, 0, timeout + timeoutLag, true, false},
		{"slow past the timeout", Event{State: StateSlow, For: time.Second, Latency: Latency{time.Second, time.Second}},
			latency.ClassTransportTimeout, 0, timeout + timeoutLag, true, true},
		{"slow", Event{State: StateSlow, For: time.Second, Latency: Latency{100 * time.Millisecond, 100 * time.Millisecond}},
			latency.ClassAnswered, 0, 100 * time.Millisecond, true, true},
		{"busy", Event{State: StateBusy, For: time.Second, Rate: 1, Code: 17}, latency.ClassBroker, 17, 2 * time.Millisecond, true, true},
		{"busy default code", Event{State: StateBusy, For: time.Second, Rate: 1}, latency.ClassBusy, SystemBusy, 2 * time.Millisecond, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testBroker(0, tt.ev)
			o, unhealthy, drew := b.attempt(0, timeout, draws{z: 0, busy: 0.5})
			if o.Class != tt.class || o.Code != tt.code || o.Elapsed != tt.elapsed || unhealthy != tt.unhealthy || drew != tt.drew {
				t.Errorf("attempt() = %+v, %v, %v; want class %s, code %d, elapsed %s, unhealthy %v, drew %v",
					o, unhealthy, drew, tt.class, tt.code, tt.elapsed, tt.unhealthy, tt.drew)
			}
			if got := producer.Classify(producer.Result{}, o.Err); o.Class != latency.ClassAnswered && (got.Class != o.Class || got.Code != o.Code) {
				t.Errorf("Classify(attempt().Err) = %+v, want the attempt's own class %s", got, o.Class)
			}
		})
	}
}

// TestCapacity sends 1000 attempts a second for 2 s to a broker that
// takes 100: it accepts its burst (minBurst, the floor of a bucket of 50
// ms worth) plus 100 a second, and answers the rest SYSTEM_BUSY.
func TestCapacity(t *testing.T) {
	b := testBroker(100)
	accepted := 0
	for at := int64(0); at < 2*sec; at += sec / 1000 {
		o, _, _ := b.attempt(at, time.Second, draws{})
		switch {
		case o.Class == latency.ClassAnswered:
			accepted++
		case o.Class != latency.ClassBusy || o.Code != SystemBusy:
			t.Fatalf("attempt() = %+v, want an answer or SYSTEM_BUSY", o)
		}
	}
	// The last attempt is at 1.999 s: 199.9 tokens refilled by then.
	if lo, hi := minBurst+199, minBurst+200; accepted < lo || accepted > hi {
		t.Errorf("accepted %d attempts, want between %d and %d", accepted, lo, hi)
	}
}

func TestLatencyDistribution(t *testing.T) {
	d := newDist(Latency{Median: 10 * time.Millisecond, P99: 100 * time.Millisecond})
	dice := newAttemptRand()
	lat := make([]time.Duration, 100000)
	busy := 0
	for i := range lat {
		u := dice.draws(senderKey(7, i%32), uint64(i/32+1), i%3)
		lat[i] = d.at(u.z)
		if u.busy < 0.4 {
			busy++
		}
	}
	slices.Sort(lat)
	near := func(got, want time.Duration, tol float64) bool {
		return float64(got) > float64(want)*(1-tol) && float64(got) < float64(want)*(1+tol)
	}
	if got := lat[len(lat)/2]; !near(got, 10*time.Millisecond, 0.03) {
		t.Errorf("median of draws = %s, want about 10ms", got)
	}
	if got := lat[len(lat)*99/100]; !near(got, 100*time.Millisecond, 0.08) {
		t.Errorf("p99 of draws = %s, want about 100ms", got)
	}
	if got := float64(busy) / float64(len(lat)); got < 0.39 || got > 0.41 {
		t.Errorf("share of busy coins below 0.4 = %.4f, want about 0.4", got)
	}
	tests := []struct {
		z    float64
		want time.Duration
	}{
		{0, 10 * time.Millisecond},
		{z99, 100 * time.Millisecond},
		{-40, time.Microsecond}, // the lower bound
		{40, 10 * MaxLatency},   // the upper bound
		{math.NaN(), time.Microsecond},
	}
	for _, tt := range tests {
		if got := d.at(tt.z); !near(got, tt.want, 1e-6) {
			t.Errorf("at(%v) = %s, want %s", tt.z, got, tt.want)
		}
	}
	flat := newDist(Latency{Median: time.Millisecond, P99: time.Millisecond})
	if got := flat.at(3); got != time.Millisecond {
		t.Errorf("at(3) of a constant distribution = %s, want 1ms", got)
	}
}

// TestAttemptDraws checks the common random numbers: an attempt's draws
// depend on the seed, sender, send and attempt numbers and nothing else
// (not on the draws made before), each of the four changes them, and one
// draw ranks alike in every distribution.
func TestAttemptDraws(t *testing.T) {
	dice := newAttemptRand()
	base := dice.draws(senderKey(1, 3), 10, 0)
	dice.draws(senderKey(5, 5), 5, 2) // draws in between change nothing
	if again := newAttemptRand().draws(senderKey(1, 3), 10, 0); again != base {
		t.Errorf("draws(1, 3, 10, 0) = %v then %v, want the same", base, again)
	}
	if again := dice.draws(senderKey(1, 3), 10, 0); again != base {
		t.Errorf("draws(1, 3, 10, 0) after others = %v, want %v", again, base)
	}
	for _, other := range []draws{
		dice.draws(senderKey(2, 3), 10, 0), dice.draws(senderKey(1, 4), 10, 0),
		dice.draws(senderKey(1, 3), 11, 0), dice.draws(senderKey(1, 3), 10, 1),
	} {
		if other.z == base.z || other.busy == base.busy {
			t.Errorf("draws of another attempt = %v, want other draws than %v", other, base)
		}
	}
	if base.busy < 0 || base.busy >= 1 {
		t.Errorf("busy coin = %v, want it in [0, 1)", base.busy)
	}
	healthy := newDist(Latency{Median: 3 * time.Millisecond, P99: 20 * time.Millisecond})
	slow := newDist(Latency{Median: 600 * time.Millisecond, P99: 2500 * time.Millisecond})
	for _, z := range []float64{-2, -0.5, 0, 1, 3} {
		lo, hi := healthy.at(z), healthy.at(z+0.01)
		slo, shi := slow.at(z), slow.at(z+0.01)
		if lo >= hi || slo >= shi || slo <= lo {
			t.Errorf("at(%v): healthy %s..%s, slow %s..%s; want both rising, slow above", z, lo, hi, slo, shi)
		}
	}
}

func TestSimDetector(t *testing.T) {
	b := testBroker(0,
		Event{At: 0, For: time.Second, State: StateDown},
		Event{At: time.Second, For: time.Second, State: StateBlackhole},
		Event{At: 2 * time.Second, For: time.Second, State: StateSlow, Latency: Latency{time.Second, time.Second}},
		Event{At: 3 * time.Second, For: time.Second, State: StateBusy, Rate: 1, Probe: ProbeUnreachable},
		Event{At: 4 * time.Second, For: time.Second, State: StateDown, Probe: ProbeReachable},
		Event{At: 5 * time.Second, For: time.Second, State: StateSlow, Latency: Latency{time.Second, time.Second}, Probe: ProbeTimeout},
	)
	clk := clock.NewManual(Epoch)
	d := &simDetector{clock: clk, epoch: Epoch, byAddr: map[string]*brokerSim{b.addr: b}}
	tests := []struct {
		at   time.Duration
		want string // "ok", "timeout" or "refused"
	}{
		{0, "refused"}, {time.Second, "timeout"}, {2 * time.Second, "ok"}, {3 * time.Second, "refused"},
		{4 * time.Second, "ok"}, {5 * time.Second, "timeout"}, {6 * time.Second, "ok"},
	}
	for _, tt := range tests {
		clk.Set(Epoch.Add(tt.at))
		err := d.Detect(context.Background(), b.addr)
		got := "refused"
		switch {
		case err == nil:
			got = "ok"
		case errors.Is(err, context.DeadlineExceeded):
			got = "timeout"
		}
		if got != tt.want {
			t.Errorf("Detect() at %s = %v (%s), want %s", tt.at, err, got, tt.want)
		}
	}
	if err := d.Detect(context.Background(), "nowhere:1"); err == nil {
		t.Error("Detect(unknown address) = nil, want an error")
	}
}

func TestPercentile(t *testing.T) {
	v := make([]int64, 1000)
	for i := range v {
		v[i] = int64(i + 1)
	}
	tests := []struct {
		permille int
		want     int64
	}{{500, 500}, {990, 990}, {999, 999}, {1000, 1000}}
	for _, tt := range tests {
		if got := percentile(v, tt.permille); got != tt.want {
			t.Errorf("percentile(1..1000, %d) = %d, want %d", tt.permille, got, tt.want)
		}
	}
	if got := percentile([]int64{7}, 500); got != 7 {
		t.Errorf("percentile([7], 500) = %d, want 7", got)
	}
	if got := percentile(nil, 990); got != 0 {
		t.Errorf("percentile(nil) = %d, want 0", got)
	}
}

func TestEventQueueOrder(t *testing.T) {
	var q eventQueue
	r := rand.New(rand.NewPCG(9, 9))
	var seq uint64
	for range 500 {
		seq++
		q.push(event{at: r.Int64N(50), seq: seq})
	}
	prev := event{at: -1}
	for len(q) > 0 {
		e := q.pop()
		if e.at < prev.at || (e.at == prev.at && e.seq < prev.seq) {
			t.Fatalf("pop() = (%d, %d) after (%d, %d), want time then scheduling order", e.at, e.seq, prev.at, prev.seq)
		}
		prev = e
	}
}
