package prom

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// benchStrategy builds the DESIGN.md speed case (16 brokers x 4 queues, 4
// isolated) with the given extra options.
func benchStrategy(b *testing.B, opts ...latency.Option) (*latency.Strategy, *route.PublishInfo) {
	b.Helper()
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	clk := clock.NewManual(t0)
	s, err := latency.NewStrategy(cfg, append([]latency.Option{latency.WithClock(clk)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	var qs []route.MessageQueue
	for i := range 16 {
		name := fmt.Sprintf("broker-%02d", i)
		for q := range 4 {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: name, QueueID: q})
		}
		s.Update(name, time.Millisecond, false, true)
	}
	for i := 0; i < 16; i += 4 {
		s.Update(fmt.Sprintf("broker-%02d", i), 20*time.Millisecond, true, true)
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		b.Fatal(err)
	}
	s.Select(info, latency.PickInfo{})
	return s, info
}

// observed returns the options of a fully observed strategy: a stage counter,
// Prometheus metrics (registered and watched) and a rate-limited logger.
func observed(b *testing.B) ([]latency.Option, *Metrics, *observe.Logger, func(*latency.Strategy)) {
	m, err := New()
	if err != nil {
		b.Fatal(err)
	}
	prometheus.NewRegistry().MustRegister(m)
	l := observe.NewLogger(slog.New(slog.NewTextHandler(io.Discard, nil)), observe.WithInterval(time.Hour))
	opts := []latency.Option{latency.WithStageCounter(latency.NewStageCounter()), latency.WithObserver(observe.JoinLatency(m, l))}
	return opts, m, l, m.Watch
}

var sink route.MessageQueue

// BenchmarkPick compares a pick with nothing observing it (plain), with the
// stage counter (counted: the one atomic add the pick path pays), and fully
// observed (counter + Prometheus + slog observers, which the pick never calls),
// against a bare atomic round robin over the same 64 queues (baseline).
func BenchmarkPick(b *testing.B) {
	b.Run("baseline", func(b *testing.B) {
		_, info := benchStrategy(b)
		qs := info.Queues()
		var idx atomic.Int32
		b.ReportAllocs()
		for b.Loop() {
			sink = qs[route.Position(idx.Add(1), len(qs))]
		}
	})
	b.Run("plain", func(b *testing.B) {
		s, info := benchStrategy(b)
		b.ReportAllocs()
		for b.Loop() {
			p, _ := s.Select(info, latency.PickInfo{})
			sink = *p.Queue
		}
	})
	b.Run("counted", func(b *testing.B) {
		s, info := benchStrategy(b, latency.WithStageCounter(latency.NewStageCounter()))
		b.ReportAllocs()
		for b.Loop() {
			p, _ := s.Select(info, latency.PickInfo{})
			sink = *p.Queue
		}
	})
	b.Run("observed", func(b *testing.B) {
		opts, _, _, watch := observed(b)
		s, info := benchStrategy(b, opts...)
		watch(s)
		b.ReportAllocs()
		for b.Loop() {
			p, _ := s.Select(info, latency.PickInfo{})
			sink = *p.Queue
		}
	})
}

// BenchmarkUpdate compares a fault update that extends an isolation (so the
// observers hear of it: the clock moves 1 ms before each update) with and
// without the observers (counter + Prometheus + slog, its record suppressed by
// the interval).
func BenchmarkUpdate(b *testing.B) {
	run := func(b *testing.B, opts ...latency.Option) *latency.Strategy {
		clk := clock.NewManual(t0)
		s, _ := benchStrategy(b, append(opts, latency.WithClock(clk))...)
		b.ReportAllocs()
		for b.Loop() {
			clk.Advance(time.Millisecond)
			s.Update("broker-00", 20*time.Millisecond, true, true)
		}
		return s
	}
	b.Run("plain", func(b *testing.B) { run(b) })
	b.Run("observed", func(b *testing.B) {
		opts, m, _, _ := observed(b)
		s := run(b, opts...)
		m.Watch(s)
	})
}

// BenchmarkObserveAttempt measures what the producer's observers cost per
// attempt: answered, and failed (the logger's record suppressed by its
// interval).
func BenchmarkObserveAttempt(b *testing.B) {
	_, m, l, _ := observed(b)
	both := observe.JoinProducer(m, l)
	q := route.MessageQueue{Topic: "T", BrokerName: "broker-01", QueueID: 1}
	answered := producer.AttemptEvent{Topic: "T", Queue: q, Outcome: producer.Outcome{Class: latency.ClassAnswered, Elapsed: time.Millisecond}}
	failed := producer.AttemptEvent{Topic: "T", Queue: q, Outcome: producer.Outcome{Class: latency.ClassTransportFailed, Err: errors.New("reset")}}
	l.OnAttempt(failed) // the first record; the benchmark's are suppressed
	for _, c := range []struct {
		name string
		obs  producer.Observer
		ev   producer.AttemptEvent
	}{
		{"prometheus/answered", m, answered},
		{"slog/answered", l, answered},
		{"slog/failed-suppressed", l, failed},
		{"both/answered", both, answered},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.obs.OnAttempt(c.ev)
			}
		})
	}
	b.Run("prometheus/send", func(b *testing.B) {
		ev := producer.SendEvent{Topic: "T", Kind: producer.KindSync, Stop: producer.StopAnswered, Elapsed: 3 * time.Millisecond}
		b.ReportAllocs()
		for b.Loop() {
			m.OnSend(ev)
		}
	})
}
