package producer_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// countingStrategy is a latency.Strategy whose picks report to it: it
// counts each pick when made and uncounts it when its attempt ends (a Done
// that is not Pending, or a Release), as a Reporter that holds something
// per pick (a latency.Releaser) does.
type countingStrategy struct {
	*latency.Strategy
	n atomic.Int64
}

func (c *countingStrategy) Select(info *route.PublishInfo, in latency.PickInfo) (latency.Pick, bool) {
	p, ok := c.Strategy.Select(info, in)
	if ok {
		c.n.Add(1)
		p.Reporter = c
	}
	return p, ok
}

func (c *countingStrategy) Report(p latency.Pick, o latency.Outcome) latency.FaultUpdate {
	if !o.Pending {
		c.n.Add(-1)
	}
	return c.Strategy.Report(p, o)
}

func (c *countingStrategy) Release(latency.Pick) { c.n.Add(-1) }

// TestDriveReleasesEveryPick drives sends of every kind and every way a
// send can end through a strategy whose Reporter holds something per pick
// and checks that every pick ends exactly once: the count is back to 0 (a
// pick dropped without Done or Release would leave it above, a double end
// below).
func TestDriveReleasesEveryPick(t *testing.T) {
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	t0 := time.Unix(1_700_000_000, 0)
	clk := clock.NewManual(t0)
	ls, err := latency.NewStrategy(cfg, latency.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	strat := &countingStrategy{Strategy: ls}
	brokers := []string{"a", "b", "c"}
	var qs []route.MessageQueue
	for _, b := range brokers {
		for i := range 2 {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b, QueueID: i})
		}
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := producer.NewPolicy(producer.Reference5(), latency.ModeV5)
	if err != nil {
		t.Fatal(err)
	}
	answered := producer.Outcome{Class: latency.ClassAnswered, Elapsed: 5 * time.Millisecond}
	failed := producer.Outcome{Class: latency.ClassTransportTimeout, Err: errors.New("timeout"), Elapsed: 10 * time.Millisecond}
	inFlight := func() int64 { return strat.n.Load() }
	tests := []struct {
		name string
		kind producer.Kind
		run  func(d *producer.Drive)
	}{
		{"sync answered", producer.KindSync, func(d *producer.Drive) {
			for d.Next(t0) {
				if _, ok := d.Start(t0); ok {
					d.Finish(answered)
				}
			}
		}},
		{"sync failing every attempt", producer.KindSync, func(d *producer.Drive) {
			for d.Next(t0) {
				if _, ok := d.Start(t0); ok {
					d.Finish(failed)
				}
			}
		}},
		{"async handed over then answered", producer.KindAsync, func(d *producer.Drive) {
			for d.Next(t0) {
				if _, ok := d.Start(t0); ok {
					d.Dispatched(0)
					d.Finish(answered)
				}
			}
		}},
		{"async failing every attempt", producer.KindAsync, func(d *producer.Drive) {
			for d.Next(t0) {
				if _, ok := d.Start(t0); ok {
					d.Dispatched(0)
					d.Finish(failed)
				}
			}
		}},
		{"oneway", producer.KindOneway, func(d *producer.Drive) {
			for d.Next(t0) {
				if _, ok := d.Start(t0); ok {
					d.Finish(answered)
				}
			}
		}},
		{"call timeout before the attempt starts", producer.KindSync, func(d *producer.Drive) {
			if d.Next(t0) {
				if _, ok := d.Start(t0.Add(time.Hour)); ok {
					t.Error("Start after the send's timeout started an attempt")
				}
			}
		}},
		{"retry's call timeout before the attempt starts", producer.KindSync, func(d *producer.Drive) {
			if d.Next(t0) {
				if _, ok := d.Start(t0); ok {
					d.Finish(failed)
				}
			}
			if d.Next(t0.Add(time.Hour)) {
				d.Start(t0.Add(time.Hour))
			}
		}},
		{"cancelled mid-attempt (Abort)", producer.KindSync, func(d *producer.Drive) {
			if d.Next(t0) {
				d.Start(t0)
			}
			if n := inFlight(); n != 1 {
				t.Errorf("attempts in flight during the attempt = %d, want 1", n)
			}
			d.Abort(errors.New("ctx cancelled"))
			d.Finish(answered) // after the end: does nothing
		}},
		{"producer closed mid-attempt (Abandon)", producer.KindAsync, func(d *producer.Drive) {
			if d.Next(t0) {
				d.Start(t0)
				d.Dispatched(0)
			}
			d.Abandon()
			d.Abandon()
		}},
		{"abandoned by Reset", producer.KindSync, func(d *producer.Drive) {
			if d.Next(t0) {
				d.Start(t0)
			}
			d.Reset(strat, info, pol, producer.KindSync, t0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := producer.NewDrive(strat, info, pol, tt.kind, t0)
			tt.run(&d)
			if !d.Loop().Done() && tt.name != "abandoned by Reset" && tt.name != "producer closed mid-attempt (Abandon)" {
				t.Errorf("send not over")
			}
			if n := inFlight(); n != 0 {
				t.Errorf("attempts in flight after the send = %d, want 0", n)
			}
		})
	}
}
