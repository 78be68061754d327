package host

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

// anyLevel is a level above every level a handler filters on: a handler
// that is not enabled for it takes nothing at all.
const anyLevel = slog.Level(1 << 30)

// outputLimiter bounds the plugin's output that reaches the log: a token
// bucket of rate lines (the burst), refilled at rate lines a second on the
// clock, shared by everything the plugin writes (its log lines, stderr and
// stdout) and by all its processes. A line that finds the bucket empty is
// dropped unread and counted; a WARN line says how many, a second after the
// first drop while drops go on, and once more at close.
//
// It is safe for concurrent use; line never blocks on the plugin.
type outputLimiter struct {
	clock clock.Clock
	rate  float64
	log   *slog.Logger // where the drops are reported

	mu      sync.Mutex // guards the fields below
	tokens  float64
	last    time.Time   // when tokens was last refilled
	dropped int64       // since the last report
	total   int64       // in all
	report  clock.Timer // the next report; nil when none is due
	closed  bool
}

func newOutputLimiter(clk clock.Clock, rate int, log *slog.Logger) *outputLimiter {
	return &outputLimiter{clock: clk, rate: float64(rate), log: log, tokens: float64(rate), last: clk.Now()}
}

// line logs one line the plugin wrote to log (see logPluginLine), if the
// rate allows; otherwise it counts it as dropped. A line log would not take
// (its level is filtered out) costs no token.
func (o *outputLimiter) line(log *slog.Logger, line []byte, plain slog.Level) {
	line = trimLine(line)
	if len(line) == 0 || !log.Enabled(context.Background(), anyLevel) {
		return
	}
	if !o.take() {
		return
	}
	if !logPluginLine(log, line, plain) {
		o.refund()
	}
}

// take takes a token, or counts a dropped line and arms the report.
func (o *outputLimiter) take() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if now := o.clock.Now(); now.After(o.last) {
		o.tokens = min(o.rate, o.tokens+now.Sub(o.last).Seconds()*o.rate)
		o.last = now
	}
	if o.tokens >= 1 {
		o.tokens--
		return true
	}
	o.dropped++
	o.total++
	if o.report == nil && !o.closed {
		o.report = o.clock.AfterFunc(time.Second, o.flush)
	}
	return false
}

func (o *outputLimiter) refund() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tokens = min(o.rate, o.tokens+1)
}

// flush reports the lines dropped since the last report, if any.
func (o *outputLimiter) flush() {
	o.mu.Lock()
	n, total := o.dropped, o.total
	o.dropped, o.report = 0, nil
	o.mu.Unlock()
	if n > 0 {
		o.log.Warn("plugin host: plugin output dropped: more lines than OutputRate a second",
			"dropped", n, "dropped_total", total, "output_rate", int(o.rate))
	}
}

// close stops the report timer and reports what is left. Lines after close
// are still limited, but no longer reported.
func (o *outputLimiter) close() {
	o.mu.Lock()
	o.closed = true
	if o.report != nil {
		o.report.Stop()
	}
	o.mu.Unlock()
	o.flush()
}
