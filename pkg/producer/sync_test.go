package producer_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

var (
	errClient    = &producer.ClientError{Broker: "x", Err: errors.New("no address")}
	errTransport = &producer.TransportError{Broker: "x", Class: latency.ClassTransportTimeout, Err: errors.New("timeout")}
	errRetryCode = &producer.BrokerError{Broker: "x", Code: 14}
	errNoRetry   = &producer.BrokerError{Broker: "x", Code: 999}
)

// outcomeCase is what one attempt of TestSendSyncExits meets, and what the
// send loop must make of it (5.3.3, detector off).
type outcomeCase struct {
	name         string
	res          producer.Result
	err          error
	retryAnother bool
	isolation    bool // the fault update's isolation flag
	reachable    bool
	goesOn       bool          // the loop makes another attempt
	endStop      producer.Stop // how the send ends when it does not go on
}

var outcomeCases = []outcomeCase{
	{name: "ok", isolation: false, reachable: true, endStop: producer.StopAnswered},
	{name: "not stored", res: producer.Result{Status: producer.FlushDiskTimeout}, reachable: true, endStop: producer.StopAnswered},
	{name: "not stored, retry another broker", res: producer.Result{Status: producer.FlushDiskTimeout}, retryAnother: true, reachable: true, goesOn: true},
	{name: "client error", err: errClient, reachable: true, goesOn: true},
	{name: "transport error", err: errTransport, isolation: true, reachable: true, goesOn: true},
	{name: "broker retry code", err: errRetryCode, isolation: true, goesOn: true},
	{name: "broker other code", err: errNoRetry, isolation: true, endStop: producer.StopBrokerError},
	{name: "interrupted", err: producer.ErrInterrupted, reachable: true, endStop: producer.StopCancelled},
	{name: "cancelled", err: context.Canceled, reachable: true, endStop: producer.StopCancelled},
}

// TestSendSyncExits puts every outcome on the first, the middle and the last
// of three attempts (the earlier ones meet transport errors, the later one
// succeeds) and checks, against a mock Transport and the real fault table on
// a manual clock:
//
//  1. the brokers tried, in order (gomock.InOrder): B, then C, then A (B is
//     isolated by then; with the fixed random source a retry resets the
//     index to 0 and avoids the last broker and isolated ones);
//  2. the fault update of every attempt, and the fault table after the send;
//  3. how the send ends: the answer, or a *SendError with the attempts and
//     brokers, wrapping the last error.
func TestSendSyncExits(t *testing.T) {
	brokers := []string{"B", "C", "A"}
	for _, oc := range outcomeCases {
		for pos, posName := range []string{"first", "middle", "last"} {
			t.Run(oc.name+"/"+posName, func(t *testing.T) {
				cfg := producer.Reference5()
				cfg.RetryAnotherBrokerWhenNotStoreOK = oc.retryAnother
				h := newHarness(t, harnessOpts{cfg: &cfg})

				var calls []call
				var want []producer.FaultUpdate
				for i := range pos {
					calls = append(calls, call{broker: brokers[i], lat: ms(int64(10 * (i + 1))), err: errTransport})
					want = append(want, producer.FaultUpdate{Broker: brokers[i], Latency: ms(int64(10 * (i + 1))), Isolation: true, Reachable: true})
				}
				lat := ms(int64(10 * (pos + 1)))
				calls = append(calls, call{broker: brokers[pos], lat: lat, res: oc.res, err: oc.err})
				want = append(want, producer.FaultUpdate{Broker: brokers[pos], Latency: lat, Isolation: oc.isolation, Reachable: oc.reachable})
				okAfter := oc.goesOn && pos < 2
				if okAfter {
					calls = append(calls, call{broker: brokers[pos+1], lat: ms(5)})
					want = append(want, producer.FaultUpdate{Broker: brokers[pos+1], Latency: ms(5), Reachable: true})
				}
				h.expect(calls...)

				res, err := h.p.SendSync(context.Background(), msg())

				wantStop := oc.endStop
				switch {
				case okAfter:
					wantStop = producer.StopAnswered
				case oc.goesOn && oc.err == nil:
					wantStop = producer.StopAnswered // the last answer, not stored
				case oc.goesOn:
					wantStop = producer.StopFailed
				}
				if wantStop == producer.StopAnswered {
					wantStatus := oc.res.Status
					if okAfter {
						wantStatus = producer.SendOK
					}
					if err != nil || res.Status != wantStatus {
						t.Errorf("SendSync() = %v, %v, want %v", res.Status, err, wantStatus)
					}
					if last := calls[len(calls)-1]; res.Queue.BrokerName != last.broker {
						t.Errorf("SendSync().Queue = %v, want broker %s", res.Queue, last.broker)
					}
				} else {
					var se *producer.SendError
					if !errors.As(err, &se) || !errors.Is(err, oc.err) {
						t.Fatalf("SendSync() error = %v, want a *SendError wrapping %v", err, oc.err)
					}
					if se.Stop != wantStop || se.Attempts != len(calls) || !slices.Equal(se.Brokers, brokers[:len(calls)]) || se.Topic != "T" {
						t.Errorf("SendError = %+v, want stop %v after %d attempts on %v", se, wantStop, len(calls), brokers[:len(calls)])
					}
				}

				if got := h.rec.updates(); !slices.Equal(got, want) {
					t.Errorf("fault updates = %+v, want %+v", got, want)
				}
				for _, u := range want {
					it := h.item(t, u.Broker)
					if it.Latency != u.Latency || it.Reachable != u.Reachable || it.Available == u.Isolation {
						t.Errorf("fault item %+v, want latency %v, reachable %v, available %v", it, u.Latency, u.Reachable, !u.Isolation)
					}
				}
				if n := len(h.rec.sends); n != 1 || h.rec.sends[0].Stop != wantStop {
					t.Errorf("OnSend events = %+v, want one with stop %v", h.rec.sends, wantStop)
				}
			})
		}
	}
}

