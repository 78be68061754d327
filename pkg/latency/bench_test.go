package latency

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

// benchRoute builds brokers x queues with every broker holding a fault item
// (as after real traffic) and isolated of them isolated, spread evenly.
// change, if given, adjusts the configuration.
func benchRoute(b testing.TB, mode Mode, brokers, queues, isolated int, change ...func(*Config)) (*Strategy, *route.PublishInfo) {
	b.Helper()
	cfg := Reference5()
	if mode == ModeV4 {
		cfg = Reference4()
	}
	cfg.FaultTolerance = true
	for _, f := range change {
		f(&cfg)
	}
	s, err := NewStrategy(cfg, WithClock(clock.NewManual(time.UnixMilli(1000000))))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	qs := make([]route.MessageQueue, 0, brokers*queues)
	for i := range brokers {
		name := fmt.Sprintf("broker-%04d", i)
		for q := range queues {
			qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: name, QueueID: q})
		}
		s.Update(name, time.Millisecond, false, true)
	}
	for k := range isolated {
		i := k * brokers / isolated
		s.Update(fmt.Sprintf("broker-%04d", i), 20*time.Millisecond, true, true)
	}
	info, err := route.NewPublishInfoFromQueues("T", qs)
	if err != nil {
		b.Fatal(err)
	}
	if cfg.Capacity != nil && (cfg.Capacity.Recovery == time.Hour || cfg.Capacity.Recovery == time.Hour-1) {
		// Brokers pushed back once, at different times: weights below 1
		// and unequal, for an hour.
		n := brokers
		if cfg.Capacity.Recovery != time.Hour {
			n = 1
		}
		for i := range n {
			s.table.see(s.table.now())
			s.policies.capacity.pushBack(&s.table.lookup(fmt.Sprintf("broker-%04d", i)).cap, s.table.units(s.table.now()))
			s.clock.(*clock.Manual).Advance(time.Duration(i) * time.Millisecond)
		}
	}
	s.Select(info, PickInfo{}) // build the binding outside the timed loop
	return s, info
}

var sinkQueue route.MessageQueue

type selectCase struct {
	name                      string
	mode                      Mode
	brokers, queues, isolated int
	change                    []func(*Config)
}

// withPolicies is the mqfault preset's strategy (DefaultConfig) without the
// detector, which needs a resolver and has no part in a pick.
func withPolicies(c *Config) {
	*c = DefaultConfig()
	c.Detector = false
}

// pushedBackAll and pushedBackOne mark benchRoute's strategy: every
// broker, or one, pushed back once, below full weight for an hour.
func pushedBackAll(c *Config) { c.Capacity.Recovery = time.Hour }
func pushedBackOne(c *Config) { c.Capacity.Recovery = time.Hour - 1 }

// noRoomAll is pushedBackAll with one push-back taking a broker below half
// weight: no broker has room, so the isolation cap binds.
func noRoomAll(c *Config) { c.Capacity.Recovery, c.Capacity.Decrease = time.Hour, 0.25 }

var selectCases = []selectCase{
	{"v5/16x4/isolated=0", ModeV5, 16, 4, 0, nil},
	{"v5/16x4/isolated=4", ModeV5, 16, 4, 4, nil},
	{"v5/1024x4/isolated=922", ModeV5, 1024, 4, 922, nil},
	{"v4/16x4/isolated=4", ModeV4, 16, 4, 4, nil},
	// The policies on: at 4 of 16 isolated the cap does not bind; at 12
	// neither while the 4 left have room (under the capacity model the cap
	// binds only for want of room), and with no room anywhere it keeps 8
	// of them in service (a limit of 8 less the 4 without room).
	{"v5/16x4/isolated=4/policies", ModeV5, 16, 4, 4, []func(*Config){withPolicies}},
	// The preset's whole pick as the producer makes it, one broker of the
	// 16 below full weight after a push-back (its picks weigh a second
	// candidate); and the worst case, every broker below full weight, so
	// every pick weighs one.
	{"v5/16x4/isolated=4/preset", ModeV5, 16, 4, 4, []func(*Config){withPolicies, pushedBackOne}},
	{"v5/16x4/isolated=4/preset/pushed-back", ModeV5, 16, 4, 4, []func(*Config){withPolicies, pushedBackAll}},
	{"v5/16x4/isolated=12", ModeV5, 16, 4, 12, nil},
	{"v5/16x4/isolated=12/policies", ModeV5, 16, 4, 12, []func(*Config){withPolicies}},
	{"v5/16x4/isolated=12/policies/no-room", ModeV5, 16, 4, 12, []func(*Config){withPolicies, noRoomAll}},
	{"v5/1024x4/isolated=922/policies/no-room", ModeV5, 1024, 4, 922, []func(*Config){withPolicies, noRoomAll}},
	// Every broker isolated (a cluster-wide outage): each pass of the
	// cascade finds nothing, and the pick must cost what a healthy one does.
	{"v5/16x4/isolated=16", ModeV5, 16, 4, 16, nil},
	{"v5/1024x4/isolated=0", ModeV5, 1024, 4, 0, nil},
	{"v5/1024x4/isolated=1024", ModeV5, 1024, 4, 1024, nil},
	{"v4/1024x4/isolated=1024", ModeV4, 1024, 4, 1024, nil},
}

