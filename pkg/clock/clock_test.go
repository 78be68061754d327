package clock_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

var t0 = time.UnixMilli(1000000)

// ms is a number of milliseconds after t0, for readable expectations.
func ms(t time.Time) int64 { return t.Sub(t0).Milliseconds() }

func TestManualClockTimerOrder(t *testing.T) {
	c := clock.NewManual(t0)
	var fired []string
	at := func(name string) func() {
		return func() { fired = append(fired, name+"@"+strconv.FormatInt(ms(c.Now()), 10)) }
	}
	c.AfterFunc(30*time.Millisecond, at("c"))
	c.AfterFunc(10*time.Millisecond, at("a"))
	c.AfterFunc(20*time.Millisecond, at("b1"))
	c.AfterFunc(20*time.Millisecond, at("b2")) // same deadline: creation order
	c.AfterFunc(50*time.Millisecond, at("late"))
	if got := c.Pending(); got != 5 {
		t.Fatalf("Pending() = %d, want 5", got)
	}
	if d, ok := c.NextDeadline(); !ok || ms(d) != 10 {
		t.Fatalf("NextDeadline() = %d, %t, want 10, true", ms(d), ok)
	}
	c.Advance(30 * time.Millisecond)
	want := []string{"a@10", "b1@20", "b2@20", "c@30"}
	if !slices.Equal(fired, want) {
		t.Errorf("fired %v, want %v (deadline order, Now reading each deadline)", fired, want)
	}
	if got := ms(c.Now()); got != 30 {
		t.Errorf("Now() = %d, want 30", got)
	}
	if got := c.Pending(); got != 1 {
		t.Errorf("Pending() = %d, want 1", got)
	}
	c.Advance(-time.Second) // treated as 0
	if got := ms(c.Now()); got != 30 {
		t.Errorf("Now() after Advance(-1s) = %d, want 30", got)
	}
	c.Set(t0.Add(100 * time.Millisecond))
	if fired[len(fired)-1] != "late@50" || ms(c.Now()) != 100 {
		t.Errorf("Set(+100ms): fired %v, Now() = %d, want late@50 last and 100", fired, ms(c.Now()))
	}
	if _, ok := c.NextDeadline(); ok {
		t.Errorf("NextDeadline() ok = true with nothing pending")
	}
}

func TestManualClockStopReset(t *testing.T) {
	tests := []struct {
		name      string
		do        func(c *clock.Manual, tm clock.Timer) []bool // results of Stop/Reset
		advance   time.Duration
		wantCalls int
		wantRes   []bool
	}{
		{
			name:      "stop pending",
			do:        func(_ *clock.Manual, tm clock.Timer) []bool { return []bool{tm.Stop(), tm.Stop()} },
			advance:   time.Second,
			wantCalls: 0,
			wantRes:   []bool{true, false},
		},
		{
			name: "stop after firing",
			do: func(c *clock.Manual, tm clock.Timer) []bool {
				c.Advance(10 * time.Millisecond)
				return []bool{tm.Stop()}
			},
			advance:   time.Second,
			wantCalls: 1,
			wantRes:   []bool{false},
		},
		{
			name:      "reset pending moves it",
			do:        func(_ *clock.Manual, tm clock.Timer) []bool { return []bool{tm.Reset(time.Second)} },
			advance:   999 * time.Millisecond,
			wantCalls: 0,
			wantRes:   []bool{true},
		},
		{
			name: "reset after firing fires again",
			do: func(c *clock.Manual, tm clock.Timer) []bool {
				c.Advance(10 * time.Millisecond)
				return []bool{tm.Reset(5 * time.Millisecond)}
			},
			advance:   5 * time.Millisecond,
			wantCalls: 2,
			wantRes:   []bool{false},
		},
		{
			name: "reset after stop",
			do: func(_ *clock.Manual, tm clock.Timer) []bool {
				return []bool{tm.Stop(), tm.Reset(time.Millisecond)}
			},
			advance:   time.Millisecond,
			wantCalls: 1,
			wantRes:   []bool{true, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clock.NewManual(t0)
			calls := 0
			tm := c.AfterFunc(10*time.Millisecond, func() { calls++ })
			res := tt.do(c, tm)
			c.Advance(tt.advance)
			if calls != tt.wantCalls {
				t.Errorf("callback ran %d times, want %d", calls, tt.wantCalls)
			}
			if !slices.Equal(res, tt.wantRes) {
				t.Errorf("Stop/Reset returned %v, want %v", res, tt.wantRes)
			}
		})
	}
}

func TestManualClockZeroDelay(t *testing.T) {
	c := clock.NewManual(t0)
	ran := false
	c.AfterFunc(0, func() { ran = true })
	c.AfterFunc(-time.Second, func() {})
	if ran {
		t.Fatalf("AfterFunc(0) ran inside AfterFunc")
	}
	c.Advance(0)
	if !ran || c.Pending() != 0 {
		t.Errorf("after Advance(0): ran = %t, Pending() = %d, want true, 0", ran, c.Pending())
	}
}

