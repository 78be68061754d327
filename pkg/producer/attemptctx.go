package producer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// attemptCtx is the context a Transport gets for one attempt: done when the
// attempt's deadline passes on the producer's Clock, when the send's ctx is
// done, or when the attempt is over. It is latency.WithClockTimeout made
// lazy: the Done channel, the clock timer and the parent watch are only set
// up when Done is first called, so a Transport that never waits on ctx.Done
// (one that answers at once, or uses Attempt.Deadline itself) costs one small
// allocation per attempt instead of a timer and three contexts. Err reads the
// clock to notice an expiry without a timer.
type attemptCtx struct {
	parent   context.Context
	clock    latency.Clock
	deadline time.Time // on clock

	// released is set by release when Done was never called, so that the
	// common path takes no lock; once set, Done and Err report Canceled.
	released atomic.Bool
	armed    atomic.Bool // Done was called: release takes the slow path

	mu         sync.Mutex // guards the fields below
	done       chan struct{}
	err        error
	timer      latency.Timer
	stopParent func() bool
}

var _ context.Context = (*attemptCtx)(nil)

func newAttemptCtx(parent context.Context, clock latency.Clock, deadline time.Time) *attemptCtx {
	return &attemptCtx{parent: parent, clock: clock, deadline: deadline}
}

// Deadline reports the attempt's deadline on the wall clock (the clock's
// remaining time from now), or the parent's when that is earlier, so code
// that sets socket deadlines from ctx works on a real and a manual clock.
func (c *attemptCtx) Deadline() (time.Time, bool) {
	d := time.Now().Add(c.deadline.Sub(c.clock.Now()))
	if pd, ok := c.parent.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

// Done returns a channel closed when the attempt's ctx is done.
func (c *attemptCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.armed.Store(true)
	c.done = make(chan struct{})
	if c.err == nil && c.released.Load() {
		c.err = context.Canceled
	}
	if c.err == nil {
		c.err = c.parent.Err()
	}
	left := c.deadline.Sub(c.clock.Now())
	if c.err == nil && left <= 0 {
		c.err = context.DeadlineExceeded
	}
	if c.err != nil {
		close(c.done)
		return c.done
	}
	c.timer = c.clock.AfterFunc(left, func() { c.cancel(context.DeadlineExceeded) })
	if c.parent.Done() != nil {
		parent := c.parent
		c.stopParent = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
	}
	return c.done
}

// Err returns nil while the attempt may go on, else why it may not.
func (c *attemptCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if c.released.Load() {
		c.cancel(context.Canceled)
		return c.Err()
	}
	if err := c.parent.Err(); err != nil {
		c.cancel(err)
		return c.Err()
	}
	if !c.clock.Now().Before(c.deadline) {
		c.cancel(context.DeadlineExceeded)
		return c.Err()
	}
	return nil
}

// Value returns the parent's value for key.
func (c *attemptCtx) Value(key any) any { return c.parent.Value(key) }

func (c *attemptCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
}

// release ends the attempt: the ctx reads Canceled from now on (unless it was
// already done) and its timer and parent watch are stopped.
func (c *attemptCtx) release() {
	c.released.Store(true)
	if !c.armed.Load() {
		// Done was never called: no channel, timer or watch to stop. A
		// Done call racing with this one sees released under the lock.
		return
	}
	c.cancel(context.Canceled)
	c.mu.Lock()
	t, stop := c.timer, c.stopParent
	c.timer, c.stopParent = nil, nil
	c.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	if stop != nil {
		stop()
	}
}
