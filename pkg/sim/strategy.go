package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// Strategy is one contender of a run: the settings of the real
// latency.Strategy and of the real send loop (producer.Policy) that the
// simulated producer uses. Every strategy of a run meets the same scenario
// with the same seed.
type Strategy struct {
	// Name labels the strategy in reports ("v5", "v5+detector", ...).
	Name string
	// Summary says in a few words what the strategy is.
	Summary string
	// Latency configures the latency strategy.
	Latency latency.Config
	// Producer configures the send loop. Its Timeout is replaced by the
	// scenario's send_timeout (see AttemptTimeout). Each producer of a
	// fleet has a policy of its own (its own retry budget).
	Producer producer.Config
	// New, when set, builds the latency strategy instead of
	// latency.NewStrategy(cfg, env.Options()...), for contenders that need
	// more collaborators (a custom fault table, an observer). It must use
	// env's clock, and it is called once per producer of a run (once for a
	// run of one producer), on the run's goroutine.
	New func(cfg latency.Config, env Env) (*latency.Strategy, error)
	// Ablated, when set, says the strategy is another one (Ablated.Of) with
	// one policy switched off (Ablation.Of sets it). Reports compare its
	// row with that strategy's and fold it when every number is the same.
	Ablated Ablated
	// Picker, when set, builds what the send loop picks queues with in
	// place of the latency strategy (a client's own queue selection, which
	// no fault table changes); it is given the latency strategy, which
	// still runs the detector rounds and the timeline. Called once per
	// producer of a run, on the run's goroutine; the picker it returns must
	// be safe for concurrent use, as producer.Strategy says.
	Picker func(s *latency.Strategy) producer.Strategy
	// AttemptTimeout, when positive, is the client's own timeout of every
	// attempt (rocketmq-client-go's 3 s), applied on top of the send
	// loop's. Such a client has no budget for the whole send: the
	// scenario's send_timeout does not apply, and a send may take 1 +
	// Producer.RetryTimes attempts of AttemptTimeout.
	AttemptTimeout time.Duration
}

// budget is the whole-send budget of spec's sends in sc: the scenario's
// send timeout, or for a client with its own attempt timeout enough for
// every attempt to use it (each seen timeoutLag late).
func (spec *Strategy) budget(sc *Scenario) time.Duration {
	if spec.AttemptTimeout > 0 {
		return time.Duration(spec.Producer.RetryTimes+1)*(spec.AttemptTimeout+timeoutLag) + timeoutLag
	}
	return sc.sendTimeout()
}

// Env is what the simulator gives a strategy to run in virtual time.
type Env struct {
	// Clock is the run's virtual clock. Isolations end through its timers,
	// which fire as the simulation moves it.
	Clock *clock.Manual
	// Resolver knows every broker of the scenario.
	Resolver probe.Resolver
	// Detector answers probes at once from the broker's simulated state
	// at the virtual moment of the probe.
	Detector probe.ServiceDetector
	// Random is the run's seeded random source for the fault table.
	Random route.RandomSource
	// Observer records the report's isolation timeline (which broker was
	// isolated or unreachable, when). A New that gives the strategy an
	// observer of its own joins it with this one
	// (observe.JoinLatency(env.Observer, mine)); without it the timeline
	// misses the isolations that end on their timers.
	Observer latency.Observer
}

// Options returns the latency options that put a strategy into env: its
// clock, resolver, service detector, random source and observer.
func (e Env) Options() []latency.Option {
	opts := []latency.Option{
		latency.WithClock(e.Clock),
		latency.WithResolver(e.Resolver),
		latency.WithServiceDetector(e.Detector),
		latency.WithRandom(e.Random),
	}
	if e.Observer != nil {
		opts = append(opts, latency.WithObserver(e.Observer))
	}
	return opts
}

