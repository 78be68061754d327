package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Result is what one strategy did in one run.
type Result struct {
	Name    string
	Summary string
	// Ablated is the strategy's: set when it is an ablation of another.
	Ablated Ablated
	// Sends counts the sends started; every one ended, Succeeded with an
	// answer or Failed.
	Sends, Succeeded, Failed int64
	// Attempts counts attempts over all sends.
	Attempts int64
	// FirstAttemptFailures counts sends whose first attempt did not get a
	// SEND_OK answer (a transport error, a timeout or an error code).
	FirstAttemptFailures int64
	// UnhealthyAttempts counts attempts made to a broker whose state at
	// that moment was not up (down, blackhole, slow, busy, stalled, or flapping
	// while down). Capacity is not a state: a broker over it is up.
	UnhealthyAttempts int64
	// Retries counts the attempts after a send's first.
	Retries int64
	// RetriesRefused counts the sends whose retry a retry budget refused
	// (the send's error says so: an error in its chain with a method
	// RetryRefused() bool that returns true); 0 for strategies without
	// one.
	RetriesRefused int64
	// Waited counts the sends that waited for room before their last
	// attempt (producer.Config.RoomWait; the mqfault preset's); 0 for the
	// others.
	Waited int64
	// BusyAnswers counts attempts the broker answered with flow control:
	// the outcome class busy (a code latency.IsBusy calls flow control:
	// a busy event's SYSTEM_BUSY, a broker over its capacity, a send that
	// waited out the broker's queue).
	BusyAnswers int64
	// Shed counts the sends of an open load that arrived while MaxInFlight
	// sends were in flight: they failed at once (they are in Sends and
	// Failed, not in Latency). Always 0 under a closed load.
	Shed int64
	// InFlightAtEnd counts the sends started and not ended when the
	// scenario's duration ran out (they then finished).
	InFlightAtEnd int64
	// Latency holds percentiles of whole sends, retries included, failed
	// sends too.
	Latency Percentiles
	// Brokers counts attempts and failed attempts per broker, in the
	// scenario's order.
	Brokers []BrokerResult
	// Series is the run over time, one point per second of virtual time.
	Series Series
	// Timeline holds, per broker in the scenario's order, when the
	// strategy's fault table held it isolated or unreachable (a fleet's
	// first producer's).
	Timeline []BrokerTimeline
	// Fleet is set for a fleet of producers (Scenario.Producers above 1):
	// the herding and moves figures.
	Fleet *FleetResult
	// Wall is the real time the run took. It is the only field that differs
	// between two runs with one seed.
	Wall time.Duration
}

// UnhealthyShare returns the share of attempts that met an unhealthy broker.
func (r *Result) UnhealthyShare() float64 {
	if r.Attempts == 0 {
		return 0
	}
	return float64(r.UnhealthyAttempts) / float64(r.Attempts)
}

// Percentiles are nearest-rank latency percentiles.
type Percentiles struct {
	P50, P99, P999, Max time.Duration
}

// BrokerResult counts one broker's attempts and failed attempts.
type BrokerResult struct {
	Name     string
	Attempts int64
	Failures int64
}

// Series is a run over virtual time, one point per second. Sends are counted
// in the second they started in, attempts likewise.
type Series struct {
	// Seconds is the number of points: the scenario's duration plus the
	// send timeout (sends still in flight at the end finish; the longest
	// budget of the run's strategies, when a client's own is longer), plus
	// one.
	Seconds int
	// Attempts holds attempts per broker (in the scenario's order) and
	// second.
	Attempts [][]int32
	// Sends and Failed hold the sends started per second, and how many of
	// them failed.
	Sends, Failed []int64
	// P99 holds the 99th percentile latency of the sends started in each
	// second (0 for a second with none).
	P99 []time.Duration
	// Retries and Busy hold the retries started per second, and the
	// attempts started per second that were answered busy.
	Retries, Busy []int64
}

