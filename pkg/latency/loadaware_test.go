package latency_test

import (
	"math"
	"sync"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// loadRoute is a route of one queue per broker.
func loadRoute(t *testing.T, brokers ...string) *route.PublishInfo {
	t.Helper()
	var qs []route.MessageQueue
	for _, b := range brokers {
		qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b})
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func loadAware(c *latency.Config) { c.LoadAware = true }

func answeredIn(d time.Duration) latency.Outcome {
	return latency.Outcome{Class: latency.ClassAnswered, Latency: d}
}

// pickOn picks until the pick is on broker (releasing the others) and
// returns it.
func pickOn(t *testing.T, s *latency.Strategy, info *route.PublishInfo, broker string) latency.Pick {
	t.Helper()
	for range 16 {
		p, _ := s.Select(info, latency.PickInfo{})
		if p.Queue.BrokerName == broker {
			return p
		}
		p.Release()
	}
	t.Fatalf("no pick on %s in 16", broker)
	return latency.Pick{}
}

// TestLoadAwareScore checks the pick's ordering on the score PeakEWMA x
// (in flight + 1): of two available brokers the lower score wins, whatever
// the round robin says, and equal scores keep the round robin's.
func TestLoadAwareScore(t *testing.T) {
	tests := []struct {
		name    string
		latA    time.Duration // PeakEWMA of a, b (0: never answered)
		latB    time.Duration
		picks   int      // picks made without their attempts ending
		wantSeq []string // brokers picked in order
	}{
		{name: "never answered: in flight alone decides, alternating", picks: 4,
			wantSeq: []string{"", "", "", ""}}, // checked by alternation below
		{name: "the faster broker takes picks until its in-flight score reaches the slower", latA: 100 * time.Millisecond, latB: 25 * time.Millisecond, picks: 4,
			wantSeq: []string{"b", "b", "b", ""}},
		{name: "a slow broker is avoided by every pick while the fast one has room", latA: 10 * time.Millisecond, latB: 500 * time.Millisecond, picks: 5,
			wantSeq: []string{"a", "a", "a", "a", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := policyStrategy(t, loadAware)
			info := loadRoute(t, "a", "b")
			for b, lat := range map[string]time.Duration{"a": tt.latA, "b": tt.latB} {
				if lat > 0 {
					pickOn(t, s, info, b).Done(answeredIn(lat))
				}
			}
			if got := s.InFlight("a") + s.InFlight("b"); got != 0 {
				t.Fatalf("in flight before = %d, want 0", got)
			}
			var got []string
			var picks []latency.Pick
			for range tt.picks {
				p, ok := s.Select(info, latency.PickInfo{})
				if !ok || p.Stage != latency.StageAvailable {
					t.Fatalf("Select = %+v, %v", p, ok)
				}
				got = append(got, p.Queue.BrokerName)
				picks = append(picks, p)
			}
			for i, w := range tt.wantSeq {
				if w != "" && got[i] != w {
					t.Errorf("picks = %v, want %v (\"\" any)", got, tt.wantSeq)
					break
				}
			}
			if tt.latA == 0 && tt.latB == 0 {
				for i := 1; i < len(got); i++ {
					if got[i] == got[i-1] && s.InFlight(got[i]) > s.InFlight(other(got[i]))+1 {
						t.Errorf("picks = %v: never answered brokers should share by in flight", got)
					}
				}
				if d := s.InFlight("a") - s.InFlight("b"); d < -1 || d > 1 {
					t.Errorf("in flight a=%d b=%d, want balanced", s.InFlight("a"), s.InFlight("b"))
				}
			}
			if n := s.InFlight("a") + s.InFlight("b"); n != int64(tt.picks) {
				t.Errorf("in flight = %d, want %d (one per pick)", n, tt.picks)
			}
			for _, p := range picks {
				p.Done(answeredIn(time.Millisecond))
			}
			if n := s.InFlight("a") + s.InFlight("b"); n != 0 {
				t.Errorf("in flight after every Done = %d, want 0", n)
			}
		})
	}
}

func other(b string) string {
	if b == "a" {
		return "b"
	}
	return "a"
}

// TestLoadAwareInFlight checks the in-flight accounting: a pick counts one,
// a pending report (an async hand-over) keeps it, the attempt's end or a
// Release uncounts it, an isolated broker is never the second choice, and
// the reference presets count nothing.
func TestLoadAwareInFlight(t *testing.T) {
	s, clock := policyStrategy(t, loadAware)
	info := loadRoute(t, "a", "b")
	p := pickOn(t, s, info, "a")
	if got := s.InFlight("a"); got != 1 {
		t.Fatalf("in flight after a pick = %d, want 1", got)
	}
	p.Done(latency.Outcome{Class: latency.ClassAnswered, Pending: true})
	if got := s.InFlight("a"); got != 1 {
		t.Errorf("in flight after a pending report = %d, want 1", got)
	}
	p.Done(latency.Outcome{Class: latency.ClassAnswered, Path: latency.PathAsyncAnswer, Latency: 3 * time.Millisecond})
	if got := s.InFlight("a"); got != 0 {
		t.Errorf("in flight after the attempt's end = %d, want 0", got)
	}
	q := pickOn(t, s, info, "b")
	q.Release()
	if got, lat := s.InFlight("b"), s.LoadLatency("b"); got != 0 || lat != 0 {
		t.Errorf("after Release: in flight %d, latency %v; want 0, 0 (Release changes nothing else)", got, lat)
	}
	if u := s.Report(q, latency.Outcome{Class: latency.ClassBroker, Code: 1}); !u.Isolation {
		t.Fatalf("broker error update = %+v, want an isolation", u)
	}
	clock.Advance(0)
	// b isolated: a, however loaded, is picked; b is never the second choice.
	var held []latency.Pick
	for range 6 {
		p, _ := s.Select(info, latency.PickInfo{})
		if p.Queue.BrokerName != "a" {
			t.Fatalf("picked %s while b is isolated", p.Queue.BrokerName)
		}
		held = append(held, p)
	}
	for _, p := range held {
		p.Release()
	}
	if got := s.InFlight("a"); got != 0 {
		t.Errorf("in flight after releases = %d, want 0", got)
	}
	ref, _ := policyStrategy(t, nil)
	rp, _ := ref.Select(info, latency.PickInfo{})
	if ref.InFlight(rp.Queue.BrokerName) != 0 {
		t.Errorf("Reference5 counted a pick in flight")
	}
	rp.Release()
	if ref.InFlight(rp.Queue.BrokerName) != 0 {
		t.Errorf("Reference5: Release changed the count")
	}
}

// TestLoadAwarePeakEWMA checks the PeakEWMA on the manual clock: a higher
// latency is taken at once, a lower one decays towards it with a 1 s time
// constant, a busy answer counts as a 200 ms wait, and a request that never
// left (client, cancelled) changes nothing.
func TestLoadAwarePeakEWMA(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		steps []struct {
			after time.Duration
			o     latency.Outcome
		}
		want time.Duration
	}{
		{name: "first answer", want: 40 * ms, steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(40 * ms)}}},
		{name: "a peak is taken at once", want: 300 * ms, steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(10 * ms)}, {10 * ms, answeredIn(300 * ms)}}},
		{name: "a lower answer at once changes nothing", want: 100 * ms, steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(100 * ms)}, {0, answeredIn(10 * ms)}}},
		{name: "after one decay time a lower answer weighs 1-1/e", want: time.Duration(100*ms.Seconds()*1e9/math.E + 10*ms.Seconds()*1e9*(1-1/math.E)), steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(100 * ms)}, {time.Second, answeredIn(10 * ms)}}},
		{name: "a busy answer leaves the PeakEWMA (it is push-back, scored apart)", want: 5 * ms, steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(5 * ms)}, {ms, latency.Outcome{Class: latency.ClassBusy, Code: 2, Latency: ms}}}},
		{name: "a refused connection counts as 1s", want: time.Second, steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(5 * ms)}, {ms, latency.Outcome{Class: latency.ClassTransportFailed, Latency: ms}}}},
		{name: "a timeout counts its wait", want: 3 * time.Second, steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(5 * ms)}, {ms, latency.Outcome{Class: latency.ClassTransportTimeout, Latency: 3 * time.Second}}}},
		{name: "client and cancelled outcomes change nothing", want: 5 * ms, steps: []struct {
			after time.Duration
			o     latency.Outcome
		}{{0, answeredIn(5 * ms)}, {ms, latency.Outcome{Class: latency.ClassClient, Latency: time.Second}}, {ms, latency.Outcome{Class: latency.ClassCancelled, Latency: time.Second}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clock := policyStrategy(t, loadAware)
			info := loadRoute(t, "a")
			for _, st := range tt.steps {
				clock.Advance(st.after)
				p, _ := s.Select(info, latency.PickInfo{LastBroker: ""})
				p.Done(st.o)
			}
			got := s.LoadLatency("a")
			if d := got - tt.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("PeakEWMA = %v, want %v", got, tt.want)
			}
			if n := s.InFlight("a"); n != 0 {
				t.Errorf("in flight = %d, want 0", n)
			}
		})
	}
}

