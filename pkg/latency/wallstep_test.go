package latency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// wallStepClock is a ManualClock whose wall reading (Now) can be stepped, as
// NTP or a VM migration steps a host's clock, while the time that passes
// does not move: its timers and its Elapsed are the ManualClock's.
type wallStepClock struct {
	*clock.Manual
	mu     sync.Mutex
	offset time.Duration // added to the ManualClock's wall reading
}

func newWallStepClock() *wallStepClock {
	return &wallStepClock{Manual: clock.NewManual(t0)}
}

func (c *wallStepClock) Now() time.Time {
	c.mu.Lock()
	d := c.offset
	c.mu.Unlock()
	return c.Manual.Now().Add(d)
}

// step moves the wall reading by d; no time passes.
func (c *wallStepClock) step(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// TestWallStepIsolation is issue 21's item 3, first part: a step of the
// wall clock neither stretches nor cuts an isolation, in either mode, and
// the item reports its end on the wall clock as it reads now.
func TestWallStepIsolation(t *testing.T) {
	for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
		for _, step := range []time.Duration{-time.Hour, time.Hour} {
			t.Run(fmt.Sprintf("%s/step %v", mode, step), func(t *testing.T) {
				clk := newWallStepClock()
				ft := latency.NewFaultTable(mode, clk)
				ft.Update("b", 0, 200*time.Millisecond, true)
				clk.step(step)
				clk.Advance(100 * time.Millisecond)
				if ft.IsAvailable("b") {
					t.Fatalf("IsAvailable(b) = true 100ms into a 200ms isolation, after a wall step of %v", step)
				}
				if it, _ := ft.Item("b"); !it.IsolatedUntil.Equal(clk.Now().Add(100 * time.Millisecond)) {
					t.Errorf("IsolatedUntil = Now%+v, want Now+100ms", it.IsolatedUntil.Sub(clk.Now()))
				}
				// v5 extends an isolation only to a later end, v4 overwrites:
				// either way 50ms from now is not 100ms from now.
				ft.Update("b", 0, 50*time.Millisecond, true)
				want := 100 * time.Millisecond
				if mode == latency.ModeV4 {
					want = 50 * time.Millisecond
				}
				if it, _ := ft.Item("b"); it.IsolatedUntil.Sub(clk.Now()) != want {
					t.Errorf("after Update(50ms): IsolatedUntil = Now%+v, want Now+%v", it.IsolatedUntil.Sub(clk.Now()), want)
				}
				clk.Advance(500 * time.Millisecond)
				if !ft.IsAvailable("b") {
					t.Errorf("IsAvailable(b) = false 600ms after a 200ms isolation began, after a wall step of %v", step)
				}
			})
		}
	}
}

// capacityRun makes 2000 picks under the capacity model over a route of a slow broker
// (400 ms answers) and a fast one (1 ms), 5 ms apart, with the wall clock
// stepped by step after the first 100, and returns the picks per broker
// after the step.
func capacityRun(t *testing.T, step time.Duration) map[string]int {
	t.Helper()
	clk := newWallStepClock()
	cfg := latency.Reference5()
	cfg.FaultTolerance, cfg.Capacity = true, &latency.CapacityConfig{Decrease: latency.DefaultCapacityDecrease}
	// Nothing isolates: the model's latency term alone decides.
	cfg.Durations = latency.MustStepTable([]time.Duration{time.Hour}, []time.Duration{0})
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	info := publishInfo(t, "T", "slow", "fast", "slow", "fast")
	info.Index().Store(0)
	s.RouteChanged(info)
	lat := map[string]time.Duration{"slow": 400 * time.Millisecond, "fast": time.Millisecond}
	picks := map[string]int{}
	for i := range 2100 {
		if i == 100 {
			clk.step(step)
		}
		p, ok := s.Select(info, latency.PickInfo{})
		if !ok {
			t.Fatal("Select() = false")
		}
		if i >= 100 {
			picks[p.Queue.BrokerName]++
		}
		p.Done(latency.Outcome{Class: latency.ClassAnswered, Latency: lat[p.Queue.BrokerName]})
		clk.Advance(5 * time.Millisecond)
	}
	return picks
}

// TestWallStepCapacity is issue 21's item 3, second part: a step of the
// wall clock does not switch the capacity model's latency term off (with
// a step back of 1 h, a latency average faded on the wall clock would read
// as faded for an hour and the picks go to round robin, 1000/1000).
func TestWallStepCapacity(t *testing.T) {
	want := capacityRun(t, 0)
	if want["slow"] >= want["fast"]/2 {
		t.Fatalf("without a step: picks %v, want the fast broker at least twice as often", want)
	}
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		if got := capacityRun(t, step); got["slow"] != want["slow"] || got["fast"] != want["fast"] {
			t.Errorf("with a wall step of %v: picks %v, want %v as without it", step, got, want)
		}
	}
}