// Share returns broker b's share of the attempts made in second s, and
// false when no attempt was made then.
func (s *Series) Share(b, sec int) (float64, bool) {
	total := int64(0)
	for _, a := range s.Attempts {
		total += int64(a[sec])
	}
	if total == 0 {
		return 0, false
	}
	return float64(s.Attempts[b][sec]) / float64(total), true
}

// Report is the outcome of a run: one Result per strategy, in the order the
// strategies were given.
type Report struct {
	Scenario *Scenario
	Seed     uint64
	Results  []Result
	// Wall is the real time the whole run took (strategies run
	// concurrently).
	Wall time.Duration
}

// Option changes how Run runs.
type Option func(*options)

type options struct {
	strategies []Strategy
	chosen     bool // WithStrategies was given
	progress   func(float64)
}

// WithStrategies sets the contenders (default: Strategies()).
func WithStrategies(s ...Strategy) Option {
	return func(o *options) { o.strategies, o.chosen = slices.Clone(s), true }
}

// WithProgress makes Run report the share of the virtual time simulated so
// far, over all strategies, in [0, 1], never going backwards, ending with 1.
// f is called from the strategies' goroutines, one call at a time, every
// few hundred simulated events of each (so often, even where one virtual
// second takes long to simulate); it must return quickly.
func WithProgress(f func(done float64)) Option {
	return func(o *options) { o.progress = f }
}

// Run simulates every strategy on sc (which it validates first) and returns
// their results. The strategies run concurrently, one goroutine each, each
// with its own virtual clock, random sources and brokers seeded from
// sc.Seed, so the report is the same for one seed whatever the scheduling.
// Run returns when every goroutine it started has ended; cancelling ctx ends
// it early with ctx's error. Strategy names must be unique and not empty.
func Run(ctx context.Context, sc *Scenario, opts ...Option) (*Report, error) {
	if sc == nil {
		return nil, &FieldError{Msg: "no scenario"}
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if !o.chosen {
		o.strategies = Strategies()
	}
	if len(o.strategies) == 0 {
		return nil, errors.New("sim: no strategy to run")
	}
	seen := map[string]bool{}
	for _, s := range o.strategies {
		if s.Name == "" || seen[s.Name] {
			return nil, fmt.Errorf("sim: strategy name %q is empty or repeated", s.Name)
		}
		seen[s.Name] = true
	}
	// Every series has the points of the longest send budget among the
	// strategies: sends may run that long past the end.
	seconds := sc.seconds()
	for _, spec := range o.strategies {
		seconds = max(seconds, int((sc.Duration+spec.budget(sc))/time.Second)+1)
	}
	engines := make([]*engine, len(o.strategies))
	for i, spec := range o.strategies {
		e, err := newEngine(sc, spec, seconds)
		if err != nil {
			for _, done := range engines[:i] {
				done.close()
			}
			return nil, err
		}
		engines[i] = e
	}
	if o.progress != nil {
		var mu sync.Mutex // serializes the calls, so the shares never go backwards
		var done int64
		total := float64(sc.Duration) * float64(len(engines))
		for _, e := range engines {
			var last int64
			e.progress = func(v int64) {
				mu.Lock()
				defer mu.Unlock()
				done += v - last
				last = v
				o.progress(float64(done) / total)
			}
		}
	}
	began := time.Now()
	rep := &Report{Scenario: sc, Seed: sc.Seed, Results: make([]Result, len(engines))}
	errs := make([]error, len(engines))
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() {
			t := time.Now()
			if errs[i] = e.run(ctx); errs[i] == nil {
				rep.Results[i] = e.m.result(e.spec, sc)
				rep.Results[i].Timeline = e.prods[0].tl.result(e.now)
				if e.herd != nil {
					rep.Results[i].Fleet = e.herd.result(sc)
				}
				rep.Results[i].Wall = time.Since(t)
			}
		})
	}
	wg.Wait()
	rep.Wall = time.Since(began)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rep, nil
}

// SimulatedSends returns the sends of every strategy together.
func (r *Report) SimulatedSends() int64 {
	var n int64
	for _, res := range r.Results {
		n += res.Sends
	}
	return n
}
