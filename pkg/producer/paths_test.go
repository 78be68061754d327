package producer_test

// The producer's selection and exception paths, and the tests that drive
// them on the generated mocks (mocks/: MockTransport, MockRouteSource,
// MockStrategy, MockReporter, MockSelector, MockProducerObserver):
//
//	path                                              test
//	sync: each class x mode, its report and retry     TestSeamSyncReportsEveryClass
//	sync, async, oneway, ordered: each class x mode,
//	  its reports, retry and stop                     TestPathsEveryClass
//	async: dispatch, async_answer, async_resend       TestSeamAsyncPaths
//	each send stop (answered, failed, call_timeout,
//	  broker_error, cancelled, aborted, no_room)      TestPathsSendStops
//	a busy answer's retry x room, no room, model off,
//	  reference rules x sync, async (MockRoomModel)   TestLoopNoRoomRule
//	waiting for room: no room, a refused retry, each
//	  reason not to wait (MockRoomModel)              TestLoopWaitsForRoom
//	  Abort while waiting                             TestDriveAbortWhileWaiting
//	  SendSync's wait, Close and ctx while waiting    TestSendSyncWaitsForRoom
//	no queue from the strategy                        TestSeamNoQueue
//	route removed, told to the strategy               TestSeamRouteRemoved
//	route lookups through a RouteSource               routes_test.go, routefilter_test.go
//	ordered sends through a Selector                  ordered_test.go
//	the real strategy under a mocked Transport        harness_test.go's users (sync_test.go, async_test.go)

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
)

// How a path ends after its first attempt on A met a case's error: "retry"
// is a second attempt, on B (picked avoiding A), answered (StopAnswered
// after 2 attempts); any other value is the stop the send ends with after
// that one attempt.
type pathEnd [2]string // by mode: v5, v4

func both(s string) pathEnd { return pathEnd{s, s} }

const retried = "retry"

// observed is what a MockProducerObserver heard of one send.
type observed struct {
	mu       sync.Mutex
	attempts []producer.AttemptEvent
	sends    []producer.SendEvent
}

func observe(t *testing.T) (*observed, *mocks.MockProducerObserver) {
	obs := mocks.NewMockProducerObserver(gomock.NewController(t))
	o := &observed{}
	obs.EXPECT().OnAttempt(gomock.Any()).Do(func(ev producer.AttemptEvent) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.attempts = append(o.attempts, ev)
	}).AnyTimes()
	obs.EXPECT().OnSend(gomock.Any()).Do(func(ev producer.SendEvent) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.sends = append(o.sends, ev)
	}).AnyTimes()
	return o, obs
}

// send returns the one send event, failing the test unless there is
// exactly one.
func (o *observed) send(t *testing.T) producer.SendEvent {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.sends) != 1 {
		t.Fatalf("OnSend called %d times, want 1: %+v", len(o.sends), o.sends)
	}
	return o.sends[0]
}

