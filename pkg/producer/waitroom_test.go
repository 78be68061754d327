package producer_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestLoopWaitsForRoom drives the send loop's "Waiting for room" through a
// Drive on the generated mocks (MockStrategy, MockRoomModel whose every
// broker has no room, MockReporter), with Config.RoomWait 1 (every send's
// deposit pays for a wait), a 3 s budget and 2 retries: a sync send that
// would end for want of room (the no-room rule, or a retry the retry budget
// refuses after a busy answer) waits until its budget has one attempt's
// share left (2 s after it began), Next returning false and Parked saying
// until when, then makes its next attempt, paid for by the allowance; a
// send waits once. A send whose last answer was not busy, one with an
// earlier answer, one with too little budget left, and async sends never
// wait; neither does any send with RoomWait 0 (the reference's).
func TestLoopWaitsForRoom(t *testing.T) {
	const full = "[OVERLOAD]system busy, start flow control for a while"
	busy := producer.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Remark: full, Elapsed: ms(1),
		Err: &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: full}}
	ok := producer.Outcome{Class: latency.ClassAnswered, Result: producer.Result{Status: producer.SendOK}, Elapsed: ms(1)}
	notOK := producer.Outcome{Class: latency.ClassAnswered, Result: producer.Result{Status: producer.FlushDiskTimeout}, Elapsed: ms(1)}
	failed := producer.Outcome{Class: latency.ClassTransportFailed, Elapsed: ms(1),
		Err: &producer.TransportError{Class: latency.ClassTransportFailed, Err: errors.New("reset")}}
	slowBusy := busy
	slowBusy.Elapsed = 1500 * time.Millisecond

	for _, tt := range []struct {
		name     string
		kind     producer.Kind
		wait     float64 // Config.RoomWait
		budget   float64 // Config.RetryBudget (floor 0): 0.2 refuses a lone send's first retry
		another  bool    // RetryAnotherBrokerWhenNotStoreOK
		script   []producer.Outcome
		waitAt   int // the attempt the send waits before (-1: none)
		stop     producer.Stop
		attempts int
		err      error // what the Result's error matches (nil: no error)
	}{
		{"no room: waits, then stored", producer.KindSync, 1, 0, false,
			[]producer.Outcome{busy, busy, ok}, 2, producer.StopAnswered, 3, nil},
		{"no room: waits once", producer.KindSync, 1, 0, false,
			[]producer.Outcome{busy, busy, busy}, 2, producer.StopNoRoom, 3, producer.ErrNoRoom},
		{"retry budget refused after a busy answer: waits, not charged", producer.KindSync, 1, 0.2, false,
			[]producer.Outcome{busy, ok}, 1, producer.StopAnswered, 2, nil},
		{"retry budget refused after a failure: no wait", producer.KindSync, 1, 0.2, false,
			[]producer.Outcome{failed}, -1, producer.StopFailed, 1, producer.ErrRetryBudget},
		{"an earlier answer: returned, no wait", producer.KindSync, 1, 0, true,
			[]producer.Outcome{notOK, busy, busy}, -1, producer.StopAnswered, 3, nil},
		{"too little budget left: no wait", producer.KindSync, 1, 0, false,
			[]producer.Outcome{slowBusy, slowBusy}, -1, producer.StopNoRoom, 2, producer.ErrNoRoom},
		{"room wait off: ends for want of room", producer.KindSync, 0, 0, false,
			[]producer.Outcome{busy, busy}, -1, producer.StopNoRoom, 2, producer.ErrNoRoom},
		{"async: never waits", producer.KindAsync, 1, 0, false,
			[]producer.Outcome{failed, busy, busy}, -1, producer.StopNoRoom, 3, producer.ErrNoRoom},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			mstrat := mocks.NewMockStrategy(ctrl)
			rep := mocks.NewMockReporter(ctrl)
			room := mocks.NewMockRoomModel(ctrl)
			room.EXPECT().Room(gomock.Any()).Return(roomNowhere).AnyTimes()
			strat := roomStrategy{mstrat, room}
			qs, info := brokersABC(t)
			brokers := []string{"A", "B", "C"}
			var calls []any
			for i := range tt.attempts {
				calls = append(calls, mstrat.EXPECT().Select(info, gomock.Any()).
					Return(latency.Pick{Queue: qs[brokers[i%3]], Stage: latency.StageAvailable, Reporter: rep}, true))
			}
			gomock.InOrder(calls...)
			rep.EXPECT().Report(gomock.Any(), gomock.Any()).Return(latency.FaultUpdate{}).AnyTimes()

			cfg := producer.Reference5()
			cfg.MaxTimeoutPerRequest = time.Second
			cfg.RoomWait = tt.wait
			cfg.RetryBudget = tt.budget
			cfg.RetryAnotherBrokerWhenNotStoreOK = tt.another
			pol, err := producer.NewPolicy(cfg, latency.ModeV5)
			if err != nil {
				t.Fatal(err)
			}
			d := producer.NewDrive(strat, info, pol, tt.kind, t0)
			now, waitedAt := t0, -1
			for {
				for d.Next(now) {
					plan, started := d.Start(now)
					if !started {
						break
					}
					if plan.Attempt >= len(tt.script) {
						t.Fatalf("attempt %d past the script", plan.Attempt)
					}
					o := tt.script[plan.Attempt]
					if tt.kind == producer.KindAsync && plan.Attempt == 0 {
						d.Dispatched(0) // then it fails; the retries' busy answers come before hand-over
					}
					d.Finish(o)
					now = now.Add(o.Elapsed)
				}
				until, parked := d.Parked()
				if !parked {
					break
				}
				if waitedAt >= 0 {
					t.Fatalf("waits a second time, after attempt %d", d.Loop().Attempts())
				}
				waitedAt = d.Loop().Attempts()
				if want := t0.Add(2 * time.Second); !until.Equal(want) {
					t.Errorf("Parked until %v after the send began, want 2s (its budget less one attempt's share)", until.Sub(t0))
				}
				if d.Loop().Done() {
					t.Error("Done while waiting for room")
				}
				if d.Next(until.Add(-time.Nanosecond)) {
					t.Error("Next true before the wait is over")
				}
				if _, still := d.Parked(); !still {
					t.Error("Parked false before the wait is over")
				}
				now = until
			}
			l := d.Loop()
			if waitedAt != tt.waitAt || l.Waited() != (tt.waitAt >= 0) {
				t.Errorf("waited before attempt %d (Waited %v), want %d", waitedAt, l.Waited(), tt.waitAt)
			}
			if l.Stop() != tt.stop || l.Attempts() != tt.attempts {
				t.Fatalf("stop %s after %d attempts (brokers %v), want %s after %d",
					l.Stop(), l.Attempts(), l.BrokersSent(), tt.stop, tt.attempts)
			}
			_, err = l.Result()
			switch {
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("Result error = %v, want one matching %v", err, tt.err)
			case tt.stop == producer.StopAnswered && err != nil:
				t.Errorf("Result error = %v, want the answer", err)
			case tt.stop != producer.StopAnswered && err == nil:
				t.Error("Result error = nil, want the send's error")
			}
		})
	}
}

