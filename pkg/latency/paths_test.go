package latency_test

// The strategy's selection and exception paths and the tests that drive
// them, most on the generated mocks (mocks/: MockQueueFilter,
// MockRouteFilter, MockDurationTable, MockResolver, MockClock, MockTimer,
// MockTicker, MockServiceDetector, MockObserver, MockReporter,
// MockRandomSource):
//
//	path                                                   test
//	v5 available → reachable → filtered → any, v5 off,
//	  v4 available → filtered → least-bad, v4 off; the
//	  last broker, reset, index wrap (MockQueueFilter,
//	  MockRandomSource)                                    TestSelectFaultTable
//	each stage per mode with a per-route filter admitting
//	  and refusing, isolations timed by the duration table
//	  (MockRouteFilter, MockDurationTable)                 TestCascadeStagesRouteFilter
//	v4's least-bad pick on the built-in table              TestSelectV4LeastBadFaultTable
//	all isolated (fast path and cascade)                   TestCascadeStagesRouteFilter
//	capacity model's second candidate on a retry           TestCapacitySecondCandidateNeverLast
//	push-back (busy, throttled) as weight, not latency     TestCapacityThrottledLatencyNotLatency
//	each outcome class x path x mode → fault update        TestUpdateFor, TestUpdateRulesCoverEveryClass
//	a pick's Done through another Reporter (MockReporter)  TestPickDoneReporter
//	detector verdicts: reachable, unreachable,
//	  inconclusive, error (MockServiceDetector,
//	  MockResolver, MockClock, MockObserver)               TestDetectRound, TestDetectRoundMixed
//	fault-table timing (MockClock, MockTimer)              TestFaultTableExpiryExact and table_test.go
//	the producer's paths                                   pkg/producer/paths_test.go

import (
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestCascadeStagesRouteFilter runs each cascade stage of each mode with a
// mocked per-route filter (told the route once, when it changes, and forgetting it
// when it goes) and a mocked duration table that times every isolation:
// brokers a, b, c, one queue each; isolated brokers are isolated for the
// duration table's hour, reachable or not as the case says.
func TestCascadeStagesRouteFilter(t *testing.T) {
	tests := []struct {
		name        string
		mode        latency.Mode
		admit       map[string]bool // the filter's admitted brokers
		isolated    map[string]bool
		unreachable map[string]bool
		last        string
		wantBroker  string // "" any
		wantStage   latency.Stage
	}{
		{name: "v5/available/filter admits all", mode: latency.ModeV5, admit: set("a", "b", "c"),
			wantStage: latency.StageAvailable},
		{name: "v5/available/filter admits one", mode: latency.ModeV5, admit: set("c"),
			wantBroker: "c", wantStage: latency.StageAvailable},
		{name: "v5/available/last broker avoided", mode: latency.ModeV5, admit: set("a", "b"), isolated: set("a"), last: "b",
			wantBroker: "a", wantStage: latency.StageReachable},
		{name: "v5/available/isolated refused, filter admits the other", mode: latency.ModeV5, admit: set("a", "b"), isolated: set("a"),
			wantBroker: "b", wantStage: latency.StageAvailable},
		{name: "v5/reachable/admitted broker isolated", mode: latency.ModeV5, admit: set("a"), isolated: set("a"),
			wantBroker: "a", wantStage: latency.StageReachable},
		{name: "v5/reachable/all isolated", mode: latency.ModeV5, admit: set("a", "b", "c"), isolated: set("a", "b", "c"), unreachable: set("a", "c"),
			wantBroker: "b", wantStage: latency.StageReachable},
		{name: "v5/filtered/admitted broker unreachable", mode: latency.ModeV5, admit: set("a"), isolated: set("a"), unreachable: set("a"),
			wantBroker: "a", wantStage: latency.StageFiltered},
		{name: "v5/filtered/the last broker admitted alone", mode: latency.ModeV5, admit: set("b"), last: "b",
			wantBroker: "b", wantStage: latency.StageFiltered},
		{name: "v5/any/filter refuses all", mode: latency.ModeV5, admit: set(),
			wantStage: latency.StageAny},
		{name: "v5/any/all isolated and unreachable, filter refuses all", mode: latency.ModeV5, admit: set(), isolated: set("a", "b", "c"), unreachable: set("a", "b", "c"),
			wantStage: latency.StageAny},
		{name: "v4/available/filter admits one", mode: latency.ModeV4, admit: set("b"),
			wantBroker: "b", wantStage: latency.StageAvailable},
		{name: "v4/available/isolated refused", mode: latency.ModeV4, admit: set("a", "c"), isolated: set("a"),
			wantBroker: "c", wantStage: latency.StageAvailable},
		{name: "v4/filtered/admitted broker isolated", mode: latency.ModeV4, admit: set("c"), isolated: set("c"),
			wantBroker: "c", wantStage: latency.StageFiltered},
		{name: "v4/least bad/filter refuses all", mode: latency.ModeV4, admit: set(), isolated: set("a"),
			wantStage: latency.StageLeastBad},
		{name: "v4/filtered/all isolated, filter admits all", mode: latency.ModeV4, admit: set("a", "b", "c"), isolated: set("a", "b", "c"),
			wantStage: latency.StageFiltered},
		{name: "v4/least bad/all isolated, filter refuses all", mode: latency.ModeV4, admit: set(), isolated: set("a", "b", "c"),
			wantStage: latency.StageLeastBad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			info := oneQueueEach(t, "a", "b", "c")
			rf := mocks.NewMockRouteFilter(ctrl)
			var told *route.PublishInfo
			gomock.InOrder(
				rf.EXPECT().Update(info).Do(func(i *route.PublishInfo) { told = i }),
				rf.EXPECT().Remove("T"),
			)
			rf.EXPECT().Filter(gomock.Any()).DoAndReturn(func(q route.MessageQueue) bool {
				if told == nil {
					t.Errorf("Filter(%s) before the filter was told the route", q)
				}
				return tt.admit[q.BrokerName]
			}).AnyTimes()
			dt := mocks.NewMockDurationTable(ctrl)
			dt.EXPECT().Isolation(gomock.Any()).DoAndReturn(func(lat time.Duration) time.Duration {
				if lat > 0 {
					return time.Hour
				}
				return 0
			}).AnyTimes()

			cfg := latency.Reference5()
			if tt.mode == latency.ModeV4 {
				cfg = latency.Reference4()
			}
			cfg.FaultTolerance = true
			cfg.Filters = []route.QueueFilter{rf}
			cfg.Durations = dt
			s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			s.RouteChanged(info)
			for _, b := range []string{"a", "b", "c"} {
				// An isolation by latency, timed by the mocked table.
				lat := time.Duration(0)
				if tt.isolated[b] {
					lat = time.Second
				}
				s.Update(b, lat, false, !tt.unreachable[b])
			}
			for i := range 6 { // every index value of two rounds
				p, ok := s.Select(info, latency.PickInfo{LastBroker: tt.last})
				if !ok || p.Queue == nil {
					t.Fatalf("pick %d: Select = %+v, %v", i, p, ok)
				}
				if p.Stage != tt.wantStage || (tt.wantBroker != "" && p.Queue.BrokerName != tt.wantBroker) {
					t.Errorf("pick %d: %s at stage %s, want %q at stage %s", i, p.Queue.BrokerName, p.Stage, tt.wantBroker, tt.wantStage)
				}
				p.Release()
			}
			s.RouteRemoved("T")
		})
	}
}
