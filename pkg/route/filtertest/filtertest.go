// Package filtertest is the conformance suite for route filters that decide
// in batch: filters told of each route (an Update method) that then answer
// per queue from that decision, as the zone filter does, compiled in or as a
// plugin. Run it from a test of the filter:
//
//	func TestConformance(t *testing.T) {
//		filtertest.Run(t, func(tb testing.TB) filtertest.Subject {
//			f := newMyFilter(tb)
//			return filtertest.Subject{Filter: f, Update: func(tb testing.TB, info *route.PublishInfo) { f.Update(info) }}
//		}, cases)
//	}
//
// The checks also run one by one (CheckVerdicts, ...); each takes a
// testing.TB.
package filtertest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mqfault/mqfault/pkg/route"
)

// Subject is a filter under test and the way to tell it of a route.
type Subject struct {
	// Filter is the filter: what a strategy calls on the pick path.
	Filter route.QueueFilter
	// Update tells the filter of info, the new route of info's topic, and
	// returns once the filter answers from it (a filter that fetches its
	// verdicts in the background waits for them here).
	Update func(tb testing.TB, info *route.PublishInfo)
}

// Case is a route and the verdicts the filter must give on its queues.
type Case struct {
	Name string
	// Topic is the route's topic; every queue is taken as a queue of it.
	Topic string
	// Queues are the route's queues, in order; broker names must not be
	// empty.
	Queues []route.MessageQueue
	// Want[i] is the verdict on Queues[i].
	Want []bool
}

// Run runs every check, each as a subtest with a fresh subject from
// newSubject. cases needs at least two entries for the route-change checks.
func Run(t *testing.T, newSubject func(tb testing.TB) Subject, cases []Case) {
	t.Helper()
	if len(cases) == 0 {
		t.Fatal("filtertest.Run: no cases")
	}
	for _, c := range cases {
		t.Run("verdicts/"+c.Name, func(t *testing.T) { CheckVerdicts(t, newSubject(t), c) })
	}
	t.Run("route change", func(t *testing.T) { CheckRouteChange(t, newSubject(t), cases) })
	t.Run("topics are independent", func(t *testing.T) { CheckTopicsIndependent(t, newSubject(t), cases) })
	t.Run("unknown topic is admitted", func(t *testing.T) { CheckUnknownTopicAdmitted(t, newSubject(t), cases[0]) })
	t.Run("empty route", func(t *testing.T) { CheckEmptyRoute(t, newSubject(t)) })
	t.Run("odd queues", func(t *testing.T) { CheckOddQueues(t, newSubject(t), cases[0]) })
	t.Run("no allocation", func(t *testing.T) { CheckNoAllocation(t, newSubject(t), cases[0]) })
	t.Run("concurrent", func(t *testing.T) { CheckConcurrent(t, newSubject(t), cases[0]) })
}

// PublishInfo builds the publish info of c under topic (c.Topic when topic
// is empty).
func PublishInfo(tb testing.TB, c Case, topic string) *route.PublishInfo {
	tb.Helper()
	if topic == "" {
		topic = c.Topic
	}
	qs := make([]route.MessageQueue, len(c.Queues))
	for i, q := range c.Queues {
		q.Topic = topic
		qs[i] = q
	}
	info, err := route.NewPublishInfoFromQueues(topic, qs)
	if err != nil {
		tb.Fatalf("case %s: %v", c.Name, err)
	}
	return info
}

// expect checks the filter's verdict on every queue of c under topic.
func expect(tb testing.TB, f route.QueueFilter, c Case, topic string) {
	tb.Helper()
	if len(c.Want) != len(c.Queues) {
		tb.Fatalf("case %s: %d verdicts for %d queues", c.Name, len(c.Want), len(c.Queues))
	}
	for i, q := range c.Queues {
		q.Topic = topic
		if got := f.Filter(q); got != c.Want[i] {
			tb.Errorf("case %s: Filter(%s/%s) = %v, want %v", c.Name, topic, q, got, c.Want[i])
		}
	}
}

// CheckVerdicts tells the filter of c's route and checks every verdict.
func CheckVerdicts(tb testing.TB, s Subject, c Case) {
	tb.Helper()
	s.Update(tb, PublishInfo(tb, c, ""))
	expect(tb, s.Filter, c, c.Topic)
}