// TestDriveAbortWhileWaiting: a send waiting for room that its driver
// gives up on (the producer closed) ends at once with the error, as any
// aborted send, and is no longer parked.
func TestDriveAbortWhileWaiting(t *testing.T) {
	ctrl := gomock.NewController(t)
	mstrat := mocks.NewMockStrategy(ctrl)
	rep := mocks.NewMockReporter(ctrl)
	room := mocks.NewMockRoomModel(ctrl)
	room.EXPECT().Room(gomock.Any()).Return(roomNowhere).AnyTimes()
	qs := []route.MessageQueue{{Topic: "T", BrokerName: "A"}, {Topic: "T", BrokerName: "B"}}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	mstrat.EXPECT().Select(info, gomock.Any()).Return(latency.Pick{Queue: &qs[0], Reporter: rep}, true).Times(2)
	rep.EXPECT().Report(gomock.Any(), gomock.Any()).Return(latency.FaultUpdate{}).AnyTimes()
	cfg := producer.DefaultConfig()
	cfg.RoomWait = 1
	pol, err := producer.NewPolicy(cfg, latency.ModeV5)
	if err != nil {
		t.Fatal(err)
	}
	const full = "[OVERLOAD]system busy, start flow control for a while"
	busy := producer.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Remark: full, Elapsed: ms(1),
		Err: &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: full}}
	d := producer.NewDrive(roomStrategy{mstrat, room}, info, pol, producer.KindSync, t0)
	for d.Next(t0) {
		if _, ok := d.Start(t0); ok {
			d.Finish(busy)
		}
	}
	if _, parked := d.Parked(); !parked {
		t.Fatalf("not waiting for room: stop %s after %d attempts", d.Loop().Stop(), d.Loop().Attempts())
	}
	d.Abort(producer.ErrClosed)
	if _, parked := d.Parked(); parked || !d.Loop().Done() || d.Loop().Stop() != producer.StopAborted {
		t.Errorf("after Abort: parked %v, done %v, stop %s; want not parked, done, aborted", parked, d.Loop().Done(), d.Loop().Stop())
	}
	if _, err := d.Loop().Result(); !errors.Is(err, producer.ErrClosed) {
		t.Errorf("Result error = %v, want ErrClosed", err)
	}
	if d.Next(t0.Add(time.Hour)) {
		t.Error("Next true after Abort")
	}
}

