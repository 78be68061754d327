package producer_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// randomTransport meets each attempt with a random outcome and latency on the
// manual clock (so budgets run out too).
type randomTransport struct {
	mu    sync.Mutex // guards rng
	rng   *rand.Rand
	clock *clock.Manual
}

func (r *randomTransport) Send(ctx context.Context, a producer.Attempt) (producer.Result, error) {
	r.mu.Lock()
	n, lat := r.rng.IntN(9), r.rng.Int64N(1500)
	r.mu.Unlock()
	r.clock.Advance(ms(lat))
	switch n {
	case 0, 1:
		return producer.Result{}, nil
	case 2:
		return producer.Result{Status: producer.FlushDiskTimeout}, nil
	case 3:
		return producer.Result{}, &producer.ClientError{Broker: a.Queue.BrokerName}
	case 4:
		return producer.Result{}, &producer.TransportError{Broker: a.Queue.BrokerName, Class: transportClasses[lat%4]}
	case 5:
		return producer.Result{}, &producer.BrokerError{Broker: a.Queue.BrokerName, Code: 14}
	case 6:
		return producer.Result{}, &producer.BrokerError{Broker: a.Queue.BrokerName, Code: 999}
	case 7:
		return producer.Result{}, producer.ErrInterrupted
	}
	return producer.Result{}, errors.New("unclassified")
}

// transportClasses are the classes a *producer.TransportError may carry.
var transportClasses = []latency.Class{latency.ClassTransportFailed, latency.ClassTransportTimeout, latency.ClassTransportNotSent, latency.ClassThrottled}

// TestEverySendEndsOnce sends many messages, sync, oneway and async, from
// several goroutines, through a Transport with random outcomes and latencies,
// and closes the producer halfway. Every sync send must return exactly one of
// an answer or an error; every accepted async send must be called back exactly
// once, with the same rule; every refused one never.
func TestEverySendEndsOnce(t *testing.T) {
	for seed := range uint64(5) {
		clk := clock.NewManual(t0)
		scfg := latency.Reference5()
		scfg.FaultTolerance = true
		strat, err := latency.NewStrategy(scfg, latency.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		routes := &producer.StaticRoutes{}
		routes.SetQueues("T", map[string]int{"A": 2, "B": 2, "C": 2, "D": 2})
		cfg := producer.Reference5()
		cfg.RetryAnotherBrokerWhenNotStoreOK = seed%2 == 0
		cfg.AsyncMaxInFlight = 8
		tr := &randomTransport{rng: rand.New(rand.NewPCG(seed, 1)), clock: clk}
		p, err := producer.New(tr, routes, strat, cfg, producer.WithClock(clk),
			producer.WithRouteOptions(route.WithRandom(fixedRandom{})))
		if err != nil {
			t.Fatal(err)
		}

		const workers, perWorker = 4, 200
		calls := make([]atomic.Int32, workers*perWorker)
		accepted := make([]bool, workers*perWorker)
		var wg sync.WaitGroup
		var closeOnce sync.Once
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					id := w*perWorker + i
					if w == 0 && i == perWorker/2 {
						closeOnce.Do(func() { go p.Close() })
					}
					switch id % 3 {
					case 0:
						res, err := p.SendSync(context.Background(), msg())
						checkEnd(t, id, res, err)
					case 1:
						checkEnd(t, id, producer.Result{}, p.SendOneway(context.Background(), msg()))
					default:
						err := p.SendAsync(context.Background(), msg(), func(res producer.Result, err error) {
							calls[id].Add(1)
							checkEnd(t, id, res, err)
						})
						accepted[id] = err == nil
						if err != nil && !errors.Is(err, producer.ErrClosed) && !errors.Is(err, producer.ErrAsyncLimit) {
							t.Errorf("send %d: SendAsync() error = %v", id, err)
						}
					}
				}
			})
		}
		wg.Wait()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		_ = strat.Close()
		for id := range calls {
			want := int32(0)
			if accepted[id] {
				want = 1
			}
			if got := calls[id].Load(); got != want {
				t.Errorf("seed %d, send %d: %d callbacks, want %d", seed, id, got, want)
			}
		}
	}
}

