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
// preset's capacity model), every attempt answered busy: a rejection
// ([OVERLOAD]) is not retried, since no broker has room and a retry
// would only take another send's, and the send ends with the busy answer's
// error, not a retry budget refusal. A send queue's timeout is retried, and
// with the capacity model off every busy answer is.
func TestDriveNoRetryWithoutRoom(t *testing.T) {
	const reject = "[OVERLOAD]system busy, start flow control for a while"
	const queued = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, size of queue: 40"
	busy := func(remark string) producer.Outcome {
		return producer.Outcome{Class: latency.ClassBusy, Code: latency.CodeSystemBusy, Elapsed: time.Millisecond, Remark: remark,
			Err: &producer.BrokerError{Code: latency.CodeSystemBusy, Remark: remark}}
	}
	for _, tt := range []struct {
		name     string
		decrease float64
		remark   string
		want     int
	}{
		{"rejected, no room", latency.DefaultCapacityDecrease, reject, 1},
		{"queue timeout, no room", latency.DefaultCapacityDecrease, queued, 3},
		{"rejected, capacity model off", 0, reject, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := latency.DefaultConfig()
			cfg.Detector = false
			cfg.Capacity.Decrease = tt.decrease
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
			pol, err := producer.NewPolicy(producer.DefaultConfig(), latency.ModeV5)
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
			if l.Attempts() != tt.want {
				t.Errorf("attempts = %d (brokers %v), want %d (weights a %.2f, b %.2f)",
					l.Attempts(), l.BrokersSent(), tt.want, ls.Weight("a"), ls.Weight("b"))
			}
			_, err = l.Result()
			var be *producer.BrokerError
			if !errors.As(err, &be) || be.Code != latency.CodeSystemBusy {
				t.Errorf("Result error = %v, want the busy answer's *BrokerError", err)
			}
			if errors.Is(err, producer.ErrRetryBudget) || l.RetryRefused() {
				t.Errorf("Result error = %v, RetryRefused %v: want no retry budget refusal", err, l.RetryRefused())
			}
		})
	}
}