// Strategies returns the built-in contenders, in report order:
//
//   - off: fault tolerance off (RocketMQ 5.3.3's default): round robin that
//     only avoids the previous attempt's broker on a retry;
//   - v4: RocketMQ 4.9.8 with sendLatencyFaultEnable on;
//   - v5: RocketMQ 5.3.3 with sendLatencyFaultEnable on;
//   - v5+detector: v5 with startDetectorEnable on as well;
//   - mqfault: the mqfault preset, latency.DefaultConfig and
//     producer.DefaultConfig: v5 with the detector and the policies past the
//     reference on (isolation cap, backoff for repeat offenders, failed
//     probes counted, 16 probes at a time, the cap holding busy brokers,
//     recovered brokers back after 3 s of answered probes, load-aware
//     picks) and the 1 s per-attempt cap and a retry budget of a fifth of
//     the sends (retries that found an answer given back).
//
// Each call returns a new slice that the caller may change.
func Strategies() []Strategy {
	off := latency.Reference5()
	v4 := latency.Reference4()
	v4.FaultTolerance = true
	v5 := latency.Reference5()
	v5.FaultTolerance = true
	v5d := v5
	v5d.Detector = true
	return []Strategy{
		{Name: "off", Summary: "fault tolerance off: round robin, retries avoid the last broker (5.3.3 default)",
			Latency: off, Producer: producer.Reference5()},
		{Name: "v4", Summary: "RocketMQ 4.9.8, latency fault tolerance on",
			Latency: v4, Producer: producer.Reference4()},
		{Name: "v5", Summary: "RocketMQ 5.3.3, latency fault tolerance on",
			Latency: v5, Producer: producer.Reference5()},
		{Name: "v5+detector", Summary: "RocketMQ 5.3.3, latency fault tolerance and detector on",
			Latency: v5d, Producer: producer.Reference5()},
		{Name: "mqfault", Summary: "the mqfault preset: v5, detector, isolation cap holding busy brokers, backoff, probe failures, recovery, load-aware picks, 1 s per-attempt cap, retry budget",
			Latency: latency.DefaultConfig(), Producer: producer.DefaultConfig()},
	}
}

// SelectStrategies returns the strategies with the given names, in the order
// given: the built-in ones (StrategyNames), the clients' own
// (ClientStrategyNames: client-go) and the ablations of the mqfault
// preset (AblationNames: "mqfault-retry-budget" is the preset with its retry
// budget off). It returns an error naming the first unknown name and every
// known one, or saying why a known ablation does not apply to the preset (its
// policy is off there).
func SelectStrategies(names ...string) ([]Strategy, error) {
	all := append(Strategies(), ClientStrategies()...)
	out := make([]Strategy, 0, len(names))
	for _, n := range names {
		if i := slices.IndexFunc(all, func(s Strategy) bool { return s.Name == n }); i >= 0 {
			out = append(out, all[i])
			continue
		}
		s, ok, err := ablationStrategy(n)
		if err != nil {
			return nil, err
		}
		if !ok {
			known := strings.Join(append(StrategyNames(), ClientStrategyNames()...), ", ")
			if abl := AblationNames(); len(abl) > 0 {
				known += "; ablations: " + strings.Join(abl, ", ")
			}
			return nil, fmt.Errorf("sim: unknown strategy %q (known: %s)", n, known)
		}
		out = append(out, s)
	}
	return out, nil
}

// StrategyNames returns the names of the built-in strategies, in order
// (AblationNames returns the ablations').
func StrategyNames() []string {
	var names []string
	for _, s := range Strategies() {
		names = append(names, s.Name)
	}
	return names
}

var (
	errProbeRefused = errors.New("connection refused (simulated)")
	errProbeTimeout = context.DeadlineExceeded
)

// simDetector answers probes from the brokers' states at the clock's now,
// at once: a probe takes no virtual time, and a blackhole's probe returns
// the timeout error instead of waiting for it (waiting would deadlock the
// virtual clock, which only the run moves).
type simDetector struct {
	clock  *clock.Manual
	epoch  time.Time
	byAddr map[string]*brokerSim // read-only after setup
}

func (d *simDetector) Detect(_ context.Context, endpoint string) error {
	b, ok := d.byAddr[endpoint]
	if !ok {
		return errProbeRefused
	}
	if err := b.probe(d.clock.Now().Sub(d.epoch).Nanoseconds()); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return &probe.Error{Endpoint: endpoint, Err: err}
	}
	return nil
}

// lockedRand is a seeded route.RandomSource safe for concurrent use.
type lockedRand struct {
	mu sync.Mutex // guards r
	r  interface {
		Uint32() uint32
		Int32N(int32) int32
	}
}

func (l *lockedRand) Int32() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int32(l.r.Uint32())
}

func (l *lockedRand) Int32n(n int32) int32 {
	if n <= 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int32N(n)
}