// TestSendSyncWaitsForRoom: SendSync blocks on the producer's Clock while
// its send waits for room (here: the retry budget refused the retry after
// a busy answer), then makes its next attempt, and the observer hears the
// send waited; a send waiting when the producer closes ends with
// ErrClosed, and one whose ctx is done ends with the ctx's error, at once.
func TestSendSyncWaitsForRoom(t *testing.T) {
	const full = "[OVERLOAD]system busy, start flow control for a while"
	busy := call{broker: "B", lat: ms(1), err: &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: full}}
	cfg := producer.Reference5()
	cfg.MaxTimeoutPerRequest = time.Second
	cfg.RetryBudget = 0.2 // a lone send's first retry is refused
	cfg.RoomWait = 1
	type sent struct {
		res producer.Result
		err error
	}
	start := func(h *harness, ctx context.Context) chan sent {
		out := make(chan sent, 1)
		go func() {
			res, err := h.p.SendSync(ctx, msg())
			out <- sent{res, err}
		}()
		// The send waits on a clock timer, beside the route refresher's
		// ticker and the timer that ends B's isolation (the busy answer's).
		for h.clock.Pending() < 3 {
			runtime.Gosched()
		}
		return out
	}
	t.Run("waits, then stored", func(t *testing.T) {
		h := newHarness(t, harnessOpts{cfg: &cfg})
		h.expect(busy, call{broker: "C", lat: ms(1), res: producer.Result{Status: producer.SendOK}})
		out := start(h, context.Background())
		if when, ok := h.clock.NextDeadline(); !ok || !when.Equal(t0.Add(2*time.Second)) {
			t.Errorf("the wait ends at %v after the send began, want 2s", when.Sub(t0))
		}
		h.clock.Advance(2*time.Second - ms(1))
		got := <-out
		if got.err != nil || got.res.Status != producer.SendOK {
			t.Fatalf("SendSync() = %v, %v; want SendOK", got.res.Status, got.err)
		}
		if n := len(h.rec.sends); n != 1 || !h.rec.sends[0].Waited || h.rec.sends[0].Attempts != 2 {
			t.Errorf("send events %+v, want one that waited, with 2 attempts", h.rec.sends)
		}
	})
	t.Run("closed while waiting", func(t *testing.T) {
		h := newHarness(t, harnessOpts{cfg: &cfg})
		h.expect(busy)
		out := start(h, context.Background())
		if err := h.p.Close(); err != nil {
			t.Fatal(err)
		}
		if got := <-out; !errors.Is(got.err, producer.ErrClosed) {
			t.Errorf("SendSync() error = %v, want ErrClosed", got.err)
		}
	})
	t.Run("ctx done while waiting", func(t *testing.T) {
		h := newHarness(t, harnessOpts{cfg: &cfg})
		h.expect(busy)
		ctx, cancel := context.WithCancel(context.Background())
		out := start(h, ctx)
		cancel()
		if got := <-out; !errors.Is(got.err, context.Canceled) {
			t.Errorf("SendSync() error = %v, want context.Canceled", got.err)
		}
		if h.clock.Pending() != 2 {
			t.Errorf("%d clock timers pending, want the route refresher's and B's isolation's (the wait's stopped)", h.clock.Pending())
		}
	})
}
