package prom

import (
	"errors"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestOutcomeVocabulary: attempts are labelled with the one outcome class
// producer.Classify gives a transport's error, so a timeout, a failed
// connection, a request never sent and the client's own throttling are four
// series, not one "transport".
func TestOutcomeVocabulary(t *testing.T) {
	m, reg := newRegistered(t)
	q := route.MessageQueue{Topic: "T", BrokerName: "a"}
	transport := []latency.Class{latency.ClassTransportTimeout, latency.ClassTransportNotSent, latency.ClassThrottled, latency.ClassTransportFailed}
	for _, c := range transport {
		o := producer.Classify(producer.Result{}, &producer.TransportError{Broker: "a", Class: c, Err: errors.New("x")})
		m.OnAttempt(producer.AttemptEvent{Queue: q, Outcome: o})
	}
	got := gather(t, reg)
	for _, c := range transport {
		if k := "mqfault_attempts_total{broker=a,outcome=" + c.String() + "}"; got[k] != 1 {
			t.Errorf("%s = %v, want 1", k, got[k])
		}
	}
	if _, ok := got["mqfault_attempts_total{broker=a,outcome=transport}"]; ok {
		t.Error(`an outcome="transport" series: the producer's coarse class, not latency's`)
	}
}

// TestNoNoneResult: a send's result is how it ended; "none" (still going) is
// never exported.
func TestNoNoneResult(t *testing.T) {
	_, reg := newRegistered(t)
	for k := range gather(t, reg) {
		if contains(k, "result=none") {
			t.Errorf("series %s: a send that has not ended has no result", k)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestBrokerSeries: a per-broker attempt latency histogram and per-broker
// isolated and unreachable gauges, and none of a broker's series outlive its
// fault item (the strategy drops the items of brokers no route names), so the
// series stay bounded by the routes' brokers.
func TestBrokerSeries(t *testing.T) {
	m, reg := newRegistered(t)
	clk := clock.NewManual(t0)
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m.Watch(s)
	qs := []route.MessageQueue{{Topic: "T", BrokerName: "a"}, {Topic: "T", BrokerName: "b"}}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	s.RouteChanged(info)
	s.Update("a", 3*time.Second, true, false) // isolated, unreachable
	s.Update("b", 20*time.Millisecond, false, true)
	m.OnAttempt(producer.AttemptEvent{Queue: qs[0], Outcome: producer.Outcome{Class: latency.ClassTransportTimeout, Elapsed: 3 * time.Second}})
	m.OnAttempt(producer.AttemptEvent{Queue: qs[1], Outcome: producer.Outcome{Class: latency.ClassAnswered, Elapsed: 20 * time.Millisecond}})
	m.OnIsolate(latency.IsolationEvent{Broker: "a", Reason: latency.ReasonFailure})

	got := gather(t, reg)
	for k, v := range map[string]float64{
		"mqfault_broker_isolated{broker=a}":                          1,
		"mqfault_broker_unreachable{broker=a}":                       1,
		"mqfault_broker_isolated{broker=b}":                          0,
		"mqfault_broker_unreachable{broker=b}":                       0,
		"mqfault_attempt_duration_seconds{broker=a}_count":           1,
		"mqfault_attempt_duration_seconds{broker=a}_sum":             3,
		"mqfault_attempt_duration_seconds{broker=b}_count":           1,
		"mqfault_attempts_total{broker=a,outcome=transport_timeout}": 1,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}

	// Broker a leaves every route: its item goes, and so do its series.
	only, err := route.NewPublishInfoFromQueues("T", qs[1:])
	if err != nil {
		t.Fatal(err)
	}
	s.RouteChanged(only)
	got = gather(t, reg)
	for k := range got {
		if contains(k, "broker=a") {
			t.Errorf("series %s after broker a left every route", k)
		}
	}
	if got["mqfault_attempt_duration_seconds{broker=b}_count"] != 1 {
		t.Error("broker b's series went with a's")
	}
	// A broker that comes back (its attempt makes its fault item again) has
	// its series again, from zero.
	s.Update("a", time.Millisecond, false, true)
	m.OnAttempt(producer.AttemptEvent{Queue: qs[0], Outcome: producer.Outcome{Class: latency.ClassAnswered, Elapsed: time.Millisecond}})
	if got := gather(t, reg); got["mqfault_attempts_total{broker=a,outcome=answered}"] != 1 {
		t.Errorf("a late attempt to a: %v, want 1", got["mqfault_attempts_total{broker=a,outcome=answered}"])
	}
}

// TestDocListsEveryMetric: the package doc's table names exactly the metrics a
// watched Metrics exports.
func TestDocListsEveryMetric(t *testing.T) {
	src, err := os.ReadFile("prom.go")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//\t(mqfault_[a-z_]+)`).FindAllStringSubmatch(string(src), -1) {
		documented[m[1]] = true
	}
	m, reg := newRegistered(t)
	clk := clock.NewManual(t0)
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithStageCounter(latency.NewStageCounter()), latency.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m.Watch(s)
	s.Update("a", time.Second, true, false)
	m.OnAttempt(producer.AttemptEvent{Queue: route.MessageQueue{Topic: "T", BrokerName: "a"}, Outcome: producer.Outcome{Class: latency.ClassAnswered}})
	m.OnSend(producer.SendEvent{Kind: producer.KindSync, Stop: producer.StopAnswered})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.GetName()] = true
		if !documented[f.GetName()] {
			t.Errorf("%s is exported but the package doc does not list it", f.GetName())
		}
	}
	for name := range documented {
		if !exported[name] {
			t.Errorf("the package doc lists %s, which is not exported", name)
		}
	}
}

// TestItemlessBrokerKeepsSeries: a broker that only answers busy has no
// fault item under the preset (push-back is not a failure), yet its attempts
// are counted: its series survive every scrape while attempts keep naming
// it, and go only after a scrape interval with neither an item nor an event.
func TestItemlessBrokerKeepsSeries(t *testing.T) {
	m, reg := newRegistered(t)
	cfg := latency.DefaultConfig()
	cfg.Detector = false
	s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)), latency.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m.Watch(s)
	q := route.MessageQueue{Topic: "T", BrokerName: "b"}
	busy := func() {
		m.OnAttempt(producer.AttemptEvent{Queue: q, Outcome: producer.Outcome{Class: latency.ClassBusy, Code: 2, Elapsed: time.Millisecond}})
	}
	const key = "mqfault_attempts_total{broker=b,outcome=busy}"
	for scrape := 1; scrape <= 3; scrape++ {
		busy()
		if _, ok := s.Table().Item("b"); ok {
			t.Fatal("b has a fault item: this test needs a broker without one")
		}
		if got := gather(t, reg)[key]; got != float64(scrape) {
			t.Fatalf("scrape %d: %s = %v, want %d (its series kept between scrapes)", scrape, key, got, scrape)
		}
	}
	gather(t, reg) // a scrape interval with no event for b
	if got, ok := gather(t, reg)[key]; ok {
		t.Errorf("%s = %v after a quiet scrape interval with no fault item, want the series gone", key, got)
	}
}
