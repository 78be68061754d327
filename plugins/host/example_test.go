package host_test

import (
	"context"
	"fmt"
	"log"

	"github.com/mqfault/mqfault/pkg/latency"
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
		latency.WithResolver(latency.StaticResolver{"broker-a": "10.0.0.7:10911"}),
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
	s, err := latency.NewStrategy(cfg, latency.WithResolver(latency.StaticResolver{}))
	if err != nil {
		log.Fatal(err)
	}
	info, _ := route.NewPublishInfoFromQueues("orders", []route.MessageQueue{{Topic: "orders", BrokerName: "broker-a"}})
	zf.Update(info)                      // on every route change; returns at once
	_ = zf.Refresh(context.Background()) // at start-up: wait for the first verdicts
	pick, _ := s.Select(info, latency.PickInfo{})
	fmt.Println(pick.Queue)
}
