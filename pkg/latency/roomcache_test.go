package latency

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/route"
)

// TestRoomCacheAgreesWithScan drives a preset strategy over 12 brokers
// through random push-backs, isolations, reachability flips and clock
// steps (short ones, so weights climb back across roomWeight between
// questions), and after each asks roomElsewhere, which answers from the
// binding's cache when it holds, every question a pick could ask (each
// broker, each last broker or none, strict or not), against a scan of the
// brokers: the cache must never answer otherwise.
func TestRoomCacheAgreesWithScan(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Detector = false
			clk := clock.NewManual(time.UnixMilli(1_000_000))
			s, err := NewStrategy(cfg, WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			const n = 12
			var qs []route.MessageQueue
			for i := range n {
				name := fmt.Sprintf("broker-%04d", i)
				qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: name}, route.MessageQueue{Topic: "T", BrokerName: name, QueueID: 1})
				s.Update(name, time.Millisecond, false, true)
			}
			info, err := route.NewPublishInfoFromQueues("T", qs)
			if err != nil {
				t.Fatal(err)
			}
			b := s.bind(info)
			c5 := cascade5{s: s}
			m := s.policies.capacity
			r := rand.New(rand.NewPCG(seed, 7))
			hits := 0
			for step := range 3000 {
				name := fmt.Sprintf("broker-%04d", r.IntN(n))
				now := s.table.now()
				s.table.see(now)
				switch r.IntN(6) {
				case 0, 1: // a push-back
					if m.pushBack(&s.table.lookup(name).cap, s.table.units(now)) {
						s.table.bump()
					}
				case 2:
					s.Update(name, time.Millisecond, r.IntN(3) == 0, r.IntN(4) != 0)
				case 3:
					s.table.setReachable(name, r.IntN(2) == 0)
				default:
					clk.Advance(time.Duration(r.IntN(400)) * time.Millisecond)
				}
				var v *capView
				if b.cap != nil {
					v = b.cap.current(s.table)
				}
				u := s.table.units(s.table.seen.Load())
				for broker := range int32(n) {
					for last := int32(-1); last < n; last++ {
						for _, strict := range []bool{false, true} {
							want := c5.scanRoom(b, v, broker, last, strict, u)
							if got := c5.roomElsewhere(b, v, broker, last, strict, u); got != want {
								t.Fatalf("step %d: roomElsewhere(broker %d, last %d, strict %t) = %t, the scan says %t", step, broker, last, strict, got, want)
							}
							hits++
						}
					}
				}
			}
			if hits == 0 {
				t.Fatal("asked nothing")
			}
		})
	}
}

// TestRoomUnit: roomUnit is exactly the first stamp unit at which a
// weight below roomWeight is back at it by its climb (weightQ), for weights
// across the range and recovery periods from 1 ms to an hour.
func TestRoomUnit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, rec := range []time.Duration{time.Millisecond, time.Second, DefaultCapacityRecovery, time.Hour} {
		cfg := DefaultConfig()
		cfg.Detector = false
		cfg.Capacity.Recovery = rec
		s, err := NewStrategy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := s.policies.capacity
		for range 2000 {
			w := uint64(r.IntN(roomWeight))
			stamp := int64(r.IntN(1 << 30))
			st := w<<stampBits | uint64(stamp)
			ru := m.roomUnit(st)
			if got := m.weightQ(st, ru); got < roomWeight {
				t.Fatalf("recovery %v, weight %d at %d: weightQ at roomUnit %d = %d, below %d", rec, w, stamp, ru, got, roomWeight)
			}
			if ru-1 > stamp {
				if got := m.weightQ(st, ru-1); got >= roomWeight {
					t.Fatalf("recovery %v, weight %d at %d: weightQ a unit before roomUnit %d = %d, room already", rec, w, stamp, ru, got)
				}
			}
		}
		s.Close()
	}
}