// TestManualClockCallbacksUseClock: callbacks run without the clock's lock,
// so they may read it, schedule, stop and move it; what falls due on the way
// fires in the same Advance.
func TestManualClockCallbacksUseClock(t *testing.T) {
	c := clock.NewManual(t0)
	var fired []string
	note := func(name string) { fired = append(fired, name+"@"+strconv.FormatInt(ms(c.Now()), 10)) }
	var victim clock.Timer
	c.AfterFunc(10*time.Millisecond, func() {
		note("first")
		c.AfterFunc(5*time.Millisecond, func() { note("scheduled") }) // due at 15, inside this Advance
		c.AfterFunc(time.Hour, func() { note("hour") })
		victim.Stop()
	})
	victim = c.AfterFunc(12*time.Millisecond, func() { note("victim") })
	c.AfterFunc(20*time.Millisecond, func() {
		note("mover")
		c.Advance(100 * time.Millisecond) // nested: moves the clock to 120
	})
	c.AfterFunc(50*time.Millisecond, func() { note("passed-by-nested") })
	c.AfterFunc(500*time.Millisecond, func() { note("beyond") })
	c.Advance(20 * time.Millisecond)
	want := []string{"first@10", "scheduled@15", "mover@20", "passed-by-nested@120"}
	if !slices.Equal(fired, want) {
		t.Errorf("fired %v, want %v", fired, want)
	}
	if got := ms(c.Now()); got != 120 {
		t.Errorf("Now() = %d, want 120", got)
	}
	if got := c.Pending(); got != 2 {
		t.Errorf("Pending() = %d, want 2 (hour, beyond)", got)
	}
}

// TestManualClockSetBackwards: Set to an earlier time steps the wall reading
// back and lets no time pass: Elapsed and the timers do not move, and the
// timer fires once its time has passed. Set forward again lets time pass.
func TestManualClockSetBackwards(t *testing.T) {
	c := clock.NewManual(t0)
	ran := 0
	c.AfterFunc(10*time.Millisecond, func() { ran++ })
	c.Set(t0.Add(-time.Hour))
	if ran != 0 || !c.Now().Equal(t0.Add(-time.Hour)) || c.Elapsed() != 0 {
		t.Fatalf("Set(back): ran = %d, Now() = %v, Elapsed() = %v; want 0, an hour back, 0", ran, c.Now(), c.Elapsed())
	}
	if d, ok := c.NextDeadline(); !ok || !d.Equal(t0.Add(-time.Hour+10*time.Millisecond)) {
		t.Errorf("NextDeadline() = %v, %t; want 10ms from the stepped wall reading", d, ok)
	}
	c.Advance(9 * time.Millisecond)
	if ran != 0 {
		t.Errorf("timer ran after 9ms of its 10ms")
	}
	c.Advance(time.Millisecond)
	if ran != 1 || c.Elapsed() != 10*time.Millisecond || !c.Now().Equal(t0.Add(-time.Hour+10*time.Millisecond)) {
		t.Errorf("after 10ms: ran = %d, Elapsed() = %v, Now() = %v; want 1, 10ms, an hour back + 10ms", ran, c.Elapsed(), c.Now())
	}
	c.Set(t0)
	if c.Elapsed() != time.Hour {
		t.Errorf("Set(forward by 59m59.99s): Elapsed() = %v, want 1h", c.Elapsed())
	}
}

func TestManualClockTicker(t *testing.T) {
	c := clock.NewManual(t0)
	tk := c.NewTicker(3 * time.Second)
	select {
	case <-tk.C():
		t.Fatal("tick before the period passed")
	default:
	}
	c.Advance(2999 * time.Millisecond)
	select {
	case <-tk.C():
		t.Fatal("tick before the period passed")
	default:
	}
	c.Advance(time.Millisecond)
	if got := ms(<-tk.C()); got != 3000 {
		t.Errorf("tick at %d, want 3000", got)
	}
	// A slow reader misses ticks: the channel holds one.
	c.Advance(9 * time.Second)
	if got := ms(<-tk.C()); got != 6000 {
		t.Errorf("buffered tick at %d, want 6000 (the first one not read)", got)
	}
	select {
	case v := <-tk.C():
		t.Errorf("second buffered tick at %d, want dropped", ms(v))
	default:
	}
	tk.Stop()
	c.Advance(time.Minute)
	select {
	case <-tk.C():
		t.Error("tick after Stop")
	default:
	}
	if got := c.Pending(); got != 0 {
		t.Errorf("Pending() after Stop = %d, want 0", got)
	}
}

