package wire_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	mqwire "github.com/mqfault/mqfault/wire"
)

// NewProducer composes a started strategy and a producer from one Config.
func ExampleNewProducer() {
	cfg := config.DefaultConfig()
	var routes producer.StaticRoutes
	routes.SetQueues("orders", map[string]int{"broker-a": 2, "broker-b": 2})
	transport := producer.TransportFunc(func(_ context.Context, a producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "id-1"}, nil // talk to a.Queue.BrokerName here
	})
	resolver := latency.StaticResolver{"broker-a": "127.0.0.1:1", "broker-b": "127.0.0.1:2"}

	p, cleanup, err := mqwire.NewProducer(cfg, transport, &routes, resolver, latency.TCPDetector{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup() // closes the producer, then the strategy and its detector
	res, err := p.SendSync(context.Background(), &producer.Message{Topic: "orders", Body: []byte("hello")})
	fmt.Println(res.MsgID, err, p.Strategy().DetectorEnabled())
	// Output: id-1 <nil> true
}

// An invalid configuration is refused before anything starts.
func ExampleNewStrategy_invalid() {
	cfg := config.DefaultConfig()
	cfg.Strategy.DetectParallel = 0
	_, _, err := mqwire.NewStrategy(cfg, latency.StaticResolver{}, nil)
	fmt.Println(err)
	// Output: config: detect_parallel = "0": must be at least 1
}

// Two producers share one Prometheus registry, each metric labelled with its
// producer's Observability.Name.
func ExampleNewObservedProducer_twoProducers() {
	reg := prometheus.NewRegistry()
	transport := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "id"}, nil
	})
	for _, name := range []string{"orders", "audit"} {
		var routes producer.StaticRoutes
		routes.SetQueues(name, map[string]int{"broker-a": 2})
		p, cleanup, err := mqwire.NewObservedProducer(config.DefaultConfig(), transport, &routes,
			latency.StaticResolver{}, nil, mqwire.Observability{Registerer: reg, Name: name})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer cleanup()
		_, _ = p.SendSync(context.Background(), &producer.Message{Topic: name})
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "mqfault_isolated_brokers" {
			continue
		}
		for _, m := range mf.GetMetric() {
			fmt.Println(mf.GetName(), m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// mqfault_isolated_brokers producer audit 0
	// mqfault_isolated_brokers producer orders 0
}
