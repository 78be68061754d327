package producer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestDriveNoRetryWithoutRoom drives a sync send over two brokers that have
// both pushed back lately (three busy answers each, under the mqfault
// preset's capacity model), every attempt answered busy: a first rejection
// ([OVERLOAD]) is retried, a second is not, since no broker has room and a
// retry would only take another send's, and the send ends with the busy
// answer's error (StopNoRoom, matching ErrNoRoom), not a retry budget refusal. A
// send queue's timeout is retried, and with the capacity model off every
// busy answer is; the reference configurations (no capacity model) report
// room and retry as their mode's rules say (4.x does not retry code 2).
func TestDriveNoRetryWithoutRoom(t *testing.T) {
	const reject = "[OVERLOAD]system busy, start flow control for a while"
	const queued = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 40"
	busy := func(remark string) producer.Outcome {
		return producer.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Elapsed: time.Millisecond, Remark: remark,
			Err: &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: remark}}
	}
	preset := func(decrease float64) func() latency.Config {
		return func() latency.Config {
			cfg := latency.DefaultConfig()
			cfg.Detector = false
			cfg.Capacity.Decrease = decrease
			return cfg
		}
	}
	reference := func(ref func() latency.Config) func() latency.Config {
		return func() latency.Config {
			cfg := ref()
			cfg.FaultTolerance = true
			return cfg
		}
	}
	for _, tt := range []struct {
		name   string
		cfg    func() latency.Config
		remark string
		want   int
		stop   producer.Stop
		room   bool // whether Room's RetryElsewhere reports room for both brokers
	}{
		{"rejected, no room", preset(latency.DefaultCapacityDecrease), reject, 2, producer.StopNoRoom, false},
		{"queue timeout, no room", preset(latency.DefaultCapacityDecrease), queued, 3, producer.StopFailed, false},
		{"rejected, capacity model off", preset(0), reject, 3, producer.StopFailed, true},
		{"rejected, reference v5", reference(latency.Reference5), reject, 3, producer.StopFailed, true},
		{"rejected, reference v4", reference(latency.Reference4), reject, 1, producer.StopBrokerError, true},
		{"rejected, v4 given the capacity model", func() latency.Config {
			cfg := preset(latency.DefaultCapacityDecrease)()
			cfg.Mode = latency.ModeV4 // a v4 strategy ignores the policies past the reference
			return cfg
		}, reject, 1, producer.StopBrokerError, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg()
			t0 := time.Unix(1_700_000_000, 0)
			ls, err := latency.NewStrategy(cfg, latency.WithClock(clock.NewManual(t0)))
			if err != nil {
				t.Fatal(err)
			}
			defer ls.Close()
			var qs []route.MessageQueue
			for _, b := range []string{"a", "b"} {
				for i := range 2 {
					qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b, QueueID: i})
				}
				ls.Update(b, time.Millisecond, false, true)
			}
			info, err := route.NewPublishInfoFromQueues("T", qs)
			if err != nil {
				t.Fatal(err)
			}
			for range 6 { // three busy answers for each broker (round robin)
				p, ok := ls.Select(info, latency.PickInfo{})
				if !ok {
					t.Fatal("no pick")
				}
				p.Done(latency.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Latency: time.Millisecond, Remark: reject})
			}
			// Six busy answers leave one broker or both below half weight.
			if room := ls.Room("a").RetryElsewhere() && ls.Room("b").RetryElsewhere(); room != tt.room {
				t.Errorf("Room(a).RetryElsewhere() && Room(b).RetryElsewhere() = %v, want %v", room, tt.room)
			}
			pol, err := producer.NewPolicy(producer.DefaultConfig(), cfg.Mode)
			if err != nil {
				t.Fatal(err)
			}
			d := producer.NewDrive(ls, info, pol, producer.KindSync, t0)
			for d.Next(t0) {
				if _, ok := d.Start(t0); ok {
					d.Finish(busy(tt.remark))
				}
			}
			l := d.Loop()
			if l.Attempts() != tt.want || l.Stop() != tt.stop {
				t.Errorf("stop %s after %d attempts (brokers %v), want %s after %d (weights a %.2f, b %.2f)",
					l.Stop(), l.Attempts(), l.BrokersSent(), tt.stop, tt.want, ls.Weight("a"), ls.Weight("b"))
			}
			_, err = l.Result()
			var be *producer.BrokerError
			if !errors.As(err, &be) || be.Code != latency.CodeSystemBusy {
				t.Errorf("Result error = %v, want the busy answer's *BrokerError", err)
			}
			if errors.Is(err, producer.ErrNoRoom) != (tt.stop == producer.StopNoRoom) {
				t.Errorf("Result error = %v: errors.Is ErrNoRoom %v, want %v", err, errors.Is(err, producer.ErrNoRoom), tt.stop == producer.StopNoRoom)
			}
			if errors.Is(err, producer.ErrRetryBudget) || l.RetryRefused() {
				t.Errorf("Result error = %v, RetryRefused %v: want no retry budget refusal", err, l.RetryRefused())
			}
		})
	}
}
