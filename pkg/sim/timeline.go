package sim

import (
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// Span is a stretch of virtual time, [From, To).
type Span struct {
	From, To time.Duration
}

// BrokerTimeline is what a strategy's fault table held about one broker over
// a run: when it was isolated (each span ends with the isolation's release,
// or the end of the run) and when it was marked unreachable.
type BrokerTimeline struct {
	Name string
	// Isolated holds the isolation spans, in order, not overlapping: an
	// isolation extended before it ended is one span.
	Isolated []Span
	// Unreachable holds the spans the broker's reachable flag was off
	// (v5: sync transport errors with the detector on, failed probes with
	// Config.ProbeFailures), in order.
	Unreachable []Span
	// StillIsolated and StillUnreachable say that the last span of
	// Isolated or Unreachable was still open when the run ended (its To is
	// the run's end, not a release).
	StillIsolated, StillUnreachable bool
}

// timeline records BrokerTimelines for one producer of a run. It samples the
// fault table's two flags of a broker when they may have changed: after
// each fault update (the engine calls updated), when an isolation expires
// and when a probe answers (as the strategy's latency.Observer). Nothing of
// it runs on the pick path; a sample is two lookups in the fault table. It
// is safe for concurrent use, as the detector's probes report from their
// own goroutines. A fleet's producers other than the first record no spans
// (record false): their samples only feed the herding figure (herd).
type timeline struct {
	latency.NopObserver
	clock  *clock.Manual
	ft     *latency.FaultTable // set once the strategy is built
	index  map[string]int      // read-only, shared by a run's producers
	names  []string            // the brokers, in the scenario's order
	record bool

	mu     sync.Mutex // guards tracks and herd
	tracks []brokerTrack
	herd   *producerHerd // a fleet's producer: what herding counts of it; nil otherwise
}

// brokerTrack is one broker's spans so far and its open spans' starts (-1
// when none is open).
type brokerTrack struct {
	isolatedSince, unreachableSince int64
	tl                              BrokerTimeline
}

// brokerIndex maps sc's broker names to their positions.
func brokerIndex(sc *Scenario) brokerNames {
	n := brokerNames{index: make(map[string]int, len(sc.Brokers)), names: make([]string, len(sc.Brokers))}
	for i, b := range sc.Brokers {
		n.index[b.Name] = i
		n.names[i] = b.Name
	}
	return n
}

// brokerNames are a scenario's broker names and their positions, shared
// read-only by a run's producers.
type brokerNames struct {
	index map[string]int
	names []string
}

func newTimeline(sc *Scenario, clk *clock.Manual, names brokerNames, record bool) *timeline {
	t := &timeline{clock: clk, index: names.index, record: record, names: names.names}
	if record {
		t.tracks = make([]brokerTrack, len(sc.Brokers))
		for i, b := range sc.Brokers {
			t.tracks[i] = brokerTrack{isolatedSince: -1, unreachableSince: -1, tl: BrokerTimeline{Name: b.Name}}
		}
	}
	return t
}

// updated samples broker b at virtual time now, after a fault update.
func (t *timeline) updated(now int64, b int) {
	if t.ft == nil {
		return
	}
	t.sample(now, b)
}

func (t *timeline) sample(now int64, b int) {
	name := t.names[b]
	isolated, unreachable := !t.ft.IsAvailable(name), !t.ft.IsReachable(name)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.herd != nil {
		t.herd.isolated(now, b, isolated)
	}
	if !t.record {
		return
	}
	tr := &t.tracks[b]
	tr.isolatedSince = toggle(&tr.tl.Isolated, tr.isolatedSince, isolated, now)
	tr.unreachableSince = toggle(&tr.tl.Unreachable, tr.unreachableSince, unreachable, now)
}

// attempted counts an attempt of the producer's on broker b at now, for the
// herding figure (a fleet's producers only).
func (t *timeline) attempted(now int64, b int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.herd.attempt(now, b)
}

// routeChanged tells the herding count of the producer that its route is
// now route, after closing the second it counted under the old one if that
// has passed (a fleet's producers only).
func (t *timeline) routeChanged(now int64, route []uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.herd.roll(now)
	t.herd.setRoute(route)
	t.herd.changed = true // its attempts this second went over two routes
}

// finish closes the herding figure's count of the producer at the run's
// end (a fleet's producers only).
func (t *timeline) finish(end int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.herd.finish(end)
}

// toggle opens a span at now when on and none is open, or closes the open
// one at now when off; it returns the open span's start (-1 for none).
func toggle(spans *[]Span, since int64, on bool, now int64) int64 {
	switch {
	case on && since < 0:
		return now
	case !on && since >= 0:
		if now > since {
			*spans = append(*spans, Span{From: time.Duration(since), To: time.Duration(now)})
		}
		return -1
	}
	return since
}

// at is the virtual time of the clock's now.
func (t *timeline) at() int64 { return t.clock.Now().Sub(Epoch).Nanoseconds() }

func (t *timeline) observe(broker string) {
	if b, ok := t.index[broker]; ok && t.ft != nil {
		t.sample(t.at(), b)
	}
}

// OnRecover implements latency.Observer: an isolation ended on its timer.
func (t *timeline) OnRecover(ev latency.RecoveryEvent) { t.observe(ev.Broker) }

// OnProbe implements latency.Observer: a probe may have turned the broker
// reachable or unreachable.
func (t *timeline) OnProbe(ev latency.ProbeEvent) {
	if ev.BecameReachable || ev.BecameUnreachable {
		t.observe(ev.Broker)
	}
}

// result closes the spans still open at end and returns every broker's
// timeline, in the scenario's order (nil when the timeline records none).
func (t *timeline) result(end int64) []BrokerTimeline {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.record {
		return nil
	}
	out := make([]BrokerTimeline, len(t.tracks))
	for i := range t.tracks {
		tr := &t.tracks[i]
		tr.tl.StillIsolated = tr.isolatedSince >= 0 && end > tr.isolatedSince
		tr.tl.StillUnreachable = tr.unreachableSince >= 0 && end > tr.unreachableSince
		tr.isolatedSince = toggle(&tr.tl.Isolated, tr.isolatedSince, false, end)
		tr.unreachableSince = toggle(&tr.tl.Unreachable, tr.unreachableSince, false, end)
		out[i] = tr.tl
	}
	return out
}

// Isolations returns how many isolations began.
func (b *BrokerTimeline) Isolations() int { return len(b.Isolated) }

// IsolatedTime returns the time the broker spent isolated.
func (b *BrokerTimeline) IsolatedTime() time.Duration { return total(b.Isolated) }

// UnreachableTime returns the time the broker was marked unreachable.
func (b *BrokerTimeline) UnreachableTime() time.Duration { return total(b.Unreachable) }

func total(spans []Span) time.Duration {
	var d time.Duration
	for _, s := range spans {
		d += s.To - s.From
	}
	return d
}
