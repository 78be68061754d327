package latency_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// updateRule is one cell of the reference's update rules, written out from
// 5.3.3's and 4.9.8's source (DESIGN.md section 2): what an attempt on one
// path that met one class does to the fault table.
type updateRule struct {
	path  latency.Path
	class latency.Class
	iso5  bool
	// reachOff and reachOn are v5's reachable flag with the detector
	// switch off and on.
	reachOff, reachOn bool
	iso4              bool
}

// referenceRules lists every path and class.
var referenceRules = []updateRule{
	// sendDefaultImpl: sync, oneway, the async hand-over.
	{latency.PathSend, latency.ClassAnswered, false, true, true, false},
	{latency.PathSend, latency.ClassBusy, true, false, false, true},
	{latency.PathSend, latency.ClassBroker, true, false, false, true},
	{latency.PathSend, latency.ClassTransportFailed, true, true, false, true},
	{latency.PathSend, latency.ClassTransportTimeout, true, true, false, true},
	{latency.PathSend, latency.ClassTransportNotSent, true, true, false, true},
	{latency.PathSend, latency.ClassThrottled, true, true, false, true},
	{latency.PathSend, latency.ClassClient, false, true, true, true},
	{latency.PathSend, latency.ClassCancelled, false, true, true, false},
	// MQClientAPIImpl: the end of an async request handed over.
	{latency.PathAsyncAnswer, latency.ClassAnswered, false, true, true, false},
	{latency.PathAsyncAnswer, latency.ClassBusy, true, true, true, true},
	{latency.PathAsyncAnswer, latency.ClassBroker, true, true, true, true},
	{latency.PathAsyncAnswer, latency.ClassTransportFailed, true, true, true, true},
	{latency.PathAsyncAnswer, latency.ClassTransportTimeout, true, true, true, true},
	{latency.PathAsyncAnswer, latency.ClassTransportNotSent, true, false, false, true},
	{latency.PathAsyncAnswer, latency.ClassThrottled, true, true, true, true},
	{latency.PathAsyncAnswer, latency.ClassClient, true, false, false, true},
	{latency.PathAsyncAnswer, latency.ClassCancelled, false, true, true, false},
	// MQClientAPIImpl: an async retry that could not be handed over.
	{latency.PathAsyncResend, latency.ClassAnswered, false, true, true, false},
	{latency.PathAsyncResend, latency.ClassBusy, true, false, false, true},
	{latency.PathAsyncResend, latency.ClassBroker, true, false, false, true},
	{latency.PathAsyncResend, latency.ClassTransportFailed, true, false, false, true},
	{latency.PathAsyncResend, latency.ClassTransportTimeout, true, false, false, true},
	{latency.PathAsyncResend, latency.ClassTransportNotSent, true, false, false, true},
	{latency.PathAsyncResend, latency.ClassThrottled, true, false, false, true},
	{latency.PathAsyncResend, latency.ClassClient, true, false, false, true},
	{latency.PathAsyncResend, latency.ClassCancelled, false, true, true, false},
}

// TestUpdateRulesCoverEveryClass checks that the table above names every
// path and class once, so a class added to latency cannot go untested.
func TestUpdateRulesCoverEveryClass(t *testing.T) {
	seen := map[[2]int]bool{}
	for _, r := range referenceRules {
		seen[[2]int{int(r.path), int(r.class)}] = true
	}
	paths := []latency.Path{latency.PathSend, latency.PathAsyncAnswer, latency.PathAsyncResend}
	for _, p := range paths {
		for _, c := range latency.Classes() {
			if !seen[[2]int{int(p), int(c)}] {
				t.Errorf("no rule tested for path %v, class %v", p, c)
			}
		}
	}
	if want := len(paths) * len(latency.Classes()); len(referenceRules) != want {
		t.Errorf("%d rules tested, want %d", len(referenceRules), want)
	}
}

