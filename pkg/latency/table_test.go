package latency_test

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
)

// tableStep is one operation on a fault table in a scripted test.
type tableStep struct {
	advance   time.Duration // first move the clock
	latency   time.Duration
	isolation time.Duration
	reachable bool
	wantUntil int64 // ms after t0; -1 means never isolated (the epoch)
	wantAvail bool
}

// TestFaultTableUpdateRules: v5 only ever extends an isolation (a fast
// success never shortens it); v4 overwrites it (a fast success ends it).
func TestFaultTableUpdateRules(t *testing.T) {
	tests := []struct {
		name  string
		mode  latency.Mode
		steps []tableStep
	}{
		{"v5/new item with no isolation", latency.ModeV5, []tableStep{
			{latency: 10 * time.Millisecond, reachable: true, wantUntil: -1, wantAvail: true},
		}},
		{"v5/extend only", latency.ModeV5, []tableStep{
			{isolation: 5 * time.Second, reachable: true, wantUntil: 5000},
			{advance: time.Second, isolation: time.Second, reachable: true, wantUntil: 5000},     // shorter: kept
			{advance: time.Second, isolation: 0, reachable: true, wantUntil: 5000},               // success: kept
			{advance: time.Second, isolation: 3 * time.Second, reachable: true, wantUntil: 6000}, // longer: extended
			{advance: 3 * time.Second, isolation: 0, reachable: true, wantUntil: 6000, wantAvail: true},
		}},
		{"v5/equal end is not an extension", latency.ModeV5, []tableStep{
			{isolation: 2 * time.Second, reachable: true, wantUntil: 2000},
			{advance: time.Second, isolation: time.Second, reachable: true, wantUntil: 2000},
		}},
		{"v4/overwrite", latency.ModeV4, []tableStep{
			{isolation: 5 * time.Second, wantUntil: 5000},
			{advance: time.Second, isolation: time.Second, wantUntil: 2000},
			{advance: 500 * time.Millisecond, isolation: 0, wantUntil: 1500, wantAvail: true}, // a fast success ends it
			{isolation: 30 * time.Second, wantUntil: 31500},
		}},
		{"v4/new item with no isolation", latency.ModeV4, []tableStep{
			{latency: 10 * time.Millisecond, wantUntil: 0, wantAvail: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(t0)
			ft := latency.NewFaultTable(tt.mode, clk)
			for i, st := range tt.steps {
				clk.Advance(st.advance)
				ft.Update("b", st.latency, st.isolation, st.reachable)
				it, ok := ft.Item("b")
				if !ok {
					t.Fatalf("step %d: Item(b) ok = false", i)
				}
				wantUntil := t0.Add(time.Duration(st.wantUntil) * time.Millisecond)
				if st.wantUntil == -1 {
					wantUntil = time.Unix(0, 0)
				}
				if !it.IsolatedUntil.Equal(wantUntil) {
					t.Errorf("step %d: IsolatedUntil = %d ms after t0, want %d", i, ms(it.IsolatedUntil), st.wantUntil)
				}
				if got := ft.IsAvailable("b"); got != st.wantAvail || it.Available != st.wantAvail {
					t.Errorf("step %d: IsAvailable(b) = %t, Item.Available = %t, want %t", i, got, it.Available, st.wantAvail)
				}
				if it.Latency != st.latency {
					t.Errorf("step %d: Latency = %v, want %v", i, it.Latency, st.latency)
				}
			}
		})
	}
}

func TestFaultTableReachable(t *testing.T) {
	tests := []struct {
		name      string
		mode      latency.Mode
		reachable bool
		want      bool
	}{
		{"v5 keeps unreachable", latency.ModeV5, false, false},
		{"v5 keeps reachable", latency.ModeV5, true, true},
		{"v4 has no reachability", latency.ModeV4, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := latency.NewFaultTable(tt.mode, clock.NewManual(t0))
			ft.Update("b", 0, time.Second, tt.reachable)
			if got := ft.IsReachable("b"); got != tt.want {
				t.Errorf("IsReachable(b) = %t, want %t", got, tt.want)
			}
			if it, _ := ft.Item("b"); it.Reachable != tt.want {
				t.Errorf("Item(b).Reachable = %t, want %t", it.Reachable, tt.want)
			}
		})
	}
}

