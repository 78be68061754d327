package rocketmqgo

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe/setup"
	"github.com/mqfault/mqfault/pkg/probe"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// Option configures the fault-tolerant side of a Producer. The client's own
// settings are the producer.Option values given to NewProducer.
type Option func(*options)

type options struct {
	strategy    latency.Config
	send        mqproducer.Config
	logInterval time.Duration
	countStages bool
	config      *config.Config // WithConfig's, as given; nil without it
	strategySet bool           // WithStrategyConfig was given
	sendSet     bool           // WithSendConfig was given
	clock       clock.Clock
	detector    probe.ServiceDetector
	log         *slog.Logger
	registerer  prometheus.Registerer
	name        string // the producer label of the metrics
	stratObs    latency.Observer
	prodObs     mqproducer.Observer
	stratOpts   []latency.Option
	prodOpts    []mqproducer.Option
	noIntercept bool
	noPanics    bool
}

// defaultOptions are config.DefaultConfig's settings, the remoting
// detector and slog.Default().
func defaultOptions() options {
	cfg := config.DefaultConfig()
	return options{
		strategy:    cfg.Strategy,
		send:        cfg.Producer,
		logInterval: cfg.LogInterval,
		countStages: cfg.CountStages,
		clock:       clock.Real{},
		detector:    &RemotingDetector{},
		log:         slog.Default(),
	}
}

// ErrConflictingOptions is matched (errors.Is) by NewProducer's error when
// two options set the same settings: WithConfig with WithStrategyConfig or
// WithSendConfig.
var ErrConflictingOptions = errors.New("rocketmqgo: conflicting options")

