package latency_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
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

// TestSharedTableEviction is issue 21's item 1: strategies over one fault
// table (WithFaultTable) drop a broker's item only when no route announced
// to any of them names it, and a strategy that was announced no route yet
// keeps every item; Close gives up what a strategy kept.
//
//  1. s1 isolates a, announced nothing; s2 is announced T2=[c]: a stays
//     isolated (s1 may pick any broker).
//  2. s1 is announced T1=[a b]; s2 updates c and d and is announced T2=[c]
//     again: d goes (no route names it), a stays isolated, c stays.
//  3. s1 is announced T1=[b]: a goes, c stays (s2's route names it).
//  4. s2 is closed and s1 announced T1=[b] again: c goes.
//  5. The closed s2 is announced T2=[e] after updating e and x: it keeps
//     nothing and drops nothing (x, which no route names, stays until s1's
//     next route), then s1's next route drops both.
//  6. A new s3, announced nothing, keeps y (no route names it) through s1's
//     route changes until it is closed.
func TestSharedTableEviction(t *testing.T) {
	clk := clock.NewManual(t0)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	s1, _ := faultOnStrategy(t, latency.ModeV5, latency.WithClock(clk), latency.WithFaultTable(ft))
	s2, _ := faultOnStrategy(t, latency.ModeV5, latency.WithClock(clk), latency.WithFaultTable(ft))
	has := func(b string) bool { _, ok := ft.Item(b); return ok }
	state := func() string {
		var out []string
		for _, it := range ft.Items() {
			s := it.Broker
			if !it.Available {
				s += "(isolated)"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}

	s1.Update("a", time.Second, true, false)
	s2.RouteChanged(publishInfo(t, "T2", "c"))
	if ft.IsAvailable("a") || !has("a") {
		t.Fatalf("1: after s2's route [c], items %q: want a still isolated (s1 was announced no route)", state())
	}

	s1.RouteChanged(publishInfo(t, "T1", "a", "b"))
	s2.Update("c", 0, false, true)
	s2.Update("d", 0, false, true)
	s2.RouteChanged(publishInfo(t, "T2", "c"))
	if got, want := state(), "a(isolated) c"; got != want {
		t.Fatalf("2: after T1=[a b], T2=[c]: items %q, want %q (d named by no route)", got, want)
	}

	s1.RouteChanged(publishInfo(t, "T1", "b"))
	if got, want := state(), "c"; got != want {
		t.Fatalf("3: after T1=[b]: items %q, want %q (c named by s2's route)", got, want)
	}

	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	s1.Update("b", 0, false, true)
	s1.RouteChanged(publishInfo(t, "T1", "b"))
	if got, want := state(), "b"; got != want {
		t.Fatalf("4: after s2's Close and T1=[b]: items %q, want %q", got, want)
	}

	s2.Update("e", 0, false, true)
	s2.Update("x", 0, false, true)
	s2.RouteChanged(publishInfo(t, "T2", "e"))
	if got, want := state(), "b e x"; got != want {
		t.Fatalf("5: after the closed s2's T2=[e]: items %q, want %q (a closed strategy neither keeps nor drops)", got, want)
	}
	s1.RouteChanged(publishInfo(t, "T1", "b"))
	if got, want := state(), "b"; got != want {
		t.Fatalf("5: after s1's T1=[b]: items %q, want %q", got, want)
	}

	s3, _ := faultOnStrategy(t, latency.ModeV5, latency.WithClock(clk), latency.WithFaultTable(ft))
	s1.Update("y", 0, false, true)
	s1.RouteChanged(publishInfo(t, "T1", "b"))
	if got, want := state(), "b y"; got != want {
		t.Fatalf("6: with s3 announced nothing: items %q, want %q", got, want)
	}
	s3.Close()
	s1.RouteChanged(publishInfo(t, "T1", "b"))
	if got, want := state(), "b"; got != want {
		t.Fatalf("6: after s3's Close: items %q, want %q", got, want)
	}
}

// TestSharedTableEvictionConcurrent churns the routes of four strategies
// over one table from four goroutines, with updates and picks, while one of
// them closes half-way; then every broker gets an item and each live
// strategy is announced its last routes again: exactly the brokers those
// routes name keep their items (a claim counted twice keeps too many, one
// lost drops one that a route names).
func TestSharedTableEvictionConcurrent(t *testing.T) {
	clk := clock.NewManual(t0)
	ft := latency.NewFaultTable(latency.ModeV5, clk)
	pool := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	const n, rounds = 4, 300
	strategies := make([]*latency.Strategy, n)
	last := make([]map[string][]string, n) // per strategy, topic -> brokers
	for i := range strategies {
		strategies[i], _ = faultOnStrategy(t, latency.ModeV5, latency.WithClock(clk), latency.WithFaultTable(ft))
		last[i] = map[string][]string{}
	}
	var wg sync.WaitGroup
	for i, s := range strategies {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(i), 21))
			for r := range rounds {
				topic := fmt.Sprintf("T%d", rnd.IntN(3))
				var brokers []string
				for _, b := range pool {
					if rnd.IntN(3) == 0 {
						brokers = append(brokers, b)
					}
				}
				if len(brokers) == 0 || rnd.IntN(10) == 0 {
					s.RouteRemoved(topic)
					delete(last[i], topic)
					continue
				}
				info := publishInfo(t, topic, brokers...)
				s.RouteChanged(info)
				last[i][topic] = brokers
				s.Update(brokers[rnd.IntN(len(brokers))], time.Duration(rnd.IntN(1000))*time.Millisecond, rnd.IntN(4) == 0, true)
				if p, ok := s.Select(info, latency.PickInfo{}); ok {
					p.Done(latency.Outcome{Class: latency.ClassAnswered, Latency: time.Millisecond})
				}
				if i == n-1 && r == rounds/2 {
					s.Close()
					return
				}
			}
		})
	}
	wg.Wait()
	want := map[string]bool{}
	for _, b := range pool {
		strategies[0].Update(b, 0, false, true)
	}
	for i, s := range strategies[:n-1] {
		for topic, brokers := range last[i] {
			s.RouteChanged(publishInfo(t, topic, brokers...))
			for _, b := range brokers {
				want[b] = true
			}
		}
	}
	// One more change, in case no live strategy had a route left to announce.
	strategies[0].RouteChanged(publishInfo(t, "X", "a"))
	strategies[0].RouteRemoved("X")
	var got []string
	for _, it := range ft.Items() {
		got = append(got, it.Broker)
	}
	var wanted []string
	for _, b := range pool {
		if want[b] {
			wanted = append(wanted, b)
		}
	}
	if !slices.Equal(got, wanted) {
		t.Errorf("items after the churn = %v, want %v (the brokers the live strategies' routes name)", got, wanted)
	}
}