func TestFaultTableUnknownBrokers(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		t.Run(string(mode), func(t *testing.T) {
			ft := latency.NewFaultTable(mode, clock.NewManual(t0))
			if !ft.IsAvailable("x") || !ft.IsReachable("x") {
				t.Errorf("IsAvailable(x), IsReachable(x) = %t, %t, want true, true", ft.IsAvailable("x"), ft.IsReachable("x"))
			}
			if _, ok := ft.Item("x"); ok {
				t.Errorf("Item(x) ok = true for an unknown broker")
			}
			if ft.SetReachable("x", false) {
				t.Errorf("SetReachable(x) = true for an unknown broker")
			}
			if !ft.IsReachable("x") {
				t.Errorf("IsReachable(x) = false after SetReachable on an unknown broker")
			}
			ft.Remove("x") // no item: nothing happens
			if got := ft.Items(); len(got) != 0 {
				t.Errorf("Items() = %v, want none", got)
			}
			if b, ok := ft.PickLeastBad(); ok || b != "" {
				t.Errorf("PickLeastBad() on an empty table = %q, %t, want \"\", false", b, ok)
			}
		})
	}
}

// TestFaultTableExpiryExact: a broker is available again exactly when the
// clock reaches its isolation end, with no Update to notice it.
func TestFaultTableExpiryExact(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		t.Run(string(mode), func(t *testing.T) {
			clk := clock.NewManual(t0)
			ft := latency.NewFaultTable(mode, clk)
			ft.Update("b", 0, 3*time.Second, true)
			clk.Advance(2999 * time.Millisecond)
			if ft.IsAvailable("b") {
				t.Fatalf("IsAvailable(b) = true 1ms before the end")
			}
			clk.Advance(time.Millisecond)
			if !ft.IsAvailable("b") {
				t.Errorf("IsAvailable(b) = false at the end")
			}
			if it, _ := ft.Item("b"); !it.Available {
				t.Errorf("Item(b).Available = false at the end")
			}
		})
	}
}

// TestFaultTableExtendedWhileTimerPending: an extension moves the expiry;
// the first end passes without making the broker available.
func TestFaultTableExtendedWhileTimerPending(t *testing.T) {
	clk := clock.NewManual(t0)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	ft.Update("b", 0, time.Second, true)
	clk.Advance(500 * time.Millisecond)
	ft.Update("b", 0, time.Second, true) // until 1500
	clk.Advance(500 * time.Millisecond)
	if ft.IsAvailable("b") {
		t.Fatalf("IsAvailable(b) = true at the first end after an extension")
	}
	clk.Advance(500 * time.Millisecond)
	if !ft.IsAvailable("b") {
		t.Errorf("IsAvailable(b) = false at the extended end")
	}
	if clk.Pending() != 0 {
		t.Errorf("Pending() = %d after the isolation ended, want 0", clk.Pending())
	}
}

func TestFaultTableRemoveAndRetain(t *testing.T) {
	clk := clock.NewManual(t0)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	for _, b := range []string{"a", "b", "c", "d"} {
		ft.Update(b, time.Millisecond, time.Hour, false)
	}
	ft.Remove("b")
	if _, ok := ft.Item("b"); ok || !ft.IsAvailable("b") || !ft.IsReachable("b") {
		t.Errorf("after Remove(b): item present or b unavailable/unreachable")
	}
	gone := ft.Retain(func(b string) bool { return b == "c" })
	if !slices.Equal(gone, []string{"a", "d"}) {
		t.Errorf("Retain() = %v, want [a d] (sorted, items only)", gone)
	}
	items := ft.Items()
	if len(items) != 1 || items[0].Broker != "c" {
		t.Errorf("Items() = %v, want only c", items)
	}
	if got := ft.Retain(func(string) bool { return true }); got != nil {
		t.Errorf("Retain(keep all) = %v, want nil", got)
	}
	// A removed broker's expiry timer is gone, and a new item starts fresh.
	ft.Update("a", 0, 0, true)
	if it, _ := ft.Item("a"); !it.IsolatedUntil.Equal(time.Unix(0, 0)) || !it.Available || !it.Reachable {
		t.Errorf("new item after Retain = %+v, want never isolated, available, reachable", it)
	}
	clk.Advance(2 * time.Hour)
	if !ft.IsAvailable("c") {
		t.Errorf("IsAvailable(c) = false after its isolation ended")
	}
}