// BenchmarkSelect measures one pick on one goroutine. baseline is a bare
// atomic round robin over the same 64 queues: the floor.
func BenchmarkSelect(b *testing.B) {
	b.Run("baseline", func(b *testing.B) {
		_, info := benchRoute(b, ModeV5, 16, 4, 0)
		qs := info.Queues()
		var idx atomic.Int32
		b.ReportAllocs()
		for b.Loop() {
			sinkQueue = qs[route.Position(idx.Add(1), len(qs))]
		}
	})
	for _, c := range selectCases {
		b.Run(c.name, func(b *testing.B) {
			s, info := benchRoute(b, c.mode, c.brokers, c.queues, c.isolated, c.change...)
			b.ReportAllocs()
			for b.Loop() {
				p, _ := s.Select(info, PickInfo{})
				sinkQueue = *p.Queue
				p.Release()
			}
		})
	}
}

// BenchmarkSelectCounted is v5/16x4/isolated=4 with and without a
// StageCounter: what counting picks by stage costs.
func BenchmarkSelectCounted(b *testing.B) {
	for _, counted := range []bool{false, true} {
		b.Run(fmt.Sprintf("v5/16x4/isolated=4/counted=%t", counted), func(b *testing.B) {
			s, info := benchRoute(b, ModeV5, 16, 4, 4)
			if counted {
				s.stages = NewStageCounter()
			}
			b.ReportAllocs()
			for b.Loop() {
				p, _ := s.Select(info, PickInfo{})
				sinkQueue = *p.Queue
			}
		})
	}
}

// BenchmarkSelectParallel is BenchmarkSelect with b.RunParallel.
func BenchmarkSelectParallel(b *testing.B) {
	b.Run("baseline", func(b *testing.B) {
		_, info := benchRoute(b, ModeV5, 16, 4, 0)
		qs := info.Queues()
		var idx atomic.Int32
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var q route.MessageQueue
			for pb.Next() {
				q = qs[route.Position(idx.Add(1), len(qs))]
			}
			sinkQueue = q
		})
	})
	for _, c := range selectCases {
		b.Run(c.name, func(b *testing.B) {
			s, info := benchRoute(b, c.mode, c.brokers, c.queues, c.isolated, c.change...)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var q route.MessageQueue
				for pb.Next() {
					p, _ := s.Select(info, PickInfo{})
					q = *p.Queue
				}
				sinkQueue = q
			})
		})
	}
}

// BenchmarkSelectParallelCounted is BenchmarkSelectParallel's
// v5/16x4/isolated=4 with and without a StageCounter: what counting picks by
// stage costs when goroutines pick at once.
func BenchmarkSelectParallelCounted(b *testing.B) {
	for _, counted := range []bool{false, true} {
		b.Run(fmt.Sprintf("v5/16x4/isolated=4/counted=%t", counted), func(b *testing.B) {
			s, info := benchRoute(b, ModeV5, 16, 4, 4)
			if counted {
				s.stages = NewStageCounter()
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var q route.MessageQueue
				for pb.Next() {
					p, _ := s.Select(info, PickInfo{})
					q = *p.Queue
				}
				sinkQueue = q
			})
		})
	}
}