// TestSendSyncDetector checks that with the detector on, a transport error
// marks the broker unreachable (5.3.3) instead of only isolating it.
func TestSendSyncDetector(t *testing.T) {
	h := newHarness(t, harnessOpts{detector: true})
	h.expect(call{broker: "B", lat: ms(40), err: errTransport}, call{broker: "C", lat: ms(5)})
	if _, err := h.p.SendSync(context.Background(), msg()); err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	if it := h.item(t, "B"); it.Reachable || it.Available {
		t.Errorf("fault item B = %+v, want isolated and unreachable", it)
	}
}

// TestSendSyncV4 checks the 4.9.8 rules: a client error isolates, a retry
// does not reset the index, code 2 is not a retry code.
func TestSendSyncV4(t *testing.T) {
	h := newHarness(t, harnessOpts{mode: latency.ModeV4})
	// v4's scan: one next() (1 -> B); a retry scans again from the next value
	// (2 -> C), then (3 -> A).
	h.expect(
		call{broker: "B", lat: ms(10), err: errClient},
		call{broker: "C", lat: ms(10), err: &producer.BrokerError{Code: 2}},
	)
	_, err := h.p.SendSync(context.Background(), msg())
	var se *producer.SendError
	if !errors.As(err, &se) || se.Stop != producer.StopBrokerError || !slices.Equal(se.Brokers, []string{"B", "C"}) {
		t.Fatalf("SendSync() error = %v, want a broker error after [B C]", err)
	}
	want := []producer.FaultUpdate{
		{Broker: "B", Latency: ms(10), Isolation: true, Reachable: true},
		{Broker: "C", Latency: ms(10), Isolation: true, Reachable: true},
	}
	if got := h.rec.updates(); !slices.Equal(got, want) {
		t.Errorf("fault updates = %+v, want %+v", got, want)
	}
	if it := h.item(t, "B"); it.Available {
		t.Errorf("fault item B = %+v, want isolated (v4 isolates on a client error)", it)
	}
}

// TestSendSyncBudget checks a budget spent before an attempt: the picked
// broker is not sent to; the send ends with a call timeout, or with the
// earlier answer.
func TestSendSyncBudget(t *testing.T) {
	for _, tt := range []struct {
		name   string
		first  call
		answer bool
	}{
		{name: "no answer", first: call{broker: "B", lat: ms(3001), err: errTransport}},
		{name: "earlier answer", first: call{broker: "B", lat: ms(3001), res: producer.Result{Status: producer.FlushSlaveTimeout}}, answer: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := producer.Reference5()
			cfg.RetryAnotherBrokerWhenNotStoreOK = true
			h := newHarness(t, harnessOpts{cfg: &cfg})
			h.expect(tt.first) // C is picked next but never sent to
			res, err := h.p.SendSync(context.Background(), msg())
			if tt.answer {
				if err != nil || res.Status != producer.FlushSlaveTimeout {
					t.Errorf("SendSync() = %v, %v, want the earlier answer", res.Status, err)
				}
				return
			}
			var se *producer.SendError
			if !errors.Is(err, producer.ErrCallTimeout) || !errors.As(err, &se) || !errors.Is(err, errTransport) {
				t.Fatalf("SendSync() error = %v, want a call timeout wrapping the transport error", err)
			}
			if se.Attempts != 1 || !slices.Equal(se.Brokers, []string{"B"}) || se.Elapsed != ms(3001) {
				t.Errorf("SendError = %+v, want 1 attempt on [B] in 3.001s", se)
			}
		})
	}
}

