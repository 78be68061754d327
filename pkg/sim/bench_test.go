package sim

import (
	"context"
	"testing"
)

// BenchmarkRun measures simulated sends per second of real time, one
// strategy at a time on one goroutine, over the default scenario (90 s of
// virtual time). off, which never updates a fault table, is the baseline of
// the same run; the others add the fault table, its expiry timers and (with
// the detector) the detector's rounds.
func BenchmarkRun(b *testing.B) {
	sc := DefaultScenario()
	for _, spec := range Strategies() {
		b.Run(spec.Name, func(b *testing.B) {
			b.ReportAllocs()
			var sends int64
			for b.Loop() {
				rep, err := Run(context.Background(), sc, WithStrategies(spec))
				if err != nil {
					b.Fatal(err)
				}
				sends += rep.Results[0].Sends
			}
			b.ReportMetric(float64(sends)/b.Elapsed().Seconds(), "sends/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sends), "ns/send")
		})
	}
}

// BenchmarkRunAll is what `mqfault sim` does by default: every built-in
// strategy on the default scenario, concurrently.
func BenchmarkRunAll(b *testing.B) {
	sc := DefaultScenario()
	b.ReportAllocs()
	var sends int64
	for b.Loop() {
		rep, err := Run(context.Background(), sc)
		if err != nil {
			b.Fatal(err)
		}
		sends += rep.SimulatedSends()
	}
	b.ReportMetric(float64(sends)/b.Elapsed().Seconds(), "sends/s")
}