// TestLoadAwareAllocations: a load-aware pick and its Done allocate nothing.
func TestLoadAwareAllocations(t *testing.T) {
	s, _ := policyStrategy(t, loadAware)
	info := loadRoute(t, "a", "b", "c", "d")
	if allocs := testing.AllocsPerRun(200, func() {
		p, _ := s.Select(info, latency.PickInfo{})
		p.Done(answeredIn(time.Millisecond))
	}); allocs != 0 {
		t.Errorf("pick + Done allocate %v, want 0", allocs)
	}
}

// TestPickStaysFourWords guards the pick's size: Select returns a Pick by
// value on every send, and a fifth word (a pointer to the broker's load
// state, as load-aware picks first had) made every pick, load-aware or not,
// slower in BenchmarkSelect. The slot handle lives in the padding after
// Stage: on a 64-bit platform a Pick is 32 bytes.
func TestPickStaysFourWords(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size is asserted on 64-bit platforms")
	}
	if got := unsafe.Sizeof(latency.Pick{}); got != 32 {
		t.Errorf("unsafe.Sizeof(Pick{}) = %d, want 32 (four words)", got)
	}
}

// releasingReporter is a Reporter of another kind that holds something per
// pick: it implements latency.Releaser, and records the picks released.
type releasingReporter struct {
	*mocks.MockReporter
	released []latency.Pick
}

