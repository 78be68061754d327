//go:build unix

package sim

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFleet runs testdata/fleet/fleet-1000.yaml (1,000 producers on 64
// brokers for 60 s of virtual time, two senders each): "all" with every
// built-in strategy concurrently, as `mqfault sim` runs them, then each
// strategy alone. It reports the simulated sends per CPU-second of the
// process (garbage collection and every goroutine included: the detector's
// probes run in goroutines of their own) and per second of wall time.
func BenchmarkFleet(b *testing.B) {
	sc, err := LoadFile("testdata/fleet/fleet-1000.yaml")
	if err != nil {
		b.Fatal(err)
	}
	runs := []struct {
		name   string
		strats []Strategy
	}{{"all", Strategies()}}
	for _, s := range Strategies() {
		runs = append(runs, struct {
			name   string
			strats []Strategy
		}{s.Name, []Strategy{s}})
	}
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			var sends int64
			cpu := cpuTime(b)
			for b.Loop() {
				rep, err := Run(context.Background(), sc, WithStrategies(r.strats...))
				if err != nil {
					b.Fatal(err)
				}
				sends += rep.SimulatedSends()
			}
			b.ReportMetric(float64(sends)/(cpuTime(b)-cpu).Seconds(), "sends/cpu-s")
			b.ReportMetric(float64(sends)/b.Elapsed().Seconds(), "sends/s")
		})
	}
}
