package producer

import (
	"context"
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// attemptCtxs recycles the contexts attempts give their Transport. A
// latency.ClockContext that nobody waited on (Done never called: no timer,
// watch or channel) is reused by a later attempt, so an attempt whose
// Transport answers at once allocates nothing; one that was waited on is
// dropped. Transport's contract (its ctx is valid until Send returns) is what
// makes the reuse safe.
var attemptCtxs sync.Pool

// newAttemptCtx returns the context of an attempt with deadline on clock:
// done at the deadline, when the send's ctx is done, or when released.
func newAttemptCtx(parent context.Context, clock latency.Clock, deadline time.Time) *latency.ClockContext {
	if c, ok := attemptCtxs.Get().(*latency.ClockContext); ok && c.Reuse(parent, clock, deadline) {
		return c
	}
	return latency.NewClockContext(parent, clock, deadline)
}

// releaseAttemptCtx ends the attempt's context and hands it to the pool
// (newAttemptCtx drops it if it cannot be reused).
func releaseAttemptCtx(c *latency.ClockContext) {
	c.Release()
	attemptCtxs.Put(c)
}