// check reports every conflict between the options and, with WithConfig,
// the config's own problems (its Validate error as it is), all at once.
func (o *options) check() error {
	if o.config == nil {
		return nil
	}
	var errs []error
	if o.strategySet {
		errs = append(errs, fmt.Errorf("%w: WithConfig and WithStrategyConfig both set the strategy's settings: "+
			"set them in the config.Config's Strategy, or leave WithConfig out", ErrConflictingOptions))
	}
	if o.sendSet {
		errs = append(errs, fmt.Errorf("%w: WithConfig and WithSendConfig both set the send loop's settings: "+
			"set them in the config.Config's Producer, or leave WithConfig out", ErrConflictingOptions))
	}
	if err := o.config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// observed is the config.Config the observers are derived from.
func (o *options) observed() config.Config {
	return config.Config{Strategy: o.strategy, Producer: o.send, LogInterval: o.logInterval, CountStages: o.countStages}
}

// observability is what the options add to the observers.
func (o *options) observability() setup.Observability {
	return setup.Observability{Logger: o.log, Registerer: o.registerer, Name: o.name, Strategy: o.stratObs, Producer: o.prodObs}
}

// WithConfig sets every setting a config.Config holds, as config.Load or
// config.LoadEnv return it (a preset, a file, MQFAULT_ variables): the
// strategy's (Strategy), the send loop's (Producer), how often the logger
// writes a record of one kind about one broker (LogInterval) and whether
// picks are counted by stage (CountStages). NewProducer refuses a config
// that does not validate, with the config's own error (a *config.Error per
// problem), and WithConfig given with WithStrategyConfig or WithSendConfig
// (ErrConflictingOptions). Without it the settings are config.DefaultConfig's.
func WithConfig(c config.Config) Option {
	return func(o *options) {
		o.config = &c
		o.strategy, o.send, o.logInterval, o.countStages = c.Strategy, c.Producer, c.LogInterval, c.CountStages
	}
}

// WithStrategyConfig sets the strategy's settings (default
// latency.DefaultConfig(): fault tolerance and the detector on, 5.3.3 rules
// and duration table). latency.Reference5() is the reference's defaults
// exactly, with fault tolerance off unless enabled. It conflicts with
// WithConfig, which sets them too.
func WithStrategyConfig(c latency.Config) Option {
	return func(o *options) { o.strategy, o.strategySet = c, true }
}

// WithSendConfig sets the send loop's settings (default
// producer.DefaultConfig(): 2 retries, a 3 s budget per send, each attempt
// capped at 1 s while another may follow). They replace the client's retry
// count (producer.WithRetry) and send timeout. It conflicts with WithConfig,
// which sets them too.
func WithSendConfig(c mqproducer.Config) Option {
	return func(o *options) { o.send, o.sendSet = c, true }
}

// WithClock sets the clock of send budgets, attempt deadlines, isolations
// and detector rounds (default clock.Real); tests give a
// clock.Manual. The client's own timers (its 3 s cap per call,
// heartbeats, route refreshes) stay on the wall clock.
func WithClock(c clock.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithServiceDetector sets what the strategy's detector probes learnt broker
// addresses with (default a *RemotingDetector: a GET_MAX_OFFSET request
// that the broker must answer; probe.TCPDetector{} is the connect-only
// check). A broker with no address learnt yet is never probed, and neither
// is an address several brokers share (a 5.x proxy): both probes are
// inconclusive.
func WithServiceDetector(d probe.ServiceDetector) Option {
	return func(o *options) {
		if d != nil {
			o.detector = d
		}
	}
}

// WithLogger sets the logger of the strategy, the send loop and the wrapper
// (default slog.Default()). It gets the records package wire's injectors
// write (observe.Logger): a broker isolated (Warn), its isolation ended
// (Info), a probe that made it reachable again (Info), failed (Warn) or
// told nothing (Debug), a failed attempt (Info) and a failed send (Warn);
// each kind about one broker at most once per the config's LogInterval
// (10 s by default), the next record saying how many were suppressed. The
// client logs through its own rlog package.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithMetrics registers Prometheus metrics (package pkg/observe/prom: the
// mqfault_* series of isolations, probes, picks, attempts and sends, and the
// gauges of the fault table) with reg, as wire.Observability's Registerer
// does; a name that is not empty labels every series producer=name, so that
// several producers can share reg (two without distinct names cannot:
// NewProducer's error then matches setup.ErrDuplicateMetrics). NewProducer
// registers them and Shutdown unregisters them. A nil reg exports nothing.
func WithMetrics(reg prometheus.Registerer, name string) Option {
	return func(o *options) { o.registerer, o.name = reg, name }
}

// WithObservers sets observers of your own of the strategy's events
// (isolations, recoveries, probes) and of the send loop's (attempts, sends),
// told after the logger and the metrics (the last WithObservers wins);
// either may be nil. They must not block.
func WithObservers(strategy latency.Observer, send mqproducer.Observer) Option {
	return func(o *options) { o.stratObs, o.prodObs = strategy, send }
}

// WithStrategyOptions adds options of the strategy, applied after the
// wrapper's own (clock, resolver, detector, logger, observers, stage
// counter): for instance latency.WithRandom. A latency.WithObserver or
// latency.WithStageCounter here replaces the wrapper's (the logger's
// records and the metrics go with it): add observers with WithObservers.
func WithStrategyOptions(opts ...latency.Option) Option {
	return func(o *options) { o.stratOpts = append(o.stratOpts, opts...) }
}

// WithProducerOptions adds options of the send loop, applied after the
// wrapper's own (clock, logger, observers): for instance
// producer.WithRouteOptions. A producer.WithObserver here replaces the
// wrapper's observers (the logger's records and the metrics of attempts and
// sends): add one with WithObservers.
func WithProducerOptions(opts ...mqproducer.Option) Option {
	return func(o *options) { o.prodOpts = append(o.prodOpts, opts...) }
}

// WithoutInterceptor leaves the wrapper's interceptor out of the client's
// chain. The interceptor is how broker addresses are learnt for the
// detector; without it no address is known, every probe is inconclusive and
// a broker turns reachable again only with a successful send. Use it if you
// call Request or RequestAsync and install no interceptor of your own: in
// rocketmq-client-go v2.1.2 (and master), with any interceptor installed,
// Request returns (nil, nil) without waiting for the reply and RequestAsync
// sends its message twice.
func WithoutInterceptor() Option { return func(o *options) { o.noIntercept = true } }

// WithoutPanicHandler leaves rocketmq-client-go's primitive.PanicHandler as
// it is. By default the first NewProducer of a process sets it, once, to a
// handler that logs a panic of a client goroutine and calls the handler set
// before (see README): without any handler, a panic in the client's
// goroutines (v2.1.2's connection reader panics on a frame with a negative
// length) ends the process.
func WithoutPanicHandler() Option { return func(o *options) { o.noPanics = true } }
