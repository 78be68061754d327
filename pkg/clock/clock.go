package clock

import (
	"container/heap"
	"math"
	"sync"
	"time"
)

// Clock is where mqfault reads time and sets timers: the fault table's
// isolation expiry, the detector's ticks and probe deadlines all go through
// it, so a test or the simulator can run the real code in virtual time.
// Implementations must be safe for concurrent use.
//
// A Clock has two readings. Now is the wall clock, which may step (NTP, a VM
// migration, an operator): it says what time it is, in the times mqfault
// reports (events, fault items, a context's Deadline). Elapsed is the time
// that has passed, which never steps: the fault table, its policies and the
// detector measure every duration and deadline on it (isolation ends, check
// stamps, load scores, probe timeouts), and timers and tickers count it. So
// a wall clock stepped back an hour neither stretches an isolation by an
// hour nor fades every load score, and one stepped forward ends nothing
// early. (Others that measure with differences of Now's readings, Time.Sub,
// get the same only from readings with a monotonic clock reading, as
// Real's have.)
type Clock interface {
	// Now returns the wall-clock time.
	Now() time.Time
	// Elapsed returns the time passed since a fixed origin of the clock's
	// own, on a monotonic clock: it never decreases, and a step of the wall
	// clock does not move it.
	Elapsed() time.Duration
	// AfterFunc calls f in its own goroutine (Real) or from the call
	// that moves the clock past the deadline (Manual) once d has passed,
	// counted as Elapsed counts.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTicker returns a ticker that delivers the time (Now) every d, counted
	// as Elapsed counts, on its channel, dropping ticks a slow reader misses,
	// like time.Ticker.
	NewTicker(d time.Duration) Ticker
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
	// Reset makes the call happen d from now (again, if it already happened);
	// it reports whether the timer was pending.
	Reset(d time.Duration) bool
}

// Ticker delivers ticks until stopped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the system clock.
type Real struct{}

var _ Clock = Real{}

// realOrigin is Real's origin: a reading with a monotonic clock reading,
// taken when the package is initialized.
var realOrigin = time.Now()

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Elapsed returns the time since the package was initialized, from the
// system's monotonic clock (time.Since of a time.Now reading).
func (Real) Elapsed() time.Duration { return time.Since(realOrigin) }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// NewTicker wraps time.NewTicker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Manual is a clock that moves only when told to. Time passes with
// Advance, and with Set to a later time: Now and Elapsed move together.
// Set to an earlier time steps the wall clock back, as NTP does: only Now
// moves, no time passes. Timers and tickers count Elapsed, and fire
// synchronously, in deadline order, from the Advance or Set call that moves
// the clock past them, with Now and Elapsed reading their deadline while they
// run; so whatever a timer does is done when Advance returns. It is safe for
// concurrent use; timer callbacks run without the clock's lock held and may
// use the clock.
type Manual struct {
	mu      sync.Mutex    // guards every field below
	now     time.Time     // the wall reading
	elapsed time.Duration // time passed since NewManual; what timers count
	timers  timerHeap
	seq     uint64
	moving  bool // an Advance is firing timers; a nested Advance only moves the clock
}

var _ Clock = (*Manual)(nil)

// NewManual returns a manual clock reading start, with no time elapsed.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's wall reading.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Elapsed returns the time passed since NewManual: the sum of the
// moves forward (Advance, Set to a later time), steps back by Set not
// counted, those by Rewind subtracted (so it may read below zero).
func (c *Manual) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.elapsed
}

// addDuration is a + d for a non-negative d, saturated at the largest
// Duration.
func addDuration(a, d time.Duration) time.Duration {
	if a > math.MaxInt64-d {
		return math.MaxInt64
	}
	return a + d
}

// Advance lets d pass (a negative d is treated as 0), firing every timer
// that falls due on the way.
func (c *Manual) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	target := addDuration(c.elapsed, d)
	c.mu.Unlock()
	c.moveTo(target)
}

// Set moves the wall reading to t. Moving forward lets the difference pass,
// firing due timers, as Advance does; moving backward is a step of the wall
// clock: only Now changes, Elapsed and the timers do not.
func (c *Manual) Set(t time.Time) {
	c.mu.Lock()
	if t.Before(c.now) {
		c.now = t
		c.mu.Unlock()
		return
	}
	target := addDuration(c.elapsed, t.Sub(c.now))
	c.mu.Unlock()
	c.moveTo(target)
}

