package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

// ErrInconclusive is what a ServiceDetector returns (or wraps) when a probe
// yields no information, for instance because the detector itself is
// unavailable: nothing about the broker changes.
var ErrInconclusive = errors.New("probe: inconclusive")

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
// reachable, an error wrapping ErrInconclusive when the probe yields no
// information (nothing changes), and any other error when the endpoint is
// unreachable.
//
// A probe's deadline is owned by its caller (the strategy's detector round,
// from Config.DetectTimeout) and reaches Detect as ctx's deadline: ctx.Done
// closes when it passes on the strategy's Clock, and ctx.Deadline reports
// it on the wall clock. The contract, on both sides:
//
//   - Detect answers by the deadline. An error saying the endpoint did not
//     answer in time (one wrapping context.DeadlineExceeded, say) is a
//     verdict on the endpoint: unreachable.
//   - The caller waits for the answer until the deadline plus Grace.
//     A Detect that has not returned by then did not answer: the detector
//     failed, not the endpoint, so the probe is inconclusive (ErrNoAnswer)
//     and changes nothing. Close still waits for the call to return.
//   - A detector that asks something else in turn (a plugin host asking
//     its plugin process) gives it the deadline less a margin for the trip
//     back, and answers inconclusive itself at its own deadline when the
//     other side did not answer; Within does the waiting.
//
// Detect is called from detector goroutines, possibly several at once,
// never on the pick path.
type ServiceDetector interface {
	Detect(ctx context.Context, endpoint string) error
}

// ErrNoAnswer is what a probe matches when its ServiceDetector did not
// return by the probe's deadline plus Grace: the detector failed to
// answer, which says nothing about the endpoint. It matches
// ErrInconclusive too.
var ErrNoAnswer = fmt.Errorf("%w: the service detector did not answer by the probe's deadline", ErrInconclusive)

// Grace is how long past a probe's deadline the caller of a
// ServiceDetector waits for its answer (a quarter of the probe's timeout,
// at most 50 ms): time for an answer given at the deadline to arrive.
func Grace(timeout time.Duration) time.Duration {
	return min(timeout/4, 50*time.Millisecond)
}

// Within asks sd about endpoint with a deadline timeout from now on
// clock (or ctx's, if sooner), as a detector round does: it returns sd's
// answer if it comes by the deadline plus Grace(timeout), else an
// error matching ErrNoAnswer (inconclusive), leaving the call to finish on
// its own with its ctx cancelled. When ctx ends first, the answer is
// inconclusive too (the caller gave up, the endpoint said nothing), unless
// sd had answered.
func Within(ctx context.Context, clk clock.Clock, sd ServiceDetector, endpoint string, timeout time.Duration) error {
	return ask(ctx, clk, endpoint, timeout, func(pctx context.Context) error { return sd.Detect(pctx, endpoint) })
}

// ask runs call once, in a goroutine of its own, with a ctx whose deadline
// is timeout from now, and waits for its answer as Within says.
func ask(ctx context.Context, clk clock.Clock, endpoint string, timeout time.Duration, call func(context.Context) error) error {
	pctx, cancel := clock.WithTimeout(ctx, clk, timeout)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- call(pctx) }()
	late := make(chan struct{})
	t := clk.AfterFunc(timeout+Grace(timeout), func() { close(late) })
	defer t.Stop()
	var err error
	select {
	case err = <-res:
	case <-late:
		select {
		case err = <-res: // it answered just now: take the answer
		default:
			return fmt.Errorf("probe %s: %w (waited %v)", endpoint, ErrNoAnswer, timeout+Grace(timeout))
		}
	case <-ctx.Done():
		select {
		case err = <-res:
		default:
			err = ctx.Err()
		}
	}
	if err != nil && ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		// The caller's ctx ended (cancelled, or its own deadline passed)
		// under the probe: that says nothing about the endpoint.
		err = errors.Join(ErrInconclusive, err)
	}
	return err
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

// Error is an unreachable verdict with its cause.
type Error struct {
	Endpoint string
	Err      error
}

func (e *Error) Error() string { return "probe " + e.Endpoint + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

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
			return errors.Join(ErrInconclusive, err)
		}
		return &Error{Endpoint: endpoint, Err: err}
	}
	_ = conn.Close()
	return nil
}
