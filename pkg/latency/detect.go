package latency

import (
	"context"
	"errors"
	"net"
	"time"
)

// Resolver tells the detector where a broker is. ok=false means the broker
// has left the route; the detector then drops its fault item. Resolve is
// called from detector rounds only, never on the pick path; it must be safe
// for concurrent use and should not block.
type Resolver interface {
	Resolve(broker string) (addr string, ok bool)
}

// ResolverFunc adapts a function to a Resolver.
type ResolverFunc func(broker string) (string, bool)

// Resolve calls f(broker).
func (f ResolverFunc) Resolve(broker string) (string, bool) { return f(broker) }

// StaticResolver resolves broker names from a fixed map.
type StaticResolver map[string]string

// Resolve looks broker up in the map.
func (r StaticResolver) Resolve(broker string) (string, bool) {
	a, ok := r[broker]
	return a, ok
}

// ServiceDetector probes an endpoint. It returns nil when the endpoint is
// reachable, an error wrapping ErrProbeInconclusive when the probe yields no
// information (nothing changes), and any other error when the endpoint is
// unreachable.
//
// The probe's deadline comes from ctx (ctx.Deadline reports it on the wall
// clock; ctx.Done closes when it passes on the strategy's Clock). Detect must
// return promptly once ctx is done: a detector round stops waiting at the
// deadline, but Close waits for every Detect call to return. Detect is called
// from detector goroutines, possibly several at once, never on the pick path.
type ServiceDetector interface {
	Detect(ctx context.Context, endpoint string) error
}

// ServiceDetectorFunc adapts a function to a ServiceDetector.
type ServiceDetectorFunc func(ctx context.Context, endpoint string) error

// Detect calls f(ctx, endpoint).
func (f ServiceDetectorFunc) Detect(ctx context.Context, endpoint string) error {
	return f(ctx, endpoint)
}

// TCPDetector is the built-in ServiceDetector: an endpoint is reachable when a
// TCP connection to it succeeds before ctx's deadline. The zero value is ready
// to use.
type TCPDetector struct {
	// Dialer, when set, is used for the connection (for a local address, a
	// proxy-free control function, ...). Its Timeout is combined with ctx's.
	Dialer *net.Dialer
}

var _ ServiceDetector = TCPDetector{}

// ProbeError is an unreachable verdict with its cause.
type ProbeError struct {
	Endpoint string
	Err      error
}

func (e *ProbeError) Error() string { return "probe " + e.Endpoint + ": " + e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// Detect dials endpoint over TCP and closes the connection at once. A dial
// that fails because ctx was cancelled (not because its deadline passed) is
// inconclusive.
func (d TCPDetector) Detect(ctx context.Context, endpoint string) error {
	dialer := d.Dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	conn, err := dialer.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return errors.Join(ErrProbeInconclusive, err)
		}
		return &ProbeError{Endpoint: endpoint, Err: err}
	}
	_ = conn.Close()
	return nil
}

// WithClockTimeout returns a context that is done when d has passed on clock
// (or when parent is done), with Err() == context.DeadlineExceeded in the
// first case. Its Deadline is the wall-clock time d from now, so code that
// sets socket deadlines from ctx (net.Dialer) behaves alike on a real and a
// manual clock. Call cancel to release the timer.
func WithClockTimeout(parent context.Context, clock Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := clock.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	c := &clockCtx{Context: ctx, deadline: time.Now().Add(d)}
	return c, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

type clockCtx struct {
	context.Context
	deadline time.Time
}

func (c *clockCtx) Deadline() (time.Time, bool) {
	if pd, ok := c.Context.Deadline(); ok && pd.Before(c.deadline) {
		return pd, true
	}
	return c.deadline, true
}

func (c *clockCtx) Err() error {
	err := c.Context.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(c.Context); errors.Is(cause, context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