// TestPathsEveryClass drives each outcome class through each path (sync,
// async, oneway, ordered) in each mode, on a mocked Strategy, Reporter,
// Transport and Observer: the first attempt, on A, meets the case's error;
// the test expects the report the pick makes (class and path; none for an
// ordered send, which has no pick), whether the send retries (on B, picked
// avoiding A, answered) and the stop it ends with, as the observer hears it.
// Every latency.Class has a case.
func TestPathsEveryClass(t *testing.T) {
	cases := []struct {
		name  string
		err   error // nil: answered SendOK
		class latency.Class
		code  int
		// Ends per path.
		sync, async, oneway, ordered pathEnd
	}{
		{name: "answered", class: latency.ClassAnswered,
			sync: both("answered"), async: both("answered"), oneway: both("answered"), ordered: both("answered")},
		{name: "busy code 2", err: &producer.BrokerError{Code: 2}, class: latency.ClassBusy, code: 2,
			sync: pathEnd{retried, "broker_error"}, async: both("broker_error"), oneway: pathEnd{"failed", "broker_error"}, ordered: both("broker_error")},
		{name: "broker retry code 17", err: &producer.BrokerError{Code: 17}, class: latency.ClassBroker, code: 17,
			sync: both(retried), async: both("broker_error"), oneway: both("failed"), ordered: both("broker_error")},
		{name: "broker other code", err: &producer.BrokerError{Code: 999}, class: latency.ClassBroker, code: 999,
			sync: both("broker_error"), async: both("broker_error"), oneway: both("broker_error"), ordered: both("broker_error")},
		{name: "transport failed", err: &producer.TransportError{Class: latency.ClassTransportFailed, Err: errors.New("reset")}, class: latency.ClassTransportFailed,
			sync: both(retried), async: both(retried), oneway: both("failed"), ordered: both("failed")},
		{name: "transport timeout", err: context.DeadlineExceeded, class: latency.ClassTransportTimeout,
			sync: both(retried), async: both(retried), oneway: both("failed"), ordered: both("failed")},
		{name: "transport not sent", err: &producer.TransportError{Class: latency.ClassTransportNotSent, Err: errors.New("refused")}, class: latency.ClassTransportNotSent,
			sync: both(retried), async: both(retried), oneway: both("failed"), ordered: both("failed")},
		{name: "throttled", err: &producer.TransportError{Class: latency.ClassThrottled, Err: errors.New("too many requests")}, class: latency.ClassThrottled,
			sync: both(retried), async: pathEnd{"failed", retried}, oneway: both("failed"), ordered: both("failed")},
		{name: "unknown error", err: errors.New("boom"), class: latency.ClassTransportFailed,
			sync: both(retried), async: both(retried), oneway: both("failed"), ordered: both("failed")},
		{name: "client", err: &producer.ClientError{Err: errors.New("no address")}, class: latency.ClassClient,
			sync: both(retried), async: both("failed"), oneway: both("failed"), ordered: both("failed")},
		{name: "cancelled", err: producer.ErrInterrupted, class: latency.ClassCancelled,
			sync: both("cancelled"), async: both("cancelled"), oneway: both("cancelled"), ordered: both("cancelled")},
	}
	covered := map[latency.Class]bool{}
	for _, tc := range cases {
		covered[tc.class] = true
	}
	for _, c := range latency.Classes() {
		if !covered[c] {
			t.Errorf("no case meets class %s: say what each path does with it", c)
		}
	}
	modes := []latency.Mode{latency.ModeV5, latency.ModeV4}
	for _, tc := range cases {
		paths := []struct {
			name string
			end  pathEnd
		}{{"sync", tc.sync}, {"async", tc.async}, {"oneway", tc.oneway}, {"ordered", tc.ordered}}
		for _, path := range paths {
			for mi, mode := range modes {
				t.Run(fmt.Sprintf("%s/%s/%s", path.name, mode, tc.name), func(t *testing.T) {
					cfg := producer.Reference5()
					if mode == latency.ModeV4 {
						cfg = producer.Reference4()
					}
					obs, mobs := observe(t)
					s := newSeam(t, mode, cfg, producer.WithObserver(mobs))
					end := path.end[mi]
					res := producer.Result{}
					if tc.err == nil {
						res.Status = producer.SendOK
					}
					first := latency.Outcome{Class: tc.class, Code: tc.code, Path: latency.PathSend}
					if path.name == "async" && tc.class != latency.ClassClient {
						first.Path = latency.PathAsyncAnswer
					}
					var calls []any
					if path.name != "ordered" {
						calls = append(calls, s.pick(latency.PickInfo{}, "A"))
						if path.name == "async" { // the dispatch report, before the call
							calls = append(calls, s.report("A", latency.Outcome{Class: latency.ClassAnswered, Path: latency.PathSend}))
						}
					}
					calls = append(calls, s.send("A", ms(20), res, tc.err))
					if path.name != "ordered" {
						calls = append(calls, s.report("A", first))
					}
					if end == retried {
						in := latency.PickInfo{LastBroker: "A", ResetIndex: path.name == "sync" && mode == latency.ModeV5, LastClass: tc.class}
						again := latency.Outcome{Class: latency.ClassAnswered, Path: latency.PathSend}
						if path.name == "async" {
							again.Path = latency.PathAsyncAnswer
						}
						calls = append(calls, s.pick(in, "B"),
							s.send("B", ms(5), producer.Result{Status: producer.SendOK}, nil),
							s.report("B", again))
					}
					gomock.InOrder(calls...)

					var err error
					ctx := context.Background()
					switch path.name {
					case "sync":
						_, err = s.p.SendSync(ctx, msg())
					case "oneway":
						err = s.p.SendOneway(ctx, msg())
					case "ordered":
						_, err = s.p.SendToQueue(ctx, msg(), *s.qs["A"])
					case "async":
						done := make(chan struct{})
						if serr := s.p.SendAsync(ctx, msg(), func(_ producer.Result, e error) { err = e; close(done) }); serr != nil {
							t.Fatal(serr)
						}
						waitCallback(t, done)
					}

					ev := obs.send(t)
					wantStop, wantAttempts := end, 1
					if end == retried {
						wantStop, wantAttempts = "answered", 2
					}
					if ev.Stop.String() != wantStop || ev.Attempts != wantAttempts || ev.Ordered != (path.name == "ordered") {
						t.Errorf("OnSend(stop %s, %d attempts, ordered %t), want stop %s after %d", ev.Stop, ev.Attempts, ev.Ordered, wantStop, wantAttempts)
					}
					if (err == nil) != (wantStop == "answered") {
						t.Errorf("send error = %v with stop %s", err, ev.Stop)
					}
					if tc.err != nil && wantStop != "answered" && !errors.Is(err, tc.err) {
						t.Errorf("send error = %v, want one wrapping %v", err, tc.err)
					}
					var se *producer.SendError
					if err != nil && (!errors.As(err, &se) || se.Stop != ev.Stop) {
						t.Errorf("send error = %v, want a *SendError with the observed stop %s", err, ev.Stop)
					}
					wantEvents := wantAttempts
					if path.name == "ordered" {
						wantEvents = 0 // no pick: no attempt events
					}
					obs.mu.Lock()
					defer obs.mu.Unlock()
					if len(obs.attempts) != wantEvents {
						t.Errorf("OnAttempt called %d times, want %d", len(obs.attempts), wantEvents)
					}
					if len(obs.attempts) > 0 && obs.attempts[0].Queue.BrokerName != "A" {
						t.Errorf("first attempt event on %s, want A", obs.attempts[0].Queue.BrokerName)
					}
				})
			}
		}
	}
}

