//go:build wireinject

package wire

import (
	"github.com/google/wire"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
)

// NewStrategy builds a strategy from cfg with the resolver and detector given,
// logging to slog.Default(), and starts its detector. The cleanup stops the
// detector and waits for it.
func NewStrategy(cfg config.Config, res probe.Resolver, det probe.ServiceDetector) (*latency.Strategy, func(), error) {
	panic(wire.Build(DefaultSet))
}

// NewProducer builds a producer over transport and routes, with a strategy
// from cfg using the resolver and detector given, logging to slog.Default().
// The cleanup closes the producer, then the strategy.
func NewProducer(cfg config.Config, transport producer.Transport, routes producer.RouteSource, res probe.Resolver, det probe.ServiceDetector) (*producer.Producer, func(), error) {
	panic(wire.Build(DefaultSet))
}

// NewObservedProducer is NewProducer with obs: its logger, its Prometheus
// registerer (the metrics are unregistered by the cleanup) and its observers.
func NewObservedProducer(cfg config.Config, transport producer.Transport, routes producer.RouteSource, res probe.Resolver, det probe.ServiceDetector, obs Observability) (*producer.Producer, func(), error) {
	panic(wire.Build(CoreSet, ClockSet))
}

// NewTCPProducer is NewObservedProducer with the built-in probe.TCPDetector:
// a broker is reachable when a TCP connection to its address (from res)
// succeeds.
func NewTCPProducer(cfg config.Config, transport producer.Transport, routes producer.RouteSource, res probe.Resolver, obs Observability) (*producer.Producer, func(), error) {
	panic(wire.Build(CoreSet, ClockSet, TCPDetectorSet))
}
