package observe

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
)

// Logger writes the strategy's and the producer's events to a slog.Logger:
//
//   - a broker isolated (Warn), its isolation ended (Info), found reachable again by a
//     probe (Info), a probe that failed (Warn) or told nothing (Debug);
//   - an attempt that failed (Info: the send may still succeed elsewhere) and
//     a send that failed (Warn); successes are not logged.
//
// Each kind of record about one broker (about one topic, for failed sends) is
// written at most once per interval; the records suppressed in between are
// counted and the next record says how many ("suppressed"). So a broker that
// stays down writes one isolation record per interval however many sends hit
// it.
//
// Logger implements latency.Observer and producer.Observer. It is safe for
// concurrent use; a call takes a mutex briefly and never blocks otherwise
// (beyond what the slog handler does).
type Logger struct {
	log     *slog.Logger
	limiter limiter
}

var (
	_ latency.Observer  = (*Logger)(nil)
	_ producer.Observer = (*Logger)(nil)
)

// LoggerOption configures a Logger.
type LoggerOption func(*Logger)

// WithInterval sets the least time between two records of one kind about one
// broker or topic (default 10 s); 0 or less writes every record.
func WithInterval(d time.Duration) LoggerOption {
	return func(l *Logger) { l.limiter.every = d }
}

// WithLogClock sets the clock the interval is measured on (default
// clock.Real): give the strategy's clock.
func WithLogClock(c clock.Clock) LoggerOption {
	return func(l *Logger) {
		if c != nil {
			l.limiter.clock = c
		}
	}
}

// NewLogger returns a Logger writing to log (nil: slog.Default()).
func NewLogger(log *slog.Logger, opts ...LoggerOption) *Logger {
	if log == nil {
		log = slog.Default()
	}
	l := &Logger{log: log, limiter: limiter{every: 10 * time.Second, clock: clock.Real{}}}
	for _, opt := range opts {
		opt(l)
	}
	return l
}

// The kinds of records the limiter keeps apart.
const (
	kindIsolate uint8 = iota
	kindRecover
	kindProbeFailed
	kindReachable
	kindAttempt
	kindSend
)

// admit reports whether a record of kind about subject may be written at
// level now (the level is enabled and no such record was written less than an
// interval ago), and how many were suppressed since the last one. Callers
// build the record's attributes only once admitted.
func (l *Logger) admit(level slog.Level, kind uint8, subject string) (bool, int) {
	if !l.log.Enabled(context.Background(), level) {
		return false, 0
	}
	return l.limiter.allow(kind, subject)
}

