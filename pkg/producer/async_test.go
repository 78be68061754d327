package producer_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

type ending struct {
	res producer.Result
	err error
}

// sendAsync starts an async send whose callback reports on the returned
// channel.
func sendAsync(t *testing.T, p *producer.Producer, ctx context.Context) <-chan ending {
	t.Helper()
	ch := make(chan ending, 2) // room for a second, wrong callback
	if err := p.SendAsync(ctx, msg(), func(r producer.Result, err error) { ch <- ending{r, err} }); err != nil {
		t.Fatalf("SendAsync() error = %v", err)
	}
	return ch
}

// await returns the callback's report; the guard only stops a hung test.
func await(t *testing.T, ch <-chan ending) ending {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no callback")
	}
	return ending{}
}

// TestSendAsyncExits drives the async path through a mock Transport:
//
//  1. the attempts in order (a retry avoids the failed broker and does not
//     reset the index: B, then C, then A);
//  2. the response updates of the reference's MQClientAPIImpl (an answer
//     with a broker error is not retried; transport_not_sent marks the
//     broker unreachable; throttled is not retried);
//  3. exactly one callback, with the answer or the error.
func TestSendAsyncExits(t *testing.T) {
	notSent := &producer.TransportError{Class: latency.ClassTransportNotSent, Err: errors.New("connection refused")}
	overloaded := &producer.TransportError{Class: latency.ClassThrottled, Err: errors.New("too many requests")}
	u := func(b string, lat int64, iso, reach bool) producer.FaultUpdate {
		return producer.FaultUpdate{Broker: b, Latency: ms(lat), Isolation: iso, Reachable: reach}
	}
	tests := []struct {
		name     string
		calls    []call
		want     []producer.FaultUpdate
		wantStop producer.Stop
		wantErr  error
	}{
		{
			name:     "answered",
			calls:    []call{{broker: "B", lat: ms(20), res: producer.Result{Status: producer.FlushDiskTimeout}}},
			want:     []producer.FaultUpdate{u("B", 20, false, true)},
			wantStop: producer.StopAnswered,
		},
		{
			name:     "broker error is not retried",
			calls:    []call{{broker: "B", lat: ms(20), err: errRetryCode}},
			want:     []producer.FaultUpdate{u("B", 20, true, true)},
			wantStop: producer.StopBrokerError, wantErr: errRetryCode,
		},
		{
			name:     "transport error retried",
			calls:    []call{{broker: "B", lat: ms(20), err: errTransport}, {broker: "C", lat: ms(5)}},
			want:     []producer.FaultUpdate{u("B", 20, true, true), u("C", 5, false, true)},
			wantStop: producer.StopAnswered,
		},
		{
			name:     "not sent retried, unreachable",
			calls:    []call{{broker: "B", lat: ms(20), err: notSent}, {broker: "C", lat: ms(5)}},
			want:     []producer.FaultUpdate{u("B", 20, true, false), u("C", 5, false, true)},
			wantStop: producer.StopAnswered,
		},
		{
			name:     "overloaded not retried",
			calls:    []call{{broker: "B", lat: ms(20), err: overloaded}},
			want:     []producer.FaultUpdate{u("B", 20, true, true)},
			wantStop: producer.StopFailed, wantErr: overloaded,
		},
		{
			name: "retries exhausted",
			calls: []call{
				{broker: "B", lat: ms(20), err: errTransport},
				{broker: "C", lat: ms(20), err: errTransport},
				{broker: "A", lat: ms(20), err: errTransport},
			},
			want:     []producer.FaultUpdate{u("B", 20, true, true), u("C", 20, true, true), u("A", 20, true, true)},
			wantStop: producer.StopFailed, wantErr: errTransport,
		},
		{
			name:     "client error ends the first attempt",
			calls:    []call{{broker: "B", lat: ms(2), err: errClient}},
			want:     []producer.FaultUpdate{u("B", 2, false, true)},
			wantStop: producer.StopFailed, wantErr: errClient,
		},
		{
			name:     "no budget left for a retry",
			calls:    []call{{broker: "B", lat: ms(3000), err: errTransport}},
			want:     []producer.FaultUpdate{u("B", 3000, true, true)},
			wantStop: producer.StopFailed, wantErr: errTransport,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			for i := range tt.calls {
				c := &tt.calls[i]
				c.check = func(_ context.Context, a producer.Attempt) {
					if a.Kind != producer.KindAsync || a.Number != i {
						t.Errorf("attempt = {Kind %v, Number %d}, want ASYNC %d", a.Kind, a.Number, i)
					}
				}
			}
			h.expect(tt.calls...)
			got := await(t, sendAsync(t, h.p, context.Background()))
			if err := h.p.Close(); err != nil {
				t.Fatalf("Close() error = %v", err)
			}
			if tt.wantErr == nil {
				if got.err != nil || got.res.Queue.BrokerName != tt.calls[len(tt.calls)-1].broker {
					t.Errorf("callback = %+v, want the answer of the last attempt", got)
				}
			} else {
				var se *producer.SendError
				if !errors.As(got.err, &se) || !errors.Is(got.err, tt.wantErr) || se.Stop != tt.wantStop || se.Attempts != len(tt.calls) {
					t.Errorf("callback error = %v, want stop %v after %d attempts wrapping %v", got.err, tt.wantStop, len(tt.calls), tt.wantErr)
				}
				if errors.Is(got.err, producer.ErrCallTimeout) {
					t.Errorf("callback error = %v: an async retry refused for budget is not a call timeout", got.err)
				}
			}
			if upd := h.rec.updates(); !slices.Equal(upd, tt.want) {
				t.Errorf("fault updates = %+v, want %+v", upd, tt.want)
			}
		})
	}
}