func TestFaultTableItems(t *testing.T) {
	clk := clock.NewManual(t0)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	ft.Update("zeta", 7*time.Millisecond, 0, true)
	ft.Update("alpha", 3*time.Second, 5*time.Second, false)
	items := ft.Items()
	want := []latency.FaultItem{
		{Broker: "alpha", Latency: 3 * time.Second, IsolatedUntil: t0.Add(5 * time.Second), Available: false, Reachable: false, CheckStamp: time.Unix(0, 0)},
		{Broker: "zeta", Latency: 7 * time.Millisecond, IsolatedUntil: time.Unix(0, 0), Available: true, Reachable: true, CheckStamp: time.Unix(0, 0)},
	}
	if len(items) != len(want) {
		t.Fatalf("Items() = %+v, want %+v", items, want)
	}
	for i := range want {
		got := items[i]
		if got.Broker != want[i].Broker || got.Latency != want[i].Latency || !got.IsolatedUntil.Equal(want[i].IsolatedUntil) ||
			got.Available != want[i].Available || got.Reachable != want[i].Reachable || !got.CheckStamp.Equal(want[i].CheckStamp) {
			t.Errorf("Items()[%d] = %+v, want %+v", i, got, want[i])
		}
	}
	// A snapshot: later changes do not show in it.
	ft.SetReachable("alpha", true)
	if items[0].Reachable {
		t.Errorf("snapshot changed after SetReachable")
	}
	if !ft.IsReachable("alpha") {
		t.Errorf("IsReachable(alpha) = false after SetReachable(true)")
	}
}

// TestPickLeastBadOrder: with two items the better one always answers;
// each pair differs in one criterion.
func TestPickLeastBadOrder(t *testing.T) {
	type item struct {
		name      string
		latency   time.Duration
		isolation time.Duration
	}
	tests := []struct {
		name string
		a, b item
		want string
	}{
		{"available first", item{"a", time.Hour, time.Hour}, item{"b", time.Hour, 0}, "b"},
		{"lower latency", item{"a", 20 * time.Millisecond, time.Hour}, item{"b", 10 * time.Millisecond, time.Hour}, "b"},
		{"earlier isolation end", item{"a", 10 * time.Millisecond, 2 * time.Hour}, item{"b", 10 * time.Millisecond, time.Hour}, "b"},
		{"then broker name", item{"b", 10 * time.Millisecond, time.Hour}, item{"a", 10 * time.Millisecond, time.Hour}, "a"},
		{"availability beats latency", item{"a", time.Millisecond, time.Hour}, item{"b", time.Hour, 0}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := latency.NewFaultTable(latency.ModeV4, clock.NewManual(t0))
			ft.Update(tt.a.name, tt.a.latency, tt.a.isolation, true)
			ft.Update(tt.b.name, tt.b.latency, tt.b.isolation, true)
			for i := range 3 { // half = 1: always the first
				if got, ok := ft.PickLeastBad(); !ok || got != tt.want {
					t.Errorf("PickLeastBad() #%d = %q, %t, want %q", i+1, got, ok, tt.want)
				}
			}
		})
	}
}

func TestPickLeastBadRoundRobin(t *testing.T) {
	ft := latency.NewFaultTable(latency.ModeV4, clock.NewManual(t0))
	// Sorted: e (available), then by latency a, b, c, d.
	for i, b := range []string{"a", "b", "c", "d"} {
		ft.Update(b, time.Duration(i+1)*time.Millisecond, time.Hour, true)
	}
	ft.Update("e", time.Hour, 0, true)
	ft.WorstIndex().Store(0)
	var got []string
	for range 5 {
		b, _ := ft.PickLeastBad()
		got = append(got, b)
	}
	// half = 5/2 = 2: next() % 2 over [e a]: 1, 2, 3, 4, 5.
	if want := []string{"a", "e", "a", "e", "a"}; !slices.Equal(got, want) {
		t.Errorf("PickLeastBad() x5 = %v, want %v", got, want)
	}
	if got := ft.WorstIndex().Load(); got != 5 {
		t.Errorf("WorstIndex() = %d after 5 picks, want 5", got)
	}

	one := latency.NewFaultTable(latency.ModeV4, clock.NewManual(t0))
	one.Update("only", 0, time.Hour, true)
	one.WorstIndex().Store(9)
	if b, ok := one.PickLeastBad(); !ok || b != "only" || one.WorstIndex().Load() != 9 {
		t.Errorf("PickLeastBad() with one item = %q, %t, index %d, want only, true and the index untouched", b, ok, one.WorstIndex().Load())
	}
}