func (l *Logger) emit(level slog.Level, msg string, suppressed int, attrs ...slog.Attr) {
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	l.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// OnIsolate logs that a broker was isolated (Warn).
func (l *Logger) OnIsolate(ev latency.IsolationEvent) {
	ok, n := l.admit(slog.LevelWarn, kindIsolate, ev.Broker)
	if !ok {
		return
	}
	l.emit(slog.LevelWarn, "mqfault: broker isolated", n,
		slog.String("broker", ev.Broker),
		slog.String("reason", string(ev.Reason)),
		slog.Duration("latency", ev.Latency),
		slog.Duration("isolation", ev.Duration),
		slog.Time("until", ev.Until),
		slog.Bool("reachable", ev.Reachable))
}

// OnRecover logs that a broker's isolation ended (Info).
func (l *Logger) OnRecover(ev latency.RecoveryEvent) {
	if ok, n := l.admit(slog.LevelInfo, kindRecover, ev.Broker); ok {
		l.emit(slog.LevelInfo, "mqfault: broker isolation ended", n, slog.String("broker", ev.Broker))
	}
}

// OnProbe logs a probe that made a broker reachable again (Info), failed
// (Warn) or told nothing (Debug, not rate-limited). A probe that found a
// reachable broker reachable is not logged.
func (l *Logger) OnProbe(ev latency.ProbeEvent) {
	switch {
	case ev.Err == nil && ev.BecameReachable:
		if ok, n := l.admit(slog.LevelInfo, kindReachable, ev.Broker); ok {
			l.emit(slog.LevelInfo, "mqfault: broker reachable again", n,
				slog.String("broker", ev.Broker), slog.String("addr", ev.Addr), slog.Duration("elapsed", ev.Elapsed))
		}
	case ev.Err == nil:
	case errors.Is(ev.Err, probe.ErrInconclusive):
		if l.log.Enabled(context.Background(), slog.LevelDebug) {
			l.emit(slog.LevelDebug, "mqfault: probe inconclusive", 0,
				slog.String("broker", ev.Broker), slog.String("addr", ev.Addr), slog.Any("error", ev.Err))
		}
	default:
		if ok, n := l.admit(slog.LevelWarn, kindProbeFailed, ev.Broker); ok {
			l.emit(slog.LevelWarn, "mqfault: probe failed", n,
				slog.String("broker", ev.Broker), slog.String("addr", ev.Addr),
				slog.Duration("elapsed", ev.Elapsed), slog.Any("error", ev.Err))
		}
	}
}

// OnAttempt logs an attempt that did not get an answer (Info), at most once
// per interval per broker. Answered attempts are not logged.
func (l *Logger) OnAttempt(ev producer.AttemptEvent) {
	if ev.Outcome.Class == latency.ClassAnswered {
		return
	}
	ok, n := l.admit(slog.LevelInfo, kindAttempt, ev.Queue.BrokerName)
	if !ok {
		return
	}
	l.emit(slog.LevelInfo, "mqfault: send attempt failed", n,
		slog.String("broker", ev.Queue.BrokerName),
		slog.String("topic", ev.Topic),
		slog.Int("queue", ev.Queue.QueueID),
		slog.Int("attempt", ev.Attempt),
		slog.String("outcome", ev.Outcome.Class.String()),
		slog.Duration("elapsed", ev.Outcome.Elapsed),
		slog.Bool("retry", ev.Retry),
		slog.Any("error", ev.Outcome.Err))
}

// OnSend logs a send that ended in an error (Warn), at most once per interval
// per topic.
func (l *Logger) OnSend(ev producer.SendEvent) {
	if ev.Err == nil {
		return
	}
	ok, n := l.admit(slog.LevelWarn, kindSend, ev.Topic)
	if !ok {
		return
	}
	l.emit(slog.LevelWarn, "mqfault: send failed", n,
		slog.String("topic", ev.Topic),
		slog.String("kind", ev.Kind.String()),
		slog.Int("attempts", ev.Attempts),
		slog.Duration("elapsed", ev.Elapsed),
		slog.String("stop", ev.Stop.String()),
		slog.Any("error", ev.Err))
}

// maxLimiterKeys bounds the limiter's memory: past it, the oldest half of the
// history is forgotten (those subjects may then log once more at once).
const maxLimiterKeys = 4096

// limiter allows one record per (kind, subject) per interval and counts the
// ones it refuses.
type limiter struct {
	every time.Duration
	clock clock.Clock

	mu   sync.Mutex // guards last
	last map[limitKey]*limitSlot
}

type limitKey struct {
	kind    uint8
	subject string
}

type limitSlot struct {
	at         time.Time
	suppressed int
}

func (l *limiter) allow(kind uint8, subject string) (ok bool, suppressed int) {
	if l.every <= 0 {
		return true, 0
	}
	now := l.clock.Now()
	k := limitKey{kind, subject}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = make(map[limitKey]*limitSlot)
	}
	s, seen := l.last[k]
	if seen && now.Sub(s.at) < l.every {
		s.suppressed++
		return false, 0
	}
	if !seen {
		if len(l.last) >= maxLimiterKeys {
			l.forgetOldest()
		}
		l.last[k] = &limitSlot{at: now}
		return true, 0
	}
	suppressed = s.suppressed
	s.at, s.suppressed = now, 0
	return true, suppressed
}

// forgetOldest drops the half of the history written longest ago. Caller must
// hold mu.
func (l *limiter) forgetOldest() {
	times := make([]time.Time, 0, len(l.last))
	for _, s := range l.last {
		times = append(times, s.at)
	}
	// The median time: a partial sort would do, but this runs once per
	// maxLimiterKeys/2 new subjects.
	slices.SortFunc(times, time.Time.Compare)
	cut := times[len(times)/2]
	for k, s := range l.last {
		if s.at.Before(cut) || s.at.Equal(cut) {
			delete(l.last, k)
		}
	}
}
