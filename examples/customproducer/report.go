package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
)

// console serialises the lines the example prints, each stamped with the
// time since the run began.
type console struct {
	mu    sync.Mutex // guards w
	w     io.Writer
	start time.Time
}

// Write writes p under the console's lock, unstamped: the run's other
// output (its header, the slog handler, the summary) goes through it, so
// no write races with a line an observer prints.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w.Write(p)
}

func (c *console) printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, "t=%5.1fs  ", time.Since(c.start).Seconds())
	fmt.Fprintf(c.w, format, args...)
	fmt.Fprintln(c.w)
}

// BrokerStats is one broker's traffic over a run.
type BrokerStats struct {
	Attempts   int64 // attempts sent to it
	Answered   int64 // attempts it answered
	Failed     int64 // attempts that failed on it
	Isolations int64 // times it went from available to isolated (mqfault_isolations_total)
	Extensions int64 // times a running isolation was made longer (mqfault_isolation_extensions_total)
	Expiries   int64 // times its isolation ran out (mqfault_isolations_ended_total)
	Stored     int64 // messages the broker itself stored
	// Late counts the attempts sent to it in the second half of the run,
	// after the faults had time to show.
	Late int64
}

// brokerCounters are a broker's live counters (atomics: the observers are
// called from many goroutines).
type brokerCounters struct {
	attempts, answered, failed, late atomic.Int64
	isolations, extensions, expiries atomic.Int64
	unreachable, probeFailed         atomic.Bool // as the strategy last said
	lastAttempts                     int64       // for the per-second rate; owned by the reporter
}

// watcher observes the strategy (isolations, their ends, probes) and the
// producer (attempts): it prints each isolation and its end as they happen and
// counts traffic per broker.
type watcher struct {
	out      *console
	brokers  map[string]*brokerCounters // fixed at start: read without a lock
	names    []string
	lateFrom time.Time

	sends, failedSends atomic.Int64
}

func newWatcher(out *console, names []string, lateFrom time.Time) *watcher {
	w := &watcher{out: out, brokers: make(map[string]*brokerCounters), names: names, lateFrom: lateFrom}
	for _, n := range names {
		w.brokers[n] = &brokerCounters{}
	}
	return w
}

// OnIsolate counts an isolation begun or extended (the fault table says
// which, so the counts agree with /metrics), and prints it when it begins.
func (w *watcher) OnIsolate(ev latency.IsolationEvent) {
	b := w.brokers[ev.Broker]
	if b == nil {
		return
	}
	b.unreachable.Store(!ev.Reachable)
	if ev.Extended {
		b.extensions.Add(1)
		return
	}
	b.isolations.Add(1)
	why := fmt.Sprintf("latency %v", ev.Latency.Round(time.Millisecond))
	if ev.Reason == latency.ReasonFailure {
		why = "send failed"
	}
	reach := ""
	if !ev.Reachable {
		reach = ", unreachable"
	}
	w.out.printf("%-5s isolated for %v (%s%s)", ev.Broker, ev.Duration, why, reach)
}

// OnRecover prints the end of a broker's isolation: its time ran out, which
// says nothing of whether the broker works again.
func (w *watcher) OnRecover(ev latency.RecoveryEvent) {
	b := w.brokers[ev.Broker]
	if b == nil {
		return
	}
	b.expiries.Add(1)
	switch {
	case b.unreachable.Load():
		w.out.printf("%-5s isolation expired, not recovered: still unreachable (its probes fail), but picked again until a send to it fails", ev.Broker)
	case b.probeFailed.Load():
		w.out.printf("%-5s isolation expired, not recovered: its last probe failed; picked again", ev.Broker)
	default:
		w.out.printf("%-5s isolation expired: picked again (isolated again if it is still slow or failing)", ev.Broker)
	}
}