// TestFaultTableResync: the wall clock stepped back (a ManualClock's Set to
// an earlier time) moves no isolation, and Resync changes nothing: an ended
// isolation stays ended, a running one ends when its time has passed, and
// items report their ends from the stepped wall reading.
func TestFaultTableResync(t *testing.T) {
	clk := clock.NewManual(t0)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	ft.Update("b", 0, 5*time.Second, true)
	ft.Update("c", 0, 0, true)
	clk.Advance(6 * time.Second)
	if !ft.IsAvailable("b") {
		t.Fatalf("IsAvailable(b) = false after its isolation ended")
	}
	clk.Set(t0.Add(time.Second)) // the wall reading back 5s: no time passes
	ft.Resync()
	if !ft.IsAvailable("b") || !ft.IsAvailable("c") {
		t.Errorf("IsAvailable(b), IsAvailable(c) = %t, %t after a wall step back, want true", ft.IsAvailable("b"), ft.IsAvailable("c"))
	}
	ft.Update("b", 0, 4*time.Second, true)
	clk.Set(t0.Add(-2 * time.Hour))
	ft.Resync()
	if it, _ := ft.Item("b"); ft.IsAvailable("b") || !it.IsolatedUntil.Equal(t0.Add(-2*time.Hour+4*time.Second)) {
		t.Errorf("after a step back of 2h: IsAvailable(b) = %t, IsolatedUntil = %v; want false, 4s from the wall reading", ft.IsAvailable("b"), it.IsolatedUntil)
	}
	clk.Advance(3999 * time.Millisecond)
	if ft.IsAvailable("b") {
		t.Errorf("IsAvailable(b) = true 1ms before the end")
	}
	clk.Advance(time.Millisecond)
	if !ft.IsAvailable("b") {
		t.Errorf("IsAvailable(b) = false at the end")
	}
}

func TestFaultTableUpdateAllocatesNothing(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		t.Run(string(mode), func(t *testing.T) {
			clk := clock.NewManual(t0)
			ft := latency.NewFaultTable(mode, clk)
			ft.Update("b", 0, time.Second, true) // the item and its timer exist
			iso := time.Second
			allocs := testing.AllocsPerRun(200, func() {
				iso += time.Millisecond // v5 extends each time, re-arming the timer
				ft.Update("b", 30*time.Millisecond, iso, false)
				ft.Update("b", 30*time.Millisecond, 0, true)
			})
			if allocs != 0 {
				t.Errorf("Update() of a known broker allocates %v times, want 0", allocs)
			}

			cfg := latency.Reference5()
			cfg.Mode = mode
			cfg.FaultTolerance = true
			s, err := latency.NewStrategy(cfg, latency.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Update("b", time.Second, true, false)
			lat := time.Second
			if allocs := testing.AllocsPerRun(200, func() {
				lat += time.Millisecond
				s.Update("b", lat, false, true)
				s.Update("b", lat, true, false)
			}); allocs != 0 {
				t.Errorf("Strategy.Update() of a known broker allocates %v times, want 0", allocs)
			}
		})
	}
}

func TestNewFaultTableDefaults(t *testing.T) {
	ft := latency.NewFaultTable("", nil) // v5 rules, real clock
	ft.Update("b", 0, time.Hour, true)
	ft.Update("b", 0, time.Millisecond, true) // v5: not shortened
	if ft.IsAvailable("b") {
		t.Errorf("IsAvailable(b) = true: the default mode must extend only")
	}
	if it, _ := ft.Item("b"); it.IsolatedUntil.Before(time.Now().Add(59 * time.Minute)) {
		t.Errorf("IsolatedUntil = %v, want about an hour from the real clock's now", it.IsolatedUntil)
	}
	ft.Remove("b") // stops the real timer
}