// waitCallback waits for an async send's callback to close done. The ten
// seconds are a guard against a hang, not a timing: a mock call that failed
// on the producer's goroutine ends that goroutine before the callback runs,
// and with a minute a handful of such failures ran the package into go
// test's ten-minute timeout, which reports a goroutine dump instead of the
// failed expectations.
func waitCallback(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the async callback never ran (a mock call failed on the producer's goroutine?)")
	}
}

// TestPathsSendStops ends a sync send with each Stop, on the mocked
// Strategy, Transport and Observer, and checks the error's Stop and the
// observer's agree.
func TestPathsSendStops(t *testing.T) {
	failed := &producer.TransportError{Class: latency.ClassTransportFailed, Err: errors.New("reset")}
	tests := []struct {
		stop  producer.Stop
		room  bool // the strategy is a RoomModel (newRoomSeam)
		setup func(t *testing.T, s *seam) context.Context
	}{
		{producer.StopAnswered, false, func(t *testing.T, s *seam) context.Context {
			s.pick(latency.PickInfo{}, "A")
			s.send("A", ms(1), producer.Result{Status: producer.SendOK}, nil)
			s.report("A", latency.Outcome{Class: latency.ClassAnswered, Path: latency.PathSend})
			return context.Background()
		}},
		{producer.StopFailed, false, func(t *testing.T, s *seam) context.Context {
			gomock.InOrder(
				s.pick(latency.PickInfo{}, "A"), s.send("A", ms(1), producer.Result{}, failed),
				s.report("A", latency.Outcome{Class: latency.ClassTransportFailed, Path: latency.PathSend}),
				s.pick(retriedAfter(latency.ClassTransportFailed), "B"), s.send("B", ms(1), producer.Result{}, failed),
				s.report("B", latency.Outcome{Class: latency.ClassTransportFailed, Path: latency.PathSend}),
				s.pick(latency.PickInfo{LastBroker: "B", ResetIndex: true, LastClass: latency.ClassTransportFailed}, "C"), s.send("C", ms(1), producer.Result{}, failed),
				s.report("C", latency.Outcome{Class: latency.ClassTransportFailed, Path: latency.PathSend}),
			)
			return context.Background()
		}},
		{producer.StopCallTimeout, false, func(t *testing.T, s *seam) context.Context {
			// The first attempt takes longer than the whole budget: the
			// retry is picked, and refused at its start.
			gomock.InOrder(
				s.pick(latency.PickInfo{}, "A"), s.send("A", s.p.Policy().Timeout()+ms(1), producer.Result{}, failed),
				s.report("A", latency.Outcome{Class: latency.ClassTransportFailed, Path: latency.PathSend}),
				s.pick(retriedAfter(latency.ClassTransportFailed), "B"),
			)
			return context.Background()
		}},
		{producer.StopBrokerError, false, func(t *testing.T, s *seam) context.Context {
			s.pick(latency.PickInfo{}, "A")
			s.send("A", ms(1), producer.Result{}, &producer.BrokerError{Code: 999})
			s.report("A", latency.Outcome{Class: latency.ClassBroker, Code: 999, Path: latency.PathSend})
			return context.Background()
		}},
		{producer.StopCancelled, false, func(t *testing.T, s *seam) context.Context {
			s.pick(latency.PickInfo{}, "A")
			s.send("A", ms(1), producer.Result{}, producer.ErrInterrupted)
			s.report("A", latency.Outcome{Class: latency.ClassCancelled, Path: latency.PathSend})
			return context.Background()
		}},
		{producer.StopNoRoom, true, func(t *testing.T, s *seam) context.Context {
			// A second full broker's busy answer, and no room elsewhere: not
			// retried (the first full answer is retried unasked).
			const full = "[OVERLOAD]system busy"
			busy := latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Remark: full, Path: latency.PathSend}
			gomock.InOrder(
				s.pick(latency.PickInfo{}, "A"),
				s.send("A", ms(1), producer.Result{}, &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: full}),
				s.report("A", busy),
				s.pick(retriedAfter(latency.ClassBusy), "B"),
				s.send("B", ms(1), producer.Result{}, &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: full}),
				s.report("B", busy),
				s.room.EXPECT().Room("B").Return(roomNowhere),
			)
			return context.Background()
		}},
		{producer.StopAborted, false, func(t *testing.T, s *seam) context.Context {
			// ctx done before the first attempt: no pick, no call.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	}
	if len(tests) != len(producer.Stops())-1 {
		t.Fatalf("%d stops tested, want every Stop but none (%d)", len(tests), len(producer.Stops())-1)
	}
	for _, tt := range tests {
		t.Run(tt.stop.String(), func(t *testing.T) {
			obs, mobs := observe(t)
			newS := newSeam
			if tt.room {
				newS = newRoomSeam
			}
			s := newS(t, latency.ModeV5, producer.Reference5(), producer.WithObserver(mobs))
			ctx := tt.setup(t, s)
			_, err := s.p.SendSync(ctx, msg())
			ev := obs.send(t)
			if ev.Stop != tt.stop {
				t.Errorf("OnSend stop = %s, want %s", ev.Stop, tt.stop)
			}
			var se *producer.SendError
			switch {
			case tt.stop == producer.StopAnswered:
				if err != nil {
					t.Errorf("SendSync() error = %v, want nil", err)
				}
			case !errors.As(err, &se) || se.Stop != tt.stop:
				t.Errorf("SendSync() error = %v, want a *SendError with stop %s", err, tt.stop)
			}
			if tt.stop == producer.StopCallTimeout && !errors.Is(err, producer.ErrCallTimeout) {
				t.Errorf("SendSync() error = %v, want one matching ErrCallTimeout", err)
			}
			if tt.stop == producer.StopNoRoom && !errors.Is(err, producer.ErrNoRoom) {
				t.Errorf("SendSync() error = %v, want one matching ErrNoRoom", err)
			}
		})
	}
}