func (r *releasingReporter) Release(p latency.Pick) { r.released = append(r.released, p) }

// TestPickReleaseAnyReporter checks that Pick.Release reaches any Reporter
// that implements latency.Releaser (here one that is not a Strategy), with
// the pick; that a Reporter that does not implement it is left alone (its
// Report is not called); and that a zero Pick releases nothing.
func TestPickReleaseAnyReporter(t *testing.T) {
	ctrl := gomock.NewController(t)
	q := &route.MessageQueue{Topic: "T", BrokerName: "a"}
	r := &releasingReporter{MockReporter: mocks.NewMockReporter(ctrl)}
	p := latency.Pick{Queue: q, Stage: latency.StageAny, Reporter: r}
	p.Release()
	if len(r.released) != 1 || r.released[0] != p {
		t.Errorf("Release on a Releaser's pick: released %v, want [%v]", r.released, p)
	}
	n := len(r.released)
	latency.Pick{Reporter: r}.Release() // no queue: nothing picked
	if len(r.released) != n {
		t.Errorf("Release of a pick without a queue reached the Reporter: %v", r.released)
	}
	plain := mocks.NewMockReporter(ctrl) // no Report expected: a call fails the test
	latency.Pick{Queue: q, Reporter: plain}.Release()
	latency.Pick{}.Release()
}