// BenchmarkUpdate measures a fault update of a broker the table knows.
func BenchmarkUpdate(b *testing.B) {
	b.Run("existing", func(b *testing.B) {
		s, _ := benchRoute(b, ModeV5, 16, 4, 4)
		b.ReportAllocs()
		for b.Loop() {
			s.Update("broker-0003", 3*time.Millisecond, false, true)
		}
	})
	b.Run("existing/isolating", func(b *testing.B) {
		s, _ := benchRoute(b, ModeV5, 16, 4, 4)
		b.ReportAllocs()
		for b.Loop() {
			s.Update("broker-0003", 700*time.Millisecond, false, true)
		}
	})
	b.Run("existing/policies", func(b *testing.B) {
		s, _ := benchRoute(b, ModeV5, 16, 4, 4, withPolicies)
		b.ReportAllocs()
		for b.Loop() {
			s.Update("broker-0003", 3*time.Millisecond, false, true)
		}
	})
	b.Run("existing/failure/policies", func(b *testing.B) {
		s, _ := benchRoute(b, ModeV5, 16, 4, 4, withPolicies)
		b.ReportAllocs()
		for b.Loop() {
			s.Update("broker-0003", time.Millisecond, true, false)
		}
	})
}

// BenchmarkDetectRound measures one detector round over 1,000 isolated
// brokers whose every probe runs into its 200 ms timeout, 256 at a time.
func BenchmarkDetectRound(b *testing.B) {
	b.Run("1000x200ms", func(b *testing.B) {
		cfg := Reference5()
		cfg.FaultTolerance = true
		cfg.Detector = true
		cfg.DetectParallel = 256
		cfg.DetectTimeout = 200 * time.Millisecond
		clk := clock.Real{}
		hang := probe.ServiceDetectorFunc(func(ctx context.Context, _ string) error {
			<-ctx.Done()
			return ctx.Err()
		})
		resolver := probe.ResolverFunc(func(b string) (string, bool) { return "addr-" + b, true })
		s, err := NewStrategy(cfg, WithClock(clk), WithResolver(resolver), WithServiceDetector(hang))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for i := range 1000 {
			s.Update(fmt.Sprintf("broker-%04d", i), time.Second, true, false)
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, sl := range s.table.presentSlots() {
				sl.checkStamp.Store(0) // every item due again
			}
			rep, _ := s.DetectRound(context.Background())
			// A probe whose detector returns past its grace on a loaded
			// machine is NoAnswer, not TimedOut: either way it ran into
			// its timeout.
			if rep.TimedOut+rep.NoAnswer != 1000 {
				b.Fatalf("round timed out %d probes (%d more without an answer from the detector), want 1000", rep.TimedOut, rep.NoAnswer)
			}
		}
	})
}

// BenchmarkExpiry measures how late, on the real clock, an isolation ends:
// isolate for 2 ms and wait (blocked, not spinning) for the recovery, whose
// event carries the moment the slot flipped back to available. It reports the
// mean delay past the isolation's end (late-µs/op) and the worst
// (max-late-µs). On a ManualClock expiry is exact by construction.
func BenchmarkExpiry(b *testing.B) {
	b.Run("real", func(b *testing.B) {
		recovered := make(chan RecoveryEvent, 1)
		t := NewFaultTable(ModeV5, clock.Real{})
		t.obs = recoveryObserver(recovered)
		var total, worst time.Duration
		n := 0
		for b.Loop() {
			t.Update("b", 0, 2*time.Millisecond, true)
			it, _ := t.Item("b")
			ev := <-recovered
			late := ev.At.Sub(it.IsolatedUntil)
			total += late
			worst = max(worst, late)
			n++
		}
		b.ReportMetric(float64(total.Microseconds())/float64(n), "late-µs/op")
		b.ReportMetric(float64(worst.Microseconds()), "max-late-µs")
	})
}

type recoveryObserver chan RecoveryEvent

func (recoveryObserver) OnIsolate(IsolationEvent)     {}
func (recoveryObserver) OnProbe(ProbeEvent)           {}
func (o recoveryObserver) OnRecover(ev RecoveryEvent) { o <- ev }