// CheckRouteChange gives one topic the cases' routes one after another and
// checks that the verdicts always follow the latest route.
func CheckRouteChange(tb testing.TB, s Subject, cases []Case) {
	tb.Helper()
	const topic = "filtertest-route-change"
	order := append(append([]Case(nil), cases...), cases[0])
	for _, c := range order {
		s.Update(tb, PublishInfo(tb, c, topic))
		expect(tb, s.Filter, c, topic)
	}
}

// CheckTopicsIndependent gives every case its own topic, then checks every
// topic's verdicts: deciding one route changes no other.
func CheckTopicsIndependent(tb testing.TB, s Subject, cases []Case) {
	tb.Helper()
	for i, c := range cases {
		s.Update(tb, PublishInfo(tb, c, fmt.Sprintf("filtertest-topic-%d", i)))
	}
	for i, c := range cases {
		expect(tb, s.Filter, c, fmt.Sprintf("filtertest-topic-%d", i))
	}
}

// CheckUnknownTopicAdmitted checks that the queues of a topic the filter
// was never told of are admitted (a batch filter knows nothing of them).
func CheckUnknownTopicAdmitted(tb testing.TB, s Subject, c Case) {
	tb.Helper()
	s.Update(tb, PublishInfo(tb, c, ""))
	for _, q := range c.Queues {
		q.Topic = "filtertest-never-told"
		if !s.Filter.Filter(q) {
			tb.Errorf("Filter(%s/%s) = false for a topic the filter was never told of, want true", q.Topic, q)
		}
	}
}

// CheckEmptyRoute tells the filter of a route with no queues; any queue of
// that topic is then admitted.
func CheckEmptyRoute(tb testing.TB, s Subject) {
	tb.Helper()
	info, err := route.NewPublishInfoFromQueues("filtertest-empty", nil)
	if err != nil {
		tb.Fatal(err)
	}
	s.Update(tb, info)
	q := route.MessageQueue{Topic: "filtertest-empty", BrokerName: "any", QueueID: 0}
	if !s.Filter.Filter(q) {
		tb.Errorf("Filter(%s/%s) = false after an empty route, want true", q.Topic, q)
	}
}

// CheckOddQueues asks about queues no route has (zero value, negative id,
// very long names): the filter must answer without panicking.
func CheckOddQueues(tb testing.TB, s Subject, c Case) {
	tb.Helper()
	s.Update(tb, PublishInfo(tb, c, ""))
	long := strings.Repeat("x", 1<<16)
	for _, q := range []route.MessageQueue{
		{},
		{Topic: c.Topic},
		{Topic: c.Topic, BrokerName: "filtertest-unknown-broker", QueueID: -1},
		{Topic: long, BrokerName: long, QueueID: 1 << 40},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					tb.Errorf("Filter(%q/%q:%d) panicked: %v", clip(q.Topic), clip(q.BrokerName), q.QueueID, r)
				}
			}()
			s.Filter.Filter(q)
		}()
	}
}

func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

// CheckNoAllocation checks that Filter allocates nothing (it runs on the
// pick path).
func CheckNoAllocation(tb testing.TB, s Subject, c Case) {
	tb.Helper()
	s.Update(tb, PublishInfo(tb, c, ""))
	qs := make([]route.MessageQueue, len(c.Queues))
	for i, q := range c.Queues {
		q.Topic = c.Topic
		qs[i] = q
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, q := range qs {
			s.Filter.Filter(q)
		}
	})
	if allocs != 0 {
		tb.Errorf("Filter allocates %v times per pass over %d queues, want 0", allocs, len(qs))
	}
}

// CheckConcurrent reads verdicts from several goroutines while the same
// route is given again and again: the verdicts must never waver (a filter
// that refreshes keeps answering from the last decision until the new one is
// in), and the race detector must stay quiet.
func CheckConcurrent(tb testing.TB, s Subject, c Case) {
	tb.Helper()
	s.Update(tb, PublishInfo(tb, c, ""))
	const readers, passes, updates = 2, 200, 5
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					if n >= passes {
						return
					}
				default:
				}
				for i, q := range c.Queues {
					q.Topic = c.Topic
					if got := s.Filter.Filter(q); got != c.Want[i] {
						errs <- fmt.Sprintf("Filter(%s/%s) = %v during a refresh, want %v", q.Topic, q, got, c.Want[i])
						return
					}
				}
				runtime.Gosched() // leave the updater (maybe a plugin) some CPU
			}
		}()
	}
	for range updates {
		s.Update(tb, PublishInfo(tb, c, ""))
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		tb.Error(e)
	}
}
