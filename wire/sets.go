package wire

import (
	"errors"
	"fmt"

	"github.com/google/wire"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe/setup"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
)

// ConfigSet provides the strategy's and the producer's settings from a
// config.Config, validated once (errors name the knob).
var ConfigSet = wire.NewSet(StrategyConfig, ProducerConfig)

// ObserveSet provides the Observers every strategy and producer of this
// package is built with, from a config.Config, an Observability and a
// clock.Clock.
var ObserveSet = wire.NewSet(ProvideObservers)

// LatencySet provides a started *latency.Strategy; its cleanup closes it.
var LatencySet = wire.NewSet(ProvideStrategy)

// ProducerSet provides a *producer.Producer; its cleanup closes it.
var ProducerSet = wire.NewSet(ProvideProducer)

// ClockSet provides clock.Real as the clock.Clock.
var ClockSet = wire.NewSet(wire.Value(clock.Real{}), wire.Bind(new(clock.Clock), new(clock.Real)))

// TCPDetectorSet provides the built-in probe.TCPDetector as the
// probe.ServiceDetector.
var TCPDetectorSet = wire.NewSet(wire.Value(probe.TCPDetector{}), wire.Bind(new(probe.ServiceDetector), new(probe.TCPDetector)))

// DefaultObservabilitySet provides the zero Observability: records to
// slog.Default(), no Prometheus metrics, no extra observers.
var DefaultObservabilitySet = wire.NewSet(wire.Value(Observability{}))

// CoreSet is every set that builds something: config, observers, strategy,
// producer. An injector adds a clock, an Observability and whatever the
// arguments do not supply (a detector).
var CoreSet = wire.NewSet(ConfigSet, ObserveSet, LatencySet, ProducerSet)

// DefaultSet is CoreSet with the real clock and the default observability.
var DefaultSet = wire.NewSet(CoreSet, ClockSet, DefaultObservabilitySet)

// Observability is what a caller adds to the observers the injectors
// install: a logger, a Prometheus Registerer and a name to label the metrics
// with, observers of one's own. Its fields are setup.Observability's (see
// there); the zero value logs to slog.Default() and exports no metrics.
type Observability setup.Observability

// Observers is what ObserveSet provides to LatencySet and ProducerSet: the
// setup.Observers derived from a config.Config and an Observability.
type Observers setup.Observers

// ProducerLabel is the constant label Observability.Name sets on every
// metric.
const ProducerLabel = setup.ProducerLabel

// StrategyConfig validates cfg (every knob, so the error is a *config.Error
// naming it) and returns the strategy's part.
func StrategyConfig(cfg config.Config) (latency.Config, error) {
	if err := cfg.Validate(); err != nil {
		return latency.Config{}, err
	}
	return cfg.Strategy, nil
}

// ProducerConfig returns the producer's part of cfg.
func ProducerConfig(cfg config.Config) producer.Config { return cfg.Producer }

// ProvideObservers builds the observers with setup.New: an observe.Logger
// (rate-limited by cfg.LogInterval on clock), prom.Metrics registered with
// o.Registerer when set, o's own observers, and a stage counter when
// cfg.CountStages. The cleanup unregisters the metrics.
func ProvideObservers(cfg config.Config, o Observability, clk clock.Clock) (Observers, func(), error) {
	obs, cleanup, err := setup.New(cfg, setup.Observability(o), clk)
	switch {
	case errors.Is(err, setup.ErrDuplicateMetrics):
		return Observers{}, nil, fmt.Errorf("wire: Observability.Name: %w", err)
	case err != nil:
		return Observers{}, nil, fmt.Errorf("wire: %w", err)
	}
	return Observers(obs), cleanup, nil
}

// ProvideStrategy builds the strategy with clock, the resolver and detector
// (either may be nil: no resolver, no detector) and obs, points the metrics
// at it, and starts its detector loop. The cleanup closes it: it stops the
// detector and waits for the loop and every probe.
func ProvideStrategy(cfg latency.Config, clk clock.Clock, res probe.Resolver, det probe.ServiceDetector, obs Observers) (*latency.Strategy, func(), error) {
	opts := []latency.Option{latency.WithClock(clk)}
	if res != nil {
		opts = append(opts, latency.WithResolver(res))
	}
	if det != nil {
		opts = append(opts, latency.WithServiceDetector(det))
	}
	s, err := latency.NewStrategy(cfg, append(opts, setup.Observers(obs).StrategyOptions()...)...)
	if err != nil {
		return nil, nil, err
	}
	setup.Observers(obs).Watch(s)
	if err := s.Start(); err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}

// ProvideProducer builds a producer over transport, routes and strat, on
// clock, with obs. It starts the route refresher; the cleanup closes the
// producer, waiting for its async sends in flight. The strategy outlives it:
// Wire runs cleanups in reverse order, so the producer closes first.
func ProvideProducer(cfg producer.Config, transport producer.Transport, routes producer.RouteSource, strat *latency.Strategy, clk clock.Clock, obs Observers) (*producer.Producer, func(), error) {
	opts := append([]producer.Option{producer.WithClock(clk)}, setup.Observers(obs).ProducerOptions()...)
	p, err := producer.New(transport, routes, strat, cfg, opts...)
	if err != nil {
		return nil, nil, err
	}
	return p, func() { p.Close() }, nil
}
