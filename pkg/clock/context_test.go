package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
)

// TestClockContext checks the lazy clock-deadline context on a manual clock
// (the producer's attempt context and WithTimeout).
func TestClockContext(t *testing.T) {
	t.Run("deadline on the clk, with and without Done", func(t *testing.T) {
		for _, withDone := range []bool{true, false} {
			clk := clock.NewManual(t0)
			c := clock.NewContext(context.Background(), clk, t0.Add(100*time.Millisecond))
			var done <-chan struct{}
			if withDone {
				done = c.Done()
			}
			clk.Advance(99 * time.Millisecond)
			if c.Err() != nil {
				t.Fatalf("Err() = %v before the deadline", c.Err())
			}
			clk.Advance(time.Millisecond)
			if !errors.Is(c.Err(), context.DeadlineExceeded) {
				t.Errorf("Err() = %v at the deadline, want DeadlineExceeded", c.Err())
			}
			if done == nil {
				done = c.Done()
			}
			select {
			case <-done:
			default:
				t.Error("Done() not closed at the deadline")
			}
			c.Release()
			if !errors.Is(c.Err(), context.DeadlineExceeded) {
				t.Errorf("Err() after release = %v, want it unchanged", c.Err())
			}
		}
	})
	t.Run("parent cancelled", func(t *testing.T) {
		clk := clock.NewManual(t0)
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		c := clock.NewContext(parent, clk, t0.Add(time.Hour))
		if c.Value(ctxKey{}) != "v" {
			t.Error("Value() does not reach the parent")
		}
		done := c.Done()
		cancel()
		<-done
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err() = %v, want Canceled", c.Err())
		}
		c.Release()
		if clk.Pending() != 0 {
			t.Errorf("release left %d timers pending", clk.Pending())
		}
	})
	t.Run("released", func(t *testing.T) {
		clk := clock.NewManual(t0)
		c := clock.NewContext(context.Background(), clk, t0.Add(time.Second))
		c.Release()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err() after release = %v, want Canceled", c.Err())
		}
		select {
		case <-c.Done():
		default:
			t.Error("Done() of a released ctx not closed")
		}
	})
	t.Run("wall-clock deadline", func(t *testing.T) {
		clk := clock.NewManual(t0) // far in the past
		c := clock.NewContext(context.Background(), clk, t0.Add(time.Minute))
		d, ok := c.Deadline()
		if left := time.Until(d); !ok || left <= 50*time.Second || left > time.Minute {
			t.Errorf("Deadline() = %v (%v from now), want about a minute from now", d, left)
		}
	})
	t.Run("reuse", func(t *testing.T) {
		clk := clock.NewManual(t0)
		c := clock.NewContext(context.Background(), clk, t0.Add(time.Second))
		if c.Reuse(context.Background(), clk, t0.Add(time.Hour)) {
			t.Fatal("Reuse() of a live context = true")
		}
		c.Release()
		if !c.Reuse(context.Background(), clk, t0.Add(time.Hour)) {
			t.Fatal("Reuse() of a released context never waited on = false")
		}
		clk.Advance(time.Minute)
		if err := c.Err(); err != nil {
			t.Errorf("Err() after Reuse with a later deadline = %v, want nil", err)
		}
		_ = c.Done()
		c.Release()
		if c.Reuse(context.Background(), clk, t0.Add(2*time.Hour)) {
			t.Error("Reuse() of a context whose Done was called = true")
		}
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err() after a refused Reuse = %v, want Canceled", c.Err())
		}
	})
}

type ctxKey struct{}
