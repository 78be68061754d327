package prom_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe/prom"
)

// Register the metrics, give them to the strategy as its observer, and Watch
// it for the gauges and the picks by stage.
func ExampleNew() {
	m, _ := prom.New()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, _ := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(time.Unix(0, 0))),
		latency.WithObserver(m), latency.WithStageCounter(latency.NewStageCounter()))
	defer s.Close()
	m.Watch(s)

	s.Update("broker-a", time.Second, true, false) // a failed send
	families, _ := reg.Gather()
	for _, f := range families {
		switch f.GetName() {
		case "mqfault_isolated_brokers":
			fmt.Println(f.GetName(), f.GetMetric()[0].GetGauge().GetValue())
		case "mqfault_isolations_total":
			for _, s := range f.GetMetric() {
				if v := s.GetCounter().GetValue(); v > 0 {
					fmt.Println(f.GetName(), s.GetLabel()[0].GetValue(), s.GetLabel()[1].GetValue(), v)
				}
			}
		}
	}
	// Output:
	// mqfault_isolated_brokers 1
	// mqfault_isolations_total broker-a failure 1
}

// Two strategies (two producers) export to one registry: register each one's
// Metrics through prometheus.WrapRegistererWith with a constant label that
// tells them apart. Without it the second Register fails with
// "duplicate metrics collector registration attempted".
func ExampleNew_twoProducers() {
	reg := prometheus.NewRegistry()
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	for _, name := range []string{"orders", "audit"} {
		m, _ := prom.New()
		if err := prometheus.WrapRegistererWith(prometheus.Labels{"producer": name}, reg).Register(m); err != nil {
			fmt.Println(err)
			return
		}
		s, _ := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(time.Unix(0, 0))), latency.WithObserver(m))
		defer s.Close()
		m.Watch(s)
		if name == "orders" {
			s.Update("broker-a", time.Second, true, false) // a failed send
		}
	}
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "mqfault_isolated_brokers" {
			for _, s := range f.GetMetric() {
				fmt.Println(f.GetName(), s.GetLabel()[0].GetValue(), s.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// mqfault_isolated_brokers audit 0
	// mqfault_isolated_brokers orders 1
}
