package producer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// blockingLookup is a RouteSource Lookup that reports its start on started,
// then waits for release (and returns routeData("A", "B")) or for its ctx
// (and returns the ctx's error, as a well-behaved RouteSource does); it
// sends what it returned on ended.
type blockingLookup struct {
	started chan context.Context
	release chan struct{}
	ended   chan error
}

func newBlockingLookup() *blockingLookup {
	return &blockingLookup{started: make(chan context.Context, 1), release: make(chan struct{}), ended: make(chan error, 1)}
}

func (b *blockingLookup) lookup(ctx context.Context, _ string) (*route.TopicRouteData, error) {
	b.started <- ctx
	select {
	case <-b.release:
		b.ended <- nil
		return routeData("A", "B"), nil
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return nil, ctx.Err()
	}
}

// recv returns the next value of ch, failing the test if none comes within
// 10 s (what says what was awaited).
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestRouteLookupOutlivesTheFirstCaller checks that the first lookup of a
// topic does not run under its first caller's ctx: two first sends of T
// share one lookup; the first caller's ctx is cancelled while the lookup is
// in flight. The first caller stops waiting at once, its send aborted by its
// ctx before any attempt (not "no route": the route may be fine); the lookup
// goes on, and the second send, whose ctx
// is fine, succeeds on the route it finds.
func TestRouteLookupOutlivesTheFirstCaller(t *testing.T) {
	h := newRouteHarness(t)
	b := newBlockingLookup()
	h.src.EXPECT().Lookup(gomock.Any(), "T").DoAndReturn(b.lookup).Times(1)

	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	first := make(chan error, 1)
	go func() {
		_, err := h.p.SendSync(ctx1, msg())
		first <- err
	}()
	recv(t, b.started, "the lookup") // in flight now
	second := make(chan error, 1)
	go func() {
		_, err := h.p.SendSync(context.Background(), msg())
		second <- err
	}()

	cancel1()
	select {
	case err := <-first:
		var se *producer.SendError
		if !errors.As(err, &se) || se.Topic != "T" || se.Stop != producer.StopAborted || se.Attempts != 0 ||
			!errors.Is(err, context.Canceled) || errors.Is(err, producer.ErrNoRoute) {
			t.Errorf("first SendSync() error = %v, want a send of T aborted before any attempt by context.Canceled (not ErrNoRoute)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first caller's ctx was cancelled, but it is still waiting for the lookup")
	}
	select {
	case err := <-b.ended:
		t.Fatalf("the shared lookup ended (%v) when the first caller's ctx was cancelled", err)
	case err := <-second:
		t.Fatalf("second SendSync() returned (%v) before the lookup did", err)
	case <-time.After(50 * time.Millisecond):
	}

	close(b.release)
	if err := recv(t, second, "the second send"); err != nil {
		t.Errorf("second SendSync() error = %v, want nil: its ctx was fine", err)
	}
	if info, err := h.p.PublishInfo(context.Background(), "T"); err != nil || info.Len() != 2 {
		t.Errorf("PublishInfo(T) after the lookup = %v, %v; want the route it found", info, err)
	}
}

// TestRouteLookupBoundAndOwned checks that a shared lookup has a bound of its
// own and an owner: its ctx is done when Config.Timeout has passed on the
// producer's clock (and reports a deadline at most that far away), and Close
// cancels a lookup in flight and waits for it, though no caller waits for it
// any more.
func TestRouteLookupBoundAndOwned(t *testing.T) {
	t.Run("bounded by Config.Timeout", func(t *testing.T) {
		h := newRouteHarness(t)
		b := newBlockingLookup()
		h.src.EXPECT().Lookup(gomock.Any(), "T").DoAndReturn(b.lookup).Times(1)
		sent := make(chan error, 1)
		go func() {
			_, err := h.p.SendSync(context.Background(), msg())
			sent <- err
		}()
		lctx := recv(t, b.started, "the lookup")
		if dl, ok := lctx.Deadline(); !ok || time.Until(dl) <= 0 || time.Until(dl) > producer.Reference5().Timeout {
			t.Errorf("the lookup's ctx deadline = %v, %v; want one at most Config.Timeout from now", dl, ok)
		}
		h.clock.Advance(producer.Reference5().Timeout)
		if err := recv(t, b.ended, "the lookup to end at its deadline"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the lookup ended with %v, want its ctx's DeadlineExceeded", err)
		}
		if err := recv(t, sent, "the send"); !errors.Is(err, producer.ErrNoRoute) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("SendSync() error = %v, want ErrNoRoute wrapping DeadlineExceeded", err)
		}
	})
	t.Run("cancelled and waited for by Close", func(t *testing.T) {
		h := newRouteHarness(t)
		b := newBlockingLookup()
		h.src.EXPECT().Lookup(gomock.Any(), "T").DoAndReturn(b.lookup).Times(1)
		ctx, cancel := context.WithCancel(context.Background())
		gone := make(chan error, 1)
		go func() {
			_, err := h.p.PublishInfo(ctx, "T")
			gone <- err
		}()
		recv(t, b.started, "the lookup")
		cancel()
		if err := recv(t, gone, "PublishInfo to stop waiting on its ctx"); !errors.Is(err, context.Canceled) {
			t.Fatalf("PublishInfo() error = %v, want context.Canceled", err)
		}
		if err := h.p.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-b.ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the lookup ended with %v, want context.Canceled by Close", err)
			}
		default:
			t.Error("Close returned while the lookup it owns was still running")
		}
	})
}
