package latency_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// A strategy picks a queue for each send attempt and learns from each
// attempt's outcome: a slow broker is isolated for a while and the picks go
// around it.
func ExampleStrategy_Select() {
	clk := clock.NewManual(time.UnixMilli(1000000))
	s, err := latency.NewStrategy(latency.Reference5(), latency.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	s.SetFaultTolerance(true)

	info, _ := route.NewPublishInfo("orders", &route.TopicRouteData{OrderTopicConf: route.Str("a:1;b:1;c:1")})
	info.Index().Store(0) // a fresh index starts at a random value

	pick, _ := s.Select(info, latency.PickInfo{})
	fmt.Println(pick.Queue, pick.Stage)

	// The send to b took 600 ms: b is isolated for 2 s (the 5.x table).
	s.Update("b", 600*time.Millisecond, false, true)
	info.Index().Store(0)
	pick, _ = s.Select(info, latency.PickInfo{})
	fmt.Println(pick.Queue, pick.Stage)

	// A retry avoids the broker that just failed.
	pick, _ = s.Select(info, latency.PickInfo{LastBroker: "a"})
	fmt.Println(pick.Queue, pick.Stage)

	clk.Advance(2 * time.Second) // b's isolation ends
	info.Index().Store(0)
	pick, _ = s.Select(info, latency.PickInfo{})
	fmt.Println(pick.Queue, pick.Stage)
	// Output:
	// b:0 available
	// c:0 available
	// c:0 available
	// b:0 available
}

// User filters join the cascade: here, keep sends in one zone while it has
// a healthy broker.
func ExampleStrategy_Select_filters() {
	zone := map[string]string{"a": "east", "b": "east", "c": "west"}
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Filters = []route.QueueFilter{route.QueueFilterFunc(func(q route.MessageQueue) bool { return zone[q.BrokerName] == "west" })}
	s, _ := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(time.UnixMilli(0))))
	defer s.Close()
	info, _ := route.NewPublishInfo("orders", &route.TopicRouteData{OrderTopicConf: route.Str("a:1;b:1;c:1")})

	info.Index().Store(0)
	pick, _ := s.Select(info, latency.PickInfo{})
	fmt.Println(pick.Queue, pick.Stage)

	s.Update("c", 0, true, false) // c failed and is unreachable
	info.Index().Store(0)
	pick, _ = s.Select(info, latency.PickInfo{})
	fmt.Println(pick.Queue, pick.Stage)
	// Output:
	// c:0 available
	// c:0 filtered
}

// NewStrategy validates its configuration: a bad setting is an error that
// names it.
func ExampleNewStrategy() {
	cfg := latency.DefaultConfig()
	cfg.DetectInterval = 0
	_, err := latency.NewStrategy(cfg)
	fmt.Println(errors.Is(err, latency.ErrInvalidConfig))
	fmt.Println(err)

	cfg = latency.DefaultConfig() // the detector needs to know where brokers are
	_, err = latency.NewStrategy(cfg)
	fmt.Println(err)

	s, err := latency.NewStrategy(cfg, latency.WithResolver(probe.StaticResolver{"broker-a": "10.0.0.1:10911"}),
		latency.WithServiceDetector(probe.TCPDetector{}))
	fmt.Println(err)
	s.Close()
	// Output:
	// true
	// latency: DetectInterval = 0s: must be positive
	// latency: Detector = true: the detector needs a Resolver (WithResolver)
	// <nil>
}

// Reference5 and Reference4 are RocketMQ's own defaults; DefaultConfig is the
// recommended preset.
func ExampleDefaultConfig() {
	for _, c := range []latency.Config{latency.Reference5(), latency.Reference4(), latency.DefaultConfig()} {
		fmt.Println(c.Mode, c.FaultTolerance, c.Detector, c.DetectPeriod, c.DetectParallel)
	}
	// Output:
	// v5 false false 3s 1
	// v4 false false 3s 1
	// v5 true true 250ms 16
}

