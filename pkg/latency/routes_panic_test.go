package latency_test

import (
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// toldFilter is a route filter that records the infos it was told of and
// panics in Update when boom is set.
type toldFilter struct {
	boom    bool
	told    []*route.PublishInfo
	removed []string
}

func (f *toldFilter) Filter(route.MessageQueue) bool { return true }
func (f *toldFilter) Remove(topic string) {
	f.removed = append(f.removed, topic)
	if f.boom {
		panic("filter boom")
	}
}
func (f *toldFilter) Update(info *route.PublishInfo) {
	f.told = append(f.told, info)
	if f.boom {
		panic("filter boom")
	}
}

// TestRouteChangedFilterPanics: when a route filter's Update (Remove) panics,
// the filters after it are still told of the route (its removal), the
// strategy still picks over it (still forgets the brokers only it named), and
// the panic reaches the caller unchanged (the producer recovers it).
func TestRouteChangedFilterPanics(t *testing.T) {
	first, bad, last := &toldFilter{}, &toldFilter{boom: true}, &toldFilter{}
	cfg := latency.Reference5()
	cfg.FaultTolerance = true
	cfg.Filters = []route.QueueFilter{first, bad, last}
	s, err := latency.NewStrategy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	info, err := route.NewPublishInfoFromQueues("T", []route.MessageQueue{{Topic: "T", BrokerName: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != "filter boom" {
				t.Errorf("RouteChanged panicked with %v, want the filter's panic", r)
			}
		}()
		s.RouteChanged(info)
	}()
	for name, f := range map[string]*toldFilter{"first": first, "panicking": bad, "last": last} {
		if len(f.told) != 1 || f.told[0] != info {
			t.Errorf("the %s filter was told of %v, want the route once", name, f.told)
		}
	}
	if p, ok := s.Select(info, latency.PickInfo{}); !ok || p.Queue.BrokerName != "b" {
		t.Errorf("Select() after the panic = %+v, %v; want b", p, ok)
	}

	s.Update("b", 0, true, false)
	if _, ok := s.Table().Item("b"); !ok {
		t.Fatal("no fault item for b after a failure")
	}
	func() {
		defer func() {
			if r := recover(); r != "filter boom" {
				t.Errorf("RouteRemoved panicked with %v, want the filter's panic", r)
			}
		}()
		s.RouteRemoved("T")
	}()
	for name, f := range map[string]*toldFilter{"first": first, "panicking": bad, "last": last} {
		if len(f.removed) != 1 || f.removed[0] != "T" {
			t.Errorf("the %s filter was told of removals %v, want [T]", name, f.removed)
		}
	}
	if _, ok := s.Table().Item("b"); ok {
		t.Error("b's fault item outlived the only route naming it")
	}
}
