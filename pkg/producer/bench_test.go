package producer_test

import (
	"context"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// benchProducer is a producer on the real clock over a Transport that
// answers at once, with fault tolerance on and 16 brokers of 4 queues.
func benchProducer(b testing.TB, tr producer.Transport, clk clock.Clock) (*producer.Producer, *latency.Strategy) {
	b.Helper()
	scfg := latency.Reference5()
	scfg.FaultTolerance = true
	strat, err := latency.NewStrategy(scfg, latency.WithClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	routes := &producer.StaticRoutes{}
	queues := map[string]int{}
	for i := range 16 {
		queues[string(rune('a'+i))] = 4
	}
	routes.SetQueues("T", queues)
	p, err := producer.New(tr, routes, strat, producer.Reference5(), producer.WithClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = p.Close()
		_ = strat.Close()
	})
	if _, err := p.PublishInfo(context.Background(), "T"); err != nil {
		b.Fatal(err)
	}
	return p, strat
}

var noop = producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
	return producer.Result{}, nil
})

// BenchmarkSendSync measures the send loop's own cost per successful send:
// "ok" is SendSync over a Transport that answers at once, on the real clock;
// "pick+update" is what the strategy alone costs for the same send (one
// Select, one Update, two clock reads), the floor the loop adds to;
// "pick+done" is the same through the outcome seam (Select, then the pick's
// Done with the attempt's Outcome);
// "ok/manual-clock" is "ok" on a manual clock, whose reads cost a lock
// instead of a system clock read (about 100 ns on a VM's kvm-clock), to show
// the loop's own work apart from the three clock reads a send needs (its
// start, its attempt's end, and the fault table's).
func BenchmarkSendSync(b *testing.B) {
	b.Run("ok", func(b *testing.B) {
		p, _ := benchProducer(b, noop, clock.Real{})
		ctx, m := context.Background(), msg()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.SendSync(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ok/manual-clock", func(b *testing.B) {
		p, _ := benchProducer(b, noop, clock.NewManual(time.Unix(0, 0)))
		ctx, m := context.Background(), msg()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.SendSync(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pick+update", func(b *testing.B) {
		p, strat := benchProducer(b, noop, clock.Real{})
		info, _ := p.PublishInfo(context.Background(), "T")
		b.ReportAllocs()
		for b.Loop() {
			start := time.Now()
			pick, _ := strat.Select(info, latency.PickInfo{})
			strat.Update(pick.Queue.BrokerName, time.Since(start), false, true)
		}
	})
	b.Run("pick+done", func(b *testing.B) {
		p, strat := benchProducer(b, noop, clock.Real{})
		info, _ := p.PublishInfo(context.Background(), "T")
		b.ReportAllocs()
		for b.Loop() {
			start := time.Now()
			pick, _ := strat.Select(info, latency.PickInfo{})
			pick.Done(latency.Outcome{Class: latency.ClassAnswered, Latency: time.Since(start)})
		}
	})
	b.Run("ok/parallel", func(b *testing.B) {
		p, _ := benchProducer(b, noop, clock.Real{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			ctx, m := context.Background(), msg()
			for pb.Next() {
				if _, err := p.SendSync(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkSendAsync measures an async send that is answered at once: the
// goroutine and the callback included.
func BenchmarkSendAsync(b *testing.B) {
	p, _ := benchProducer(b, noop, clock.Real{})
	ctx, m := context.Background(), msg()
	done := make(chan struct{}, 1)
	cb := func(producer.Result, error) { done <- struct{}{} }
	b.ReportAllocs()
	for b.Loop() {
		if err := p.SendAsync(ctx, m, cb); err != nil {
			b.Fatal(err)
		}
		<-done
	}
}
