package host_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/plugins/host"
)

// A detector plugin feeds a strategy's detector.
func ExampleNewDetector() {
	d, err := host.NewDetector(host.Config{
		Path: "/usr/lib/mqfault/tcp-detector",
		// SHA256: "…", to refuse any other binary
	})
	if err != nil {
		log.Fatal(err) // a *host.StartError: ErrChecksum, ErrHandshake, ErrIncompatible or ErrStart
	}
	defer d.Close()
	s, err := latency.NewStrategy(latency.DefaultConfig(),
		latency.WithResolver(probe.StaticResolver{"broker-a": "10.0.0.7:10911"}),
		latency.WithServiceDetector(d))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	_ = s.Start()
}

// A filter plugin joins the strategy's cascade; tell it of every route.
func ExampleNewFilter() {
	zf, err := host.NewFilter(host.FilterConfig{Config: host.Config{
		Path: "/usr/lib/mqfault/zone-filter",
		Args: []string{"--zones", "/etc/mqfault/zones.txt", "--zone", "az1"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer zf.Close()
	cfg := latency.DefaultConfig()
	cfg.Filters = []route.QueueFilter{zf}
	s, err := latency.NewStrategy(cfg, latency.WithResolver(probe.StaticResolver{}))
	if err != nil {
		log.Fatal(err)
	}
	info, _ := route.NewPublishInfoFromQueues("orders", []route.MessageQueue{{Topic: "orders", BrokerName: "broker-a"}})
	zf.Update(info)                      // on every route change; returns at once
	_ = zf.Refresh(context.Background()) // at start-up: wait for the first verdicts
	pick, _ := s.Select(info, latency.PickInfo{})
	fmt.Println(pick.Queue)
}

// A plugin that cannot be started is an error before anything else is built:
// plugins/README's two snippets (detectorStrategy, filterProducer), run where
// the README's plugin paths name no file.
func ExampleNewDetector_notStarted() {
	resolver := probe.StaticResolver{"broker-a": "10.0.0.7:10911"}
	err := detectorStrategy(resolver)
	var se *host.StartError
	fmt.Println(errors.As(err, &se))

	transport := producer.TransportFunc(func(context.Context, producer.Attempt) (producer.Result, error) {
		return producer.Result{}, nil
	})
	err = filterProducer(context.Background(), resolver, transport, &producer.StaticRoutes{})
	fmt.Println(errors.As(err, &se))
	// Output:
	// true
	// true
}

// detectorStrategy is plugins/README's "Using a detector plugin".
func detectorStrategy(resolver probe.Resolver) error {
	d, err := host.NewDetector(host.Config{
		Path:   "/usr/lib/mqfault/grpc-health-detector",
		Args:   []string{"--service", "broker"},
		SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", // optional pin
	})
	if err != nil {
		return err // *host.StartError: ErrChecksum, ErrHandshake, ErrIncompatible or ErrStart
	}
	defer d.Close()

	strategy, err := latency.NewStrategy(latency.DefaultConfig(),
		latency.WithResolver(resolver), latency.WithServiceDetector(d))
	if err != nil {
		return err
	}
	defer strategy.Close()
	return strategy.Start()
}

// filterProducer is plugins/README's "Using a filter plugin".
func filterProducer(ctx context.Context, resolver probe.Resolver, transport producer.Transport, routes producer.RouteSource) error {
	zf, err := host.NewFilter(host.FilterConfig{Config: host.Config{
		Path: "/usr/lib/mqfault/zone-filter",
		Args: []string{"--zones", "/etc/mqfault/zones.txt", "--zone", "az1"},
	}})
	if err != nil {
		return err
	}
	defer zf.Close()

	cfg := latency.DefaultConfig()
	cfg.Filters = []route.QueueFilter{zf}
	strategy, err := latency.NewStrategy(cfg, latency.WithResolver(resolver))
	if err != nil {
		return err
	}
	defer strategy.Close()

	p, err := producer.New(transport, routes, strategy, producer.DefaultConfig())
	if err != nil {
		return err
	}
	defer p.Close()
	_ = zf.Refresh(ctx) // optional, at start-up: wait for the first verdicts
	return nil
}
