package latency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
)

// detector runs the reference's detector rounds (detectByOneRound) over a
// fault table: each item whose check stamp has passed gets a new stamp (now +
// interval); a broker the resolver no longer knows is dropped; otherwise, if
// there is a ServiceDetector, the broker's address is probed with a timeout and
// a broker that answers becomes reachable. A failed or inconclusive probe
// changes nothing (with Config.ProbeFailures on, a failed one marks the
// broker unreachable), and isolation times are never touched. A detector
// that does not answer by the probe's deadline (plus ProbeGrace) gives an
// inconclusive probe: it is the detector that failed, not the broker (see
// ServiceDetector).
//
// The reference probes one broker after another; a detector probes up to
// parallel at once (1 by default), taking each item in broker-name order as a
// probe slot frees up, so with parallel 1 it is the reference's round.
//
// A Strategy builds its own detector (WithResolver) and runs its rounds
// (Start, DetectRound); the zero detector has no table, and its Round
// reports nothing. Round may be called from several goroutines: a broker is
// probed by one of them at a time, and each returns once every broker it
// came to has its verdict. Two detectors over one table do not know of each
// other's probes.
type detector struct {
	table    *FaultTable
	resolver probe.Resolver
	service  probe.ServiceDetector
	clock    clock.Clock
	interval time.Duration
	timeout  time.Duration
	parallel int
	failures bool // Config.ProbeFailures: a failed probe marks the broker unreachable, unless a send of it was answered within interval
	obs      Observer
	log      *slog.Logger
	// refusedGap, when positive, is how soon a broker whose probe failed
	// before its deadline (a refused connection) and that is unreachable
	// is due again, in place of interval (detectorConfig.RefusedGap).
	refusedGap time.Duration
	// recoveredAfter is Config.Recovery.After: probes answering that long
	// cut a lengthened isolation, with the rule's guards (recovery.go).
	recoveredAfter time.Duration

	calls sync.WaitGroup // every Detect call, including ones a round stopped waiting for

	mu       sync.Mutex              // guards inflight and the claiming of check stamps
	inflight map[*slot]chan struct{} // the items a round holds, each closed when its verdict is applied
	awaiting func()                  // test hook: called when a round starts waiting for another round's probes
}

// detectorConfig is what newDetector needs. Table, Resolver, Interval and
// Timeout are required; the rest have defaults.
type detectorConfig struct {
	Table    *FaultTable           // the items to check (mode v5: mode v4 has no detector)
	Resolver probe.Resolver        // broker name to address; a broker it does not know is dropped
	Service  probe.ServiceDetector // the probe; nil means no probes (stamps and drops only)
	Clock    clock.Clock           // nil means clock.Real
	Interval time.Duration         // how long a check stamp holds (Config.DetectInterval)
	Timeout  time.Duration         // each probe's deadline (Config.DetectTimeout)
	Parallel int                   // probes at once; 0 means 1 (Config.DetectParallel)
	// ProbeFailures makes a failed probe mark the broker unreachable
	// (Config.ProbeFailures).
	ProbeFailures bool
	Observer      Observer     // hears of every probe; nil means none
	Logger        *slog.Logger // nil means slog.Default()
	// RecoveredAfter, when positive, makes probes that have answered that
	// long since a lengthened failure isolation began cut it, once per
	// recovery (Config.Recovery.After). The rule's guard against busy or
	// slow brokers needs a Strategy's outcome hook: a detector without one
	// applies the others only.
	RecoveredAfter time.Duration
	// RefusedGap, when positive, makes a broker whose probe failed before
	// its deadline (refused, not timed out) and that is unreachable due
	// again that long after the probe instead of Interval: a flapping
	// broker's up phase is found within it, for a refused connect each.
	RefusedGap time.Duration
}

