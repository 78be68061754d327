package producer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// seam is a producer over a mock Strategy whose picks report to a mock
// Reporter, a mock Transport and a manual clock: the producer's whole
// dealing with its selector is Select, Mode, RouteChanged/RouteRemoved and
// the pick's Done.
type seam struct {
	clock *clock.Manual
	strat *mocks.MockStrategy
	room  *mocks.MockRoomModel // nil unless newRoomSeam
	rep   *mocks.MockReporter
	tr    *mocks.MockTransport
	p     *producer.Producer
	qs    map[string]*route.MessageQueue
}

func newSeam(t *testing.T, mode latency.Mode, cfg producer.Config, opts ...producer.Option) *seam {
	t.Helper()
	return newSeamOf(t, mode, cfg, false, opts...)
}

// newRoomSeam is newSeam over a mock Strategy that is also a mock
// RoomModel (seam.room).
func newRoomSeam(t *testing.T, mode latency.Mode, cfg producer.Config, opts ...producer.Option) *seam {
	t.Helper()
	return newSeamOf(t, mode, cfg, true, opts...)
}

func newSeamOf(t *testing.T, mode latency.Mode, cfg producer.Config, withRoom bool, opts ...producer.Option) *seam {
	t.Helper()
	ctrl := gomock.NewController(t)
	s := &seam{
		clock: clock.NewManual(t0),
		strat: mocks.NewMockStrategy(ctrl),
		rep:   mocks.NewMockReporter(ctrl),
		tr:    mocks.NewMockTransport(ctrl),
		qs:    map[string]*route.MessageQueue{},
	}
	var strat producer.Strategy = s.strat
	if withRoom {
		s.room = mocks.NewMockRoomModel(ctrl)
		strat = roomStrategy{s.strat, s.room}
	}
	for _, b := range []string{"A", "B", "C"} {
		s.qs[b] = &route.MessageQueue{Topic: "T", BrokerName: b}
	}
	s.strat.EXPECT().Mode().Return(mode).AnyTimes()
	var routes producer.StaticRoutes
	routes.SetQueues("T", map[string]int{"A": 1, "B": 1, "C": 1})
	p, err := producer.New(s.tr, &routes, strat, cfg, append([]producer.Option{producer.WithClock(s.clock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	s.p = p
	s.strat.EXPECT().RouteChanged(gomock.Any()).Do(func(info *route.PublishInfo) {
		if info.Topic() != "T" || info.Len() != 3 {
			t.Errorf("RouteChanged(%s, %d queues), want T's 3", info.Topic(), info.Len())
		}
	})
	if _, err := p.PublishInfo(context.Background(), "T"); err != nil {
		t.Fatal(err)
	}
	return s
}

// pick expects one Select with in and answers broker's queue.
func (s *seam) pick(in latency.PickInfo, broker string) *mocks.MockStrategySelectCall {
	return s.strat.EXPECT().Select(gomock.Any(), in).Return(latency.Pick{Queue: s.qs[broker], Stage: latency.StageAvailable, Reporter: s.rep}, true)
}

// report expects one report of o (latency and error not compared) on
// broker's pick.
func (s *seam) report(broker string, o latency.Outcome) *mocks.MockReporterReportCall {
	return s.rep.EXPECT().Report(gomock.Cond(func(p latency.Pick) bool { return p.Queue == s.qs[broker] }), outcomeLike(o)).
		Return(latency.FaultUpdate{Broker: broker})
}

// outcomeLike matches an Outcome by class, path, code and remark.
func outcomeLike(want latency.Outcome) gomock.Matcher {
	return gomock.Cond(func(o latency.Outcome) bool {
		return o.Class == want.Class && o.Path == want.Path && o.Code == want.Code && o.Remark == want.Remark
	})
}

// send expects one Transport call on broker that takes lat and returns
// (res, err).
func (s *seam) send(broker string, lat time.Duration, res producer.Result, err error) *mocks.MockTransportSendCall {
	return s.tr.EXPECT().Send(gomock.Any(), gomock.Cond(func(a producer.Attempt) bool { return a.Queue.BrokerName == broker })).
		DoAndReturn(func(context.Context, producer.Attempt) (producer.Result, error) {
			s.clock.Advance(lat)
			return res, err
		})
}

var (
	retryPick = latency.PickInfo{LastBroker: "A", ResetIndex: true}
	sendPath  = latency.PathSend
)

// retriedAfter is a v5 sync retry's pick after broker A's attempt met class.
func retriedAfter(class latency.Class) latency.PickInfo {
	pi := retryPick
	pi.LastClass = class
	return pi
}

// TestSeamSyncReportsEveryClass checks, per mode, that what a Transport
// returns reaches the strategy as one Outcome through the pick, with its
// class (busy told from a broker error), code and remark, and that the send
// loop alone decides the retry: the first attempt on A meets the error, the
// retry on B is answered.
func TestSeamSyncReportsEveryClass(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		want  latency.Outcome
		retry map[latency.Mode]bool
	}{
		{"busy REJECTREQUEST", &producer.BrokerError{Code: 2, Remark: "[REJECTREQUEST]system busy"},
			latency.Outcome{Class: latency.ClassBusy, Code: 2, Remark: "[REJECTREQUEST]system busy"}, map[latency.Mode]bool{latency.ModeV5: true}},
		{"busy bare code 2", &producer.BrokerError{Code: 2},
			latency.Outcome{Class: latency.ClassBusy, Code: 2}, map[latency.Mode]bool{latency.ModeV5: true}},
		{"busy proxy", &producer.BrokerError{Code: latency.CodeTooManyRequests},
			latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeTooManyRequests}, nil},
		{"broker retry code", &producer.BrokerError{Code: 17, Remark: "topic not exist"},
			latency.Outcome{Class: latency.ClassBroker, Code: 17, Remark: "topic not exist"}, map[latency.Mode]bool{latency.ModeV5: true, latency.ModeV4: true}},
		{"broker other code", &producer.BrokerError{Code: 999},
			latency.Outcome{Class: latency.ClassBroker, Code: 999}, nil},
		{"transport failed", &producer.TransportError{Class: latency.ClassTransportFailed, Err: errors.New("reset")},
			latency.Outcome{Class: latency.ClassTransportFailed}, map[latency.Mode]bool{latency.ModeV5: true, latency.ModeV4: true}},
		{"transport timeout", context.DeadlineExceeded,
			latency.Outcome{Class: latency.ClassTransportTimeout}, map[latency.Mode]bool{latency.ModeV5: true, latency.ModeV4: true}},
		{"transport not sent", &producer.TransportError{Class: latency.ClassTransportNotSent, Err: errors.New("refused")},
			latency.Outcome{Class: latency.ClassTransportNotSent}, map[latency.Mode]bool{latency.ModeV5: true, latency.ModeV4: true}},
		{"throttled", &producer.TransportError{Class: latency.ClassThrottled, Err: errors.New("too many requests")},
			latency.Outcome{Class: latency.ClassThrottled}, map[latency.Mode]bool{latency.ModeV5: true, latency.ModeV4: true}},
		{"unknown error", errors.New("boom"),
			latency.Outcome{Class: latency.ClassTransportFailed}, map[latency.Mode]bool{latency.ModeV5: true, latency.ModeV4: true}},
		{"client", &producer.ClientError{Err: errors.New("no address")},
			latency.Outcome{Class: latency.ClassClient}, map[latency.Mode]bool{latency.ModeV5: true, latency.ModeV4: true}},
		{"cancelled", producer.ErrInterrupted,
			latency.Outcome{Class: latency.ClassCancelled}, nil},
	} {
		for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
			t.Run(fmt.Sprintf("%s/%s", mode, tt.name), func(t *testing.T) {
				cfg := producer.Reference5()
				if mode == latency.ModeV4 {
					cfg = producer.Reference4()
				}
				s := newSeam(t, mode, cfg)
				tt.want.Path = sendPath
				retry := tt.retry[mode]
				calls := []any{
					s.pick(latency.PickInfo{}, "A"),
					s.send("A", ms(20), producer.Result{}, tt.err),
					s.report("A", tt.want),
				}
				if retry {
					pi := retryPick
					pi.LastClass = tt.want.Class
					if mode == latency.ModeV4 {
						pi.ResetIndex = false // 4.9.8 never resets the index
					}
					calls = append(calls,
						s.pick(pi, "B"),
						s.send("B", ms(5), producer.Result{Status: producer.SendOK}, nil),
						s.report("B", latency.Outcome{Class: latency.ClassAnswered, Path: sendPath}))
				}
				gomock.InOrder(calls...)
				res, err := s.p.SendSync(context.Background(), msg())
				if retry {
					if err != nil || res.Attempts != 2 || !slices.Equal(res.Brokers, []string{"A", "B"}) {
						t.Errorf("SendSync() = %+v, %v; want SendOK after 2 attempts on [A B]", res, err)
					}
					return
				}
				var se *producer.SendError
				if !errors.As(err, &se) || se.Attempts != 1 || !errors.Is(err, tt.err) {
					t.Errorf("SendSync() error = %v, want a SendError after 1 attempt wrapping %v", err, tt.err)
				}
			})
		}
	}
}

// TestSeamAsyncPaths checks that an async send reports its hand-over
// (answered on the send path, latency 0), the failure of the request handed
// over (the async-answer path), then a retry picked avoiding the failed
// broker (no index reset) whose request cannot be handed over (the
// async-resend path), then an answered retry, which makes no dispatch report.
func TestSeamAsyncPaths(t *testing.T) {
	s := newSeam(t, latency.ModeV5, producer.Reference5())
	timeout := &producer.TransportError{Class: latency.ClassTransportTimeout, Err: errors.New("timeout")}
	client := &producer.ClientError{Err: errors.New("no address")}
	gomock.InOrder(
		s.pick(latency.PickInfo{}, "A"),
		s.report("A", latency.Outcome{Class: latency.ClassAnswered, Path: latency.PathSend}).Do(func(_ latency.Pick, o latency.Outcome) latency.FaultUpdate {
			if o.Latency != 0 {
				t.Errorf("dispatch report latency %v, want 0", o.Latency)
			}
			return latency.FaultUpdate{}
		}),
		s.send("A", ms(30), producer.Result{}, timeout),
		s.report("A", latency.Outcome{Class: latency.ClassTransportTimeout, Path: latency.PathAsyncAnswer}),
		s.pick(latency.PickInfo{LastBroker: "A", LastClass: latency.ClassTransportTimeout}, "B"),
		s.send("B", ms(1), producer.Result{}, client),
		s.report("B", latency.Outcome{Class: latency.ClassClient, Path: latency.PathAsyncResend}),
		s.pick(latency.PickInfo{LastBroker: "B", LastClass: latency.ClassClient}, "C"),
		s.send("C", ms(2), producer.Result{Status: producer.SendOK}, nil),
		s.report("C", latency.Outcome{Class: latency.ClassAnswered, Path: latency.PathAsyncAnswer}),
	)
	done := make(chan struct{})
	var res producer.Result
	var err error
	if serr := s.p.SendAsync(context.Background(), msg(), func(r producer.Result, e error) {
		res, err = r, e
		close(done)
	}); serr != nil {
		t.Fatal(serr)
	}
	waitCallback(t, done)
	if err != nil || res.Attempts != 3 || !slices.Equal(res.Brokers, []string{"A", "B", "C"}) {
		t.Errorf("callback(%+v, %v), want SendOK after 3 attempts on [A B C]", res, err)
	}
}

// TestSeamNoQueue checks that a strategy without a queue ends the send with
// a *RouteError and reports nothing.
func TestSeamNoQueue(t *testing.T) {
	s := newSeam(t, latency.ModeV5, producer.Reference5())
	s.strat.EXPECT().Select(gomock.Any(), latency.PickInfo{}).Return(latency.Pick{}, false)
	_, err := s.p.SendSync(context.Background(), msg())
	var re *producer.RouteError
	if !errors.As(err, &re) || re.Topic != "T" {
		t.Errorf("SendSync() error = %v, want a *RouteError for T", err)
	}
}

// TestSeamRouteRemoved checks that the producer tells its strategy of a
// route that went away.
func TestSeamRouteRemoved(t *testing.T) {
	ctrl := gomock.NewController(t)
	strat := mocks.NewMockStrategy(ctrl)
	strat.EXPECT().Mode().Return(latency.ModeV5).AnyTimes()
	var routes producer.StaticRoutes
	routes.SetQueues("T", map[string]int{"A": 1})
	p, err := producer.New(mocks.NewMockTransport(ctrl), &routes, strat, producer.Reference5(), producer.WithClock(clock.NewManual(t0)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	gomock.InOrder(
		strat.EXPECT().RouteChanged(gomock.Any()),
		strat.EXPECT().RouteRemoved("T"),
	)
	if _, err := p.PublishInfo(context.Background(), "T"); err != nil {
		t.Fatal(err)
	}
	routes.Set("T", nil)
	_ = p.RefreshRoutes(context.Background())
	if p.Strategy() != nil {
		t.Error("Strategy() of a producer over another selector is not nil")
	}
	if p.Picker() != strat {
		t.Error("Picker() is not the Strategy given to New")
	}
}

// TestSuccessResultAttempts checks that an answer says how many attempts the
// send took and on which brokers, as a SendError does (issue 17), with the
// real strategy: the first answered costs nothing (Brokers nil).
func TestSuccessResultAttempts(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	h.tr.EXPECT().Send(gomock.Any(), gomock.Any()).Return(producer.Result{Status: producer.SendOK}, nil)
	res, err := h.p.SendSync(ctx, msg())
	if err != nil || res.Attempts != 1 || res.Brokers != nil {
		t.Errorf("SendSync() = %+v, %v; want 1 attempt, Brokers nil", res, err)
	}
	gomock.InOrder(
		h.tr.EXPECT().Send(gomock.Any(), gomock.Any()).Return(producer.Result{}, &producer.BrokerError{Code: 2}),
		h.tr.EXPECT().Send(gomock.Any(), gomock.Any()).Return(producer.Result{}, context.DeadlineExceeded),
		h.tr.EXPECT().Send(gomock.Any(), gomock.Any()).Return(producer.Result{Status: producer.SendOK}, nil),
	)
	res, err = h.p.SendSync(ctx, msg())
	if err != nil || res.Attempts != 3 || len(res.Brokers) != 3 || res.Brokers[2] != res.Queue.BrokerName {
		t.Errorf("SendSync() = %+v, %v; want 3 attempts, the last on the answering broker", res, err)
	}
	if res.Brokers[0] == res.Brokers[1] || res.Brokers[1] == res.Brokers[2] {
		t.Errorf("Brokers = %v: a retry went back to the broker that just failed", res.Brokers)
	}
}
