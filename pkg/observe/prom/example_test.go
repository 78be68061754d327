package prom_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	s, _ := latency.NewStrategy(cfg, latency.WithClock(latency.NewManualClock(time.Unix(0, 0))),
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