// TestUpdateFor checks the rules per mode, every class on every path, with
// the detector switch off and on; v4's updates carry reachable true.
func TestUpdateFor(t *testing.T) {
	for _, r := range referenceRules {
		for _, det := range []bool{false, true} {
			o := latency.Outcome{Class: r.class, Path: r.path, Latency: 42 * time.Millisecond, Code: 7, Remark: "x", Err: errors.New("e")}
			reach := r.reachOff
			if det {
				reach = r.reachOn
			}
			want5 := latency.FaultUpdate{Broker: "b", Latency: o.Latency, Isolation: r.iso5, Reachable: reach}
			if got := latency.UpdateFor(latency.ModeV5, "b", o, det); got != want5 {
				t.Errorf("v5 %v/%v detector=%v: %+v, want %+v", r.path, r.class, det, got, want5)
			}
			if got := latency.UpdateFor("", "b", o, det); got != want5 {
				t.Errorf(`mode "" %v/%v detector=%v: %+v, want v5's %+v`, r.path, r.class, det, got, want5)
			}
			want4 := latency.FaultUpdate{Broker: "b", Latency: o.Latency, Isolation: r.iso4, Reachable: true}
			if got := latency.UpdateFor(latency.ModeV4, "b", o, det); got != want4 {
				t.Errorf("v4 %v/%v detector=%v: %+v, want %+v", r.path, r.class, det, got, want4)
			}
		}
	}
	// An unknown class or path is a transport failure on PathSend.
	for _, o := range []latency.Outcome{{Class: 200}, {Path: 200}} {
		got := latency.UpdateFor(latency.ModeV5, "b", o, true)
		if want := (latency.FaultUpdate{Broker: "b", Isolation: true}); got != want {
			t.Errorf("UpdateFor(%+v) = %+v, want %+v", o, got, want)
		}
	}
}

// TestPickDoneUpdatesTable drives every rule through the seam: a pick of a
// real strategy, its Done, the strategy's fault table. Isolation is the
// isolation latency's duration (10 s in v5, 10 min in v4); a fast success
// isolates nothing.
func TestPickDoneUpdatesTable(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		for _, r := range referenceRules {
			for _, det := range []bool{false, true} {
				s, clk := faultOnStrategy(t, mode)
				s.SetDetector(det)
				info, err := route.NewPublishInfoFromQueues("T", []route.MessageQueue{{Topic: "T", BrokerName: "b"}})
				if err != nil {
					t.Fatal(err)
				}
				pick, ok := s.Select(info, latency.PickInfo{})
				if !ok || pick.Reporter == nil {
					t.Fatalf("Select() = %+v, %v: want a pick that reports to its strategy", pick, ok)
				}
				o := latency.Outcome{Class: r.class, Path: r.path, Latency: 3 * time.Millisecond}
				u := pick.Done(o)
				iso, reach, isolation := r.iso5, r.reachOff, 10*time.Second
				if det && mode == latency.ModeV5 {
					reach = r.reachOn
				}
				if mode == latency.ModeV4 {
					iso, reach, isolation = r.iso4, true, 10*time.Minute
				}
				if want := (latency.FaultUpdate{Broker: "b", Latency: o.Latency, Isolation: iso, Reachable: reach}); u != want {
					t.Errorf("%s %v/%v detector=%v: Done() = %+v, want %+v", mode, r.path, r.class, det, u, want)
				}
				item, ok := s.Table().Item("b")
				if !ok {
					t.Fatalf("%s %v/%v: Done() left no fault item", mode, r.path, r.class)
				}
				wantUntil := clk.Now()
				if iso {
					wantUntil = wantUntil.Add(isolation)
				}
				if item.Available == iso || item.Latency != o.Latency || (iso && !item.IsolatedUntil.Equal(wantUntil)) {
					t.Errorf("%s %v/%v: item %+v, want available=%v until %v", mode, r.path, r.class, item, !iso, wantUntil)
				}
				if mode == latency.ModeV5 && item.Reachable != reach {
					t.Errorf("%s %v/%v detector=%v: reachable %v, want %v", mode, r.path, r.class, det, item.Reachable, reach)
				}
			}
		}
	}
}

// TestPickDoneFaultToleranceOff checks that Done reports the update the
// rules call for but the table learns nothing while fault tolerance is off.
func TestPickDoneFaultToleranceOff(t *testing.T) {
	s, _ := faultOnStrategy(t, latency.ModeV5)
	s.SetFaultTolerance(false)
	info, _ := route.NewPublishInfoFromQueues("T", []route.MessageQueue{{Topic: "T", BrokerName: "b"}})
	pick, _ := s.Select(info, latency.PickInfo{})
	u := pick.Done(latency.Outcome{Class: latency.ClassBroker, Code: 1})
	if !u.Isolation || u.Broker != "b" {
		t.Errorf("Done() = %+v, want the rules' isolation of b", u)
	}
	if _, ok := s.Table().Item("b"); ok {
		t.Error("the table learned an outcome while fault tolerance was off")
	}
}

