// Package probetest is the conformance suite for probe.ServiceDetector
// implementations: the built-in TCP detector, a detector served by a plugin,
// anyone's own. Run it from a test of the detector, with endpoints the
// detector must find reachable and unreachable:
//
//	func TestConformance(t *testing.T) {
//		probetest.Run(t, myDetector, probetest.Endpoints{
//			Reachable:   []string{probetest.ListenTCP(t)},
//			Unreachable: []string{probetest.ClosedTCP(t)},
//		})
//	}
//
// The checks also run one by one (CheckReachable, ...); each takes a
// testing.TB.
package probetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/probe"
)

// Endpoints are the endpoints a detector is probed on.
type Endpoints struct {
	// Reachable endpoints: Detect must return nil.
	Reachable []string
	// Unreachable endpoints: Detect must return an error that does not
	// match probe.ErrInconclusive.
	Unreachable []string
	// Silent endpoints never answer the detector's question (for a TCP
	// detector a black hole; for an application-level detector a server
	// that accepts and stays mute): Detect must return an error once its
	// deadline passes. Optional.
	Silent []string
	// Timeout is the deadline of each probe (default 2 s); Silent probes
	// use a tenth of it.
	Timeout time.Duration
}

// grace is how long past its deadline a Detect may take before the suite
// calls it hung. It is not a speed target: a correct detector returns at its
// deadline, and the grace only keeps a slow machine from failing the suite.
const grace = 10 * time.Second

// Run runs every check as a subtest.
func Run(t *testing.T, d probe.ServiceDetector, eps Endpoints) {
	t.Helper()
	if len(eps.Reachable) == 0 || len(eps.Unreachable) == 0 {
		t.Fatal("probetest.Run: need at least one reachable and one unreachable endpoint")
	}
	t.Run("reachable", func(t *testing.T) { CheckReachable(t, d, eps) })
	t.Run("unreachable", func(t *testing.T) { CheckUnreachable(t, d, eps) })
	t.Run("silent", func(t *testing.T) {
		if len(eps.Silent) == 0 {
			t.Skip("no silent endpoint given")
		}
		CheckSilent(t, d, eps)
	})
	t.Run("cancelled", func(t *testing.T) { CheckCancelled(t, d, eps) })
	t.Run("bad endpoints", func(t *testing.T) { CheckBadEndpoints(t, d, eps) })
	t.Run("concurrent", func(t *testing.T) { CheckConcurrent(t, d, eps) })
}

func (e Endpoints) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 2 * time.Second
}

// detect calls d with a deadline of timeout and fails tb if it does not
// return within timeout plus grace.
func detect(tb testing.TB, d probe.ServiceDetector, ctx context.Context, endpoint string, timeout time.Duration) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- d.Detect(ctx, endpoint) }()
	select {
	case err := <-res:
		return err
	case <-time.After(timeout + grace):
		tb.Fatalf("Detect(%q) did not return %v after its deadline", endpoint, grace)
		return nil
	}
}

// CheckReachable checks that every reachable endpoint is found reachable.
func CheckReachable(tb testing.TB, d probe.ServiceDetector, eps Endpoints) {
	tb.Helper()
	for _, ep := range eps.Reachable {
		if err := detect(tb, d, context.Background(), ep, eps.timeout()); err != nil {
			tb.Errorf("Detect(%q) = %v, want nil (reachable)", ep, err)
		}
	}
}

// CheckUnreachable checks that every unreachable endpoint is found
// unreachable: an error, and not an inconclusive one.
func CheckUnreachable(tb testing.TB, d probe.ServiceDetector, eps Endpoints) {
	tb.Helper()
	for _, ep := range eps.Unreachable {
		err := detect(tb, d, context.Background(), ep, eps.timeout())
		if err == nil || errors.Is(err, probe.ErrInconclusive) {
			tb.Errorf("Detect(%q) = %v, want an unreachable error (not nil, not inconclusive)", ep, err)
		}
	}
}

