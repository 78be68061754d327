package producer_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// panicky is a RouteSource and a Transport that panic while their switch is
// on; off, the source returns routeData("A", "B", "C") and the transport
// answers.
type panicky struct {
	source, transport atomic.Bool
	lookups           atomic.Int32
}

func (p *panicky) Lookup(context.Context, string) (*route.TopicRouteData, error) {
	p.lookups.Add(1)
	if p.source.Load() {
		panic("route source boom")
	}
	return routeData("A", "B", "C"), nil
}

func (p *panicky) Send(context.Context, producer.Attempt) (producer.Result, error) {
	if p.transport.Load() {
		panic(errors.New("transport boom"))
	}
	return producer.Result{}, nil
}

func newPanicProducer(t *testing.T, pk *panicky) *producer.Producer {
	t.Helper()
	clk := clock.NewManual(t0)
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	strat, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(pk, pk, strat, producer.Reference5(), producer.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		_ = strat.Close()
	})
	return p
}

// checkPanicErr checks that err says that fn panicked with value, and
// matches ErrPanicked (and, through its wrapper, ErrNoRoute for a route
// source's panic).
func checkPanicErr(t *testing.T, err error, fn, value string) {
	t.Helper()
	var pe *producer.PanicError
	switch {
	case err == nil:
		t.Fatalf("error = nil, want one saying %s panicked", fn)
	case !strings.Contains(err.Error(), fn+" panicked: "+value):
		t.Errorf("error %q does not say %s panicked with %q", err, fn, value)
	case !errors.Is(err, producer.ErrPanicked) || !errors.As(err, &pe):
		t.Errorf("error %v does not match ErrPanicked and *PanicError", err)
	case pe.Func != fn || len(pe.Stack) == 0:
		t.Errorf("PanicError = {Func: %q, %d bytes of stack}, want Func %q and the stack", pe.Func, len(pe.Stack), fn)
	}
	if fn == "RouteSource.Lookup" && !errors.Is(err, producer.ErrNoRoute) {
		t.Errorf("error %v does not match ErrNoRoute", err)
	}
}

// TestRouteSourcePanic checks that a panicking RouteSource is treated as a
// panicking Transport is: recovered, the send fails with an error that says
// so (*PanicError, ErrPanicked; for the source inside a *RouteError for the
// topic), and an async send's callback runs exactly once — on every send
// path that looks a route up. The topic is looked up again next time, and a
// panicking refresh keeps the cached route.
func TestRouteSourcePanic(t *testing.T) {
	ctx := context.Background()
	sends := map[string]func(p *producer.Producer) error{
		"sync": func(p *producer.Producer) error {
			_, err := p.SendSync(ctx, msg())
			return err
		},
		"oneway": func(p *producer.Producer) error { return p.SendOneway(ctx, msg()) },
		"ordered": func(p *producer.Producer) error {
			_, err := p.SendByKey(ctx, msg(), producer.HashSelector{}, "key")
			return err
		},
		"async": func(p *producer.Producer) error {
			var calls atomic.Int32
			errs := make(chan error, 2)
			if err := p.SendAsync(ctx, msg(), func(_ producer.Result, err error) {
				calls.Add(1)
				errs <- err
			}); err != nil {
				t.Fatalf("SendAsync() error = %v", err)
			}
			err := recv(t, errs, "the callback")
			_ = p.Close() // waits for every callback
			if n := calls.Load(); n != 1 {
				t.Errorf("the callback ran %d times, want 1", n)
			}
			return err
		},
	}
	for name, send := range sends {
		t.Run("route source/"+name, func(t *testing.T) {
			pk := &panicky{}
			pk.source.Store(true)
			p := newPanicProducer(t, pk)
			checkPanicErr(t, send(p), "RouteSource.Lookup", "route source boom")
			if name == "async" {
				return // closed
			}
			pk.source.Store(false)
			if err := send(p); err != nil {
				t.Errorf("after the panic, with the source well again: error = %v, want nil", err)
			}
			if n := pk.lookups.Load(); n != 2 {
				t.Errorf("%d lookups, want 2: the failed one is not cached", n)
			}
		})
		if name == "ordered" {
			continue // no Transport panic: an ordered send makes one attempt, tested below
		}
		t.Run("transport/"+name, func(t *testing.T) {
			pk := &panicky{}
			pk.transport.Store(true)
			checkPanicErr(t, send(newPanicProducer(t, pk)), "Transport.Send", "transport boom")
		})
	}
	t.Run("transport/ordered", func(t *testing.T) {
		pk := &panicky{}
		pk.transport.Store(true)
		checkPanicErr(t, sends["ordered"](newPanicProducer(t, pk)), "Transport.Send", "transport boom")
	})
	t.Run("refresh", func(t *testing.T) {
		pk := &panicky{}
		p := newPanicProducer(t, pk)
		info, err := p.PublishInfo(ctx, "T")
		if err != nil {
			t.Fatal(err)
		}
		pk.source.Store(true)
		checkPanicErr(t, p.RefreshRoutes(ctx), "RouteSource.Lookup", "route source boom")
		if got, err := p.PublishInfo(ctx, "T"); err != nil || got != info {
			t.Errorf("after a panicking refresh PublishInfo() = %v, %v; want the cached route", got, err)
		}
	})
}