// TestSendAsyncDispatchUpdate checks the reference's update right after
// dispatch (isolation false, reachable true), made before the answer is
// known: inside the Transport call, B already reads reachable with latency 0.
func TestSendAsyncDispatchUpdate(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.strat.Update("B", ms(100), false, false)
	h.expect(call{broker: "B", lat: ms(9), check: func(context.Context, producer.Attempt) {
		if it := h.item(t, "B"); it.Latency != 0 || !it.Reachable {
			t.Errorf("fault item B during the attempt = %+v, want latency 0, reachable", it)
		}
	}})
	if got := await(t, sendAsync(t, h.p, context.Background())); got.err != nil {
		t.Fatalf("callback error = %v", got.err)
	}
	if it := h.item(t, "B"); it.Latency != ms(9) || !it.Reachable {
		t.Errorf("fault item B = %+v, want the answer's update", it)
	}
}

// TestSendAsyncRejects checks what SendAsync refuses without calling back.
func TestSendAsyncRejects(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	cb := func(producer.Result, error) { t.Error("callback called for a refused send") }
	for _, tt := range []struct {
		name string
		msg  *producer.Message
		cb   producer.Callback
	}{
		{"nil message", nil, cb},
		{"empty topic", &producer.Message{}, cb},
		{"nil callback", msg(), nil},
	} {
		if err := h.p.SendAsync(context.Background(), tt.msg, tt.cb); !errors.Is(err, producer.ErrInvalidMessage) {
			t.Errorf("%s: SendAsync() error = %v, want ErrInvalidMessage", tt.name, err)
		}
	}
	_ = h.p.Close()
	if err := h.p.SendAsync(context.Background(), msg(), cb); !errors.Is(err, producer.ErrClosed) {
		t.Errorf("SendAsync() after Close error = %v, want ErrClosed", err)
	}
}

// blocker is a Transport call on broker that waits for release.
func (h *harness) blocker(broker string, entered chan<- struct{}, release <-chan struct{}) {
	h.tr.EXPECT().Send(gomock.Any(), onBroker(broker)).DoAndReturn(func(context.Context, producer.Attempt) (producer.Result, error) {
		entered <- struct{}{}
		<-release
		return producer.Result{}, nil
	})
}