// CheckSilent checks that a probe of a silent endpoint ends, with an error,
// once its deadline passes.
func CheckSilent(tb testing.TB, d probe.ServiceDetector, eps Endpoints) {
	tb.Helper()
	for _, ep := range eps.Silent {
		if err := detect(tb, d, context.Background(), ep, eps.timeout()/10); err == nil {
			tb.Errorf("Detect(%q) = nil for a silent endpoint, want an error", ep)
		}
	}
}

// CheckCancelled checks that a probe whose ctx is cancelled (before or
// while it runs) returns an error matching probe.ErrInconclusive: a
// cancelled probe tells nothing.
func CheckCancelled(tb testing.TB, d probe.ServiceDetector, eps Endpoints) {
	tb.Helper()
	eplist := append(append([]string(nil), eps.Reachable[0], eps.Unreachable[0]), eps.Silent...)
	for _, ep := range eplist {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := detect(tb, d, ctx, ep, eps.timeout()); !errors.Is(err, probe.ErrInconclusive) {
			tb.Errorf("Detect(%q) with a cancelled ctx = %v, want an error matching ErrInconclusive", ep, err)
		}
	}
	for _, ep := range eps.Silent {
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- d.Detect(ctx, ep) }()
		cancel()
		select {
		case err := <-res:
			if !errors.Is(err, probe.ErrInconclusive) {
				tb.Errorf("Detect(%q) cancelled while running = %v, want an error matching ErrInconclusive", ep, err)
			}
		case <-time.After(grace):
			tb.Fatalf("Detect(%q) did not return %v after its ctx was cancelled", ep, grace)
		}
	}
}

// CheckBadEndpoints probes malformed endpoints: each must give an error, and
// none may panic.
func CheckBadEndpoints(tb testing.TB, d probe.ServiceDetector, eps Endpoints) {
	tb.Helper()
	for _, ep := range []string{"", "no-port", ":", "[::1", "127.0.0.1:99999", "127.0.0.1:-1", strings.Repeat("x", 4096) + ":1", "\x00:1"} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					tb.Errorf("Detect(%q) panicked: %v", clip(ep), r)
				}
			}()
			if err := detect(tb, d, context.Background(), ep, eps.timeout()); err == nil {
				tb.Errorf("Detect(%q) = nil, want an error for a malformed endpoint", clip(ep))
			}
		}()
	}
}

func clip(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}

// CheckConcurrent probes reachable and unreachable endpoints from several
// goroutines at once: every answer must be the same as alone.
func CheckConcurrent(tb testing.TB, d probe.ServiceDetector, eps Endpoints) {
	tb.Helper()
	const workers, rounds = 8, 4
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), eps.timeout())
				up := eps.Reachable[(w+r)%len(eps.Reachable)]
				if err := d.Detect(ctx, up); err != nil {
					errs <- fmt.Sprintf("concurrent Detect(%q) = %v, want nil", up, err)
				}
				down := eps.Unreachable[(w+r)%len(eps.Unreachable)]
				if err := d.Detect(ctx, down); err == nil || errors.Is(err, probe.ErrInconclusive) {
					errs <- fmt.Sprintf("concurrent Detect(%q) = %v, want unreachable", down, err)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		tb.Error(e)
	}
}

// ListenTCP returns the address of a TCP listener on the loopback interface
// that accepts connections and closes them at once, until the test ends.
func ListenTCP(tb testing.TB) string {
	tb.Helper()
	return serveTCP(tb, func(c net.Conn) { _ = c.Close() })
}

// SilentTCP returns the address of a TCP listener on the loopback interface
// that accepts connections and never writes to them (a hung server), until
// the test ends. A TCP-connect detector finds it reachable; an
// application-level detector must time out.
func SilentTCP(tb testing.TB) string {
	tb.Helper()
	return serveTCP(tb, nil)
}

// serveTCP accepts connections and hands each to handle (nil: keep it open
// and mute until the test ends).
func serveTCP(tb testing.TB, handle func(net.Conn)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	var (
		mu    sync.Mutex // guards conns
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if handle != nil {
				handle(c)
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		_ = l.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// ClosedTCP returns a loopback address where nothing listens: a connection
// to it is refused.
func ClosedTCP(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		tb.Fatalf("close: %v", err)
	}
	return addr
}