// TestStrategyUpdate: the strategy charges a failure the isolation latency
// (10 s in v5, 30 s in v4), asks the duration table, records the outcome in
// its table (v4 has no reachability), and does nothing while fault
// tolerance is off.
func TestStrategyUpdate(t *testing.T) {
	tests := []struct {
		name       string
		mode       latency.Mode
		faultOn    bool
		latency    time.Duration
		isolation  bool
		reachable  bool
		wantLookup time.Duration // -1: the table is not asked
	}{
		{"v5 latency", latency.ModeV5, true, 600 * time.Millisecond, false, true, 600 * time.Millisecond},
		{"v5 failure", latency.ModeV5, true, 42 * time.Millisecond, true, false, 10 * time.Second},
		{"v4 failure", latency.ModeV4, true, 42 * time.Millisecond, true, false, 30 * time.Second},
		{"off", latency.ModeV5, false, time.Second, true, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctrl := gomock.NewController(t)
			table := mocks.NewMockDurationTable(ctrl)
			cfg := latency.Reference5()
			cfg.Mode = tt.mode
			cfg.FaultTolerance = tt.faultOn
			cfg.Durations = table
			if tt.wantLookup >= 0 {
				table.EXPECT().Isolation(tt.wantLookup).Return(1234 * time.Millisecond)
			} else {
				table.EXPECT().Isolation(gomock.Any()).Times(0)
			}
			s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Update("b", tt.latency, tt.isolation, tt.reachable)
			it, ok := s.Table().Item("b")
			if tt.wantLookup < 0 {
				if ok {
					t.Errorf("Item(b) = %+v after an update with fault tolerance off, want none", it)
				}
				return
			}
			want := latency.FaultItem{Broker: "b", Latency: tt.latency, IsolatedUntil: t0.Add(1234 * time.Millisecond),
				Reachable: tt.reachable || tt.mode == latency.ModeV4, CheckStamp: time.Unix(0, 0)}
			if !ok || it.Broker != want.Broker || it.Latency != want.Latency || !it.IsolatedUntil.Equal(want.IsolatedUntil) ||
				it.Available || it.Reachable != want.Reachable {
				t.Errorf("Item(b) = %+v, %t, want %+v isolated", it, ok, want)
			}
		})
	}
}

// TestObserverIsolateRecover: the observer hears of every isolation that
// begins or is extended (Extended says which), and of its end, at the end.
func TestObserverIsolateRecover(t *testing.T) {
	ctrl := gomock.NewController(t)
	obs := mocks.NewMockObserver(ctrl)
	clk := clock.NewManual(t0)
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gomock.InOrder(
		obs.EXPECT().OnIsolate(latency.IsolationEvent{Broker: "b", Reason: latency.ReasonLatency, Latency: 600 * time.Millisecond,
			Duration: 2 * time.Second, Until: t0.Add(2 * time.Second), Reachable: true}),
		obs.EXPECT().OnIsolate(latency.IsolationEvent{Broker: "b", Reason: latency.ReasonFailure, Latency: 5 * time.Millisecond,
			Duration: 10 * time.Second, Until: t0.Add(10 * time.Second), Reachable: false, Extended: true}),
		obs.EXPECT().OnIsolate(latency.IsolationEvent{Broker: "c", Reason: latency.ReasonExplicit, Latency: time.Millisecond,
			Duration: time.Second, Until: t0.Add(time.Second), Reachable: true}),
		obs.EXPECT().OnRecover(latency.RecoveryEvent{Broker: "c", At: t0.Add(time.Second)}),
		obs.EXPECT().OnRecover(latency.RecoveryEvent{Broker: "b", At: t0.Add(10 * time.Second)}),
		obs.EXPECT().OnIsolate(gomock.Cond(func(ev latency.IsolationEvent) bool { return ev.Broker == "d" })),
	)
	obs.EXPECT().OnProbe(gomock.Any()).Times(0)
	s.Update("b", 600*time.Millisecond, false, true)
	s.Update("b", 5*time.Millisecond, true, false)
	s.Update("b", 600*time.Millisecond, false, true) // 2s: not an extension, no event
	s.Table().Update("c", time.Millisecond, time.Second, true)
	clk.Advance(time.Hour)
	s.Table().Update("d", time.Millisecond, time.Second, true)
	s.Table().Remove("d") // removed before its end: no recovery
	clk.Advance(time.Hour)
}

