package wire_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/probe"
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
	resolver := probe.StaticResolver{"broker-a": "127.0.0.1:1", "broker-b": "127.0.0.1:2"}

	p, cleanup, err := mqwire.NewProducer(cfg, transport, &routes, resolver, probe.TCPDetector{})
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
	_, _, err := mqwire.NewStrategy(cfg, probe.StaticResolver{}, nil)
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
			probe.StaticResolver{}, nil, mqwire.Observability{Registerer: reg, Name: name})
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

// NewTCPProducer composes a producer whose detector dials the brokers, with
// the configuration from config.Load and metrics on Prometheus's default
// registry: wire/README's snippet (tcpProducer) and the root README's
// (readmeTCPProducer).
func ExampleNewTCPProducer() {
	myTransport := producer.TransportFunc(func(_ context.Context, a producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "id-1"}, nil // talk to a.Queue.BrokerName here
	})
	myRoutes := &producer.StaticRoutes{}
	myRoutes.SetQueues("orders", map[string]int{"broker-a": 2})
	fmt.Println(tcpProducer(context.Background(), myTransport, myRoutes, []byte("hello")))
	fmt.Println(readmeTCPProducer(myTransport, myRoutes, probe.StaticResolver{"broker-a": "10.0.0.1:10911"}))
	// Output:
	// SEND_OK id-1
	// <nil>
	// <nil>
}

// tcpProducer is wire/README's snippet.
func tcpProducer(ctx context.Context, myTransport producer.Transport, myRoutes producer.RouteSource, body []byte) error {
	cfg, err := config.Load("") // DefaultConfig, a file, MQFAULT_ variables
	if err != nil {
		return err // names the knob, the value and where it was written
	}
	p, cleanup, err := mqwire.NewTCPProducer(cfg, myTransport, myRoutes,
		probe.StaticResolver{"broker-a": "10.0.0.1:10911"},
		mqwire.Observability{Registerer: prometheus.DefaultRegisterer})
	if err != nil {
		return err
	}
	defer cleanup() // the producer, then the strategy, then the metrics
	res, err := p.SendSync(ctx, &producer.Message{Topic: "orders", Body: body})
	if err != nil {
		return err
	}
	fmt.Println(res.Status, res.MsgID)
	return nil
}

// readmeTCPProducer is the root README's snippet.
func readmeTCPProducer(transport producer.Transport, routes producer.RouteSource, resolver probe.Resolver) error {
	cfg, err := config.Load("") // the mqfault preset, a file, MQFAULT_ variables
	if err != nil {
		return err
	}
	p, cleanup, err := mqwire.NewTCPProducer(cfg, transport, routes, resolver,
		mqwire.Observability{Registerer: prometheus.DefaultRegisterer})
	if err != nil {
		return err
	}
	defer cleanup() // the producer, then the strategy, then the metrics
	_, err = p.SendSync(context.Background(), &producer.Message{Topic: "orders"})
	return err
}

// Two NewTCPProducer producers share one registry, told apart by Name: every
// series carries producer="NAME" (wire/README's snippet; the series that
// counted a send).
func ExampleNewTCPProducer_twoProducers() {
	cfg := config.DefaultConfig()
	t := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "id"}, nil
	})
	routes := &producer.StaticRoutes{}
	routes.SetQueues("orders", map[string]int{"broker-a": 2})
	res := probe.StaticResolver{"broker-a": "10.0.0.1:10911"}
	if err := twoProducers(cfg, t, routes, res); err != nil {
		fmt.Println(err)
	}
	// Output:
	// mqfault_sends_total{kind="sync",producer="audit",result="answered"} 1
	// mqfault_sends_total{kind="sync",producer="orders",result="answered"} 2
}

func twoProducers(cfg config.Config, t producer.Transport, routes producer.RouteSource, res probe.Resolver) error {
	reg := prometheus.NewRegistry()
	orders, cleanOrders, err := mqwire.NewTCPProducer(cfg, t, routes, res,
		mqwire.Observability{Registerer: reg, Name: "orders"})
	if err != nil {
		return err
	}
	defer cleanOrders()
	audit, cleanAudit, err := mqwire.NewTCPProducer(cfg, t, routes, res,
		mqwire.Observability{Registerer: reg, Name: "audit"})
	if err != nil {
		return err
	}
	defer cleanAudit()
	// mqfault_sends_total{kind="sync",producer="orders",result="answered"} ...
	for _, p := range []*producer.Producer{orders, orders, audit} {
		if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "orders"}); err != nil {
			return err
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if mf.GetName() != "mqfault_sends_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetCounter().GetValue() == 0 {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			fmt.Printf("%s{%s} %v\n", mf.GetName(), strings.Join(labels, ","), m.GetCounter().GetValue())
		}
	}
	return nil
}