// newDetector validates cfg and returns a detector over cfg.Table, or every
// problem at once as *ConfigError values joined with errors.Join (each
// matching ErrInvalidConfig).
func newDetector(cfg detectorConfig) (*detector, error) {
	var l configerr.List
	if cfg.Table == nil {
		l.Add(invalid("Table", nil, "is required"))
	} else if !modeSpecs[cfg.Table.mode].detector {
		l.Add(invalid("Table", string(cfg.Table.mode), "mode "+string(cfg.Table.mode)+" has no detector"))
	}
	if cfg.Resolver == nil {
		l.Add(invalid("Resolver", nil, "is required"))
	}
	if cfg.Interval <= 0 {
		l.Add(invalid("Interval", cfg.Interval, "must be positive"))
	}
	if cfg.Timeout <= 0 {
		l.Add(invalid("Timeout", cfg.Timeout, "must be positive"))
	}
	if cfg.Parallel < 0 {
		l.Add(invalid("Parallel", cfg.Parallel, "must not be negative"))
	}
	if cfg.RecoveredAfter < 0 {
		l.Add(invalid("RecoveredAfter", cfg.RecoveredAfter, "must not be negative"))
	}
	if cfg.RefusedGap < 0 {
		l.Add(invalid("RefusedGap", cfg.RefusedGap, "must not be negative"))
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &detector{
		table:    cfg.Table,
		resolver: cfg.Resolver,
		service:  cfg.Service,
		clock:    cfg.Clock,
		interval: cfg.Interval,
		timeout:  cfg.Timeout,
		parallel: max(cfg.Parallel, 1),
		failures: cfg.ProbeFailures,
		obs:      cfg.Observer,
		log:      cfg.Logger,

		recoveredAfter: cfg.RecoveredAfter,
		refusedGap:     cfg.RefusedGap,
	}, nil
}

// RoundReport counts what one round did.
type RoundReport struct {
	Due          int // items whose check stamp had passed
	Removed      int // items dropped because the resolver no longer knew them
	Probed       int // probes made
	Reachable    int // probes that answered
	Unreachable  int // probes that failed (including timeouts)
	Inconclusive int // probes that told nothing (including cancelled ones)
	TimedOut     int // probes whose detector said the endpoint did not answer in time (also in Unreachable)
	NoAnswer     int // probes whose detector itself did not answer in time (probe.ErrNoAnswer; also in Inconclusive)
	Awaited      int // not due because another round was probing them: waited for until their verdict
}

type roundCounters struct {
	due, removed, probed, reachable, unreachable, inconclusive, timedOut, noAnswer atomic.Int64
}

// Round runs one round and returns when every item it found due has been
// probed and its verdict applied (answered, failed, or run into its
// timeout), and so has every item another round was probing when this one
// came to it (such an item is not due: the other round claimed its check
// stamp; the wait is counted in Awaited, the probe in the other round's
// report). An item waited for whose check stamp has passed by then (its
// probe began before the clock moved past it) is probed again by this round.
// So once Round returns, no broker it looked at has a verdict still to come,
// and every broker due when it began has a verdict from a probe begun since.
// A broker is probed by one round at a time. Cancelling ctx stops it from
// starting probes, makes the running ones inconclusive and stops the wait
// for other rounds' probes. Safe to call from several goroutines; it blocks
// for as long as the probes it waits for.
func (d *detector) Round(ctx context.Context) RoundReport {
	if d.table == nil {
		return RoundReport{}
	}
	r := &round{d: d, ctx: ctx, sem: make(chan struct{}, max(d.parallel, 1))}
	others := r.pass(d.table.presentSlots())
	if len(others) > 0 && d.awaiting != nil {
		d.awaiting()
	}
	// The probes waited for may have begun before the clock passed their
	// stamps: what is due again is this round's to probe, once (and what
	// yet another round holds by then is waited for, not probed again).
	r.await(r.pass(r.await(others)))
	c := &r.c
	return RoundReport{
		Due: int(c.due.Load()), Removed: int(c.removed.Load()), Probed: int(c.probed.Load()),
		Reachable: int(c.reachable.Load()), Unreachable: int(c.unreachable.Load()),
		Inconclusive: int(c.inconclusive.Load()), TimedOut: int(c.timedOut.Load()),
		NoAnswer: int(c.noAnswer.Load()), Awaited: r.awaited,
	}
}

// round is one Round's state.
type round struct {
	d       *detector
	ctx     context.Context
	sem     chan struct{} // probe slots
	c       roundCounters
	awaited int
}

// held is an item another round holds, and what its hold closes.
type held struct {
	sl   *slot
	done chan struct{}
}

// pass claims each of slots that is due and probes it, and returns when
// every probe it started has concluded. It returns the items other rounds
// hold, waited for until their verdicts (await) when this pass's own are in.
func (r *round) pass(slots []*slot) []held {
	d := r.d
	var others []held
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, sl := range slots {
		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			return others
		}
		if r.ctx.Err() != nil {
			<-r.sem
			return others
		}
		done, other := d.claim(sl, d.table.now())
		if other != nil {
			others = append(others, held{sl, other})
		}
		if done == nil {
			<-r.sem
			continue
		}
		r.c.due.Add(1)
		addr, ok := d.resolver.Resolve(sl.name)
		if !ok {
			d.table.removeSlot(sl)
			r.c.removed.Add(1)
			d.unclaim(sl, done)
			<-r.sem
			continue
		}
		if d.service == nil {
			d.unclaim(sl, done)
			<-r.sem
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-r.sem }()
			defer d.unclaim(sl, done)
			d.probe(r.ctx, sl, addr, &r.c)
		}()
	}
	return others
}