// TestPickDoneReporter checks that Done hands the pick and the outcome to
// the pick's Reporter, once, and returns its update; a pick without a
// Reporter or a queue does nothing.
func TestPickDoneReporter(t *testing.T) {
	ctrl := gomock.NewController(t)
	r := mocks.NewMockReporter(ctrl)
	q := route.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 3}
	pick := latency.Pick{Queue: &q, Stage: latency.StageReachable, Reporter: r}
	o := latency.Outcome{Class: latency.ClassBusy, Path: latency.PathAsyncAnswer, Latency: time.Second, Code: 2, Remark: "[OVERLOAD]system busy"}
	want := latency.FaultUpdate{Broker: "b", Latency: time.Second, Isolation: true}
	r.EXPECT().Report(pick, o).Return(want).Times(1)
	if got := pick.Done(o); got != want {
		t.Errorf("Done() = %+v, want the reporter's %+v", got, want)
	}
	if got := (latency.Pick{Queue: &q}).Done(o); got != (latency.FaultUpdate{}) {
		t.Errorf("Done() without a reporter = %+v, want nothing", got)
	}
	if got := (latency.Pick{Reporter: r}).Done(o); got != (latency.FaultUpdate{}) {
		t.Errorf("Done() without a queue = %+v, want nothing", got)
	}
}

// TestPickDoneAllocatesNothing checks that reporting through a pick
// allocates nothing, in both modes, for every class on every path. (v4's
// least-bad pick, which an isolated route reaches, is Select's business.)
func TestPickDoneAllocatesNothing(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		s, _ := faultOnStrategy(t, mode)
		info := selectRoute(t, nil)
		pick, _ := s.Select(info, latency.PickInfo{})
		for _, r := range referenceRules {
			o := latency.Outcome{Class: r.class, Path: r.path, Latency: time.Millisecond}
			if allocs := testing.AllocsPerRun(100, func() { pick.Done(o) }); allocs != 0 {
				t.Errorf("%s: Done(%v on %v) allocates %v times, want 0", mode, r.class, r.path, allocs)
			}
		}
		answered := latency.Outcome{Class: latency.ClassAnswered, Latency: time.Millisecond}
		if allocs := testing.AllocsPerRun(100, func() {
			p, _ := s.Select(info, latency.PickInfo{})
			p.Done(answered)
		}); allocs != 0 {
			t.Errorf("%s: Select + Done(answered) allocates %v times, want 0", mode, allocs)
		}
	}
}

// TestIsBusy checks which broker answers are flow control: every
// SYSTEM_BUSY remark the 5.3.3 broker sends, a bare code 2, a proxy's
// TOO_MANY_REQUESTS; and which are failures.
func TestIsBusy(t *testing.T) {
	for _, tt := range []struct {
		code   int
		remark string
		want   latency.Class
	}{
		{2, "[REJECTREQUEST]system busy, start flow control for a while", latency.ClassBusy},
		{2, "[OVERLOAD]system busy, start flow control for a while", latency.ClassBusy},
		{2, "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 205ms", latency.ClassBusy},
		{2, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 201ms", latency.ClassBusy},
		{2, "[PC_SYNCHRONIZED]broker busy, start flow control for a while", latency.ClassBusy},
		{2, "", latency.ClassBusy},
		{2, "something else", latency.ClassBusy},
		{latency.CodeTooManyRequests, "", latency.ClassBusy},
		{14, "service not available now", latency.ClassBroker},
		{1, "system error", latency.ClassBroker},
		{17, "topic not exist", latency.ClassBroker},
		{0, "", latency.ClassBroker},
	} {
		if got := latency.BrokerClass(tt.code); got != tt.want {
			t.Errorf("BrokerClass(%d) (remark %q) = %v, want %v", tt.code, tt.remark, got, tt.want)
		}
		if got := latency.IsBusy(tt.code); got != (tt.want == latency.ClassBusy) {
			t.Errorf("IsBusy(%d) = %v", tt.code, got)
		}
	}
}

// TestClassAndPathNames checks every class and path has its own name.
func TestClassAndPathNames(t *testing.T) {
	names := map[string]bool{}
	for _, c := range latency.Classes() {
		n := c.String()
		if n == "" || names[n] || strings.HasPrefix(n, "class(") {
			t.Errorf("class %d has name %q (duplicate or missing)", c, n)
		}
		names[n] = true
	}
	if got := latency.Class(200).String(); got != "class(200)" {
		t.Errorf("Class(200).String() = %q", got)
	}
	for p, want := range []string{"send", "async_answer", "async_resend"} {
		if got := latency.Path(p).String(); got != want {
			t.Errorf("Path(%d).String() = %q, want %q", p, got, want)
		}
	}
}

// BenchmarkPickDone measures one pick and its report on the fast path
// (v5, 16 brokers of 4 queues, healthy): Select then Done(answered).
func BenchmarkPickDone(b *testing.B) {
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var qs []route.MessageQueue
	for i := range 16 {
		for q := range 4 {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: string(rune('a' + i)), QueueID: q})
		}
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		b.Fatal(err)
	}
	o := latency.Outcome{Class: latency.ClassAnswered, Latency: time.Millisecond}
	b.Run("select", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Select(info, latency.PickInfo{})
		}
	})
	b.Run("select+done", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := s.Select(info, latency.PickInfo{})
			p.Done(o)
		}
	})
	b.Run("select+update", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := s.Select(info, latency.PickInfo{})
			s.Update(p.Queue.BrokerName, time.Millisecond, false, true)
		}
	})
}