// TestFaultTableForever: an isolation too long for the clock's range (a
// table answering math.MaxInt64 for "never again") saturates; it used to
// wrap into the past and leave the broker available.
func TestFaultTableForever(t *testing.T) {
	forever := time.Duration(math.MaxInt64)
	tests := []struct {
		name  string
		mode  latency.Mode
		start time.Time
	}{
		{"v5", latency.ModeV5, t0},
		{"v4", latency.ModeV4, t0},
		{"v5 clk at the zero time", latency.ModeV5, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(tt.start)
			ft := latency.NewFaultTable(tt.mode, clk)
			ft.Update("b", 0, forever, true)
			clk.Advance(100 * 24 * time.Hour)
			if ft.IsAvailable("b") {
				t.Errorf("IsAvailable(b) = true after an isolation for ever")
			}
			if it, _ := ft.Item("b"); it.IsolatedUntil.Before(tt.start.Add(100*365*24*time.Hour)) && tt.start.Equal(t0) {
				t.Errorf("IsolatedUntil = %v, want the end of the range", it.IsolatedUntil)
			}
		})
	}

	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Durations = latency.DurationTableFunc(func(time.Duration) time.Duration { return forever })
	s, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Update("b", time.Second, false, true)
	if s.Table().IsAvailable("b") {
		t.Errorf("IsAvailable(b) = true after the duration table said for ever")
	}
}

// TestFaultTableClockPastRange: a clock past the year 2262 (beyond Unix
// nanoseconds) must not hang, and isolations still end.
func TestFaultTableClockPastRange(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, math.MaxInt64).Add(24 * time.Hour))
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	ft.Update("b", 0, time.Second, true)
	if ft.IsAvailable("b") {
		t.Errorf("IsAvailable(b) = true during its isolation, past the range")
	}
	clk.Advance(time.Second)
	if !ft.IsAvailable("b") {
		t.Errorf("IsAvailable(b) = false after its isolation, past the range")
	}
}

// TestClockBefore1970: a manual clock may start anywhere, the zero time
// included. Times before 1970 are negative Unix nanoseconds, below the 0
// that stands for "never isolated" and "never checked": a new item must
// still be isolated, resynced and probed (it was neither).
func TestClockBefore1970(t *testing.T) {
	for _, start := range []time.Time{{}, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)} {
		t.Run(start.Format("2006"), func(t *testing.T) {
			ctrl := gomock.NewController(t)
			resolver := mocks.NewMockResolver(ctrl)
			resolver.EXPECT().Resolve("b").Return("addr-b", true).Times(1)
			clk := clock.NewManual(start)
			cfg := latency.Reference5()
			cfg.FaultTolerance = true
			s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithResolver(resolver))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Update("b", 600*time.Millisecond, false, false) // 2000ms
			if s.Table().IsAvailable("b") {
				t.Fatalf("IsAvailable(b) = true right after a 2s isolation")
			}
			if rep, _ := s.DetectRound(t.Context()); rep.Due != 1 {
				t.Errorf("DetectRound() = %+v, want the new item due", rep)
			}
			s.Update("c", 0, false, true) // an item never isolated
			s.Table().Resync()
			if !s.Table().IsAvailable("c") {
				t.Errorf("IsAvailable(c) = false after Resync, never isolated")
			}
			clk.Advance(1999 * time.Millisecond)
			if s.Table().IsAvailable("b") {
				t.Errorf("IsAvailable(b) = true 1ms before the end")
			}
			clk.Advance(time.Millisecond)
			if !s.Table().IsAvailable("b") {
				t.Errorf("IsAvailable(b) = false at the end")
			}
		})
	}
}