// The fault table on its own: v5 only ever extends an isolation, and the
// broker is available again exactly when it ends.
func ExampleFaultTable() {
	clk := clock.NewManual(time.UnixMilli(1000000))
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	ft.Update("b", 700*time.Millisecond, 5*time.Second, true)
	ft.Update("b", 30*time.Millisecond, 0, true) // a fast success does not end it
	fmt.Println(ft.IsAvailable("b"), ft.IsAvailable("unknown"))

	clk.Advance(5 * time.Second)
	fmt.Println(ft.IsAvailable("b"))
	for _, it := range ft.Items() {
		fmt.Println(it.Broker, it.Latency, it.IsolatedUntil.UnixMilli(), it.Available)
	}
	// Output:
	// false true
	// true
	// b 30ms 1005000 true
}

// 4.x's least-bad broker: available first, then the lowest latency, in round
// robin over the better half.
func ExampleFaultTable_PickLeastBad() {
	ft := latency.NewFaultTable(latency.ModeV4, clock.NewManual(time.UnixMilli(0)))
	ft.Update("slow", 900*time.Millisecond, time.Minute, true)
	ft.Update("slower", 2*time.Second, time.Minute, true)
	ft.Update("slowest", 5*time.Second, time.Minute, true)
	ft.Update("worst", 9*time.Second, time.Minute, true)
	ft.WorstIndex().Store(0)
	for range 3 {
		b, _ := ft.PickLeastBad()
		fmt.Print(b, " ")
	}
	fmt.Println()
	// Output: slower slow slower
}

// A duration table maps a send's latency to an isolation.
func ExampleNewStepTable() {
	table, err := latency.NewStepTable(
		[]time.Duration{100 * time.Millisecond, time.Second},
		[]time.Duration{0, 10 * time.Second})
	fmt.Println(err, table.Isolation(50*time.Millisecond), table.Isolation(time.Second), table.Isolation(time.Minute))

	_, err = latency.NewStepTable([]time.Duration{time.Second, 100 * time.Millisecond}, []time.Duration{0, 0})
	fmt.Println(err)
	// Output:
	// <nil> 0s 10s 10s
	// latency: latencyMax[1] = 100ms: thresholds must be strictly ascending (the one before is 1s)
}

// The built-in detector dials the broker over TCP within the probe's
// deadline.
func ExampleTCPDetector() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	addr := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(probe.TCPDetector{}.Detect(ctx, addr))
	ln.Close()

	err = probe.TCPDetector{}.Detect(ctx, addr) // nothing listens any more
	var pe *probe.Error
	fmt.Println(errors.As(err, &pe), errors.Is(err, probe.ErrInconclusive))
	// Output:
	// <nil>
	// true false
}

// A detector round probes the brokers whose check stamp has passed; a broker
// that answers becomes reachable again, one that left the route is dropped.
func ExampleStrategy_DetectRound() {
	clk := clock.NewManual(time.UnixMilli(1000000))
	resolver := probe.StaticResolver{"a": "10.0.0.1:10911", "b": "10.0.0.2:10911"}
	up := probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
		if addr == "10.0.0.1:10911" {
			return nil
		}
		return errors.New("connection refused")
	})
	cfg := latency.DefaultConfig()
	s, _ := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithResolver(resolver), latency.WithServiceDetector(up))
	defer s.Close()
	for _, b := range []string{"a", "b", "gone"} {
		s.Update(b, 0, true, false) // a transport error with the detector on: unreachable
	}
	rep, _ := s.DetectRound(context.Background())
	fmt.Printf("%+v\n", rep)
	for _, it := range s.Table().Items() {
		fmt.Println(it.Broker, it.Reachable, it.Available)
	}
	// Output:
	// {Due:3 Removed:1 Probed:2 Reachable:1 Unreachable:1 Inconclusive:0 TimedOut:0 NoAnswer:0 Awaited:0}
	// a true false
	// b false false
}

