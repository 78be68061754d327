package latency_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// closeObserver counts the events it hears, and those it hears once closed
// is set (after Strategy.Close returned). With block set, OnRecover reports
// its start on entered and waits for release.
type closeObserver struct {
	closed             atomic.Bool
	isolations, recov  atomic.Int64
	late               atomic.Int64
	block              bool
	entered, release   chan struct{}
	enteredOnce        sync.Once
	lastLateDescribing atomic.Value // string
}

func (o *closeObserver) seen(what string) {
	if o.closed.Load() {
		o.late.Add(1)
		o.lastLateDescribing.Store(what)
	}
}

func (o *closeObserver) OnIsolate(ev latency.IsolationEvent) {
	o.isolations.Add(1)
	o.seen("OnIsolate(" + ev.Broker + ")")
}

func (o *closeObserver) OnRecover(ev latency.RecoveryEvent) {
	o.recov.Add(1)
	if o.block {
		o.enteredOnce.Do(func() { close(o.entered) })
		<-o.release
	}
	o.seen("OnRecover(" + ev.Broker + ")")
}

func (o *closeObserver) OnProbe(latency.ProbeEvent) { o.seen("OnProbe") }

func newCloseStrategy(t *testing.T, clk clock.Clock, obs latency.Observer) *latency.Strategy {
	t.Helper()
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCloseSilencesObservers checks that once Strategy.Close has returned,
// the observer hears nothing more: not the recoveries of isolations whose
// expiry timers were pending at Close, nor the isolations of Updates made
// after it. The fault table itself keeps working (Close stops only the
// background loop): the isolations still end on time.
func TestCloseSilencesObservers(t *testing.T) {
	clk := clock.NewManual(t0)
	obs := &closeObserver{}
	s := newCloseStrategy(t, clk, obs)
	s.Update("a", 5*time.Millisecond, true, false)   // failure: isolated 10 s
	s.Update("b", 600*time.Millisecond, false, true) // latency: isolated 2 s
	s.Table().Update("c", time.Millisecond, time.Second, true)
	if n := obs.isolations.Load(); n != 3 {
		t.Fatalf("%d isolations heard before Close, want 3", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	obs.closed.Store(true)
	clk.Advance(time.Hour) // every pending expiry timer fires
	s.Update("d", 5*time.Millisecond, true, false)
	clk.Advance(time.Hour)
	if n := obs.late.Load(); n != 0 {
		t.Errorf("the observer heard %d events after Close returned (the last %v), want none", n, obs.lastLateDescribing.Load())
	}
	for _, b := range []string{"a", "b", "c", "d"} {
		if it, ok := s.Table().Item(b); !ok || !it.Available {
			t.Errorf("after Close, broker %s = %+v, %v; want its isolation ended on time", b, it, ok)
		}
	}
}

// TestCloseWaitsForObserverCalls checks that Close does not return while an
// observer call that began before it is still running: an expiry timer's
// OnRecover blocks; Close waits for it, and returns once it returns; so does
// a second Close made meanwhile.
func TestCloseWaitsForObserverCalls(t *testing.T) {
	clk := clock.NewManual(t0)
	obs := &closeObserver{block: true, entered: make(chan struct{}), release: make(chan struct{})}
	s := newCloseStrategy(t, clk, obs)
	s.Update("a", 5*time.Millisecond, true, false)
	advanced := make(chan struct{})
	go func() {
		defer close(advanced)
		clk.Advance(time.Hour) // fires a's expiry: OnRecover blocks
	}()
	select {
	case <-obs.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("OnRecover was never called")
	}
	closed, again := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(closed)
		_ = s.Close()
	}()
	go func() { // a second Close meanwhile waits as well
		defer close(again)
		time.Sleep(10 * time.Millisecond)
		_ = s.Close()
	}()
	select {
	case <-closed:
		t.Error("Close returned while an observer call was still running")
	case <-again:
		t.Error("a second Close returned while the first was still waiting for an observer call")
	case <-time.After(50 * time.Millisecond):
	}
	close(obs.release)
	for _, c := range []chan struct{}{closed, again} {
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return once the observer call returned")
		}
	}
	<-advanced
}

// TestCloseWithRealTimers races Close against expiry timers on the real
// clock: isolations of 0 to 2 ms on 8 brokers, then Close. No observer call
// may start or run after Close returned, and Close always returns.
func TestCloseWithRealTimers(t *testing.T) {
	for round := range 200 {
		obs := &closeObserver{}
		s := newCloseStrategy(t, clock.Real{}, obs)
		for i := range 8 {
			s.Table().Update(string(rune('a'+i)), time.Millisecond, time.Duration(i%3)*time.Millisecond, true)
		}
		time.Sleep(time.Duration(round%3) * time.Millisecond)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.Close()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
		obs.closed.Store(true)
		time.Sleep(3 * time.Millisecond) // timers still pending fire now
		if n := obs.late.Load(); n != 0 {
			t.Fatalf("round %d: the observer heard %d events after Close returned (the last %v)", round, n, obs.lastLateDescribing.Load())
		}
	}
}