// OnProbe prints what the TCP detector found when it changes something or
// fails.
func (w *watcher) OnProbe(ev latency.ProbeEvent) {
	if b := w.brokers[ev.Broker]; b != nil && !errors.Is(ev.Err, probe.ErrInconclusive) {
		b.probeFailed.Store(ev.Err != nil)
		if ev.BecameReachable {
			b.unreachable.Store(false)
		}
		if ev.BecameUnreachable {
			b.unreachable.Store(true)
		}
	}
	switch {
	case ev.Err == nil && ev.BecameReachable:
		w.out.printf("%-5s probe: reachable again (still isolated until its time is up)", ev.Broker)
	case ev.Err != nil && !errors.Is(ev.Err, probe.ErrInconclusive):
		w.out.printf("%-5s probe failed: %v", ev.Broker, ev.Err)
	}
}

// OnAttempt counts an attempt on its broker.
func (w *watcher) OnAttempt(ev producer.AttemptEvent) {
	b := w.brokers[ev.Queue.BrokerName]
	if b == nil {
		return
	}
	b.attempts.Add(1)
	if ev.Outcome.Class == latency.ClassAnswered {
		b.answered.Add(1)
	} else {
		b.failed.Add(1)
	}
	if time.Now().After(w.lateFrom) {
		b.late.Add(1)
	}
}

// OnSend counts a send and whether it failed after every retry.
func (w *watcher) OnSend(ev producer.SendEvent) {
	w.sends.Add(1)
	if ev.Err != nil {
		w.failedSends.Add(1)
	}
}

// tick prints one line of per-broker traffic over the last second, marking
// the isolated brokers. Only the reporter goroutine calls it.
func (w *watcher) tick(isolated func(string) bool, elapsed time.Duration) {
	var parts []string
	for _, n := range w.names {
		b := w.brokers[n]
		now := b.attempts.Load()
		rate := float64(now-b.lastAttempts) / elapsed.Seconds()
		b.lastAttempts = now
		mark := ""
		if isolated(n) {
			mark = " (isolated)"
		}
		parts = append(parts, fmt.Sprintf("%s %4.0f/s%s", n, rate, mark))
	}
	w.out.printf("traffic  %s", strings.Join(parts, "   "))
}

// stats returns every broker's counters.
func (w *watcher) stats(stored map[string]int64) map[string]BrokerStats {
	out := make(map[string]BrokerStats, len(w.brokers))
	for n, b := range w.brokers {
		out[n] = BrokerStats{
			Attempts: b.attempts.Load(), Answered: b.answered.Load(), Failed: b.failed.Load(),
			Isolations: b.isolations.Load(), Extensions: b.extensions.Load(), Expiries: b.expiries.Load(), Stored: stored[n], Late: b.late.Load(),
		}
	}
	return out
}

// printSummary writes the per-broker table that ends a run.
func printSummary(w io.Writer, stats map[string]BrokerStats, sends, failedSends int64) {
	names := make([]string, 0, len(stats))
	var answered int64
	for n, s := range stats {
		names = append(names, n)
		answered += s.Answered
	}
	sort.Strings(names)
	fmt.Fprintf(w, "\nsummary of producer %s: %d sends, %d failed after every retry\n", topic, sends, failedSends)
	fmt.Fprintf(w, "%-6s %9s %9s %7s %7s %11s %9s %8s %12s\n", "broker", "attempts", "answered", "failed", "share", "isolations", "extended", "expired", "second half")
	for _, n := range names {
		s := stats[n]
		share := 0.0
		if answered > 0 {
			share = 100 * float64(s.Answered) / float64(answered)
		}
		fmt.Fprintf(w, "%-6s %9d %9d %7d %6.1f%% %11d %9d %8d %12d\n", n, s.Attempts, s.Answered, s.Failed, share, s.Isolations, s.Extensions, s.Expiries, s.Late)
	}
	fmt.Fprintln(w, "isolations: times the broker went from available to isolated (mqfault_isolations_total);")
	fmt.Fprintln(w, "extended: times a running isolation was made longer (mqfault_isolation_extensions_total);")
	fmt.Fprintln(w, "expired: isolations whose time ran out (mqfault_isolations_ended_total), recovered or not.")
}
