package producer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
)

// TestAttemptCtx checks the lazy attempt context on a manual clock.
func TestAttemptCtx(t *testing.T) {
	t.Run("deadline on the clock, with and without Done", func(t *testing.T) {
		for _, withDone := range []bool{true, false} {
			clock := latency.NewManualClock(t0)
			c := newAttemptCtx(context.Background(), clock, t0.Add(ms(100)))
			var done <-chan struct{}
			if withDone {
				done = c.Done()
			}
			clock.Advance(ms(99))
			if c.Err() != nil {
				t.Fatalf("Err() = %v before the deadline", c.Err())
			}
			clock.Advance(ms(1))
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
			c.release()
			if !errors.Is(c.Err(), context.DeadlineExceeded) {
				t.Errorf("Err() after release = %v, want it unchanged", c.Err())
			}
		}
	})
	t.Run("parent cancelled", func(t *testing.T) {
		clock := latency.NewManualClock(t0)
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		c := newAttemptCtx(parent, clock, t0.Add(time.Hour))
		if c.Value(ctxKey{}) != "v" {
			t.Error("Value() does not reach the parent")
		}
		done := c.Done()
		cancel()
		<-done
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("Err() = %v, want Canceled", c.Err())
		}
		c.release()
		if clock.Pending() != 0 {
			t.Errorf("release left %d timers pending", clock.Pending())
		}
	})
	t.Run("released", func(t *testing.T) {
		clock := latency.NewManualClock(t0)
		c := newAttemptCtx(context.Background(), clock, t0.Add(time.Second))
		c.release()
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
		clock := latency.NewManualClock(t0) // far in the past
		c := newAttemptCtx(context.Background(), clock, t0.Add(time.Minute))
		d, ok := c.Deadline()
		if left := time.Until(d); !ok || left <= 50*time.Second || left > time.Minute {
			t.Errorf("Deadline() = %v (%v from now), want about a minute from now", d, left)
		}
	})
}

type ctxKey struct{}
