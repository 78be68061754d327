// Package setup derives, from a config.Config and a caller's Observability,
// the observers an mqfault strategy and producer are built with: the
// rate-limited slog records of observe.Logger, the Prometheus metrics of
// package prom registered with the caller's Registerer, the caller's own
// observers and the pick counter by stage. Package wire's injectors and the
// rocketmq-client-go integration both build their observers here, so the
// two log and export the same events the same way.
//
// Start with New; give the strategy Observers.StrategyOptions and the
// producer Observers.ProducerOptions, then call Observers.Watch with the
// strategy.
package setup

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe"
	"github.com/mqfault/mqfault/pkg/observe/prom"
	"github.com/mqfault/mqfault/pkg/producer"
)

// Observability is what a caller adds to the observers New installs. The
// zero value logs to slog.Default() and exports no metrics.
type Observability struct {
	// Logger receives the rate-limited records of observe.Logger and the
	// strategy's and producer's own background errors; nil is slog.Default().
	Logger *slog.Logger
	// Registerer, when set, gets a prom.Metrics registered (and unregistered
	// by New's cleanup).
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

// Observers is what New derives: the observers, counter, metrics and logger
// to build a strategy and a producer with.
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

// ErrDuplicateMetrics is matched (errors.Is) by New's error when the
// Registerer already holds mqfault's metrics with the same labels: another
// producer's, registered without a Name or with the same one. The error
// also wraps the prometheus.AlreadyRegisteredError.
var ErrDuplicateMetrics = errors.New("the Registerer already has mqfault's metrics")

// New builds the observers for cfg: an observe.Logger on o.Logger
// (rate-limited by cfg.LogInterval, measured on clock; nil is
// clock.Real), prom.Metrics registered with o.Registerer when set
// (labelled producer=o.Name when the name is not empty), o's own observers,
// and a stage counter when cfg.CountStages. cfg is not validated here. The
// cleanup unregisters the metrics; call it once, after the producer and the
// strategy are closed. On error nothing stays registered.
func New(cfg config.Config, o Observability, clk clock.Clock) (Observers, func(), error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	logObs := observe.NewLogger(log, observe.WithInterval(cfg.LogInterval), observe.WithLogClock(clk))
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

// registerError says what to do when the Registerer already holds metrics
// of the same name and labels: another producer's.
func registerError(name string, err error) error {
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		return fmt.Errorf("registering the metrics: %w", err)
	}
	if name == "" {
		return fmt.Errorf("%w (another producer's?): give each producer sharing it its own name: %w", ErrDuplicateMetrics, err)
	}
	return fmt.Errorf("%w for producer %q: give each producer sharing it its own name: %w", ErrDuplicateMetrics, name, err)
}

// StrategyOptions returns the options that give a strategy obs: its logger
// (for the strategy's background errors), its observer and its stage
// counter when there is one.
func (obs Observers) StrategyOptions() []latency.Option {
	opts := []latency.Option{latency.WithLogger(obs.Logger)}
	if obs.Strategy != nil {
		opts = append(opts, latency.WithObserver(obs.Strategy))
	}
	if obs.Stages != nil {
		opts = append(opts, latency.WithStageCounter(obs.Stages))
	}
	return opts
}

// ProducerOptions returns the options that give a producer obs: its logger
// and its observer.
func (obs Observers) ProducerOptions() []producer.Option {
	opts := []producer.Option{producer.WithLogger(obs.Logger)}
	if obs.Producer != nil {
		opts = append(opts, producer.WithObserver(obs.Producer))
	}
	return opts
}

// Watch points the metrics' gauges and pick counts at s (prom.Metrics.Watch);
// without metrics it does nothing.
func (obs Observers) Watch(s *latency.Strategy) {
	if obs.Metrics != nil {
		obs.Metrics.Watch(s)
	}
}
