package producer_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// roomStrategy is a mocked Strategy with a mocked capacity model.
type roomStrategy struct {
	*mocks.MockStrategy
	*mocks.MockRoomModel
}

// The strategies of TestLoopNoRoomRule's columns.
const (
	colRoom   = iota // v5, a RoomModel that finds room elsewhere
	colNoRoom        // v5, a RoomModel that finds none
	colModel         // v5, a Strategy that is not a RoomModel: the capacity model off
	colRef           // v4 (the reference's rules), a RoomModel that finds no room
	numCols
)

var colNames = [numCols]string{"room", "no room", "model off", "reference v4"}

// roomStep is one attempt of a scripted send: the broker picked and what it
// met; handOver is true when an async attempt's request was handed over
// (Drive.Dispatched) before the outcome.
type roomStep struct {
	broker   string
	out      producer.Outcome
	handOver bool
}

// roomEnd is how a scripted send ends in one column: its stop, its
// attempts, and the broker the strategy's Room was asked about
// ("" for never).
type roomEnd struct {
	stop     producer.Stop
	attempts int
	asked    string
}

// TestLoopNoRoomRule drives the send loop's retry decision for a busy answer
// through a Drive on the generated mocks (MockStrategy, MockRoomModel,
// MockReporter), for sync and async sends, in four columns: a strategy whose
// capacity model finds room elsewhere, one that finds none, one without a
// model, and the v4 reference rules. The model is asked only about a busy
// answer whose remark says the broker's send pool was full
// ("[OVERLOAD]...", latency.FullRemark), that the mode's rules would retry,
// and that is the send's second such answer (one full broker is retried
// whatever the model says), once, about that attempt's broker; "no room"
// ends the send with StopNoRoom (an error matching ErrNoRoom and wrapping
// the busy answer's *BrokerError), or with an earlier answer.
func TestLoopNoRoomRule(t *testing.T) {
	const full = "[OVERLOAD]system busy, start flow control for a while"
	const queued = "[TIMEOUT_CLEAN_QUEUE]broker busy, period in queue: 200ms, size of queue: 40"
	busy := func(remark string) producer.Outcome {
		return producer.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Remark: remark, Elapsed: ms(1),
			Err: &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: remark}}
	}
	ok := producer.Outcome{Class: latency.ClassAnswered, Result: producer.Result{Status: producer.SendOK}, Elapsed: ms(1)}
	notOK := producer.Outcome{Class: latency.ClassAnswered, Result: producer.Result{Status: producer.FlushDiskTimeout}, Elapsed: ms(1)}
	failed := producer.Outcome{Class: latency.ClassTransportFailed, Elapsed: ms(1),
		Err: &producer.TransportError{Class: latency.ClassTransportFailed, Err: errors.New("reset")}}
	same := func(e roomEnd) [numCols]roomEnd { return [numCols]roomEnd{e, e, e, e} }

	for _, tt := range []struct {
		name         string
		kind         producer.Kind
		retryAnother bool
		retries      int // RetryTimes and AsyncRetryTimes; 0: the reference's 2
		script       []roomStep
		want         [numCols]roomEnd
	}{
		{"sync, full once", producer.KindSync, false, 0,
			[]roomStep{{"A", busy(full), false}, {"B", ok, false}},
			[numCols]roomEnd{
				colRoom:   {producer.StopAnswered, 2, ""}, // one full broker is retried, room or not
				colNoRoom: {producer.StopAnswered, 2, ""},
				colModel:  {producer.StopAnswered, 2, ""},
				colRef:    {producer.StopBrokerError, 1, ""}, // code 2 is not a 4.x retry code
			}},
		{"sync, full twice", producer.KindSync, false, 0,
			[]roomStep{{"A", busy(full), false}, {"B", busy(full), false}, {"C", ok, false}},
			[numCols]roomEnd{
				colRoom:   {producer.StopAnswered, 3, "B"},
				colNoRoom: {producer.StopNoRoom, 2, "B"},
				colModel:  {producer.StopAnswered, 3, ""},
				colRef:    {producer.StopBrokerError, 1, ""},
			}},
		{"sync, queue timeouts", producer.KindSync, false, 0,
			[]roomStep{{"A", busy(queued), false}, {"B", busy(queued), false}, {"C", ok, false}},
			[numCols]roomEnd{
				colRoom:   {producer.StopAnswered, 3, ""},
				colNoRoom: {producer.StopAnswered, 3, ""},
				colModel:  {producer.StopAnswered, 3, ""},
				colRef:    {producer.StopBrokerError, 1, ""},
			}},
		{"sync, a queue timeout then full", producer.KindSync, false, 0,
			[]roomStep{{"A", busy(queued), false}, {"B", busy(full), false}, {"C", ok, false}},
			[numCols]roomEnd{
				colRoom:   {producer.StopAnswered, 3, ""}, // only full answers count
				colNoRoom: {producer.StopAnswered, 3, ""},
				colModel:  {producer.StopAnswered, 3, ""},
				colRef:    {producer.StopBrokerError, 1, ""},
			}},
		{"sync, full twice after an earlier answer", producer.KindSync, true, 3,
			[]roomStep{{"A", notOK, false}, {"B", busy(full), false}, {"C", busy(full), false}, {"A", ok, false}},
			[numCols]roomEnd{
				colRoom:   {producer.StopAnswered, 4, "C"},
				colNoRoom: {producer.StopAnswered, 3, "C"}, // the earlier answer
				colModel:  {producer.StopAnswered, 4, ""},
				colRef:    {producer.StopAnswered, 2, ""},
			}},
		{"async, full after hand-over", producer.KindAsync, false, 0,
			[]roomStep{{"A", busy(full), true}},
			same(roomEnd{producer.StopBrokerError, 1, ""})}, // never retried
		{"async, full once on a retry before hand-over", producer.KindAsync, false, 0,
			[]roomStep{{"A", failed, true}, {"B", busy(full), false}, {"C", ok, true}},
			same(roomEnd{producer.StopAnswered, 3, ""})},
		{"async, full twice before hand-over", producer.KindAsync, false, 3,
			[]roomStep{{"A", failed, true}, {"B", busy(full), false}, {"C", busy(full), false}, {"A", ok, true}},
			[numCols]roomEnd{
				colRoom:   {producer.StopAnswered, 4, "C"},
				colNoRoom: {producer.StopNoRoom, 3, "C"},
				colModel:  {producer.StopAnswered, 4, ""},
				colRef:    {producer.StopNoRoom, 3, "C"}, // the rule is the strategy's, whatever the mode
			}},
	} {
		for col := range numCols {
			t.Run(tt.name+"/"+colNames[col], func(t *testing.T) {
				want := tt.want[col]
				ctrl := gomock.NewController(t)
				mode := latency.ModeV5
				if col == colRef {
					mode = latency.ModeV4
				}
				mstrat := mocks.NewMockStrategy(ctrl)
				rep := mocks.NewMockReporter(ctrl)
				var strat producer.Strategy = mstrat
				if col != colModel {
					room := mocks.NewMockRoomModel(ctrl)
					if want.asked != "" {
						acct := roomNowhere
						if col == colRoom {
							acct = roomElsewhere
						}
						room.EXPECT().Room(want.asked).Return(acct)
					}
					strat = roomStrategy{mstrat, room} // any other call fails the test
				}
				qs, info := brokersABC(t)
				var calls []any
				for i := range want.attempts {
					b := tt.script[i].broker
					calls = append(calls,
						mstrat.EXPECT().Select(info, gomock.Any()).Return(latency.Pick{Queue: qs[b], Stage: latency.StageAvailable, Reporter: rep}, true))
				}
				gomock.InOrder(calls...)
				rep.EXPECT().Report(gomock.Any(), gomock.Any()).Return(latency.FaultUpdate{}).AnyTimes()

				cfg := producer.Reference5()
				cfg.RetryAnotherBrokerWhenNotStoreOK = tt.retryAnother
				if tt.retries > 0 {
					cfg.RetryTimes, cfg.AsyncRetryTimes = tt.retries, tt.retries
				}
				pol, err := producer.NewPolicy(cfg, mode)
				if err != nil {
					t.Fatal(err)
				}
				d := producer.NewDrive(strat, info, pol, tt.kind, t0)
				now := t0
				for d.Next(now) {
					plan, started := d.Start(now)
					if !started {
						break
					}
					if plan.Attempt >= len(tt.script) {
						t.Fatalf("attempt %d past the script", plan.Attempt)
					}
					st := tt.script[plan.Attempt]
					if st.handOver {
						d.Dispatched(0)
					}
					d.Finish(st.out)
					now = now.Add(st.out.Elapsed)
				}
				l := d.Loop()
				if l.Stop() != want.stop || l.Attempts() != want.attempts {
					t.Fatalf("stop %s after %d attempts (brokers %v), want %s after %d",
						l.Stop(), l.Attempts(), l.BrokersSent(), want.stop, want.attempts)
				}
				_, err = l.Result()
				if want.stop != producer.StopNoRoom {
					if errors.Is(err, producer.ErrNoRoom) {
						t.Errorf("Result error = %v matches ErrNoRoom", err)
					}
					return
				}
				var se *producer.SendError
				var be *producer.BrokerError
				if !errors.As(err, &se) || se.Stop != producer.StopNoRoom || !errors.Is(err, producer.ErrNoRoom) ||
					!errors.As(err, &be) || be.Remark != full || errors.Is(err, producer.ErrRetryBudget) {
					t.Errorf("Result error = %v, want a *SendError (StopNoRoom, ErrNoRoom) wrapping the busy answer", err)
				}
			})
		}
	}
}

