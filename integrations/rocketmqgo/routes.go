package rocketmqgo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	mqproducer "github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// RouteProbeProperty is the property that marks a route probe: the message
// the wrapper hands the client (SendSync) to learn the queues of a topic it
// has not seen yet. The wrapper's queue selector records the queue list the
// client passes it and answers nil, so the client fails the call with "the
// topic=T route info not found" and sends nothing to any broker. Interceptors
// see the call; they can recognise it by this property (value "true").
const RouteProbeProperty = "MQFAULT_ROUTE_PROBE"

// clientRoutes is the send loop's RouteSource: the queues the client itself
// uses. The client hands its queue selector the topic's queue list on every
// send; learn records it, and the route it returns is that list (each broker's
// queue count, as producer.StaticRoutes.SetQueues builds a route). A topic
// never seen is probed: one client call that learns the list and sends
// nothing. The client keeps its routes fresh (every 30 s from the name
// server); a list that changed tells changed, which refreshes the send
// loop's routes.
//
// All methods are safe for concurrent use. learn, on every send, costs one
// map load and a pointer comparison while the client's list is unchanged.
type clientRoutes struct {
	known   mqproducer.StaticRoutes
	seen    sync.Map // topic -> *seenTopic
	probe   func(ctx context.Context, topic string) error
	changed func()
}

// seenTopic is what learn keeps per topic.
type seenTopic struct {
	last atomic.Pointer[seenList]
	mu   sync.Mutex // serializes changes of last and of the topic's known route
}

// seenList is the last queue list the client passed for a topic.
type seenList struct {
	head   **primitive.MessageQueue // &mqs[0]: the client reuses its slice until its route changes
	n      int
	counts map[string]int // queues per broker
}

var _ mqproducer.RouteSource = (*clientRoutes)(nil)

// Lookup implements producer.RouteSource: the learnt route, probing the
// client first for a topic not seen yet. A topic the client has no queues
// for is an error wrapping producer.ErrNoRoute and the probe's error.
func (r *clientRoutes) Lookup(ctx context.Context, topic string) (*route.TopicRouteData, error) {
	if data, err := r.known.Lookup(ctx, topic); err == nil {
		return data, nil
	}
	perr := r.probe(ctx, topic)
	if data, err := r.known.Lookup(ctx, topic); err == nil {
		return data, nil
	}
	if perr == nil {
		perr = errors.New("the client passed no queue list")
	}
	return nil, fmt.Errorf("%w: the client has no queues for topic %q: %w", mqproducer.ErrNoRoute, topic, perr)
}

// learn records the queue list the client passed for topic.
func (r *clientRoutes) learn(topic string, mqs []*primitive.MessageQueue) {
	if len(mqs) == 0 {
		return
	}
	v, ok := r.seen.Load(topic)
	if !ok {
		v, _ = r.seen.LoadOrStore(topic, new(seenTopic))
	}
	t := v.(*seenTopic)
	if same(t.last.Load(), mqs) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.last.Load()
	if same(old, mqs) {
		return
	}
	counts := make(map[string]int)
	for _, q := range mqs {
		if q != nil {
			counts[q.BrokerName]++
		}
	}
	t.last.Store(&seenList{head: &mqs[0], n: len(mqs), counts: counts})
	if old != nil && maps.Equal(old.counts, counts) {
		return
	}
	r.known.SetQueues(topic, counts)
	if r.changed != nil {
		r.changed()
	}
}

// hasBroker reports whether any learnt route has queues on broker.
func (r *clientRoutes) hasBroker(broker string) bool {
	found := false
	r.seen.Range(func(_, v any) bool {
		if l := v.(*seenTopic).last.Load(); l != nil && l.counts[broker] > 0 {
			found = true
		}
		return !found
	})
	return found
}

// topicOf returns a learnt topic with queues on broker, "" when none.
func (r *clientRoutes) topicOf(broker string) string {
	topic := ""
	r.seen.Range(func(k, v any) bool {
		if l := v.(*seenTopic).last.Load(); l != nil && l.counts[broker] > 0 {
			topic = k.(string)
		}
		return topic == ""
	})
	return topic
}

// same reports whether mqs is the very list l was learnt from: the client
// builds a new list whenever its route changes.
func same(l *seenList, mqs []*primitive.MessageQueue) bool {
	return l != nil && l.n == len(mqs) && l.head == &mqs[0]
}