// TestFaultTableEarlyTimer: a real clock's timer may fire a little before
// the wall clock reaches the isolation end; the table then re-arms it for
// the rest instead of ending the isolation early.
func TestFaultTableEarlyTimer(t *testing.T) {
	ctrl := gomock.NewController(t)
	clk := mocks.NewMockClock(ctrl)
	timer := mocks.NewMockTimer(ctrl)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	clk.EXPECT().Now().DoAndReturn(func() time.Time { return time.Unix(0, now.Load()) }).AnyTimes()
	clk.EXPECT().Elapsed().DoAndReturn(func() time.Duration { return time.Duration(now.Load() - t0.UnixNano()) }).AnyTimes()
	var fire func()
	gomock.InOrder(
		clk.EXPECT().AfterFunc(5*time.Second, gomock.Any()).DoAndReturn(func(_ time.Duration, f func()) clock.Timer {
			fire = f
			return timer
		}),
		timer.EXPECT().Reset(2*time.Second).Return(false),
		timer.EXPECT().Reset(time.Second).Return(false), // the next isolation reuses the timer
	)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	ft.Update("b", 0, 5*time.Second, true)
	now.Add(int64(3 * time.Second))
	fire() // early
	if ft.IsAvailable("b") {
		t.Fatalf("IsAvailable(b) = true after the timer fired 2s early")
	}
	now.Add(int64(2 * time.Second))
	fire()
	if !ft.IsAvailable("b") {
		t.Fatalf("IsAvailable(b) = false at the end")
	}
	ft.Update("b", 0, time.Second, true)
	if ft.IsAvailable("b") {
		t.Errorf("IsAvailable(b) = true after a new isolation")
	}
}

// TestFaultTableNegativeIsolation: v4 overwrites the isolation end with
// now + isolation whatever its sign; a negative one ends an isolation, and
// one beyond the clock's range saturates.
func TestFaultTableNegativeIsolation(t *testing.T) {
	for _, start := range []time.Time{t0, {}} {
		clk := clock.NewManual(start)
		ft := latency.NewFaultTable(latency.ModeV4, clk)
		ft.Update("b", 0, time.Hour, true)
		ft.Update("b", 0, time.Duration(math.MinInt64), true)
		if !ft.IsAvailable("b") {
			t.Errorf("start %v: IsAvailable(b) = false after a negative isolation", start)
		}
		if it, _ := ft.Item("b"); !it.IsolatedUntil.Before(start) && !start.IsZero() {
			t.Errorf("start %v: IsolatedUntil = %v, want it in the past", start, it.IsolatedUntil)
		}
	}
}

// TestFaultTableRewind: a clock moved back as a whole (ManualClock.Rewind,
// as the trace language replays the reference's wall clock) puts an ended
// isolation back in force once the table is Resynced, until the clock
// reaches its end again, as the reference's comparison with
// System.currentTimeMillis does; a running one ends when the clock reaches
// its end, not when its timer would have fired before the step.
func TestFaultTableRewind(t *testing.T) {
	clk := clock.NewManual(t0)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	ft.Update("b", 0, 5*time.Second, true)
	clk.Advance(6 * time.Second)
	if !ft.IsAvailable("b") {
		t.Fatal("IsAvailable(b) = false after its isolation ended")
	}
	clk.Rewind(t0.Add(time.Second)) // 5s back, Now and Elapsed together
	if got := clk.Now(); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("Now after Rewind = %v, want %v", got, t0.Add(time.Second))
	}
	ft.Resync()
	if ft.IsAvailable("b") {
		t.Fatal("IsAvailable(b) = true after the clk went back before its end, want false (the reference's rule)")
	}
	clk.Advance(3999 * time.Millisecond)
	if ft.IsAvailable("b") {
		t.Error("IsAvailable(b) = true 1ms before its end")
	}
	clk.Advance(time.Millisecond)
	if !ft.IsAvailable("b") {
		t.Error("IsAvailable(b) = false at its end")
	}

	ft.Update("c", 0, 10*time.Second, true) // ends at t0+15s
	clk.Rewind(t0)                          // 5s back: its end is now 15s away
	ft.Resync()
	clk.Advance(14 * time.Second)
	if ft.IsAvailable("c") {
		t.Error("IsAvailable(c) = true 1s before its end after a rewind")
	}
	clk.Advance(time.Second)
	if !ft.IsAvailable("c") {
		t.Error("IsAvailable(c) = false at its end after a rewind")
	}
}