// TestLoopPerAttemptCapNowhereElse: Config.MaxTimeoutPerRequest caps a sync
// attempt that another attempt follows, unless the strategy's capacity model
// (RoomModel) finds no other reachable broker for a retry: then the attempt
// keeps all but one cap of the budget left (3 s budget, 1 s cap: 2 s, then
// 1.99 s after a 10 ms failure), or, when the model calls the broker the
// only room (latency.Room.Only), or the broker's answers average half the
// cap or more (latency.Room.Latency: the cap would cut most of them), or
// every other reachable broker's do (latency.Room.ElsewhereLatency: a retry
// would meet the same slowness), the whole budget left (3 s, then 2.99 s).
// A model that is off, and a strategy that is not a RoomModel, are capped
// as the reference caps. The last attempt
// gets what is left, never capped, and the model is not asked about it.
func TestLoopPerAttemptCapNowhereElse(t *testing.T) {
	for _, tt := range []struct {
		name string
		room *latency.Room    // what the strategy's Room answers; nil: not a RoomModel
		want [2]time.Duration // the first two attempts'
	}{
		{"elsewhere", &roomElsewhere, [2]time.Duration{time.Second, time.Second}},
		{"nowhere else", &roomCutOff, [2]time.Duration{2 * time.Second, 2*time.Second - 10*time.Millisecond}},
		{"only room", &roomOnly, [2]time.Duration{3 * time.Second, 3*time.Second - 10*time.Millisecond}},
		{"slow answers", &roomSlow, [2]time.Duration{3 * time.Second, 3*time.Second - 10*time.Millisecond}},
		{"answers at half the cap", &roomHalf, [2]time.Duration{3 * time.Second, 3*time.Second - 10*time.Millisecond}},
		{"answers just under half the cap", &roomFast, [2]time.Duration{time.Second, time.Second}},
		{"every other broker as slow", &roomSlowElsewhere, [2]time.Duration{3 * time.Second, 3*time.Second - 10*time.Millisecond}},
		{"another broker faster", &roomFastElsewhere, [2]time.Duration{time.Second, time.Second}},
		{"model off", &latency.Room{}, [2]time.Duration{time.Second, time.Second}},
		{"not a RoomModel", nil, [2]time.Duration{time.Second, time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			mstrat := mocks.NewMockStrategy(ctrl)
			rep := mocks.NewMockReporter(ctrl)
			var strat producer.Strategy = mstrat
			q := &route.MessageQueue{Topic: "T", BrokerName: "A"}
			if tt.room != nil {
				room := mocks.NewMockRoomModel(ctrl)
				room.EXPECT().Room("A").Return(*tt.room).Times(2) // the first two attempts
				strat = roomStrategy{mstrat, room}
			}
			info, err := route.NewPublishInfoFromQueues("T", []route.MessageQueue{*q})
			if err != nil {
				t.Fatal(err)
			}
			mstrat.EXPECT().Select(info, gomock.Any()).Return(latency.Pick{Queue: q, Stage: latency.StageAvailable, Reporter: rep}, true).Times(3)
			rep.EXPECT().Report(gomock.Any(), gomock.Any()).Return(latency.FaultUpdate{}).AnyTimes()
			cfg := producer.Reference5()
			cfg.MaxTimeoutPerRequest = time.Second
			pol, err := producer.NewPolicy(cfg, latency.ModeV5)
			if err != nil {
				t.Fatal(err)
			}
			d := producer.NewDrive(strat, info, pol, producer.KindSync, t0)
			failed := producer.Outcome{Class: latency.ClassTransportTimeout, Elapsed: ms(10),
				Err: &producer.TransportError{Class: latency.ClassTransportTimeout, Err: errors.New("timeout")}}
			now := t0
			var got []time.Duration
			for d.Next(now) {
				plan, ok := d.Start(now)
				if !ok {
					break
				}
				got = append(got, plan.Timeout)
				d.Finish(failed)
				now = now.Add(failed.Elapsed)
			}
			if want := []time.Duration{tt.want[0], tt.want[1], 3*time.Second - 20*time.Millisecond}; !slices.Equal(got, want) {
				t.Errorf("attempt timeouts %v, want %v", got, want)
			}
		})
	}
}

