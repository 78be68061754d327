package latency_test

import (
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

func publishInfo(t *testing.T, topic string, brokers ...string) *route.PublishInfo {
	t.Helper()
	var qs []route.MessageQueue
	for _, b := range brokers {
		qs = append(qs, route.MessageQueue{Topic: topic, BrokerName: b})
	}
	info, err := route.NewPublishInfoFromQueues(topic, qs)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestStrategyKnowsItsRoutes checks that the strategy drops the fault items
// of brokers no route announced to it names, and only those: a broker named
// by another topic's route stays, one no route names goes, a topic whose
// route is removed no longer keeps its brokers; an item of a broker that
// was never in an announced route stays until a route is announced.
func TestStrategyKnowsItsRoutes(t *testing.T) {
	s, _ := faultOnStrategy(t, latency.ModeV5)
	for _, b := range []string{"A", "B", "C", "D"} {
		s.Update(b, time.Second, true, false)
	}
	has := func(b string) bool { _, ok := s.Table().Item(b); return ok }
	if !has("D") {
		t.Fatal("no item for D")
	}
	s.RouteChanged(publishInfo(t, "T1", "A", "B", "C"))
	s.RouteChanged(publishInfo(t, "T2", "C"))
	if has("D") || !has("A") || !has("B") || !has("C") {
		t.Errorf("after T1=[A B C], T2=[C]: A %v B %v C %v D %v, want only D dropped", has("A"), has("B"), has("C"), has("D"))
	}
	s.RouteChanged(publishInfo(t, "T1", "A"))
	if has("B") || !has("A") || !has("C") {
		t.Errorf("after T1=[A]: A %v B %v C %v, want B dropped, C kept by T2", has("A"), has("B"), has("C"))
	}
	s.RouteRemoved("T2")
	if has("C") || !has("A") {
		t.Errorf("after T2 removed: A %v C %v, want C dropped", has("A"), has("C"))
	}
	s.RouteRemoved("T3") // never announced: nothing happens
	if !has("A") {
		t.Error("removing an unknown topic dropped A")
	}
}
