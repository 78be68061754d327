package latency_test

import (
	"math"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// selectRoute is the route every selection case picks from: queues
// [a:0 b:0 c:0]; broker d has writable queue data (4 write queues) but no
// master, so it has no queue in the list; e has read-only queue data.
// With the index at 0 the probes visit b, c, a, b, c, a, ...
func selectRoute(t *testing.T, src route.RandomSource) *route.PublishInfo {
	t.Helper()
	rw := route.PermRead | route.PermWrite
	data := &route.TopicRouteData{
		QueueDatas: []route.QueueData{
			{BrokerName: "a", WriteQueueNums: 1, Perm: rw},
			{BrokerName: "b", WriteQueueNums: 1, Perm: rw},
			{BrokerName: "c", WriteQueueNums: 1, Perm: rw},
			{BrokerName: "d", WriteQueueNums: 4, Perm: rw},
			{BrokerName: "e", WriteQueueNums: 4, Perm: route.PermRead},
		},
		BrokerDatas: []route.BrokerData{
			{BrokerName: "a", BrokerAddrs: map[int64]string{0: "addr-a"}},
			{BrokerName: "b", BrokerAddrs: map[int64]string{0: "addr-b"}},
			{BrokerName: "c", BrokerAddrs: map[int64]string{0: "addr-c"}},
			{BrokerName: "d", BrokerAddrs: map[int64]string{1: "slave-d"}},
			{BrokerName: "e", BrokerAddrs: map[int64]string{0: "addr-e"}},
		},
	}
	info, err := route.NewPublishInfo("T", data, route.WithRandom(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := queueNames(info.Queues()); got != "[a:0 b:0 c:0]" {
		t.Fatalf("route = %s, want [a:0 b:0 c:0]", got)
	}
	return info
}

func queueNames(qs []route.MessageQueue) string {
	s := "["
	for i, q := range qs {
		if i > 0 {
			s += " "
		}
		s += q.String()
	}
	return s + "]"
}

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

type selectCase struct {
	name        string
	mode        latency.Mode
	faultOn     bool
	filter      map[string]bool // user filter: admitted brokers; nil means no user filter
	unavailable map[string]bool
	unreachable map[string]bool
	last        string
	reset       bool
	resetTo     int32
	index       int32
	// latency is the latency of a broker's item: an isolated broker's
	// (one of unavailable), or an available broker's item written for v4's
	// least-bad pick to find (one nothing else names).
	latency map[string]time.Duration
	// gone is a broker v4's least-bad pick names and the strategy then
	// removes from the table (no writable queue data, or off the route).
	gone string

	want      string
	wantStage latency.Stage
	wantIndex int32
}

var selectCases = []selectCase{
	// v5, fault tolerance on: (1) available and not last, (2) reachable
	// and not last, (3) unfiltered.
	{name: "v5/on/no last/available first probe", mode: latency.ModeV5, faultOn: true,
		want: "b:0", wantStage: latency.StageAvailable, wantIndex: 1},
	{name: "v5/on/no last/available after an isolated broker", mode: latency.ModeV5, faultOn: true, unavailable: set("b"),
		want: "c:0", wantStage: latency.StageAvailable, wantIndex: 2},
	{name: "v5/on/last/available skips isolated and last", mode: latency.ModeV5, faultOn: true, unavailable: set("b"), last: "c",
		want: "a:0", wantStage: latency.StageAvailable, wantIndex: 3},
	{name: "v5/on/last unknown to the route", mode: latency.ModeV5, faultOn: true, last: "zz",
		want: "b:0", wantStage: latency.StageAvailable, wantIndex: 1},
	{name: "v5/on/reset/last/available", mode: latency.ModeV5, faultOn: true, last: "b", reset: true, resetTo: 5,
		want: "a:0", wantStage: latency.StageAvailable, wantIndex: 6},
	{name: "v5/on/reset/no last/available", mode: latency.ModeV5, faultOn: true, reset: true, resetTo: 7, index: 1000,
		want: "c:0", wantStage: latency.StageAvailable, wantIndex: 8},
	{name: "v5/on/no last/reachable", mode: latency.ModeV5, faultOn: true, unavailable: set("a", "b", "c"), unreachable: set("b"),
		want: "c:0", wantStage: latency.StageReachable, wantIndex: 5},
	{name: "v5/on/last/reachable skips last", mode: latency.ModeV5, faultOn: true, unavailable: set("a", "b", "c"), last: "b",
		want: "c:0", wantStage: latency.StageReachable, wantIndex: 5},
	{name: "v5/on/last/only the last broker available: reachable stage", mode: latency.ModeV5, faultOn: true, unavailable: set("a", "c"), last: "b",
		want: "c:0", wantStage: latency.StageReachable, wantIndex: 5},
	{name: "v5/on/reset/reachable", mode: latency.ModeV5, faultOn: true, unavailable: set("a", "b", "c"), unreachable: set("a"), reset: true, resetTo: 2,
		want: "b:0", wantStage: latency.StageReachable, wantIndex: 7},
	{name: "v5/on/no last/unfiltered", mode: latency.ModeV5, faultOn: true, unavailable: set("a", "b", "c"), unreachable: set("a", "b", "c"),
		want: "b:0", wantStage: latency.StageAny, wantIndex: 7},
	{name: "v5/on/last/unfiltered may return the last broker", mode: latency.ModeV5, faultOn: true,
		unavailable: set("a", "c"), unreachable: set("a", "c"), last: "b",
		want: "b:0", wantStage: latency.StageAny, wantIndex: 7},
	{name: "v5/on/reset/last/unfiltered", mode: latency.ModeV5, faultOn: true, unavailable: set("a", "b", "c"), unreachable: set("a", "b", "c"),
		last: "a", reset: true, resetTo: 0, index: 77,
		want: "b:0", wantStage: latency.StageAny, wantIndex: 7},
	{name: "v5/on/index wraps at MaxInt32", mode: latency.ModeV5, faultOn: true, unavailable: set("b"), index: math.MaxInt32 - 1,
		want: "a:0", wantStage: latency.StageAvailable, wantIndex: math.MinInt32},
	// Across the wrap the probes visit b, a, b: three probes never see c,
	// exactly as the reference's filtered pass.
	{name: "v5/on/wrap skips a position", mode: latency.ModeV5, faultOn: true, unavailable: set("a", "b"), index: math.MaxInt32 - 1,
		want: "c:0", wantStage: latency.StageReachable, wantIndex: math.MinInt32 + 2},
	// User filters join stages 1 and 2, then come alone, then the
	// unfiltered pick.
	{name: "v5/on/filter/available", mode: latency.ModeV5, faultOn: true, filter: set("c"),
		want: "c:0", wantStage: latency.StageAvailable, wantIndex: 2},
	{name: "v5/on/filter/reachable", mode: latency.ModeV5, faultOn: true, filter: set("a"), unavailable: set("a"),
		want: "a:0", wantStage: latency.StageReachable, wantIndex: 6},
	{name: "v5/on/filter/filter only", mode: latency.ModeV5, faultOn: true, filter: set("a"), unavailable: set("a"), unreachable: set("a"),
		want: "a:0", wantStage: latency.StageFiltered, wantIndex: 9},
	{name: "v5/on/filter/last broker admitted by the filter alone", mode: latency.ModeV5, faultOn: true, filter: set("b"), last: "b",
		want: "b:0", wantStage: latency.StageFiltered, wantIndex: 7},
	{name: "v5/on/filter/unfiltered", mode: latency.ModeV5, faultOn: true, filter: set(),
		want: "b:0", wantStage: latency.StageAny, wantIndex: 10},
	{name: "v5/on/filter/reset", mode: latency.ModeV5, faultOn: true, filter: set("a"), reset: true, resetTo: 3,
		want: "a:0", wantStage: latency.StageAvailable, wantIndex: 6},

	// v5, fault tolerance off: the reset is ignored; (1) not last, (2)
	// unfiltered. The fault table is not consulted.
	{name: "v5/off/no last", mode: latency.ModeV5, unavailable: set("b"),
		want: "b:0", wantStage: latency.StageNotLast, wantIndex: 1},
	{name: "v5/off/last", mode: latency.ModeV5, last: "b",
		want: "c:0", wantStage: latency.StageNotLast, wantIndex: 2},
	{name: "v5/off/reset ignored", mode: latency.ModeV5, last: "b", reset: true, resetTo: 5,
		want: "c:0", wantStage: latency.StageNotLast, wantIndex: 2},
	{name: "v5/off/filter/not last", mode: latency.ModeV5, filter: set("a", "c"), last: "c",
		want: "a:0", wantStage: latency.StageNotLast, wantIndex: 3},
	{name: "v5/off/filter/filter only", mode: latency.ModeV5, filter: set("a"), last: "a",
		want: "a:0", wantStage: latency.StageFiltered, wantIndex: 6},
	{name: "v5/off/filter/unfiltered", mode: latency.ModeV5, filter: set(), reset: true,
		want: "b:0", wantStage: latency.StageAny, wantIndex: 7},

	// v4, fault tolerance on: one scan from one move of the index, the
	// last broker and the reset ignored.
	{name: "v4/on/scan first probe", mode: latency.ModeV4, faultOn: true,
		want: "b:0", wantStage: latency.StageAvailable, wantIndex: 1},
	{name: "v4/on/scan moves the index once", mode: latency.ModeV4, faultOn: true, unavailable: set("b", "c"),
		want: "a:0", wantStage: latency.StageAvailable, wantIndex: 1},
	{name: "v4/on/last ignored", mode: latency.ModeV4, faultOn: true, unavailable: set("b"), last: "c",
		want: "c:0", wantStage: latency.StageAvailable, wantIndex: 1},
	{name: "v4/on/reset ignored", mode: latency.ModeV4, faultOn: true, reset: true, resetTo: 5,
		want: "b:0", wantStage: latency.StageAvailable, wantIndex: 1},
	// c = MaxInt32: positions MaxInt32%3 = 1, abs(MinInt32) -> 0, then
	// abs(MinInt32+1) % 3 = 1 again.
	{name: "v4/on/scan wraps near MaxInt32", mode: latency.ModeV4, faultOn: true, unavailable: set("b"), index: math.MaxInt32 - 1,
		want: "a:0", wantStage: latency.StageAvailable, wantIndex: math.MaxInt32},
	{name: "v4/on/scan across the wrap never sees c", mode: latency.ModeV4, faultOn: true, unavailable: set("a", "b"), index: math.MaxInt32 - 1,
		latency: map[string]time.Duration{"a": 100 * time.Millisecond}, // items b, a: the better half is b
		want:    "b:0", wantStage: latency.StageLeastBad, wantIndex: math.MinInt32 + 1},
	{name: "v4/on/least bad with writable queue data", mode: latency.ModeV4, faultOn: true, unavailable: set("a", "b", "c"),
		latency: map[string]time.Duration{"a": 100 * time.Millisecond, "c": 100 * time.Millisecond}, // b, a, c
		want:    "b:0", wantStage: latency.StageLeastBad, wantIndex: 3},
	// d has writable queue data but no master: the reference still sends
	// there, to queue next() % writeQueueNums.
	{name: "v4/on/least bad off the route list", mode: latency.ModeV4, faultOn: true, unavailable: set("a", "b", "c"),
		latency: map[string]time.Duration{"d": 0}, // d available: first of d, a, b, c
		want:    "d:3", wantStage: latency.StageLeastBad, wantIndex: 3},
	{name: "v4/on/least bad without writable queue data is removed", mode: latency.ModeV4, faultOn: true, unavailable: set("a", "b", "c"),
		latency: map[string]time.Duration{"e": 0}, gone: "e",
		want: "c:0", wantStage: latency.StageAny, wantIndex: 2},
	{name: "v4/on/least bad unknown to the route is removed", mode: latency.ModeV4, faultOn: true, unavailable: set("a", "b", "c"),
		latency: map[string]time.Duration{"gone": 0}, gone: "gone",
		want: "c:0", wantStage: latency.StageAny, wantIndex: 2},
	{name: "v4/on/filter/scan", mode: latency.ModeV4, faultOn: true, filter: set("a"), unavailable: set("c"),
		want: "a:0", wantStage: latency.StageAvailable, wantIndex: 1},
	{name: "v4/on/filter/filter only", mode: latency.ModeV4, faultOn: true, filter: set("c"), unavailable: set("c"),
		want: "c:0", wantStage: latency.StageFiltered, wantIndex: 2},
	{name: "v4/on/filter/least bad", mode: latency.ModeV4, faultOn: true, filter: set(), unavailable: set("a"),
		latency: map[string]time.Duration{"b": 0}, // b available: first of b, a
		want:    "b:0", wantStage: latency.StageLeastBad, wantIndex: 6},

	// v4, fault tolerance off: the publish info's "avoid the last broker"
	// pick.
	{name: "v4/off/no last", mode: latency.ModeV4, unavailable: set("b"),
		want: "b:0", wantStage: latency.StageNotLast, wantIndex: 1},
	{name: "v4/off/last", mode: latency.ModeV4, last: "b", reset: true,
		want: "c:0", wantStage: latency.StageNotLast, wantIndex: 2},
	{name: "v4/off/filter/not last", mode: latency.ModeV4, filter: set("a", "b"), last: "b",
		want: "a:0", wantStage: latency.StageNotLast, wantIndex: 3},
	{name: "v4/off/filter/filter only", mode: latency.ModeV4, filter: set("a"), last: "a",
		want: "a:0", wantStage: latency.StageFiltered, wantIndex: 6},
	{name: "v4/off/filter/then avoid last", mode: latency.ModeV4, filter: set(), last: "b",
		want: "c:0", wantStage: latency.StageNotLast, wantIndex: 8},
}

// newSelectStrategy builds the case's strategy and publish info, with the
// case's sets written to its fault table.
func newSelectStrategy(t *testing.T, ctrl *gomock.Controller, tt selectCase) (*latency.Strategy, *route.PublishInfo) {
	t.Helper()
	cfg := latency.Reference5()
	if tt.mode == latency.ModeV4 {
		cfg = latency.Reference4()
	}
	cfg.FaultTolerance = tt.faultOn
	if tt.filter != nil {
		f := mocks.NewMockQueueFilter(ctrl)
		f.EXPECT().Filter(gomock.Any()).DoAndReturn(func(q route.MessageQueue) bool { return tt.filter[q.BrokerName] }).AnyTimes()
		cfg.Filters = []route.QueueFilter{f}
	}
	clk := clock.NewManual(t0)
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for b := range tt.unavailable {
		s.Table().Update(b, tt.latency[b], time.Hour, !tt.unreachable[b])
	}
	for b, l := range tt.latency {
		if !tt.unavailable[b] {
			s.Table().Update(b, l, 0, true)
		}
	}
	// v4's least-bad pick takes item (worst+1) % half of the better half:
	// from 1, the best item wherever the half holds one or two.
	s.Table().WorstIndex().Store(1)
	for b := range tt.unreachable {
		if !tt.unavailable[b] {
			s.Table().Update(b, 0, 0, false)
		}
	}

	src := mocks.NewMockRandomSource(ctrl)
	src.EXPECT().Int32().Return(int32(0)).Times(1)
	resets := 0
	if tt.reset && tt.faultOn && tt.mode == latency.ModeV5 {
		resets = 1
	}
	src.EXPECT().Int32n(int32(math.MaxInt32)).Return(tt.resetTo).Times(resets)
	info := selectRoute(t, src)
	info.Index().Store(tt.index)
	return s, info
}

// faultOnStrategy builds a strategy of mode with fault tolerance on, on a
// manual clock at t0, closed when the test ends.
func faultOnStrategy(t *testing.T, mode latency.Mode, opts ...latency.Option) (*latency.Strategy, *clock.Manual) {
	t.Helper()
	cfg := latency.Reference5()
	cfg.Mode = mode
	cfg.FaultTolerance = true
	clk := clock.NewManual(t0)
	s, err := latency.NewStrategy(cfg, append([]latency.Option{latency.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

// pickFromStart picks with the route's index at 0 and returns the queue.
func pickFromStart(s *latency.Strategy, info *route.PublishInfo) string {
	info.Index().Store(0)
	pick, ok := s.Select(info, latency.PickInfo{})
	if !ok {
		return "null"
	}
	return pick.Queue.String()
}

func checkPick(t *testing.T, tt selectCase, info *route.PublishInfo, pick latency.Pick, ok bool) {
	t.Helper()
	if !ok || pick.Queue == nil {
		t.Fatalf("Select() = %v, %t, want %s", pick, ok, tt.want)
	}
	if got := pick.Queue.String(); got != tt.want {
		t.Errorf("Select() queue = %s, want %s", got, tt.want)
	}
	if pick.Queue.Topic != "T" {
		t.Errorf("Select() queue topic = %q, want T", pick.Queue.Topic)
	}
	if pick.Stage != tt.wantStage {
		t.Errorf("Select() stage = %s, want %s", pick.Stage, tt.wantStage)
	}
	if got := info.Index().Load(); got != tt.wantIndex {
		t.Errorf("index after Select() = %d, want %d", got, tt.wantIndex)
	}
}

// TestSelectFaultTable drives the cases through the built-in fault table on
// a manual clock, the least-bad ones with the items their latencies make.
func TestSelectFaultTable(t *testing.T) {
	for _, tt := range selectCases {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			s, info := newSelectStrategy(t, ctrl, tt)
			pick, ok := s.Select(info, latency.PickInfo{LastBroker: tt.last, ResetIndex: tt.reset})
			checkPick(t, tt, info, pick, ok)
			if tt.gone != "" {
				if _, ok := s.Table().Item(tt.gone); ok {
					t.Errorf("%s still has an item after the least-bad pick named it, want it removed", tt.gone)
				}
				return // the table changed: a second pick is another case
			}
			// The same pick again from the same index, now that the
			// strategy's binding of the route exists, answers the same.
			info.Index().Store(tt.index)
			s.Table().WorstIndex().Store(1)
			if tt.reset && tt.faultOn && tt.mode == latency.ModeV5 {
				return // the mocked random source allows one reset
			}
			pick, ok = s.Select(info, latency.PickInfo{LastBroker: tt.last, ResetIndex: tt.reset})
			checkPick(t, tt, info, pick, ok)
		})
	}
}

// TestSelectV4LeastBadFaultTable runs v4's least-bad path on the built-in
// table: items sorted available first, then lower latency; round robin over
// the better half with the table's own index.
func TestSelectV4LeastBadFaultTable(t *testing.T) {
	tests := []struct {
		name      string
		latencies map[string]int64 // isolated brokers and their latency
		worst     int32
		want      string
		wantStage latency.Stage
		wantIndex int32
		wantItems int
	}{
		{"lowest latency of the better half", map[string]int64{"a": 600, "b": 700, "c": 800, "d": 900}, 1, "a:0", latency.StageLeastBad, 3, 4},
		{"round robin over the better half", map[string]int64{"a": 600, "b": 700, "c": 800, "d": 900}, 0, "b:0", latency.StageLeastBad, 3, 4},
		{"broker without a master but writable data", map[string]int64{"a": 700, "b": 700, "c": 700, "d": 600}, 1, "d:3", latency.StageLeastBad, 3, 4},
		{"read-only broker is removed", map[string]int64{"a": 700, "b": 700, "c": 700, "e": 600}, 1, "c:0", latency.StageAny, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := faultOnStrategy(t, latency.ModeV4)
			for b, l := range tt.latencies {
				s.Update(b, time.Duration(l)*time.Millisecond, false, true) // 4.x: >= 550ms isolates for 30s
			}
			s.Table().WorstIndex().Store(tt.worst)
			info := selectRoute(t, nil)
			info.Index().Store(0)
			pick, ok := s.Select(info, latency.PickInfo{})
			if !ok || pick.Queue.String() != tt.want || pick.Stage != tt.wantStage {
				t.Errorf("Select() = %v (%s), want %s (%s)", pick.Queue, pick.Stage, tt.want, tt.wantStage)
			}
			if got := info.Index().Load(); got != tt.wantIndex {
				t.Errorf("index after Select() = %d, want %d", got, tt.wantIndex)
			}
			if got := len(s.Table().Items()); got != tt.wantItems {
				t.Errorf("Items() has %d items, want %d", got, tt.wantItems)
			}
		})
	}
}

// TestSelectV4LeastBadQueueIsStable: the queue v4's least-bad pick makes
// for a broker off the route list is made once, and a second pick answers
// an equal queue without allocating.
func TestSelectV4LeastBadQueueIsStable(t *testing.T) {
	s, _ := faultOnStrategy(t, latency.ModeV4)
	for _, b := range []string{"a", "b", "c"} {
		s.Update(b, 700*time.Millisecond, false, true)
	}
	s.Update("d", 600*time.Millisecond, false, true)
	info := selectRoute(t, nil)
	info.Index().Store(0)
	s.Table().WorstIndex().Store(1) // picks d: 1+1 = 2, % 2 = 0, the best
	first, _ := s.Select(info, latency.PickInfo{})
	if first.Queue.String() != "d:3" {
		t.Fatalf("Select() = %s, want d:3", first.Queue)
	}
	info.Index().Store(1)
	s.Table().WorstIndex().Store(1)
	second, _ := s.Select(info, latency.PickInfo{})
	if second.Queue.String() != "d:0" || second.Queue.Topic != "T" {
		t.Errorf("second Select() = %#v, want d:0 on topic T", *second.Queue)
	}
	if first.Queue.String() != "d:3" {
		t.Errorf("the first pick's queue changed to %s", first.Queue)
	}
	allocs := testing.AllocsPerRun(50, func() {
		s.Table().WorstIndex().Store(1)
		s.Select(info, latency.PickInfo{})
	})
	// The least-bad order is kept while the table does not change, and
	// the queue is not made again.
	if allocs != 0 {
		t.Errorf("v4 least-bad Select() allocates %v times, want 0", allocs)
	}
}

func TestSelectEmptyRoute(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		for _, on := range []bool{true, false} {
			t.Run(string(mode)+"/"+map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
				cfg := latency.Reference5()
				cfg.Mode = mode
				cfg.FaultTolerance = on
				table := latency.NewFaultTable(mode, nil)
				table.Update("a", 0, 0, true) // an item a least-bad pick could name
				for _, opts := range [][]latency.Option{nil, {latency.WithFaultTable(table)}} {
					s, err := latency.NewStrategy(cfg, opts...)
					if err != nil {
						t.Fatal(err)
					}
					info, _ := route.NewPublishInfoFromQueues("T", nil)
					for _, in := range []latency.PickInfo{{}, {LastBroker: "a", ResetIndex: true}} {
						if pick, ok := s.Select(info, in); ok || pick.Queue != nil || pick.Stage != latency.StageNone {
							t.Errorf("Select(empty route, %+v) = %v, %t, want nothing", in, pick, ok)
						}
					}
					s.Close()
				}
			})
		}
	}
}

// TestSelectExpiryExact: an isolation ends exactly at its end on the manual
// clock, seen by Select without any Update.
func TestSelectExpiryExact(t *testing.T) {
	s, clk := faultOnStrategy(t, latency.ModeV5)
	info := selectRoute(t, nil)
	s.Update("b", 600*time.Millisecond, false, true) // 2000ms
	for _, step := range []struct {
		advance time.Duration
		want    string
	}{
		{0, "c:0"},
		{1999 * time.Millisecond, "c:0"},
		{time.Millisecond, "b:0"},
	} {
		clk.Advance(step.advance)
		if got := pickFromStart(s, info); got != step.want {
			t.Errorf("at +%dms Select() = %s, want %s", ms(clk.Now()), got, step.want)
		}
	}
}

// TestSelectMemoRebuiltAfterRemoval: a strategy keeps each queue's fault
// slot with the route; a removal from the table must make it look again,
// or it would keep reading the dropped slot.
func TestSelectMemoRebuiltAfterRemoval(t *testing.T) {
	tests := []struct {
		name   string
		remove func(s *latency.Strategy)
	}{
		{"Remove", func(s *latency.Strategy) { s.Table().Remove("b") }},
		{"Retain", func(s *latency.Strategy) { s.Table().Retain(func(b string) bool { return b != "b" }) }},
		{"detector resolver miss", func(s *latency.Strategy) {
			if _, err := s.DetectRound(t.Context()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := latency.Reference5()
			cfg.FaultTolerance = true
			clk := clock.NewManual(t0)
			resolver := probe.ResolverFunc(func(b string) (string, bool) { return "addr-" + b, b != "b" })
			s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithResolver(resolver))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			info := selectRoute(t, nil)
			s.Table().Update("b", 0, time.Hour, true)
			if got := pickFromStart(s, info); got != "c:0" {
				t.Fatalf("Select() = %s, want c:0 (b isolated)", got)
			}
			tt.remove(s)
			if _, ok := s.Table().Item("b"); ok {
				t.Fatalf("b still has an item after removal")
			}
			if got := pickFromStart(s, info); got != "b:0" {
				t.Errorf("Select() after removal = %s, want b:0", got)
			}
			s.Table().Update("b", 0, time.Hour, true) // a new item for b
			if got := pickFromStart(s, info); got != "c:0" {
				t.Errorf("Select() after b was isolated again = %s, want c:0 (the binding must follow the new item)", got)
			}
		})
	}
}

// TestSelectTwoStrategiesShareRoute: two strategies picking over one publish
// info each keep their own view of it, and alternating picks allocate
// nothing (the binding is the strategy's, not stored with the route).
func TestSelectTwoStrategiesShareRoute(t *testing.T) {
	s1, _ := faultOnStrategy(t, latency.ModeV5)
	s2, _ := faultOnStrategy(t, latency.ModeV5)
	s1.Table().Update("b", 0, time.Hour, true)
	info := selectRoute(t, nil)
	for range 3 {
		if got := pickFromStart(s1, info); got != "c:0" {
			t.Errorf("s1.Select() = %s, want c:0", got)
		}
		if got := pickFromStart(s2, info); got != "b:0" {
			t.Errorf("s2.Select() = %s, want b:0", got)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		s1.Select(info, latency.PickInfo{})
		s2.Select(info, latency.PickInfo{})
	}); allocs != 0 {
		t.Errorf("alternating Select() of two strategies over one route allocates %v times, want 0", allocs)
	}
}

func TestSelectAllocatesNothing(t *testing.T) {
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Filters = []route.QueueFilter{route.AvoidBroker("zz")}
	s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Table().Update("b", 0, time.Hour, false)
	s.Table().Update("a", 0, time.Hour, true)
	info := selectRoute(t, nil)
	s.Select(info, latency.PickInfo{}) // builds the binding
	ins := []latency.PickInfo{{}, {LastBroker: "c"}, {LastBroker: "a", ResetIndex: true}}
	for _, in := range ins {
		if allocs := testing.AllocsPerRun(100, func() { s.Select(info, in) }); allocs != 0 {
			t.Errorf("Select(%+v) allocates %v times, want 0", in, allocs)
		}
	}
	s.SetFaultTolerance(false)
	if allocs := testing.AllocsPerRun(100, func() { s.Select(info, latency.PickInfo{LastBroker: "b"}) }); allocs != 0 {
		t.Errorf("Select() with fault tolerance off allocates %v times, want 0", allocs)
	}
}

func TestStageString(t *testing.T) {
	tests := []struct {
		stage latency.Stage
		want  string
	}{
		{latency.StageNone, "none"},
		{latency.StageAvailable, "available"},
		{latency.StageReachable, "reachable"},
		{latency.StageNotLast, "not_last"},
		{latency.StageFiltered, "filtered"},
		{latency.StageLeastBad, "least_bad"},
		{latency.StageAny, "any"},
		{latency.StageTrial, "trial"},
		{latency.Stage(42), "stage(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.stage.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	stages := latency.Stages()
	if len(stages) != 7 || stages[0] != latency.StageAvailable || stages[1] != latency.StageTrial || stages[6] != latency.StageAny {
		t.Errorf("Stages() = %v, want the seven answering stages in cascade order", stages)
	}
}

func TestStageCounter(t *testing.T) {
	c := latency.NewStageCounter()
	s, _ := faultOnStrategy(t, latency.ModeV5, latency.WithStageCounter(c))
	info := selectRoute(t, nil)
	for range 5 {
		s.Select(info, latency.PickInfo{})
	}
	s.Update("a", 0, true, false)
	s.Update("b", 0, true, false)
	s.Update("c", 0, true, false)
	s.Select(info, latency.PickInfo{})
	empty, _ := route.NewPublishInfoFromQueues("T", nil)
	s.Select(empty, latency.PickInfo{}) // not counted: no stage answered
	want := map[latency.Stage]uint64{latency.StageAvailable: 5, latency.StageTrial: 0, latency.StageReachable: 0, latency.StageNotLast: 0,
		latency.StageFiltered: 0, latency.StageLeastBad: 0, latency.StageAny: 1}
	if len(latency.Stages()) != len(want) {
		t.Errorf("Stages() = %v, want the stages of %v", latency.Stages(), want)
	}
	for st, n := range want {
		if got := c.Count(st); got != n {
			t.Errorf("Count(%s) = %d, want %d", st, got, n)
		}
	}
	if got := c.Count(latency.Stage(200)); got != 0 {
		t.Errorf("Count(unknown stage) = %d, want 0", got)
	}
}

// TestWithFaultTable: a table handed to the strategy is the one it picks
// over and runs the detector over.
func TestWithFaultTable(t *testing.T) {
	ft := latency.NewFaultTable(latency.ModeV5, clock.NewManual(t0))
	s, _ := faultOnStrategy(t, latency.ModeV5, latency.WithFaultTable(ft), latency.WithResolver(probe.StaticResolver{}))
	if s.Table() != ft {
		t.Fatalf("Table() = %p, want the table given (%p)", s.Table(), ft)
	}
	s.Update("b", 600*time.Millisecond, false, true)
	if got := pickFromStart(s, selectRoute(t, nil)); got != "c:0" {
		t.Errorf("Select() = %s, want c:0 (b isolated in the given table)", got)
	}
	if rep, err := s.DetectRound(t.Context()); err != nil || rep.Removed != 1 {
		t.Errorf("DetectRound() = %+v, %v, want b removed (the resolver knows nobody)", rep, err)
	}
}

// TestWithRandom: the strategy's random source seeds the least-bad round
// robin of the table it builds.
func TestWithRandom(t *testing.T) {
	ctrl := gomock.NewController(t)
	src := mocks.NewMockRandomSource(ctrl)
	src.EXPECT().Int32().Return(int32(41))
	s, err := latency.NewStrategy(latency.Reference4(), latency.WithRandom(src))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Table().WorstIndex().Load(); got != 41 {
		t.Errorf("WorstIndex() = %d, want 41 from the random source", got)
	}
}

// TestSelectAvoiding follows the trace operation tpselect: up to n
// unfiltered picks for a queue not on the last broker, then one more.
func TestSelectAvoiding(t *testing.T) {
	tests := []struct {
		name      string
		route     []string // broker of each queue, in order
		index     int32
		last      string
		want      string
		wantIndex int32
	}{
		{"no last broker", []string{"a", "a", "b"}, 0, "", "a:1", 1},
		{"no last broker at MaxInt32", []string{"a", "b", "c"}, math.MaxInt32, "", "a:0", math.MinInt32},
		{"first probe not on last", []string{"a", "a", "b"}, 0, "b", "a:1", 1},
		{"skips the last broker", []string{"a", "a", "b"}, 1, "b", "a:0", 3},
		{"unknown last broker", []string{"a", "a", "b"}, 0, "zz", "a:1", 1},
		{"all on last: n misses, then one more pick", []string{"a", "a", "a"}, 0, "a", "a:1", 4},
		{"wraps at MaxInt32: n misses, then b", []string{"a", "a", "b"}, math.MaxInt32 - 1, "a", "b:0", math.MinInt32 + 2},
		{"empty route", nil, 7, "a", "null", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var qs []route.MessageQueue
			ids := map[string]int{}
			for _, b := range tt.route {
				qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b, QueueID: ids[b]})
				ids[b]++
			}
			info, err := route.NewPublishInfoFromQueues("T", qs)
			if err != nil {
				t.Fatal(err)
			}
			info.Index().Store(tt.index)
			q, ok := latency.SelectAvoiding(info, tt.last)
			got := "null"
			if ok {
				got = q.String()
			}
			if got != tt.want {
				t.Errorf("SelectAvoiding(%q) = %s, want %s", tt.last, got, tt.want)
			}
			if got := info.Index().Load(); got != tt.wantIndex {
				t.Errorf("index after SelectAvoiding(%q) = %d, want %d", tt.last, got, tt.wantIndex)
			}
		})
	}
}