// brokersABC returns topic T's route of one queue on each of brokers A, B
// and C, and those queues by broker.
func brokersABC(t *testing.T) (map[string]*route.MessageQueue, *route.PublishInfo) {
	t.Helper()
	qs := map[string]*route.MessageQueue{}
	var all []route.MessageQueue
	for _, b := range []string{"A", "B", "C"} {
		qs[b] = &route.MessageQueue{Topic: "T", BrokerName: b}
		all = append(all, *qs[b])
	}
	info, err := route.NewPublishInfoFromQueues("T", all)
	if err != nil {
		t.Fatal(err)
	}
	return qs, info
}

// The capacity model's accounts the tests above hand out from MockRoomModel,
// each for a broker A among three.
var (
	// roomElsewhere: another serving broker has room.
	roomElsewhere = latency.Room{Here: true, Answering: true,
		Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 2, ServingRoom: 1}
	// roomNowhere: the broker and the others, all reachable, have no room.
	roomNowhere = latency.Room{Answering: true, Others: 2, Reachable: 2, Serving: 2}
	// roomSlow: room elsewhere, but the broker's answers average the cap
	// (1 s in these tests) or more, which would cut most of them.
	roomSlow = latency.Room{Here: true, Answering: true, Latency: time.Second,
		Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 2, ServingRoom: 1}
	// roomHalf: room elsewhere, the broker's answers average half the cap:
	// capped answers are all under the cap, so an average of half of it
	// already means most answers near the cap.
	roomHalf = latency.Room{Here: true, Answering: true, Latency: 500 * time.Millisecond,
		Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 2, ServingRoom: 1}
	// roomFast: room elsewhere, the broker's answers average just under
	// half the cap.
	roomFast = latency.Room{Here: true, Answering: true, Latency: 500*time.Millisecond - time.Millisecond,
		Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 2, ServingRoom: 1}
	// roomSlowElsewhere: room elsewhere, but every other reachable broker's
	// answers average half the cap or more (a retry meets the same
	// slowness); roomFastElsewhere: one of them answers faster than that.
	roomSlowElsewhere = latency.Room{Here: true, Answering: true, ElsewhereLatency: 500 * time.Millisecond,
		Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 2, ServingRoom: 1}
	roomFastElsewhere = latency.Room{Here: true, Answering: true, ElsewhereLatency: 500*time.Millisecond - time.Millisecond,
		Others: 2, Reachable: 2, ReachableRoom: 1, Serving: 2, ServingRoom: 1}
	// roomCutOff: the other brokers are unreachable.
	roomCutOff = latency.Room{Answering: true, Others: 2}
	// roomOnly: the broker answers and has the room the cluster has.
	roomOnly = latency.Room{Here: true, Answering: true, Others: 2, Reachable: 2, Serving: 2}
)