// TestSendSyncAttemptTimeouts checks what each attempt is given: its number,
// kind, the budget left capped while another attempt remains, and a ctx that
// is done at the deadline on the producer's clock.
func TestSendSyncAttemptTimeouts(t *testing.T) {
	cfg := producer.DefaultConfig() // 1 s per-attempt cap
	h := newHarness(t, harnessOpts{cfg: &cfg})
	check := func(n int, want int64) func(context.Context, producer.Attempt) {
		return func(ctx context.Context, a producer.Attempt) {
			if a.Number != n || a.Kind != producer.KindSync || a.Timeout != ms(want) || !a.Deadline.Equal(h.clock.Now().Add(ms(want))) {
				t.Errorf("attempt %d = {Number %d, Kind %v, Timeout %v, Deadline %v}, want timeout %dms", n, a.Number, a.Kind, a.Timeout, a.Deadline, want)
			}
			done := ctx.Done()
			h.clock.Advance(ms(want) - 1)
			select {
			case <-done:
				t.Errorf("attempt %d: ctx done before its deadline", n)
			default:
			}
			h.clock.Advance(1)
			select {
			case <-done:
			default:
				t.Errorf("attempt %d: ctx not done at its deadline", n)
			}
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Errorf("attempt %d: ctx.Err() = %v, want DeadlineExceeded", n, ctx.Err())
			}
		}
	}
	h.expect(
		call{broker: "B", err: context.DeadlineExceeded, check: check(0, 1000)},
		call{broker: "C", err: context.DeadlineExceeded, check: check(1, 1000)},
		call{broker: "A", err: context.DeadlineExceeded, check: check(2, 1000)},
	)
	_, err := h.p.SendSync(context.Background(), msg())
	var te *producer.TransportError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) {
		t.Errorf("SendSync() error = %v, want the transport's DeadlineExceeded", err)
	}
	for _, u := range h.rec.updates() {
		if !u.Isolation {
			t.Errorf("update %+v: a timeout must isolate", u)
		}
	}
}

// TestSendSyncCancel checks cancellation by the caller: during an attempt it
// ends the send as cancelled (update isolation false, reachable true); before
// an attempt no attempt starts.
func TestSendSyncCancel(t *testing.T) {
	t.Run("during an attempt", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		ctx, cancel := context.WithCancel(context.Background())
		h.expect(call{broker: "B", lat: ms(7), err: &producer.TransportError{Err: errors.New("connection reset")},
			check: func(context.Context, producer.Attempt) { cancel() }})
		_, err := h.p.SendSync(ctx, msg())
		var se *producer.SendError
		if !errors.As(err, &se) || se.Stop != producer.StopCancelled {
			t.Fatalf("SendSync() error = %v, want cancelled", err)
		}
		want := []producer.FaultUpdate{{Broker: "B", Latency: ms(7), Reachable: true}}
		if got := h.rec.updates(); !slices.Equal(got, want) {
			t.Errorf("fault updates = %+v, want %+v", got, want)
		}
	})
	t.Run("before the first attempt", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := h.p.SendSync(ctx, msg())
		var se *producer.SendError
		if !errors.As(err, &se) || se.Stop != producer.StopAborted || !errors.Is(err, context.Canceled) || se.Attempts != 0 {
			t.Errorf("SendSync() error = %v, want aborted before any attempt", err)
		}
	})
}

// TestSendSyncTransportPanic checks that a panicking Transport counts as a
// transport failure instead of crashing the send.
func TestSendSyncTransportPanic(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.tr.EXPECT().Send(gomock.Any(), onBroker("B")).DoAndReturn(func(context.Context, producer.Attempt) (producer.Result, error) {
		panic("boom")
	})
	h.expect(call{broker: "C", lat: ms(1)})
	if _, err := h.p.SendSync(context.Background(), msg()); err != nil {
		t.Errorf("SendSync() error = %v, want the retry's answer", err)
	}
	if it := h.item(t, "B"); it.Available {
		t.Errorf("fault item B = %+v, want isolated", it)
	}
}

// TestSendOneway checks the oneway send: one attempt, never retried.
func TestSendOneway(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		h.expect(call{broker: "B", lat: ms(3), check: func(_ context.Context, a producer.Attempt) {
			if a.Kind != producer.KindOneway {
				t.Errorf("Attempt.Kind = %v, want ONEWAY", a.Kind)
			}
		}})
		if err := h.p.SendOneway(context.Background(), msg()); err != nil {
			t.Errorf("SendOneway() error = %v", err)
		}
		want := []producer.FaultUpdate{{Broker: "B", Latency: ms(3), Reachable: true}}
		if got := h.rec.updates(); !slices.Equal(got, want) {
			t.Errorf("fault updates = %+v, want %+v", got, want)
		}
	})
	t.Run("transport error", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		h.expect(call{broker: "B", lat: ms(3), err: errTransport})
		err := h.p.SendOneway(context.Background(), msg())
		var se *producer.SendError
		if !errors.As(err, &se) || se.Stop != producer.StopFailed || se.Attempts != 1 {
			t.Errorf("SendOneway() error = %v, want failed after 1 attempt", err)
		}
	})
}
