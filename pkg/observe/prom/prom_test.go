package prom

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

var t0 = time.Unix(1_700_000_000, 0)

// gather returns every sample of reg as "name{label=value,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName() + labels(m)
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
				out[key+"_sum"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func labels(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	s := "{"
	for i, l := range m.GetLabel() {
		if i > 0 {
			s += ","
		}
		s += l.GetName() + "=" + l.GetValue()
	}
	return s + "}"
}

func newRegistered(t *testing.T, opts ...Option) (*Metrics, *prometheus.Registry) {
	t.Helper()
	m, err := New(opts...)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatalf("Register() error = %v", err)
	}
	return m, reg
}

func TestEvents(t *testing.T) {
	m, reg := newRegistered(t)
	q := func(b string) route.MessageQueue { return route.MessageQueue{Topic: "T", BrokerName: b} }
	m.OnIsolate(latency.IsolationEvent{Broker: "a", Reason: latency.ReasonFailure})
	m.OnIsolate(latency.IsolationEvent{Broker: "a", Reason: latency.ReasonFailure, Extended: true})
	m.OnIsolate(latency.IsolationEvent{Broker: "a", Reason: latency.ReasonLatency, Extended: true})
	m.OnIsolate(latency.IsolationEvent{Broker: "b", Reason: latency.ReasonLatency})
	m.OnIsolate(latency.IsolationEvent{Broker: "b", Reason: "future"})
	m.OnIsolate(latency.IsolationEvent{Broker: "b", Reason: "future", Extended: true})
	m.OnRecover(latency.RecoveryEvent{Broker: "a"})
	m.OnProbe(latency.ProbeEvent{Broker: "a"})
	m.OnProbe(latency.ProbeEvent{Broker: "a", Err: errors.New("refused")})
	m.OnProbe(latency.ProbeEvent{Broker: "a", Err: fmt.Errorf("x: %w", probe.ErrInconclusive)})
	m.OnAttempt(producer.AttemptEvent{Queue: q("a"), Outcome: producer.Outcome{Class: latency.ClassTransportFailed}})
	m.OnAttempt(producer.AttemptEvent{Queue: q("b"), Outcome: producer.Outcome{Class: latency.ClassAnswered}})
	m.OnAttempt(producer.AttemptEvent{Queue: q("b"), Outcome: producer.Outcome{Class: latency.ClassAnswered}})
	m.OnAttempt(producer.AttemptEvent{Queue: q("b"), Outcome: producer.Outcome{Class: 99}}) // ignored
	m.OnSend(producer.SendEvent{Kind: producer.KindSync, Stop: producer.StopAnswered, Elapsed: 30 * time.Millisecond, Waited: true})
	m.OnSend(producer.SendEvent{Kind: producer.KindAsync, Stop: producer.StopFailed, Elapsed: 2 * time.Second, RetryRefused: true})
	m.OnSend(producer.SendEvent{Kind: producer.KindOneway, Stop: producer.StopNoRoom})
	m.OnSend(producer.SendEvent{Kind: 9, Stop: producer.StopFailed}) // ignored

	got := gather(t, reg)
	want := map[string]float64{
		"mqfault_isolations_total{broker=a,reason=failure}":           1,
		"mqfault_isolation_extensions_total{broker=a,reason=failure}": 1,
		"mqfault_isolation_extensions_total{broker=a,reason=latency}": 1,
		"mqfault_isolations_total{broker=a,reason=latency}":           0,
		"mqfault_isolations_total{broker=b,reason=latency}":           1,
		"mqfault_isolation_extensions_total{broker=b,reason=latency}": 0,
		"mqfault_isolations_total{broker=b,reason=future}":            1,
		"mqfault_isolation_extensions_total{broker=b,reason=future}":  1,
		"mqfault_isolations_ended_total{broker=a}":                    1,
		"mqfault_probes_total{result=reachable}":                      1,
		"mqfault_probes_total{result=unreachable}":                    1,
		"mqfault_probes_total{result=inconclusive}":                   1,
		"mqfault_attempts_total{broker=a,outcome=transport_failed}":   1,
		"mqfault_attempts_total{broker=b,outcome=answered}":           2,
		"mqfault_sends_total{kind=sync,result=answered}":              1,
		"mqfault_sends_total{kind=async,result=failed}":               1,
		"mqfault_send_duration_seconds{kind=sync}_count":              1,
		"mqfault_send_duration_seconds{kind=async}_sum":               2,
		"mqfault_attempts_total{broker=b,outcome=cancelled}":          0,
		"mqfault_sends_total{kind=oneway,result=call_timeout}":        0,
		"mqfault_sends_total{kind=oneway,result=no_room}":             1,
		"mqfault_retries_refused_total":                               1,
		"mqfault_sends_waited_total":                                  1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	// Without Watch there are no gauges and no picks.
	if _, ok := got["mqfault_isolated_brokers"]; ok {
		t.Error("mqfault_isolated_brokers exported before Watch")
	}
}

func TestWatch(t *testing.T) {
	m, reg := newRegistered(t, WithNamespace("app"))
	clk := clock.NewManual(t0)
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithStageCounter(latency.NewStageCounter()), latency.WithObserver(m))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m.Watch(s)
	info, err := route.NewPublishInfoFromQueues("T", []route.MessageQueue{{Topic: "T", BrokerName: "a"}, {Topic: "T", BrokerName: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	s.Update("a", time.Millisecond, true, false)
	clk.Advance(time.Second)
	s.Update("a", time.Millisecond, true, false) // while isolated: an extension, not a new isolation
	for range 4 {
		s.Select(info, latency.PickInfo{})
	}
	got := gather(t, reg)
	for k, v := range map[string]float64{
		"app_isolated_brokers":                                    1,
		"app_unreachable_brokers":                                 1,
		"app_picks_total{stage=available}":                        4,
		"app_picks_total{stage=any}":                              0,
		"app_isolations_total{broker=a,reason=failure}":           1,
		"app_isolation_extensions_total{broker=a,reason=failure}": 1,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	clk.Advance(time.Minute)
	got = gather(t, reg)
	// One isolation begun, one ended, none now: the counters agree with
	// the gauge.
	if got["app_isolated_brokers"] != 0 || got["app_isolations_ended_total{broker=a}"] != 1 || got["app_isolations_total{broker=a,reason=failure}"] != 1 {
		t.Errorf("after the isolation: isolated %v, begun %v, ended %v; want 0, 1 and 1", got["app_isolated_brokers"],
			got["app_isolations_total{broker=a,reason=failure}"], got["app_isolations_ended_total{broker=a}"])
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
	}{
		{"namespace with a dash", []Option{WithNamespace("my-app")}},
		{"namespace starting with a digit", []Option{WithNamespace("1app")}},
		{"buckets not ascending", []Option{WithBuckets([]float64{1, 0.5})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := New(tt.opts...); err == nil {
				t.Errorf("New() = %v, nil; want an error", m)
			}
		})
	}
}

// Two registrations of one Metrics collide; Unregister frees the names.
func TestRegisterTwice(t *testing.T) {
	m, reg := newRegistered(t)
	if err := reg.Register(m); err == nil {
		t.Fatal("second Register() = nil, want an error")
	}
	if !reg.Unregister(m) {
		t.Fatal("Unregister() = false")
	}
	if err := reg.Register(m); err != nil {
		t.Fatalf("Register() after Unregister error = %v", err)
	}
}

// TestEveryClassAndStop checks that every outcome class and every stop the
// producer has gets its series, busy included: none is dropped for want of
// a slot.
func TestEveryClassAndStop(t *testing.T) {
	m, reg := newRegistered(t)
	q := route.MessageQueue{Topic: "T", BrokerName: "a"}
	for _, c := range latency.Classes() {
		m.OnAttempt(producer.AttemptEvent{Queue: q, Outcome: producer.Outcome{Class: c}})
	}
	for _, k := range producer.Kinds() {
		for _, s := range producer.Stops() {
			m.OnSend(producer.SendEvent{Kind: k, Stop: s})
		}
	}
	got := gather(t, reg)
	for _, c := range latency.Classes() {
		if k := "mqfault_attempts_total{broker=a,outcome=" + c.String() + "}"; got[k] != 1 {
			t.Errorf("%s = %v, want 1", k, got[k])
		}
	}
	if got["mqfault_attempts_total{broker=a,outcome=busy}"] != 1 {
		t.Error("no busy series")
	}
	for _, k := range producer.Kinds() {
		for _, s := range producer.Stops() {
			if s == producer.StopNone {
				continue // TestNoNoneResult
			}
			if key := "mqfault_sends_total{kind=" + strings.ToLower(k.String()) + ",result=" + s.String() + "}"; got[key] != 1 {
				t.Errorf("%s = %v, want 1", key, got[key])
			}
		}
	}
}

// TestReasonsAreLatencys: the metrics' fixed list of isolation reasons is
// latency's, so a reason latency adds gets its own series, not the
// fallback's.
func TestReasonsAreLatencys(t *testing.T) {
	if got, want := reasons[:], latency.Reasons(); !slices.Equal(got, want) {
		t.Errorf("prom's reasons = %v, latency.Reasons() = %v", got, want)
	}
}