// TestManualClockStepTicker: a non-positive period ticks once per move of
// the clock instead of once per nanosecond.
func TestManualClockStepTicker(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		t.Run(d.String(), func(t *testing.T) {
			c := clock.NewManual(t0)
			tk := c.NewTicker(d)
			defer tk.Stop()
			for i := range 3 {
				c.Advance(time.Hour)
				select {
				case <-tk.C():
				default:
					t.Fatalf("no tick after Advance #%d", i+1)
				}
			}
			c.Advance(0)
			select {
			case <-tk.C():
				t.Fatal("tick after Advance(0)")
			default:
			}
		})
	}
}

func TestRealClock(t *testing.T) {
	var c clock.Clock = clock.Real{}
	before := time.Now()
	if now := c.Now(); now.Before(before) {
		t.Errorf("Now() = %v, before %v", now, before)
	}
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	stopped := c.AfterFunc(time.Hour, func() { t.Error("stopped timer ran") })
	if !stopped.Stop() {
		t.Error("Stop() of a pending real timer = false, want true")
	}
	tk := c.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
}

func TestWithClockTimeout(t *testing.T) {
	tests := []struct {
		name    string
		parent  func() (context.Context, context.CancelFunc)
		act     func(c *clock.Manual, cancel context.CancelFunc, parentCancel context.CancelFunc)
		wantErr error // nil: not done
	}{
		{
			name: "not done before the clock reaches the timeout",
			act:  func(c *clock.Manual, _, _ context.CancelFunc) { c.Advance(199 * time.Millisecond) },
		},
		{
			name:    "deadline exceeded when the clock reaches it",
			act:     func(c *clock.Manual, _, _ context.CancelFunc) { c.Advance(200 * time.Millisecond) },
			wantErr: context.DeadlineExceeded,
		},
		{
			name:    "cancelled by its cancel",
			act:     func(_ *clock.Manual, cancel, _ context.CancelFunc) { cancel() },
			wantErr: context.Canceled,
		},
		{
			name: "cancel after expiry keeps deadline exceeded",
			act: func(c *clock.Manual, cancel, _ context.CancelFunc) {
				c.Advance(time.Second)
				cancel()
			},
			wantErr: context.DeadlineExceeded,
		},
		{
			name:    "cancelled parent",
			act:     func(_ *clock.Manual, _, parentCancel context.CancelFunc) { parentCancel() },
			wantErr: context.Canceled,
		},
		{
			name: "parent with an expired deadline",
			parent: func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			},
			act:     func(*clock.Manual, context.CancelFunc, context.CancelFunc) {},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clock.NewManual(t0)
			newParent := tt.parent
			if newParent == nil {
				newParent = func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }
			}
			parent, parentCancel := newParent()
			defer parentCancel()
			ctx, cancel := clock.WithTimeout(parent, c, 200*time.Millisecond)
			defer cancel()
			tt.act(c, cancel, parentCancel)
			if tt.wantErr == nil {
				select {
				case <-ctx.Done():
					t.Fatalf("Done() closed, Err() = %v, want not done", ctx.Err())
				default:
				}
				if ctx.Err() != nil {
					t.Fatalf("Err() = %v, want nil", ctx.Err())
				}
				return
			}
			<-ctx.Done()
			if err := ctx.Err(); err != tt.wantErr {
				t.Errorf("Err() = %v, want %v", err, tt.wantErr)
			}
			if !errors.Is(context.Cause(ctx), tt.wantErr) {
				t.Errorf("Cause() = %v, want %v", context.Cause(ctx), tt.wantErr)
			}
		})
	}
}

func TestWithClockTimeoutDeadline(t *testing.T) {
	c := clock.NewManual(t0) // far in the past: Deadline is on the wall clock anyway
	before := time.Now()
	ctx, cancel := clock.WithTimeout(context.Background(), c, time.Minute)
	after := time.Now()
	d, ok := ctx.Deadline()
	if !ok || d.Before(before.Add(time.Minute)) || d.After(after.Add(time.Minute)) {
		t.Errorf("Deadline() = %v, %t, want a wall-clock minute from now", d, ok)
	}
	if c.Pending() != 1 {
		t.Errorf("Pending() = %d, want 1 (the timeout's timer)", c.Pending())
	}
	cancel()
	if c.Pending() != 0 {
		t.Errorf("Pending() after cancel = %d, want 0 (timer released)", c.Pending())
	}

	parent, parentCancel := context.WithDeadline(context.Background(), time.Now().Add(time.Second))
	defer parentCancel()
	ctx, cancel = clock.WithTimeout(parent, c, time.Hour)
	defer cancel()
	pd, _ := parent.Deadline()
	if d, _ := ctx.Deadline(); !d.Equal(pd) {
		t.Errorf("Deadline() = %v, want the parent's earlier %v", d, pd)
	}
	type key struct{}
	vctx, vcancel := clock.WithTimeout(context.WithValue(context.Background(), key{}, "v"), c, time.Hour)
	defer vcancel()
	if vctx.Value(key{}) != "v" {
		t.Errorf("Value() = %v, want the parent's value", vctx.Value(key{}))
	}
}