// Rewind moves the clock back to t, Now and Elapsed together, as a process
// whose only clock is the wall clock sees a step back (the reference reads
// System.currentTimeMillis for everything, and the trace language replays
// it): timers and tickers keep their deadlines, so each fires when the clock
// reaches it again. A t not before Now is Set(t). A fault table over the
// clock does not see the step until its Resync. Rewind is for replaying the
// reference; a strategy's own clock never goes back (Clock's promise).
func (c *Manual) Rewind(t time.Time) {
	c.mu.Lock()
	if !t.Before(c.now) {
		c.mu.Unlock()
		c.Set(t)
		return
	}
	c.elapsed -= c.now.Sub(t)
	c.now = t
	c.mu.Unlock()
}

// passTo lets time pass until Elapsed reads to (later than it reads).
// Caller must hold c.mu.
func (c *Manual) passTo(to time.Duration) {
	c.now = c.now.Add(to - c.elapsed)
	c.elapsed = to
}

func (c *Manual) moveTo(target time.Duration) {
	c.mu.Lock()
	if c.moving {
		// A timer callback moved the clock: move it, and let the outer call
		// fire what falls due.
		if target > c.elapsed {
			c.passTo(target)
		}
		c.mu.Unlock()
		return
	}
	c.moving = true
	for len(c.timers) > 0 && c.timers[0].when <= target {
		t := heap.Pop(&c.timers).(*manualTimer)
		t.index = -1
		if t.when > c.elapsed {
			c.passTo(t.when)
		}
		f := t.f
		if t.period > 0 {
			t.when = addDuration(t.when, t.period)
			if t.step && t.when <= target {
				t.when = addDuration(target, 1) // once per move of the clock
			}
			// At the end of time (a saturated move) a ticker stops.
			if t.when > target || target < math.MaxInt64 {
				c.seq++
				t.seq = c.seq
				heap.Push(&c.timers, t)
			}
		}
		c.mu.Unlock()
		f()
		c.mu.Lock()
		if c.elapsed > target {
			target = c.elapsed // a callback moved the clock: fire what fell due on the way
		}
	}
	if target > c.elapsed {
		c.passTo(target)
	}
	c.moving = false
	c.mu.Unlock()
}

// Pending returns the number of timers and tickers waiting to fire.
func (c *Manual) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextDeadline returns when the earliest pending timer fires, on the wall
// clock as it reads now.
func (c *Manual) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.now.Add(c.timers[0].when - c.elapsed), true
}

// AfterFunc schedules f to run once d has passed. A d <= 0 fires on the next
// Advance or Set (even Advance(0)), never inside AfterFunc itself.
func (c *Manual) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{c: c, f: f, index: -1}
	c.mu.Lock()
	c.schedule(t, d)
	c.mu.Unlock()
	return t
}

// NewTicker returns a ticker firing every d of manual time. A d <= 0 (where
// time.NewTicker panics) gives a ticker that fires once on each Advance or Set
// that moves the clock forward.
func (c *Manual) NewTicker(d time.Duration) Ticker {
	step := false
	if d <= 0 {
		d, step = 1, true
	}
	ch := make(chan time.Time, 1)
	t := &manualTimer{c: c, period: d, step: step, index: -1, ch: ch}
	t.f = func() {
		select {
		case ch <- c.nowLocked():
		default: // a slow reader misses the tick, as with time.Ticker
		}
	}
	c.mu.Lock()
	c.schedule(t, d)
	c.mu.Unlock()
	return manualTicker{t}
}

type manualTicker struct{ t *manualTimer }

func (m manualTicker) C() <-chan time.Time { return m.t.ch }
func (m manualTicker) Stop()               { m.t.Stop() }

// nowLocked reads now from inside a timer callback (the lock is not held there).
func (c *Manual) nowLocked() time.Time { return c.Now() }

// Caller must hold c.mu.
func (c *Manual) schedule(t *manualTimer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.when = addDuration(c.elapsed, d)
	c.seq++
	t.seq = c.seq
	heap.Push(&c.timers, t)
}

type manualTimer struct {
	c      *Manual
	f      func()
	when   time.Duration // on Elapsed
	seq    uint64
	period time.Duration
	step   bool // a ticker made with d <= 0: at most one tick per move
	index  int  // position in the heap, -1 when not pending
	ch     chan time.Time
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.c.timers, t.index)
	t.index = -1
	return true
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.index >= 0
	if was {
		heap.Remove(&t.c.timers, t.index)
	}
	t.c.schedule(t, d)
	return was
}

type timerHeap []*manualTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when != h[j].when {
		return h[i].when < h[j].when
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*manualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