// TestLoadAwareEndFindsItsBroker checks that an attempt's end (Release or
// Done) uncounts the broker its pick counted, and only that one, however the
// strategy finds the broker's slot again: through the route the strategy
// picked from last, another route, a new route of the topic, a copy of the
// pick's queue, or a broker whose slot was dropped meanwhile (never below
// 0), or dropped and made again and picked again: the pick's end then
// uncounts the slot it was counted on, not the new one, whose count belongs
// to the pick in flight on it. Each case picks p on broker a of route 1 (brokers a, b),
// does what its step says, ends p, and checks every broker's count.
func TestLoadAwareEndFindsItsBroker(t *testing.T) {
	end := map[string]func(p latency.Pick){
		"Release": func(p latency.Pick) { p.Release() },
		"Done":    func(p latency.Pick) { p.Done(answeredIn(time.Millisecond)) },
	}
	tests := []struct {
		name string
		// between runs after p's pick and before p ends; it returns the
		// picks it leaves in flight.
		between func(t *testing.T, s *latency.Strategy, p *latency.Pick) []latency.Pick
	}{
		{"the route picked from last", func(*testing.T, *latency.Strategy, *latency.Pick) []latency.Pick { return nil }},
		{"another route picked from since", func(t *testing.T, s *latency.Strategy, _ *latency.Pick) []latency.Pick {
			other := loadRoute(t, "c", "d")
			q, _ := s.Select(other, latency.PickInfo{})
			return []latency.Pick{q}
		}},
		{"a new route of the topic picked from since", func(t *testing.T, s *latency.Strategy, _ *latency.Pick) []latency.Pick {
			next := loadRoute(t, "a", "b", "c")
			s.RouteChanged(next)
			var held []latency.Pick
			for range 3 {
				q, _ := s.Select(next, latency.PickInfo{})
				held = append(held, q)
			}
			return held
		}},
		{"the pick's queue is a copy", func(_ *testing.T, _ *latency.Strategy, p *latency.Pick) []latency.Pick {
			q := *p.Queue
			p.Queue = &q
			return nil
		}},
		{"the broker's slot was dropped", func(_ *testing.T, s *latency.Strategy, _ *latency.Pick) []latency.Pick {
			s.Table().Remove("a")
			return nil
		}},
		{"the route changed without the broker", func(t *testing.T, s *latency.Strategy, _ *latency.Pick) []latency.Pick {
			s.RouteChanged(loadRoute(t, "b", "c"))
			return nil
		}},
		{"the broker left the table and came back, picked again since", func(t *testing.T, s *latency.Strategy, _ *latency.Pick) []latency.Pick {
			s.RouteChanged(loadRoute(t, "b", "c")) // drops a's slot
			back := loadRoute(t, "a", "b")
			s.RouteChanged(back) // a new slot for a
			return []latency.Pick{pickOn(t, s, back, "a")}
		}},
	}
	for _, tt := range tests {
		for how, finish := range end {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				s, _ := policyStrategy(t, loadAware)
				info := loadRoute(t, "a", "b")
				s.RouteChanged(info)
				for _, b := range []string{"a", "b", "c", "d"} {
					s.Update(b, time.Millisecond, false, true)
				}
				p := pickOn(t, s, info, "a")
				if got := s.InFlight("a"); got != 1 {
					t.Fatalf("InFlight(a) after the pick = %d, want 1", got)
				}
				held := tt.between(t, s, &p)
				want := map[string]int64{}
				for _, q := range held {
					want[q.Queue.BrokerName]++
				}
				finish(p)
				for _, b := range []string{"a", "b", "c", "d"} {
					if got := s.InFlight(b); got != want[b] {
						t.Errorf("InFlight(%s) after p's end = %d, want %d (held: %v)", b, got, want[b], want)
					}
				}
				for _, q := range held {
					q.Release()
				}
				for _, b := range []string{"a", "b", "c", "d"} {
					if got := s.InFlight(b); got != 0 {
						t.Errorf("InFlight(%s) after every end = %d, want 0", b, got)
					}
				}
			})
		}
	}
}

// TestLoadAwareEndsUnderRouteChurn runs picks and their ends on several
// goroutines while another one keeps dropping broker a from the route and
// bringing it back (its slot leaves the table and a new one, often with the
// freed id, takes its place): once every pick has ended, every broker's
// in-flight count is 0, since each end uncounts the slot its pick was
// counted on and never another incarnation's. Run it with -race.
func TestLoadAwareEndsUnderRouteChurn(t *testing.T) {
	s, _ := policyStrategy(t, loadAware)
	with, without := loadRoute(t, "a", "b", "c"), loadRoute(t, "b", "c")
	s.RouteChanged(with)
	rounds := 2000
	if raceEnabled {
		rounds = 300
	}
	stop := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for i := 0; ; i++ {
			select {
			case <-stop:
				s.RouteChanged(with)
				return
			default:
			}
			if i%2 == 0 {
				s.RouteChanged(without)
			} else {
				s.RouteChanged(with)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				p, ok := s.Select(with, latency.PickInfo{})
				if !ok {
					t.Error("Select() found no queue")
					return
				}
				if (i+g)%3 == 0 {
					p.Release()
				} else {
					p.Done(answeredIn(time.Millisecond))
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-churned
	for _, b := range []string{"a", "b", "c"} {
		if got := s.InFlight(b); got != 0 {
			t.Errorf("InFlight(%s) after every pick ended = %d, want 0", b, got)
		}
	}
}
