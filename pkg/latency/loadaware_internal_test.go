package latency

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/route"
)

// TestPickHandle checks how an attempt's end finds its broker's slot
// (FaultTable.resolve): a pick of every queue of the route carries the
// handle of its binding's slot, and finds that slot again after the route
// changed; a pick without a handle finds it by name; once the broker left
// the table the handle still finds the slot the pick was made on (held) and
// the broker's slot by name (live); once the slot's id went to another slot
// the handle finds nothing held, even for a slot of the same broker; and a
// handle met with another broker's name finds nothing held.
func TestPickHandle(t *testing.T) {
	cfg := Reference5()
	cfg.FaultTolerance = true
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
	info := mk("a", "b", "c")
	b := s.bind(info)
	picks := map[string]Pick{}
	for i := range info.Len() {
		p, _ := s.picked(info, b, i, StageAvailable)
		want := b.entries[i].s
		if p.slot == 0 || p.slot != want.handle {
			t.Fatalf("pick of queue %d: handle %d, want its slot's %d", i, p.slot, want.handle)
		}
		picks[p.Queue.BrokerName] = p
	}
	s.RouteChanged(mk("c", "b", "a", "d")) // another route, the same brokers' slots
	for name, p := range picks {
		held, live := s.table.resolve(p.slot, name)
		if want := s.table.lookup(name); held != want || live != want {
			t.Errorf("after a route change, %s's handle resolves to %p, %p; want its slot %p", name, held, live, want)
		}
	}
	if held, live := s.table.resolve(0, "a"); held != s.table.lookup("a") || live != held {
		t.Errorf("no handle: resolve(0, a) = %p, %p; want a's slot by name", held, live)
	}
	if held, _ := s.table.resolve(picks["a"].slot, "b"); held != nil {
		t.Errorf("a's handle with b's name resolved to %p; want nil", held)
	}
	old := s.table.lookup("a")
	s.table.Remove("a")
	if held, live := s.table.resolve(picks["a"].slot, "a"); held != old || live != nil {
		t.Errorf("after Remove(a), a's handle resolves to %p, %p; want the old slot %p and nil", held, live, old)
	}
	again := s.table.slotFor("a") // takes the freed id
	if again.id != old.id || again.handle == old.handle {
		t.Fatalf("a's new slot: id %d handle %d; want the freed id %d with another handle than %d", again.id, again.handle, old.id, old.handle)
	}
	if held, live := s.table.resolve(picks["a"].slot, "a"); held != nil || live != again {
		t.Errorf("after a came back, the old handle resolves to %p, %p; want nil and the new slot %p", held, live, again)
	}
}
