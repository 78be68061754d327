package rocketmqgo

import (
	"log/slog"

	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// Option configures the fault-tolerant side of a Producer. The client's own
// settings are the producer.Option values given to NewProducer.
type Option func(*options)

type options struct {
	strategy    latency.Config
	send        mqproducer.Config
	clock       latency.Clock
	detector    latency.ServiceDetector
	log         *slog.Logger
	stratOpts   []latency.Option
	prodOpts    []mqproducer.Option
	noIntercept bool
	noPanics    bool
}

func defaultOptions() options {
	return options{
		strategy: latency.DefaultConfig(),
		send:     mqproducer.DefaultConfig(),
		clock:    latency.RealClock{},
		detector: &RemotingDetector{},
		log:      slog.Default(),
	}
}

// WithStrategyConfig sets the strategy's settings (default
// latency.DefaultConfig(): fault tolerance and the detector on, 5.3.3 rules
// and duration table). latency.Reference5() is the reference's defaults
// exactly, with fault tolerance off unless enabled.
func WithStrategyConfig(c latency.Config) Option { return func(o *options) { o.strategy = c } }

// WithSendConfig sets the send loop's settings (default
// producer.DefaultConfig(): 2 retries, a 3 s budget per send, each attempt
// capped at 1 s while another may follow). They replace the client's retry
// count (producer.WithRetry) and send timeout.
func WithSendConfig(c mqproducer.Config) Option { return func(o *options) { o.send = c } }

// WithClock sets the clock of send budgets, attempt deadlines, isolations
// and detector rounds (default latency.RealClock); tests give a
// latency.ManualClock. The client's own timers (its 3 s cap per call,
// heartbeats, route refreshes) stay on the wall clock.
func WithClock(c latency.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithServiceDetector sets what the strategy's detector probes learnt broker
// addresses with (default a *RemotingDetector: a GET_MAX_OFFSET request
// that the broker must answer; latency.TCPDetector{} is the connect-only
// check). A broker with no address learnt yet is never probed, and neither
// is an address several brokers share (a 5.x proxy): both probes are
// inconclusive.
func WithServiceDetector(d latency.ServiceDetector) Option {
	return func(o *options) {
		if d != nil {
			o.detector = d
		}
	}
}

// WithLogger sets the logger of the strategy and the send loop (default
// slog.Default()). The client logs through its own rlog package.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// WithStrategyOptions adds options of the strategy, applied after the
// wrapper's own (clock, resolver, detector, logger): for instance
// latency.WithObserver, latency.WithRandom or latency.WithStageCounter.
func WithStrategyOptions(opts ...latency.Option) Option {
	return func(o *options) { o.stratOpts = append(o.stratOpts, opts...) }
}

// WithProducerOptions adds options of the send loop, applied after the
// wrapper's own (clock, logger): for instance producer.WithObserver or
// producer.WithRouteOptions.
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