// Start runs a round every DetectPeriod of the strategy's clock; Close stops
// the loop and waits for it.
func ExampleStrategy_Start() {
	clk := clock.NewManual(time.UnixMilli(1000000))
	probed := make(chan string, 1)
	detector := probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
		select {
		case probed <- addr: // the first probe; later rounds' go unreported
		default:
		}
		return nil
	})
	cfg := latency.DefaultConfig()
	s, _ := latency.NewStrategy(cfg, latency.WithClock(clk),
		latency.WithResolver(probe.StaticResolver{"a": "10.0.0.1:10911"}), latency.WithServiceDetector(detector))
	s.Update("a", 0, true, false)
	if err := s.Start(); err != nil {
		fmt.Println(err)
		return
	}
	clk.Advance(cfg.DetectPeriod) // one period: one round
	fmt.Println(<-probed)
	s.Close()
	fmt.Println(s.Start())
	// Output:
	// 10.0.0.1:10911
	// latency: strategy closed
}

// The root README's "Compose a strategy": a strategy with the detector, one
// pick over a route built in code, the attempt's outcome reported through the
// pick.
func ExampleNewStrategy_compose() {
	queues := []route.MessageQueue{{BrokerName: "broker-a"}, {BrokerName: "broker-b", QueueID: 1}}
	var sent route.MessageQueue
	err := composeAndSend(queues, func(q route.MessageQueue) error {
		sent = q
		return nil
	})
	fmt.Println(sent.Topic, err)
	// Output: orders <nil>
}

// composeAndSend is the README's snippet: sendTo stands for the user's send.
func composeAndSend(queues []route.MessageQueue, sendTo func(route.MessageQueue) error) error {
	strategy, err := latency.NewStrategy(latency.DefaultConfig(),
		latency.WithResolver(probe.StaticResolver{"broker-a": "10.0.0.1:10911", "broker-b": "10.0.0.2:10911"}),
		latency.WithServiceDetector(probe.TCPDetector{}), // probes isolated brokers
	)
	if err != nil {
		return err
	}
	strategy.Start() // the background detector
	defer strategy.Close()

	info, err := route.NewPublishInfoFromQueues("orders", queues) // or route.NewPublishInfo(topic, routeData)
	if err != nil {
		return err
	}
	pick, _ := strategy.Select(info, latency.PickInfo{}) // retries: PickInfo{LastBroker: b, ResetIndex: true}
	start := time.Now()
	err = sendTo(*pick.Queue)
	// Report what the attempt met through its pick: the strategy applies its mode's
	// update rules (a transport error isolates the broker, and marks it unreachable
	// while the detector is on; a slow success isolates it per the duration table).
	class := latency.ClassAnswered
	if err != nil {
		class = latency.ClassTransportFailed // or ClassBusy, ClassBroker, ClassClient, ...
	}
	pick.Done(latency.Outcome{Class: class, Latency: time.Since(start), Err: err})
	return err
}

// ExamplePick_Done reports what each attempt met through its pick: the
// strategy that picked applies its mode's update rules and returns the
// fault update they called for. A failed send isolates its broker, a slow
// answer too (for the duration table's time), a fast answer does not.
func ExamplePick_Done() {
	clk := clock.NewManual(time.UnixMilli(1000000))
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	info, _ := route.NewPublishInfo("orders", &route.TopicRouteData{OrderTopicConf: route.Str("a:1;b:1;c:1")})
	info.Index().Store(0) // a fresh index starts at a random value

	outcomes := []latency.Outcome{
		{Class: latency.ClassTransportTimeout, Latency: 3 * time.Second},
		{Class: latency.ClassAnswered, Latency: 600 * time.Millisecond},
		{Class: latency.ClassAnswered, Latency: 20 * time.Millisecond},
	}
	for _, o := range outcomes {
		pick, _ := s.Select(info, latency.PickInfo{})
		u := pick.Done(o)
		fmt.Printf("%v (%v) %v: %+v, available %v\n", pick.Queue, pick.Stage, o.Class, u,
			s.Table().IsAvailable(pick.Queue.BrokerName))
	}
	// A pick whose attempt never started is released instead: nothing is
	// reported.
	pick, _ := s.Select(info, latency.PickInfo{})
	pick.Release()
	fmt.Println(pick.Queue, "released")
	// Output:
	// b:0 (available) transport_timeout: {Broker:b Latency:3s Isolation:true Reachable:true}, available false
	// c:0 (available) answered: {Broker:c Latency:600ms Isolation:false Reachable:true}, available false
	// a:0 (available) answered: {Broker:a Latency:20ms Isolation:false Reachable:true}, available true
	// a:0 released
}
