package latency

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/route"
)

// TestBindingPosition checks how an attempt's end finds its queue in the
// route it was picked from (loadOf): every queue of the route is found at
// its position, and a queue that is not in the route's list (a copy, one of
// another route, nil) is refused.
func TestBindingPosition(t *testing.T) {
	cfg := Reference5()
	cfg.FaultTolerance, cfg.LoadAware = true, true
	s, err := NewStrategy(cfg, WithClock(NewManualClock(time.UnixMilli(1))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk := func(brokers ...string) *route.PublishInfo {
		var qs []route.MessageQueue
		for _, b := range brokers {
			for id := range 3 {
				qs = append(qs, route.MessageQueue{Topic: "T", BrokerName: b, QueueID: id})
			}
		}
		info, err := route.NewPublishInfoFromQueues("T", qs)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	info, other := mk("a", "b", "c"), mk("a", "b", "c")
	b := s.bind(info)
	for i := range info.Len() {
		if got, ok := b.position(info.QueueRef(i)); !ok || got != i {
			t.Errorf("position(queue %d) = %d, %v; want %d, true", i, got, ok, i)
		}
		if l := s.loadOf(info.QueueRef(i)); l != &b.entries[i].s.load {
			t.Errorf("loadOf(queue %d) is not its binding's slot", i)
		}
		cp := info.Queue(i)
		if got, ok := b.position(&cp); ok {
			t.Errorf("position(copy of queue %d) = %d, true; want false", i, got)
		}
		if got, ok := b.position(other.QueueRef(i)); ok {
			t.Errorf("position(queue %d of another route) = %d, true; want false", i, got)
		}
		if l := s.loadOf(&cp); l != &s.table.lookup(cp.BrokerName).load {
			t.Errorf("loadOf(copy of queue %d) is not the broker's slot", i)
		}
	}
	if got, ok := b.position(nil); ok {
		t.Errorf("position(nil) = %d, true; want false", got)
	}
}
