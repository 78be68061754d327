package producer

import (
	"context"
	"sync"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

// attemptCtxs recycles the contexts attempts give their Transport. A
// clock.Context that nobody waited on (Done never called: no timer,
// watch or channel) is reused by a later attempt, so an attempt whose
// Transport answers at once allocates nothing; one that was waited on is
// dropped. Transport's contract (its ctx is valid until Send returns) is what
// makes the reuse safe.
var attemptCtxs sync.Pool

// newAttemptCtx returns the context of an attempt with deadline on clock:
// done at the deadline, when the send's ctx is done, or when released.
func newAttemptCtx(parent context.Context, clk clock.Clock, deadline time.Time) *clock.Context {
	if c, ok := attemptCtxs.Get().(*clock.Context); ok && c.Reuse(parent, clk, deadline) {
		return c
	}
	return clock.NewContext(parent, clk, deadline)
}

// releaseAttemptCtx ends the attempt's context and hands it to the pool
// (newAttemptCtx drops it if it cannot be reused).
func releaseAttemptCtx(c *clock.Context) {
	c.Release()
	attemptCtxs.Put(c)
}
