package producer_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// ExampleProducer_SendSync composes a producer from a Transport (here one
// whose broker b is down), routes set in code and the latency strategy: the
// first attempt fails on b, the retry goes to another broker, and b is
// isolated for the next sends.
func ExampleProducer_SendSync() {
	clk := clock.NewManual(time.Unix(0, 0))
	scfg := latency.Reference5()
	scfg.FaultTolerance = true
	strat, err := latency.NewStrategy(scfg, latency.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer strat.Close()

	routes := &producer.StaticRoutes{}
	routes.SetQueues("orders", map[string]int{"a": 1, "b": 1, "c": 1})
	transport := producer.TransportFunc(func(ctx context.Context, a producer.Attempt) (producer.Result, error) {
		clk.Advance(20 * time.Millisecond)
		if a.Queue.BrokerName == "b" {
			return producer.Result{}, &producer.TransportError{Broker: "b", Class: latency.ClassTransportNotSent, Err: errors.New("connection refused")}
		}
		return producer.Result{MsgID: "id-1"}, nil
	})
	p, err := producer.New(transport, routes, strat, producer.Reference5(),
		producer.WithClock(clk), producer.WithRouteOptions(route.WithRandom(zeroRandom{})))
	if err != nil {
		panic(err)
	}
	defer p.Close()

	res, err := p.SendSync(context.Background(), &producer.Message{Topic: "orders", Body: []byte("hello")})
	fmt.Println(res.Status, res.Queue, err)
	fmt.Println("b available:", strat.Table().IsAvailable("b"))
	// Output:
	// SEND_OK c:0 <nil>
	// b available: false
}

// zeroRandom starts every index at 0 and resets it to 0, for a predictable
// example.
type zeroRandom struct{}

func (zeroRandom) Int32() int32       { return 0 }
func (zeroRandom) Int32n(int32) int32 { return 0 }

// scripted is a Strategy of one's own: it picks the brokers it is given, in
// turn, keeps what each pick was asked, and makes the fault update mode's
// rules call for (latency.UpdateFor, with the detector switch at detector)
// of what each attempt met, as *latency.Strategy does with its table.
type scripted struct {
	mode     latency.Mode
	detector bool
	brokers  []string
	asked    []latency.PickInfo
}

func (s *scripted) Select(info *route.PublishInfo, in latency.PickInfo) (latency.Pick, bool) {
	if len(s.brokers) == 0 {
		return latency.Pick{}, false
	}
	b := s.brokers[len(s.asked)%len(s.brokers)]
	s.asked = append(s.asked, in)
	return latency.Pick{Queue: &route.MessageQueue{Topic: info.Topic(), BrokerName: b}, Reporter: s}, true
}

func (s *scripted) Report(p latency.Pick, o latency.Outcome) latency.FaultUpdate {
	return latency.UpdateFor(s.mode, p.Queue.BrokerName, o, s.detector)
}

func (s *scripted) Mode() latency.Mode              { return s.mode }
func (s *scripted) RouteChanged(*route.PublishInfo) {}
func (s *scripted) RouteRemoved(string)             {}

// ExampleDrive_scripted drives a send with a Strategy of one's own, in
// virtual time: the first attempt times out after 500 ms, the retry (asked to
// avoid the first broker and, v5, to reset the index) is answered. The
// Drive's Loop says how the send went.
func ExampleDrive_scripted() {
	policy, err := producer.NewPolicy(producer.Reference5(), latency.ModeV5)
	if err != nil {
		panic(err)
	}
	info, err := route.NewPublishInfo("orders", &route.TopicRouteData{OrderTopicConf: route.Str("a:1;b:1")})
	if err != nil {
		panic(err)
	}
	strat := &scripted{mode: latency.ModeV5, brokers: []string{"a", "b"}}
	start := time.Unix(0, 0)
	d := producer.NewDrive(strat, info, policy, producer.KindSync, start)
	now := start
	outcomes := []producer.Outcome{
		{Class: latency.ClassTransportTimeout, Err: context.DeadlineExceeded, Elapsed: 500 * time.Millisecond},
		{Class: latency.ClassAnswered, Elapsed: 30 * time.Millisecond},
	}
	for i := 0; d.Next(now); i++ {
		plan, ok := d.Start(now)
		if !ok {
			break
		}
		step := d.Finish(outcomes[i])
		pi := strat.asked[plan.Attempt]
		fmt.Printf("attempt %d on %s (last %q, reset %v, timeout %v): update %+v, retry %v\n",
			plan.Attempt, plan.Queue.BrokerName, pi.LastBroker, pi.ResetIndex, plan.Timeout, step.Update, step.Retry)
		now = plan.Start.Add(outcomes[i].Elapsed)
	}
	l := d.Loop()
	res, err := l.Result()
	fmt.Println(l.Stop(), res.Status, err, l.Elapsed())
	// Output:
	// attempt 0 on a (last "", reset false, timeout 3s): update {Broker:a Latency:500ms Isolation:true Reachable:true}, retry true
	// attempt 1 on b (last "a", reset true, timeout 2.5s): update {Broker:b Latency:30ms Isolation:false Reachable:true}, retry false
	// answered SEND_OK <nil> 530ms
}

// The READMEs' producer: a send over your Transport and RouteSource with the
// strategy picking every attempt, on the real clock and on one of yours.
func ExampleNew() {
	strategy, err := latency.NewStrategy(latency.Reference5())
	if err != nil {
		panic(err)
	}
	defer strategy.Close()
	routes := &producer.StaticRoutes{}
	routes.SetQueues("orders", map[string]int{"broker-a": 2})
	transport := producer.TransportFunc(func(_ context.Context, a producer.Attempt) (producer.Result, error) {
		return producer.Result{MsgID: "id-1"}, nil // put a.Message on a.Queue here
	})
	ctx, body := context.Background(), []byte("hello")
	fmt.Println(readmeSend(ctx, transport, routes, strategy, body))
	clk := clock.NewManual(time.Unix(0, 0)) // the producer's budgets on a clk of yours
	fmt.Println(readmeSendWithClock(ctx, transport, routes, strategy, clk, body))
	// Output:
	// SEND_OK id-1 broker-a
	// <nil>
	// SEND_OK id-1 broker-a
	// <nil>
}

// readmeSend is the root README's snippet.
func readmeSend(ctx context.Context, transport producer.Transport, routes producer.RouteSource, strategy *latency.Strategy, body []byte) error {
	p, err := producer.New(transport, routes, strategy, producer.DefaultConfig())
	if err != nil {
		return err
	}
	defer p.Close() // before strategy.Close()
	res, err := p.SendSync(ctx, &producer.Message{Topic: "orders", Body: body})
	if err != nil {
		return err
	}
	fmt.Println(res.Status, res.MsgID, res.Queue.BrokerName)
	return nil
}

// readmeSendWithClock is pkg/producer/README's snippet: the producer on a
// clock of your own (a clock.Manual in tests).
func readmeSendWithClock(ctx context.Context, transport producer.Transport, routes producer.RouteSource, strategy *latency.Strategy, clk clock.Clock, body []byte) error {
	p, err := producer.New(transport, routes, strategy, producer.DefaultConfig(), producer.WithClock(clk))
	if err != nil {
		return err
	}
	defer p.Close()
	res, err := p.SendSync(ctx, &producer.Message{Topic: "orders", Body: body})
	if err != nil {
		return err
	}
	fmt.Println(res.Status, res.MsgID, res.Queue.BrokerName)
	return nil
}

// ExampleDrive runs one synchronous send over a strategy in virtual time, as
// a simulator does: Start picks each attempt's queue, Finish reports the
// attempt's outcome through the pick (the strategy's rules make the fault
// update) and says whether to retry. The attempt on broker b times out, the
// retry goes to another broker and is answered, and b stays isolated.
func ExampleDrive() {
	clk := clock.NewManual(time.Unix(0, 0))
	scfg := latency.Reference5()
	scfg.FaultTolerance = true
	strat, err := latency.NewStrategy(scfg, latency.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer strat.Close()
	policy, err := producer.NewPolicy(producer.Reference5(), latency.ModeV5)
	if err != nil {
		panic(err)
	}
	info, err := route.NewPublishInfo("orders", &route.TopicRouteData{OrderTopicConf: route.Str("a:1;b:1;c:1")},
		route.WithRandom(zeroRandom{}))
	if err != nil {
		panic(err)
	}

	// run is the attempt: broker b hangs until the attempt's timeout.
	run := func(plan producer.Plan) producer.Outcome {
		if plan.Queue.BrokerName == "b" {
			return producer.Outcome{Class: latency.ClassTransportTimeout,
				Err: context.DeadlineExceeded, Elapsed: plan.Timeout}
		}
		return producer.Outcome{Class: latency.ClassAnswered, Elapsed: 30 * time.Millisecond}
	}
	now := clk.Now()
	d := producer.NewDrive(strat, info, policy, producer.KindSync, now)
	for d.Next(now) {
		plan, ok := d.Start(now)
		if !ok {
			break
		}
		o := run(plan)
		clk.Advance(o.Elapsed)
		step := d.Finish(o)
		fmt.Printf("attempt %d on %s: update %+v, retry %v\n", plan.Attempt, plan.Queue.BrokerName, step.Update, step.Retry)
		now = plan.Start.Add(o.Elapsed)
	}
	res, err := d.Loop().Result()
	fmt.Println(res.Status, res.Queue, err)
	fmt.Println("b available:", strat.Table().IsAvailable("b"))
	// Output:
	// attempt 0 on b: update {Broker:b Latency:3s Isolation:true Reachable:true}, retry true
	// attempt 1 on c: update {Broker:c Latency:30ms Isolation:false Reachable:true}, retry false
	// SEND_OK c:0 <nil>
	// b available: false
}
