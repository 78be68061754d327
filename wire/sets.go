package wire

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
	"github.com/mqfault/mqfault/pkg/observe/prom"
	"github.com/mqfault/mqfault/pkg/producer"
)

// ConfigSet provides the strategy's and the producer's settings from a
// config.Config, validated once (errors name the knob).
var ConfigSet = wire.NewSet(StrategyConfig, ProducerConfig)

// ObserveSet provides the Observers every strategy and producer of this
// package is built with, from a config.Config, an Observability and a
// latency.Clock.
var ObserveSet = wire.NewSet(ProvideObservers)

// LatencySet provides a started *latency.Strategy; its cleanup closes it.
var LatencySet = wire.NewSet(ProvideStrategy)

// ProducerSet provides a *producer.Producer; its cleanup closes it.
var ProducerSet = wire.NewSet(ProvideProducer)

// ClockSet provides latency.RealClock as the latency.Clock.
var ClockSet = wire.NewSet(wire.Value(latency.RealClock{}), wire.Bind(new(latency.Clock), new(latency.RealClock)))

// TCPDetectorSet provides the built-in latency.TCPDetector as the
// latency.ServiceDetector.
var TCPDetectorSet = wire.NewSet(wire.Value(latency.TCPDetector{}), wire.Bind(new(latency.ServiceDetector), new(latency.TCPDetector)))

// DefaultObservabilitySet provides the zero Observability: records to
// slog.Default(), no Prometheus metrics, no extra observers.
var DefaultObservabilitySet = wire.NewSet(wire.Value(Observability{}))

// CoreSet is every set that builds something: config, observers, strategy,
// producer. An injector adds a clock, an Observability and whatever the
// arguments do not supply (a detector).
var CoreSet = wire.NewSet(ConfigSet, ObserveSet, LatencySet, ProducerSet)

// DefaultSet is CoreSet with the real clock and the default observability.
var DefaultSet = wire.NewSet(CoreSet, ClockSet, DefaultObservabilitySet)

// Observability is what a caller adds to the observers the injectors install.
// The zero value logs to slog.Default() and exports no metrics.
type Observability struct {
	// Logger receives the rate-limited records of observe.Logger and the
	// strategy's and producer's own background errors; nil is slog.Default().
	Logger *slog.Logger
	// Registerer, when set, gets a prom.Metrics registered (and unregistered
	// by the cleanup).
	Registerer prometheus.Registerer
	// Name, when set, labels every metric producer="Name" (through
	// prometheus.WrapRegistererWith), so that several producers can share
	// one Registerer: without it a second producer's registration fails
	// (the same metrics twice). It has no other effect.
	Name string
	// Strategy is told of isolations, recoveries and probes too (after the
	// logger and the metrics); nil is none. It must not block.
	Strategy latency.Observer
	// Producer is told of every attempt and send too; nil is none. It must
	// not block.
	Producer producer.Observer
}

// Observers is what ObserveSet provides to LatencySet and ProducerSet.
type Observers struct {
	// Strategy observes the strategy (latency.WithObserver); never nil.
	Strategy latency.Observer
	// Producer observes the producer (producer.WithObserver); never nil.
	Producer producer.Observer
	// Stages counts picks by stage (latency.WithStageCounter); nil when
	// config.Config.CountStages is off.
	Stages *latency.StageCounter
	// Metrics are the Prometheus metrics, nil without a Registerer.
	Metrics *prom.Metrics
	// Logger is the logger in use; never nil.
	Logger *slog.Logger
}

// ProducerLabel is the constant label Observability.Name sets on every
// metric.
const ProducerLabel = "producer"

// registerError says what to do when the Registerer already holds metrics
// of the same name and labels: another producer's.
func registerError(name string, err error) error {
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		return fmt.Errorf("wire: registering the metrics: %w", err)
	}
	if name == "" {
		return fmt.Errorf("wire: the Registerer already has mqfault's metrics (another producer's?): "+
			"give each producer sharing it its own Observability.Name: %w", err)
	}
	return fmt.Errorf("wire: the Registerer already has mqfault's metrics for producer %q: "+
		"give each producer sharing it its own Observability.Name: %w", name, err)
}

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

// ProvideObservers builds the observers: an observe.Logger (rate-limited by
// cfg.LogInterval on clock), prom.Metrics registered with o.Registerer when
// set, o's own observers, and a stage counter when cfg.CountStages. The
// cleanup unregisters the metrics.
func ProvideObservers(cfg config.Config, o Observability, clock latency.Clock) (Observers, func(), error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	logObs := observe.NewLogger(log, observe.WithInterval(cfg.LogInterval), observe.WithLogClock(clock))
	out := Observers{Logger: log}
	lats := []latency.Observer{logObs}
	prods := []producer.Observer{logObs}
	cleanup := func() {}
	if o.Registerer != nil {
		m, err := prom.New()
		if err != nil {
			return Observers{}, nil, err
		}
		reg := o.Registerer
		if o.Name != "" {
			reg = prometheus.WrapRegistererWith(prometheus.Labels{ProducerLabel: o.Name}, reg)
		}
		if err := reg.Register(m); err != nil {
			return Observers{}, nil, registerError(o.Name, err)
		}
		out.Metrics = m
		lats = append(lats, m)
		prods = append(prods, m)
		cleanup = func() { reg.Unregister(m) }
	}
	if o.Strategy != nil {
		lats = append(lats, o.Strategy)
	}
	if o.Producer != nil {
		prods = append(prods, o.Producer)
	}
	out.Strategy = observe.JoinLatency(lats...)
	out.Producer = observe.JoinProducer(prods...)
	if cfg.CountStages {
		out.Stages = latency.NewStageCounter()
	}
	return out, cleanup, nil
}

// ProvideStrategy builds the strategy with clock, the resolver and detector
// (either may be nil: no resolver, no detector) and obs, points the metrics
// at it, and starts its detector loop. The cleanup closes it: it stops the
// detector and waits for the loop and every probe.
func ProvideStrategy(cfg latency.Config, clock latency.Clock, res latency.Resolver, det latency.ServiceDetector, obs Observers) (*latency.Strategy, func(), error) {
	opts := []latency.Option{latency.WithClock(clock), latency.WithLogger(obs.Logger)}
	if res != nil {
		opts = append(opts, latency.WithResolver(res))
	}
	if det != nil {
		opts = append(opts, latency.WithServiceDetector(det))
	}
	if obs.Strategy != nil {
		opts = append(opts, latency.WithObserver(obs.Strategy))
	}
	if obs.Stages != nil {
		opts = append(opts, latency.WithStageCounter(obs.Stages))
	}
	s, err := latency.NewStrategy(cfg, opts...)
	if err != nil {
		return nil, nil, err
	}
	if obs.Metrics != nil {
		obs.Metrics.Watch(s)
	}
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
func ProvideProducer(cfg producer.Config, transport producer.Transport, routes producer.RouteSource, strat *latency.Strategy, clock latency.Clock, obs Observers) (*producer.Producer, func(), error) {
	opts := []producer.Option{producer.WithClock(clock), producer.WithLogger(obs.Logger)}
	if obs.Producer != nil {
		opts = append(opts, producer.WithObserver(obs.Producer))
	}
	p, err := producer.New(transport, routes, strat, cfg, opts...)
	if err != nil {
		return nil, nil, err
	}
	return p, func() { p.Close() }, nil
}