// TestEveryPickReportsToItsStrategy checks that a pick from every stage of
// both modes' cascades carries its strategy as Reporter, so Done reaches the
// rules whatever stage answered.
func TestEveryPickReportsToItsStrategy(t *testing.T) {
	hour := time.Hour
	for _, tt := range []struct {
		name   string
		mode   latency.Mode
		off    bool
		filter bool
		setup  func(s *latency.Strategy)
		in     latency.PickInfo
		want   latency.Stage
	}{
		{name: "v5 available", mode: latency.ModeV5, want: latency.StageAvailable},
		{name: "v5 reachable", mode: latency.ModeV5, want: latency.StageReachable, setup: func(s *latency.Strategy) {
			for _, b := range []string{"a", "b", "c"} {
				s.Table().Update(b, 0, hour, true)
			}
		}},
		{name: "v5 any", mode: latency.ModeV5, want: latency.StageAny, setup: func(s *latency.Strategy) {
			for _, b := range []string{"a", "b", "c"} {
				s.Table().Update(b, 0, hour, false)
			}
		}},
		{name: "v5 filtered", mode: latency.ModeV5, filter: true, want: latency.StageFiltered, setup: func(s *latency.Strategy) {
			for _, b := range []string{"a", "b", "c"} {
				s.Table().Update(b, 0, hour, false)
			}
		}},
		{name: "v5 off", mode: latency.ModeV5, off: true, in: latency.PickInfo{LastBroker: "b"}, want: latency.StageNotLast},
		{name: "v4 available", mode: latency.ModeV4, want: latency.StageAvailable},
		{name: "v4 least bad", mode: latency.ModeV4, want: latency.StageLeastBad, setup: func(s *latency.Strategy) {
			for _, b := range []string{"a", "b", "c"} {
				s.Table().Update(b, 0, hour, true)
			}
		}},
		{name: "v4 off", mode: latency.ModeV4, off: true, want: latency.StageNotLast},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := latency.Reference5()
			cfg.Mode, cfg.FaultTolerance = tt.mode, !tt.off
			if tt.filter {
				cfg.Filters = []route.QueueFilter{route.AvoidBroker("a")}
			}
			s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tt.setup != nil {
				tt.setup(s)
			}
			pick, ok := s.Select(selectRoute(t, nil), tt.in)
			if !ok || pick.Stage != tt.want {
				t.Fatalf("Select() = %+v, %v, want stage %v", pick, ok, tt.want)
			}
			if pick.Reporter != latency.Reporter(s) {
				t.Errorf("stage %v: Reporter = %v, want the strategy", pick.Stage, pick.Reporter)
			}
		})
	}
}

// TestDoneAfterEviction checks an attempt whose broker left the table while
// it was in flight (a route change dropped the broker's item): its Done
// still makes the fault update on the broker's slot in the table (made
// again by name), not on the dropped slot the pick was made on, so the
// broker is isolated as its failure calls for.
func TestDoneAfterEviction(t *testing.T) {
	s, _ := policyStrategy(t, func(*latency.Config) {})
	info := loadRoute(t, "a", "b")
	s.RouteChanged(info)
	s.Update("a", time.Millisecond, false, true)
	p := pickOn(t, s, info, "a")
	s.RouteChanged(loadRoute(t, "b", "c"))
	if _, ok := s.Table().Item("a"); ok {
		t.Fatal("a's item survived a route without a")
	}
	u := p.Done(latency.Outcome{Class: latency.ClassTransportFailed, Latency: time.Millisecond})
	if u.Broker != "a" || !u.Isolation {
		t.Errorf("Done() = %+v, want a failure update of a", u)
	}
	if s.Table().IsAvailable("a") {
		t.Error("a is available after its failed attempt's Done; want it isolated")
	}
}