// await waits for each of others' verdicts, until ctx is done, and returns
// the items whose verdicts came.
func (r *round) await(others []held) []*slot {
	var got []*slot
	for _, h := range others {
		select {
		case <-h.done:
			r.awaited++
			got = append(got, h.sl)
		case <-r.ctx.Done():
			return got
		}
	}
	return got
}

// claim takes sl for this round when it is due at now: it stamps sl's next
// check and returns done, which unclaim closes once sl's verdict is applied.
// When another round holds sl, it returns that round's done as other. Both
// are nil when sl is not due (or has left the table).
func (d *detector) claim(sl *slot, now int64) (done, other chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ch := d.inflight[sl]; ch != nil {
		return nil, ch
	}
	// A stamp of 0 is "never checked" (not the epoch): due whatever the clock.
	if stamp := sl.checkStamp.Load(); !sl.present.Load() || (stamp != 0 && now < stamp) {
		return nil, nil
	}
	sl.checkStamp.Store(addNanos(now, d.interval))
	if d.inflight == nil {
		d.inflight = make(map[*slot]chan struct{})
	}
	done = make(chan struct{})
	d.inflight[sl] = done
	return done, nil
}

// unclaim ends this round's hold on sl, taken by claim, waking the rounds
// waiting for it.
func (d *detector) unclaim(sl *slot, done chan struct{}) {
	d.mu.Lock()
	delete(d.inflight, sl)
	d.mu.Unlock()
	close(done)
}

// probe asks the service detector about addr and applies the answer to sl.
// The probe's deadline is the detector's timeout (see ServiceDetector): an
// answer is taken until ProbeGrace past it; a Detect call still running
// then is an inconclusive probe (ErrNoAnswer), and is waited for by wait
// (Close), not by the round.
func (d *detector) probe(ctx context.Context, sl *slot, addr string, c *roundCounters) {
	c.probed.Add(1)
	start := d.clock.Elapsed()
	d.calls.Add(1)
	err := probe.Within(ctx, d.clock, probe.ServiceDetectorFunc(func(pctx context.Context, addr string) error {
		defer d.calls.Done()
		return d.detect(pctx, addr)
	}), addr, d.timeout)
	timedOut := errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, probe.ErrInconclusive)
	if errors.Is(err, probe.ErrNoAnswer) {
		c.noAnswer.Add(1)
	}
	ev := ProbeEvent{Broker: sl.name, Addr: addr, Err: err, Elapsed: d.clock.Elapsed() - start}
	switch {
	case err == nil:
		c.reachable.Add(1)
		if sl.present.Load() && sl.setReachable(true) {
			ev.BecameReachable = true
		}
		if d.recoveredAfter > 0 {
			sl.probeAnswered(d.table.now(), d.recoveredAfter)
		}
	case errors.Is(err, probe.ErrInconclusive):
		c.inconclusive.Add(1)
	default:
		c.unreachable.Add(1)
		if timedOut {
			c.timedOut.Add(1)
		}
		if d.failures && sl.present.Load() && !sl.cap.answeredSince(d.table.now()-int64(d.interval)) && sl.setReachable(false) {
			ev.BecameUnreachable = true
		}
		if !timedOut && d.refusedGap > 0 && !sl.reachable.Load() {
			// Refused, not timed out: probing again soon costs a connect.
			if next := addNanos(d.table.now(), d.refusedGap); next < sl.checkStamp.Load() {
				sl.checkStamp.Store(next)
			}
		}
		if d.recoveredAfter > 0 {
			sl.probeFailed(d.table.now())
		}
	}
	if d.obs != nil {
		d.obs.OnProbe(ev)
	}
}

// detect calls the service detector, turning a panic into an inconclusive
// answer so a faulty detector cannot take the producer down.
func (d *detector) detect(ctx context.Context, addr string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("latency: service detector panicked", "addr", addr, "panic", r)
			err = fmt.Errorf("%w: detector panicked: %v", probe.ErrInconclusive, r)
		}
	}()
	return d.service.Detect(ctx, addr)
}

// wait blocks until every Detect call has returned.
func (d *detector) wait() { d.calls.Wait() }

// removeSlot drops sl's broker if sl is still its slot.
func (t *FaultTable) removeSlot(sl *slot) {
	t.mu.Lock()
	m := *t.slots.Load()
	ok := m[sl.name] == sl
	if ok {
		nm := make(map[string]*slot, len(m))
		for k, v := range m {
			if k != sl.name {
				nm[k] = v
			}
		}
		t.slots.Store(&nm)
		t.gen.Add(1)
	}
	t.mu.Unlock()
	if ok {
		sl.reset()
	}
}
