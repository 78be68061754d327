package latency_test

import (
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// isolatedBrokers records the brokers an observer is told were isolated.
type isolatedBrokers struct {
	mu      sync.Mutex
	brokers []string
}

func (o *isolatedBrokers) OnIsolate(ev latency.IsolationEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.brokers = append(o.brokers, ev.Broker)
}
func (o *isolatedBrokers) OnRecover(latency.RecoveryEvent) {}
func (o *isolatedBrokers) OnProbe(latency.ProbeEvent)      {}

func (o *isolatedBrokers) got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.brokers...)
}

// TestSharedTableObservers: two strategies over one table each tell their
// own observer of the isolatedBrokers their updates cause, and neither changes
// the table's own observer (NewStrategy never writes into what it is
// given): the table's observer hears of updates made on the table itself.
func TestSharedTableObservers(t *testing.T) {
	clk := clock.NewManual(t0)
	var own, first, second isolatedBrokers
	table := latency.NewFaultTable(latency.ModeV5, clk, latency.WithTableObserver(&own))
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s1, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithFaultTable(table), latency.WithObserver(&first))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithFaultTable(table), latency.WithObserver(&second))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s1.Update("a", 0, true, true)
	s2.Update("b", 0, true, true)
	table.Update("c", 0, time.Second, true)
	if got := first.got(); len(got) != 1 || got[0] != "a" {
		t.Errorf("first strategy's observer heard of %v, want [a]", got)
	}
	if got := second.got(); len(got) != 1 || got[0] != "b" {
		t.Errorf("second strategy's observer heard of %v, want [b]", got)
	}
	if got := own.got(); len(got) != 1 || got[0] != "c" {
		t.Errorf("the table's observer heard of %v, want [c]", got)
	}
	if s1.Table() != table || s2.Table() != table {
		t.Errorf("Table() = %p, %p, want the table given (%p)", s1.Table(), s2.Table(), table)
	}
}

// TestZeroDetectorRound: a zero Detector (no table) reports an empty round
// instead of panicking or blocking.
func TestZeroDetectorRound(t *testing.T) {
	done := make(chan latency.RoundReport, 1)
	go func() {
		var d latency.Detector
		done <- d.Round(t.Context())
	}()
	select {
	case rep := <-done:
		if rep != (latency.RoundReport{}) {
			t.Errorf("zero Detector Round() = %+v, want an empty report", rep)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("zero Detector Round() did not return")
	}
}