// wallStepRun drives a mqfault-preset strategy (every policy that reads
// time: backoff, sustained recovery, cap, the capacity model, detector
// stamps and probes) through a fixed run of
// picks, outcomes and detector rounds, stepping the wall clock by the
// given steps at the given picks, and returns what it decided and saw,
// one line per pick, with every time relative to the clock's Now.
func wallStepRun(t *testing.T, steps map[int]time.Duration) []string {
	t.Helper()
	clk := newWallStepClock()
	cfg := latency.DefaultConfig()
	brokers := []string{"a", "b", "c", "d", "e"}
	res := probe.StaticResolver{}
	for _, b := range brokers {
		res[b] = b + ":10911"
	}
	var probes sync.Mutex
	down := map[string]bool{}
	sd := probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
		probes.Lock()
		defer probes.Unlock()
		if down[strings.TrimSuffix(addr, ":10911")] {
			return errors.New("refused")
		}
		return nil
	})
	s, err := latency.NewStrategy(cfg, latency.WithClock(clk), latency.WithResolver(res), latency.WithServiceDetector(sd))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var qs []route.MessageQueue
	for _, b := range brokers {
		for q := range 2 {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b, QueueID: q})
		}
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	info.Index().Store(0)
	s.RouteChanged(info)
	var lines []string
	for i := range 3000 {
		if d, ok := steps[i]; ok {
			clk.step(d)
		}
		phase := i / 500 // a changes every 500 picks: down, up, down ...
		probes.Lock()
		down["a"] = phase%2 == 0
		down["d"] = i%700 < 350
		probes.Unlock()
		p, ok := s.Select(info, latency.PickInfo{})
		line := "none"
		if ok {
			b := p.Queue.BrokerName
			o := latency.Outcome{Class: latency.ClassAnswered, Latency: 3 * time.Millisecond}
			switch {
			case b == "a" && phase%2 == 0, b == "d" && i%700 < 350:
				o = latency.Outcome{Class: latency.ClassTransportFailed, Latency: 20 * time.Millisecond}
			case b == "b" && i%9 == 0:
				o = latency.Outcome{Class: latency.ClassBusy, Latency: time.Millisecond}
			case b == "c":
				o.Latency = time.Duration(40+i%120) * time.Millisecond
			}
			p.Done(o)
			line = p.Queue.String()
		}
		now := clk.Now()
		for _, it := range s.Table().Items() {
			check := "never"
			if !it.CheckStamp.Equal(time.Unix(0, 0)) {
				check = it.CheckStamp.Sub(now).String()
			}
			until := "never"
			if !it.IsolatedUntil.Equal(time.Unix(0, 0)) {
				until = it.IsolatedUntil.Sub(now).String()
			}
			line += fmt.Sprintf(" [%s %v %v %v until %s check %s level %d weight %.3f]",
				it.Broker, it.Available, it.Reachable, it.Latency, until, check, s.BackoffLevel(it.Broker), s.Weight(it.Broker))
		}
		if i%40 == 0 {
			rep, err := s.DetectRound(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			line += fmt.Sprintf(" round %+v", rep)
		}
		lines = append(lines, line)
		clk.Advance(time.Duration(7+i%13) * time.Millisecond)
	}
	return lines
}

// TestWallStepChangesNothing is issue 21's item 3 as a whole: every duration
// the strategy measures is monotonic, so steps of the wall clock (an hour
// back, then half an hour forward) change nothing it decides or reports
// relative to now.
func TestWallStepChangesNothing(t *testing.T) {
	want := wallStepRun(t, nil)
	got := wallStepRun(t, map[int]time.Duration{700: -time.Hour, 1900: 30 * time.Minute})
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pick %d differs with the wall clock stepped at picks 700 and 1900:\n got  %s\n want %s", i, got[i], want[i])
		}
	}
}

// TestWallStepClockTimeout: WithClockTimeout's deadline (a probe's, a
// plugin call's) counts elapsed time: a wall step forward does not end it
// early, one back does not stretch it.
func TestWallStepClockTimeout(t *testing.T) {
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		clk := newWallStepClock()
		ctx, cancel := clock.WithTimeout(t.Context(), clk, 200*time.Millisecond)
		clk.step(step)
		clk.Advance(199 * time.Millisecond)
		if err := ctx.Err(); err != nil {
			t.Errorf("step %v: Err() = %v 1ms before the deadline, want nil", step, err)
		}
		if d, _ := ctx.Deadline(); time.Until(d) > 200*time.Millisecond {
			t.Errorf("step %v: Deadline() %v from now, want at most the timeout", step, time.Until(d))
		}
		clk.Advance(time.Millisecond)
		select {
		case <-ctx.Done():
		default:
			t.Errorf("step %v: not done when 200ms had passed", step)
		}
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("step %v: Err() = %v at the deadline, want DeadlineExceeded", step, err)
		}
		cancel()
	}
}
