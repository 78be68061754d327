package setup_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/observe/setup"
	"github.com/mqfault/mqfault/pkg/producer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is a slog.Handler that keeps "LEVEL message broker" of every
// record.
type recorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "broker" {
			line += " " + a.Value.String()
		}
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, line)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) has(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.recs {
		if l == line {
			return true
		}
	}
	return false
}

// counting counts the isolations and attempts it is told of.
type counting struct {
	latency.NopObserver
	mu                   sync.Mutex
	isolations, attempts int
}

func (c *counting) OnIsolate(latency.IsolationEvent) { c.mu.Lock(); c.isolations++; c.mu.Unlock() }
func (c *counting) OnAttempt(producer.AttemptEvent)  { c.mu.Lock(); c.attempts++; c.mu.Unlock() }
func (c *counting) OnSend(producer.SendEvent)        {}

// value returns the value of the series of family name whose labels are
// exactly labels, and whether there is one.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestNew builds a strategy and a producer with New's observers and checks
// that each event reaches all three: the logger (at observe.Logger's
// levels), the metrics (labelled with the name; the gauge reads the watched
// strategy) and the caller's observers; picks are counted by stage; the
// cleanup unregisters every metric.
func TestNew(t *testing.T) {
	rec := &recorder{}
	reg := prometheus.NewRegistry()
	mine := &counting{}
	cfg := config.DefaultConfig()
	cfg.Strategy.Detector = false
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	obs, cleanup, err := setup.New(cfg, setup.Observability{Logger: slog.New(rec), Registerer: reg, Name: "orders", Strategy: mine, Producer: mine}, clk)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	if obs.Metrics == nil || obs.Stages == nil || obs.Logger == nil {
		t.Fatalf("New() = %+v, want metrics, a stage counter and a logger", obs)
	}
	strat, err := latency.NewStrategy(cfg.Strategy, append([]latency.Option{latency.WithClock(clk)}, obs.StrategyOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer strat.Close()
	obs.Watch(strat)
	var routes producer.StaticRoutes
	routes.SetQueues("T", map[string]int{"a": 1, "b": 1})
	tr := producer.TransportFunc(func(_ context.Context, a producer.Attempt) (producer.Result, error) {
		if a.Queue.BrokerName == "b" {
			return producer.Result{}, &producer.TransportError{Broker: "b", Class: latency.ClassTransportNotSent, Err: errors.New("connection refused")}
		}
		return producer.Result{MsgID: "id"}, nil
	})
	p, err := producer.New(tr, &routes, strat, cfg.Producer, append([]producer.Option{producer.WithClock(clk)}, obs.ProducerOptions()...)...)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := p.SendSync(context.Background(), &producer.Message{Topic: "T"}); err != nil {
			t.Fatalf("SendSync() error = %v", err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{"WARN mqfault: broker isolated b", "INFO mqfault: send attempt failed b"} {
		if !rec.has(want) {
			t.Errorf("the logger has no record %q; it has %q", want, rec.recs)
		}
	}
	for _, tt := range []struct {
		name   string
		labels map[string]string
	}{
		{"mqfault_isolations_total", map[string]string{"broker": "b", "reason": "failure", "producer": "orders"}},
		{"mqfault_attempts_total", map[string]string{"broker": "b", "outcome": "transport_not_sent", "producer": "orders"}},
		{"mqfault_isolated_brokers", map[string]string{"producer": "orders"}},
	} {
		if v, ok := value(t, reg, tt.name, tt.labels); !ok || v != 1 {
			t.Errorf("%s%v = %v (found %t), want 1", tt.name, tt.labels, v, ok)
		}
	}
	if mine.isolations != 1 || mine.attempts < 5 {
		t.Errorf("the caller's observers saw %d isolations and %d attempts, want 1 and at least 5", mine.isolations, mine.attempts)
	}
	var picks uint64
	for _, st := range latency.Stages() {
		picks += obs.Stages.Count(st)
	}
	if picks < 5 {
		t.Errorf("the stage counter counted %d picks, want at least 5 (one per attempt)", picks)
	}
	cleanup()
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Errorf("%d metric families left after the cleanup, want 0", len(mfs))
	}
}

// TestNewWithout: the zero Observability logs to slog.Default() and
// registers nothing; CountStages off gives no stage counter; Watch without
// metrics does nothing.
func TestNewWithout(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.CountStages = false
	obs, cleanup, err := setup.New(cfg, setup.Observability{}, nil)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	defer cleanup()
	if obs.Logger != slog.Default() || obs.Metrics != nil || obs.Stages != nil || obs.Strategy == nil || obs.Producer == nil {
		t.Errorf("New(zero) = %+v, want slog.Default(), no metrics, no stage counter, the logger's observers", obs)
	}
	obs.Watch(nil)
	if n := len(obs.StrategyOptions()); n != 2 {
		t.Errorf("StrategyOptions() has %d options, want 2 (logger, observer)", n)
	}
}

// TestNewDuplicate: a second producer on one Registerer with the same name,
// or both without one, is refused with ErrDuplicateMetrics wrapping the
// client's AlreadyRegisteredError, saying what to do; the first keeps its
// metrics.
func TestNewDuplicate(t *testing.T) {
	for _, name := range []string{"orders", ""} {
		reg := prometheus.NewRegistry()
		_, cleanup, err := setup.New(config.DefaultConfig(), setup.Observability{Registerer: reg, Name: name}, nil)
		if err != nil {
			t.Fatalf("New(%q) error = %v", name, err)
		}
		_, again, err := setup.New(config.DefaultConfig(), setup.Observability{Registerer: reg, Name: name}, nil)
		var are prometheus.AlreadyRegisteredError
		if !errors.Is(err, setup.ErrDuplicateMetrics) || !errors.As(err, &are) || again != nil {
			t.Errorf("New(%q) twice: error = %v, cleanup %t; want ErrDuplicateMetrics and AlreadyRegisteredError, no cleanup", name, err, again != nil)
		} else if !strings.Contains(err.Error(), "its own name") || name != "" && !strings.Contains(err.Error(), `producer "orders"`) {
			t.Errorf("New(%q) twice: error = %q, want it to name the producer and say to give each its own name", name, err)
		}
		if mfs, _ := reg.Gather(); len(mfs) == 0 {
			t.Errorf("New(%q): the first producer's metrics are gone after the second was refused", name)
		}
		cleanup()
	}
	// Different names share a Registerer.
	reg := prometheus.NewRegistry()
	for _, name := range []string{"orders", "audit"} {
		_, cleanup, err := setup.New(config.DefaultConfig(), setup.Observability{Registerer: reg, Name: name}, nil)
		if err != nil {
			t.Fatalf("New(%q) beside another name: error = %v", name, err)
		}
		defer cleanup()
	}
}
