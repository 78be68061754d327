package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	level slog.Level
	mu    sync.Mutex
	recs  []slog.Record
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) take() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.recs
	r.recs = nil
	return out
}

func attr(rec slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

var t0 = time.Unix(1_700_000_000, 0)

func newTestLogger(level slog.Level, every time.Duration) (*Logger, *recorder, *clock.Manual) {
	rec := &recorder{level: level}
	clk := clock.NewManual(t0)
	return NewLogger(slog.New(rec), WithInterval(every), WithLogClock(clk)), rec, clk
}

func TestLoggerRateLimit(t *testing.T) {
	l, rec, clk := newTestLogger(slog.LevelDebug, 10*time.Second)
	isolate := func(b string) { l.OnIsolate(latency.IsolationEvent{Broker: b, Reason: latency.ReasonFailure}) }

	// 1. Five isolations of a within the interval: one record.
	for range 5 {
		isolate("a")
	}
	// 2. b and another kind about a are limited separately.
	isolate("b")
	l.OnRecover(latency.RecoveryEvent{Broker: "a"})
	if got := len(rec.take()); got != 3 {
		t.Fatalf("records after 5 isolations of a, 1 of b, 1 recovery of a = %d, want 3", got)
	}
	// 3. Just before the interval ends: still suppressed.
	clk.Advance(10*time.Second - time.Nanosecond)
	isolate("a")
	if got := len(rec.take()); got != 0 {
		t.Fatalf("records before the interval ended = %d, want 0", got)
	}
	// 4. Once it has: one record, counting the 5 suppressed.
	clk.Advance(time.Nanosecond)
	isolate("a")
	recs := rec.take()
	if len(recs) != 1 {
		t.Fatalf("records after the interval = %d, want 1", len(recs))
	}
	if v, ok := attr(recs[0], "suppressed"); !ok || v.Int64() != 5 {
		t.Errorf("suppressed = %v (present %v), want 5", v, ok)
	}
	// 5. The next one after another interval has nothing suppressed.
	clk.Advance(10 * time.Second)
	isolate("a")
	recs = rec.take()
	if _, ok := attr(recs[0], "suppressed"); len(recs) != 1 || ok {
		t.Errorf("records = %d, suppressed present %v; want 1 record without suppressed", len(recs), ok)
	}
}

func TestLoggerNoInterval(t *testing.T) {
	l, rec, _ := newTestLogger(slog.LevelDebug, 0)
	for range 4 {
		l.OnIsolate(latency.IsolationEvent{Broker: "a"})
	}
	if got := len(rec.take()); got != 4 {
		t.Errorf("records with interval 0 = %d, want 4", got)
	}
}

// A disabled level writes nothing and does not use up the interval.
func TestLoggerDisabledLevel(t *testing.T) {
	l, rec, _ := newTestLogger(slog.LevelError, time.Minute)
	l.OnIsolate(latency.IsolationEvent{Broker: "a"})
	if got := len(rec.take()); got != 0 {
		t.Fatalf("records at level Error = %d, want 0", got)
	}
	rec.level = slog.LevelWarn
	l.OnIsolate(latency.IsolationEvent{Broker: "a"})
	if got := len(rec.take()); got != 1 {
		t.Errorf("records once Warn is enabled = %d, want 1", got)
	}
}

func TestLoggerEvents(t *testing.T) {
	q := route.MessageQueue{Topic: "T", BrokerName: "a", QueueID: 2}
	unreachable := errors.New("connection refused")
	tests := []struct {
		name    string
		event   func(l *Logger)
		level   slog.Level // of the one record, when want is set
		want    string     // the message; "" means no record
		attrKey string
		attrVal string
	}{
		{"isolation", func(l *Logger) {
			l.OnIsolate(latency.IsolationEvent{Broker: "a", Reason: latency.ReasonLatency, Duration: 2 * time.Second})
		}, slog.LevelWarn, "mqfault: broker isolated", "reason", "latency"},
		{"recovery", func(l *Logger) { l.OnRecover(latency.RecoveryEvent{Broker: "a"}) },
			slog.LevelInfo, "mqfault: broker isolation ended", "broker", "a"},
		{"probe made reachable", func(l *Logger) { l.OnProbe(latency.ProbeEvent{Broker: "a", BecameReachable: true}) },
			slog.LevelInfo, "mqfault: broker reachable again", "broker", "a"},
		{"probe ok, nothing new", func(l *Logger) { l.OnProbe(latency.ProbeEvent{Broker: "a"}) }, 0, "", "", ""},
		{"probe failed", func(l *Logger) { l.OnProbe(latency.ProbeEvent{Broker: "a", Err: unreachable}) },
			slog.LevelWarn, "mqfault: probe failed", "error", "connection refused"},
		{"probe inconclusive", func(l *Logger) {
			l.OnProbe(latency.ProbeEvent{Broker: "a", Err: fmt.Errorf("plugin gone: %w", probe.ErrInconclusive)})
		}, slog.LevelDebug, "mqfault: probe inconclusive", "broker", "a"},
		{"attempt answered", func(l *Logger) {
			l.OnAttempt(producer.AttemptEvent{Queue: q, Outcome: producer.Outcome{Class: latency.ClassAnswered}})
		}, 0, "", "", ""},
		{"attempt failed", func(l *Logger) {
			l.OnAttempt(producer.AttemptEvent{Topic: "T", Queue: q, Retry: true,
				Outcome: producer.Outcome{Class: latency.ClassTransportFailed, Err: unreachable}})
		}, slog.LevelInfo, "mqfault: send attempt failed", "outcome", "transport_failed"},
		{"attempt failed, broker error without a broker", func(l *Logger) {
			l.OnAttempt(producer.AttemptEvent{Topic: "T", Queue: q,
				Outcome: producer.Classify(producer.Result{}, &producer.BrokerError{Code: 2, Remark: "[OVERLOAD]"})})
		}, slog.LevelInfo, "mqfault: send attempt failed", "broker", q.BrokerName},
		{"send ok", func(l *Logger) { l.OnSend(producer.SendEvent{Topic: "T", Stop: producer.StopAnswered}) }, 0, "", "", ""},
		{"send failed", func(l *Logger) {
			l.OnSend(producer.SendEvent{Topic: "T", Stop: producer.StopFailed, Err: unreachable})
		}, slog.LevelWarn, "mqfault: send failed", "stop", "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, rec, _ := newTestLogger(slog.LevelDebug, time.Second)
			tt.event(l)
			recs := rec.take()
			if tt.want == "" {
				if len(recs) != 0 {
					t.Errorf("records = %d (%q), want none", len(recs), recs[0].Message)
				}
				return
			}
			if len(recs) != 1 || recs[0].Message != tt.want || recs[0].Level != tt.level {
				t.Fatalf("records = %v, want one %v %q", recs, tt.level, tt.want)
			}
			if v, ok := attr(recs[0], tt.attrKey); !ok || v.String() != tt.attrVal {
				t.Errorf("%s = %v (present %v), want %q", tt.attrKey, v, ok, tt.attrVal)
			}
		})
	}
}

// The limiter's memory stays bounded however many subjects it sees.
func TestLoggerForgets(t *testing.T) {
	l, rec, clk := newTestLogger(slog.LevelDebug, time.Hour)
	for i := range 3 * maxLimiterKeys {
		l.OnRecover(latency.RecoveryEvent{Broker: fmt.Sprintf("b%05d", i)})
		if i%100 == 0 {
			clk.Advance(time.Millisecond)
		}
	}
	if got := len(rec.take()); got != 3*maxLimiterKeys {
		t.Errorf("records for distinct brokers = %d, want %d", got, 3*maxLimiterKeys)
	}
	l.limiter.mu.Lock()
	n := len(l.limiter.last)
	l.limiter.mu.Unlock()
	if n > maxLimiterKeys {
		t.Errorf("limiter keeps %d subjects, want at most %d", n, maxLimiterKeys)
	}
}

func TestNewLoggerDefaults(t *testing.T) {
	l := NewLogger(nil)
	if l.log != slog.Default() || l.limiter.every != 10*time.Second {
		t.Errorf("NewLogger(nil) = logger %p interval %v, want slog.Default() and 10s", l.log, l.limiter.every)
	}
}
