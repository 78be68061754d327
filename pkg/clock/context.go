package clock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Context is a context done when a deadline passes on a Clock, when its
// parent is done, or when it is released: the one clock-deadline context of
// mqfault (WithTimeout, the detector's probes, the producer's
// attempts). It is lazy: the Done channel, the clock timer and the parent
// watch are set up only when Done is first called, so code that never waits
// on Done (a Transport that answers at once, or reads Err, or uses the
// deadline itself) costs no timer. Err reads the clock to notice an expiry
// without a timer: once the deadline passes it is context.DeadlineExceeded,
// once released context.Canceled (whichever came first), or the parent's
// error. Once Done was called, context.Cause says the same.
//
// All methods are safe for concurrent use.
type Context struct {
	parent context.Context
	clock  Clock
	// The deadline is at on the clock's Elapsed when onElapsed is set
	// (WithTimeout), else deadline on its Now (NewContext).
	deadline  time.Time
	at        time.Duration
	onElapsed bool
	wall      time.Time // Deadline's answer when set; else computed from the clock

	// released is set by Release when Done was never called, so that the
	// common path takes no lock; once set, Done and Err report Canceled.
	released atomic.Bool
	armed    atomic.Bool // Done was called: inner is set, Release takes the slow path

	mu          sync.Mutex // guards the fields below
	err         error      // before Done: why the context is over
	inner       context.Context
	cancelInner context.CancelCauseFunc
	timer       Timer
}

var _ context.Context = (*Context)(nil)

// NewContext returns a context done at deadline on clock, when parent
// is done, or when released. Call Release when done with it. The deadline is
// a time on the clock's Now, compared with Now's readings (Time.Sub): one
// taken from a Real's Now carries a monotonic clock reading and does not
// move with the wall clock; on another clock it moves with Now's steps.
// WithTimeout's deadline is on Elapsed and never moves.
func NewContext(parent context.Context, clock Clock, deadline time.Time) *Context {
	return &Context{parent: parent, clock: clock, deadline: deadline}
}

// left is the time until the deadline (negative once it passed).
func (c *Context) left() time.Duration {
	if c.onElapsed {
		return c.at - c.clock.Elapsed()
	}
	return c.deadline.Sub(c.clock.Now())
}

// Reuse makes a released c a new context for parent, clock and deadline,
// and reports whether it could: only a released context whose Done was
// never called (so no timer, watch or channel is left). Whoever reuses a
// context must know that nothing holds the old one any more.
func (c *Context) Reuse(parent context.Context, clock Clock, deadline time.Time) bool {
	if !c.released.Load() || c.armed.Load() {
		return false // live, or Done was called: a timer or watch may still fire
	}
	// Nobody holds c (the caller's promise) and Done was never called, so
	// no lock is needed: armed is only set by Done.
	c.parent, c.clock, c.deadline, c.at, c.onElapsed, c.wall, c.err = parent, clock, deadline, 0, false, time.Time{}, nil
	c.released.Store(false)
	return true
}

// WithTimeout returns a context that is done when d has passed on clock
// (its Elapsed, so a step of the wall clock does not move the deadline), or
// when parent is done, with Err() == context.DeadlineExceeded in the first
// case. Its Deadline is the wall-clock time d from now, so code that sets
// socket deadlines from ctx (net.Dialer) behaves alike on a real and a
// manual clock. Its timer starts at once; call cancel to release it.
func WithTimeout(parent context.Context, clock Clock, d time.Duration) (context.Context, context.CancelFunc) {
	at := clock.Elapsed()
	if d > 0 {
		at = addDuration(at, d)
	} else {
		at += d // Elapsed is not negative: no overflow
	}
	c := &Context{parent: parent, clock: clock, at: at, onElapsed: true}
	c.wall = time.Now().Add(d)
	c.Done()
	return c, c.Release
}

// Deadline reports the deadline on the wall clock (the clock's remaining
// time from now), or the parent's when that is earlier, so code that sets
// socket deadlines from ctx works on a real and a manual clock.
func (c *Context) Deadline() (time.Time, bool) {
	d := c.wall
	if d.IsZero() {
		d = time.Now().Add(c.left())
	}
	if pd, ok := c.parent.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

// Done returns a channel closed when the context is done.
func (c *Context) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner != nil {
		return c.inner.Done()
	}
	c.inner, c.cancelInner = context.WithCancelCause(c.parent)
	c.armed.Store(true)
	if c.err == nil && c.released.Load() {
		c.err = context.Canceled
	}
	left := c.left()
	if c.err == nil && left <= 0 {
		c.err = context.DeadlineExceeded
	}
	if c.err != nil {
		c.cancelInner(c.err)
		return c.inner.Done()
	}
	cancel := c.cancelInner
	c.timer = c.clock.AfterFunc(left, func() { cancel(context.DeadlineExceeded) })
	return c.inner.Done()
}

// Err returns nil while the context is live, else why it is not.
func (c *Context) Err() error {
	c.mu.Lock()
	inner, err := c.inner, c.err
	c.mu.Unlock()
	if inner != nil {
		if inner.Err() == nil && c.left() <= 0 {
			c.cancelInner(context.DeadlineExceeded)
		}
		if err := inner.Err(); err != nil {
			if errors.Is(context.Cause(inner), context.DeadlineExceeded) {
				return context.DeadlineExceeded
			}
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case c.released.Load():
		err = context.Canceled
	case c.parent.Err() != nil:
		err = c.parent.Err()
	case c.left() <= 0:
		err = context.DeadlineExceeded
	default:
		return nil
	}
	c.mu.Lock()
	if c.err == nil && c.inner == nil {
		c.err = err
	}
	c.mu.Unlock()
	return c.Err()
}

// Value returns the parent's value for key.
func (c *Context) Value(key any) any {
	if c.armed.Load() {
		c.mu.Lock()
		inner := c.inner
		c.mu.Unlock()
		return inner.Value(key)
	}
	return c.parent.Value(key)
}

// Release ends the context: it reads Canceled from now on (unless it was
// already done) and its timer and parent watch are stopped. Releasing twice
// is harmless.
func (c *Context) Release() {
	c.released.Store(true)
	if !c.armed.Load() {
		// Done was never called: no channel, timer or watch to stop. A
		// Done call racing with this one sees released under the lock.
		return
	}
	c.mu.Lock()
	t, cancel := c.timer, c.cancelInner
	c.timer = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel(context.Canceled)
	}
	if t != nil {
		t.Stop()
	}
}