// TestSendAsyncLimit checks the bound on async sends in flight.
func TestSendAsyncLimit(t *testing.T) {
	bounded := func(failFast bool) *producer.Config {
		cfg := producer.Reference5()
		cfg.AsyncMaxInFlight = 1
		cfg.AsyncFailFast = failFast
		return &cfg
	}
	t.Run("fail fast", func(t *testing.T) {
		h := newHarness(t, harnessOpts{cfg: bounded(true)})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		h.blocker("B", entered, release)
		first := sendAsync(t, h.p, context.Background())
		<-entered
		err := h.p.SendAsync(context.Background(), msg(), func(producer.Result, error) { t.Error("refused send called back") })
		var le *producer.LimitError
		if !errors.As(err, &le) || !errors.Is(err, producer.ErrAsyncLimit) || errors.Is(err, producer.ErrCallTimeout) || le.Limit != "count" {
			t.Errorf("SendAsync() error = %v, want a count LimitError without waiting", err)
		}
		close(release)
		if got := await(t, first); got.err != nil {
			t.Errorf("first send: %v", got.err)
		}
	})
	t.Run("waits for room", func(t *testing.T) {
		h := newHarness(t, harnessOpts{cfg: bounded(false)})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		h.blocker("B", entered, release)
		h.expect(call{broker: "C"}) // the second send's first pick
		first := sendAsync(t, h.p, context.Background())
		<-entered
		second := make(chan (<-chan ending))
		go func() { second <- sendAsync(t, h.p, context.Background()) }()
		close(release)
		if got := await(t, first); got.err != nil {
			t.Errorf("first send: %v", got.err)
		}
		if got := await(t, <-second); got.err != nil {
			t.Errorf("second send: %v", got.err)
		}
	})
	t.Run("waits until the budget is spent", func(t *testing.T) {
		h := newHarness(t, harnessOpts{cfg: bounded(false)})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		h.blocker("B", entered, release)
		first := sendAsync(t, h.p, context.Background())
		<-entered
		errc := make(chan error)
		go func() {
			errc <- h.p.SendAsync(context.Background(), msg(), func(producer.Result, error) { t.Error("refused send called back") })
		}()
		// The second send waits on a clock timer for its budget; once that
		// timer is pending (beside the route refresher's ticker), spend the
		// budget.
		for h.clock.Pending() < 2 {
			runtime.Gosched()
		}
		h.clock.Advance(ms(3001))
		err := <-errc
		if !errors.Is(err, producer.ErrAsyncLimit) || !errors.Is(err, producer.ErrCallTimeout) {
			t.Errorf("SendAsync() error = %v, want a LimitError that waited out the budget", err)
		}
		close(release)
		await(t, first)
	})
	t.Run("ctx done while waiting", func(t *testing.T) {
		h := newHarness(t, harnessOpts{cfg: bounded(false)})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		h.blocker("B", entered, release)
		first := sendAsync(t, h.p, context.Background())
		<-entered
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := h.p.SendAsync(ctx, msg(), func(producer.Result, error) {}); !errors.Is(err, context.Canceled) {
			t.Errorf("SendAsync() error = %v, want context.Canceled", err)
		}
		close(release)
		await(t, first)
	})
	t.Run("message larger than the byte bound", func(t *testing.T) {
		cfg := producer.Reference5()
		cfg.AsyncMaxBytes = 4
		h := newHarness(t, harnessOpts{cfg: &cfg})
		var le *producer.LimitError
		err := h.p.SendAsync(context.Background(), msg(), func(producer.Result, error) {})
		if !errors.As(err, &le) || le.Limit != "bytes" || le.Max != 4 {
			t.Errorf("SendAsync() error = %v, want a bytes LimitError", err)
		}
	})
}

// TestSendAsyncClose checks Close with async sends in flight: it waits for
// them; the one in flight completes its attempt but does not retry (its
// callback gets ErrClosed); sends after Close are refused; every accepted
// send is called back exactly once.
func TestSendAsyncClose(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	entered, release := make(chan struct{}, 1), make(chan struct{})
	h.tr.EXPECT().Send(gomock.Any(), onBroker("B")).DoAndReturn(func(context.Context, producer.Attempt) (producer.Result, error) {
		entered <- struct{}{}
		<-release
		return producer.Result{}, errTransport // would be retried on C
	})
	inFlight := sendAsync(t, h.p, context.Background())
	<-entered
	closed := make(chan error)
	go func() { closed <- h.p.Close() }()

	// Wait until Close has begun: from then on SendAsync refuses. Sends
	// accepted before that end at once (their ctx is done) without a
	// Transport call.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var early []<-chan ending
	for {
		ch := make(chan ending, 2)
		err := h.p.SendAsync(cancelled, msg(), func(r producer.Result, err error) { ch <- ending{r, err} })
		if errors.Is(err, producer.ErrClosed) {
			break
		}
		if err != nil {
			t.Fatalf("SendAsync() error = %v", err)
		}
		early = append(early, ch)
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	got := <-inFlight // Close has waited for it
	var se *producer.SendError
	if !errors.As(got.err, &se) || !errors.Is(got.err, producer.ErrClosed) || se.Attempts != 1 {
		t.Errorf("in-flight send ended with %v, want ErrClosed after its one attempt", got.err)
	}
	if len(inFlight) != 0 {
		t.Error("in-flight send called back more than once")
	}
	for i, ch := range early {
		if n := len(ch); n != 1 {
			t.Fatalf("early send %d called back %d times, want once", i, n)
		}
		if e := <-ch; !errors.Is(e.err, context.Canceled) && !errors.Is(e.err, producer.ErrClosed) {
			t.Errorf("early send %d ended with %v, want context.Canceled or ErrClosed", i, e.err)
		}
	}
	if err := h.p.Close(); err != nil {
		t.Errorf("second Close() error = %v", err)
	}
}