// checkEnd checks that a send ended in exactly one of an answer or an error
// the producer documents.
func checkEnd(t *testing.T, id int, res producer.Result, err error) {
	if err == nil {
		return
	}
	if !reflect.DeepEqual(res, producer.Result{}) {
		t.Errorf("send %d: both a result %+v and an error %v", id, res, err)
	}
	var se *producer.SendError
	if !errors.As(err, &se) && !errors.Is(err, producer.ErrClosed) {
		t.Errorf("send %d: error %v is neither a *SendError nor ErrClosed", id, err)
	}
}

// TestLoopTerminates drives sends (a Drive over a scripted strategy) of
// every kind and mode with random outcomes and checks that each Loop ends
// within its attempts, once, with a result that agrees with its Stop.
func TestLoopTerminates(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	classes := latency.Classes()
	info, err := route.NewPublishInfo("T", &route.TopicRouteData{OrderTopicConf: route.Str("b:1")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20000 {
		mode := latency.ModeV5
		if i%2 == 1 {
			mode = latency.ModeV4
		}
		cfg := producer.Reference5()
		cfg.RetryTimes = rng.IntN(4)
		cfg.AsyncRetryTimes = rng.IntN(4)
		cfg.RetryAnotherBrokerWhenNotStoreOK = rng.IntN(2) == 0
		cfg.MaxTimeoutPerRequest = ms(rng.Int64N(2000))
		policy, err := producer.NewPolicy(cfg, mode)
		if err != nil {
			t.Fatal(err)
		}
		kind := producer.Kind(rng.IntN(3))
		strat := &scripted{mode: mode, brokers: []string{"b"}}
		d := producer.NewDrive(strat, info, policy, kind, t0)
		l := d.Loop()
		now := t0
		steps := 0
		for {
			if !d.Next(now) {
				break
			}
			if steps > policy.MaxAttempts(kind) {
				t.Fatalf("loop %d: more than %d attempts", i, policy.MaxAttempts(kind))
			}
			plan, ok := d.Start(now)
			if !ok {
				break
			}
			steps++
			if plan.Timeout < 0 || plan.Deadline.Before(now) {
				t.Fatalf("loop %d: plan %+v", i, plan)
			}
			if kind == producer.KindAsync && rng.IntN(2) == 0 {
				d.Dispatched(0)
			}
			o := producer.Outcome{Class: classes[rng.IntN(len(classes))], Code: []int{1, 2, 999}[rng.IntN(3)],
				Elapsed: ms(rng.Int64N(2000))}
			if o.Class == latency.ClassAnswered {
				o.Result.Status = producer.SendStatus(rng.IntN(4))
			}
			strat.detector = rng.IntN(2) == 0
			step := d.Finish(o)
			if u := step.Update; u.Broker != "b" || u.Latency != o.Elapsed {
				t.Fatalf("loop %d: update %+v for outcome %+v", i, u, o)
			}
			if step.Retry == l.Done() {
				t.Fatalf("loop %d: Retry = %v but Done() = %v", i, step.Retry, l.Done())
			}
			now = now.Add(o.Elapsed)
		}
		if !l.Done() || l.Stop() == producer.StopNone || l.Attempts() != steps {
			t.Fatalf("loop %d: Done() = %v, Stop() = %v, Attempts() = %d (made %d)", i, l.Done(), l.Stop(), l.Attempts(), steps)
		}
		res, err := l.Result()
		if (err == nil) != (l.Stop() == producer.StopAnswered) || (err != nil && !reflect.DeepEqual(res, producer.Result{})) {
			t.Fatalf("loop %d: Result() = %+v, %v with Stop() = %v", i, res, err, l.Stop())
		}
		if d.Next(now) {
			t.Fatalf("loop %d: Next() = true after the end", i)
		}
	}
}
