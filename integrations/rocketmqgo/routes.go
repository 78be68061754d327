package rocketmqgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/bits"
	"slices"
	"strings"
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
// queue count, as producer.StaticRoutes.SetQueues builds a route, counting
// each queue id once and leaving bad entries out: see learn). A topic
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
	log     *slog.Logger // where learn warns of entries it left out; nil: nowhere

	dropped [numDropReasons]atomic.Uint64 // entries left out, by reason
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
	left   []leftEntry    // the entries left out
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

// learn records the queue list the client passed for topic. The learnt
// route gives each broker as many queues as the list has distinct ids
// 0..n-1 on it, so that every queue of the route is one of the list:
// rocketmq-client-go (v2.1.2 and master) appends the queues of every queue
// data the name server lists, so a broker listed twice comes twice,
// a:0..3 a:0..3. Entries no route may have (an empty broker name, a queue id
// outside 0..route.MaxQueuesPerBroker-1, a nil queue) are left out, and so
// are a broker's queues after a gap in its ids, so that one bad entry does
// not cost the topic its route: see RouteDrops.
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
	counts, left := countQueues(mqs)
	if len(left) > 0 && (old == nil || !slices.Equal(old.left, left)) {
		r.leftOut(topic, left)
	}
	changed := old == nil || !maps.Equal(old.counts, counts)
	if changed {
		r.known.SetQueues(topic, counts)
	}
	// last is published only once the route is known: a concurrent learn
	// of the same list returns on its unlocked check of last, and its
	// Lookup must then find the route.
	t.last.Store(&seenList{head: &mqs[0], n: len(mqs), counts: counts, left: left})
	if changed && r.changed != nil {
		r.changed()
	}
}

// leftOut counts and logs the entries learn left out of a list of topic.
func (r *clientRoutes) leftOut(topic string, left []leftEntry) {
	const most = 5 // entries the log line describes
	var b strings.Builder
	for i, e := range left {
		r.dropped[e.reason].Add(e.count())
		if i < most {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(e.String())
		}
	}
	if len(left) > most {
		fmt.Fprintf(&b, "; and %d more", len(left)-most)
	}
	if r.log != nil {
		r.log.Warn("rocketmqgo: broker entries of the client's queue list left out of the route (Producer.RouteDrops counts them)",
			"topic", topic, "entries", len(left), "left_out", b.String())
	}
}

// dropReason says why learn left an entry out.
type dropReason uint8

const (
	dropEmptyName dropReason = iota
	dropQueueID
	dropGap
	dropNil
	numDropReasons
)

// leftEntry is an entry of a client list that learn left out.
type leftEntry struct {
	reason dropReason
	broker string
	id     int // dropQueueID: the first queue id out of range
	queues int // the queues left out
}

// count is what the entry adds to its reason's count: one broker, or for nil
// queues their number.
func (e leftEntry) count() uint64 {
	if e.reason == dropNil {
		return uint64(e.queues)
	}
	return 1
}

func (e leftEntry) String() string {
	switch e.reason {
	case dropEmptyName:
		return fmt.Sprintf("%d queues with an empty broker name", e.queues)
	case dropQueueID:
		return fmt.Sprintf("broker %q (%d queues): queue id %d is outside 0..%d (route.MaxQueuesPerBroker is %d)",
			e.broker, e.queues, e.id, route.MaxQueuesPerBroker-1, route.MaxQueuesPerBroker)
	case dropGap:
		return fmt.Sprintf("broker %q: queue ids skip one, %d queues after the gap", e.broker, e.queues)
	default:
		return fmt.Sprintf("%d nil queues", e.queues)
	}
}

// brokerQueues collects the queue ids of one broker in a client list.
type brokerQueues struct {
	ids    []uint64 // bit i: queue id i is in the list
	queues int      // the broker's entries in the list, duplicates included
	bad    bool     // some id is outside 0..route.MaxQueuesPerBroker-1
	badID  int      // the first such id
}

func (b *brokerQueues) add(id int) {
	b.queues++
	if id < 0 || id >= route.MaxQueuesPerBroker {
		if !b.bad {
			b.bad, b.badID = true, id
		}
		return
	}
	w := id / 64
	if w >= len(b.ids) {
		b.ids = append(b.ids, make([]uint64, w+1-len(b.ids))...)
	}
	b.ids[w] |= 1 << (id % 64)
}

// prefix returns n, the ids 0..n-1 being in the list and n not, and the
// number of distinct ids after n.
func (b *brokerQueues) prefix() (n, after int) {
	i := 0
	for i < len(b.ids) && b.ids[i] == ^uint64(0) {
		i++
	}
	if i < len(b.ids) {
		n = i*64 + bits.TrailingZeros64(^b.ids[i])
	} else {
		n = i * 64
	}
	for _, w := range b.ids {
		after += bits.OnesCount64(w)
	}
	return n, after - n
}

// countQueues returns each broker's queue count in the route learnt from
// mqs, and the entries left out, in order of first appearance.
func countQueues(mqs []*primitive.MessageQueue) (map[string]int, []leftEntry) {
	byName := make(map[string]*brokerQueues)
	var order []string
	nils := 0
	for _, q := range mqs {
		if q == nil {
			nils++
			continue
		}
		b, ok := byName[q.BrokerName]
		if !ok {
			b = new(brokerQueues)
			byName[q.BrokerName] = b
			order = append(order, q.BrokerName)
		}
		b.add(q.QueueId)
	}
	counts := make(map[string]int, len(order))
	var left []leftEntry
	if nils > 0 {
		left = append(left, leftEntry{reason: dropNil, queues: nils})
	}
	for _, name := range order {
		b := byName[name]
		switch {
		case name == "":
			left = append(left, leftEntry{reason: dropEmptyName, queues: b.queues})
		case b.bad:
			left = append(left, leftEntry{reason: dropQueueID, broker: name, id: b.badID, queues: b.queues})
		default:
			n, after := b.prefix()
			if after > 0 {
				left = append(left, leftEntry{reason: dropGap, broker: name, queues: after})
			}
			if n > 0 {
				counts[name] = n
			}
		}
	}
	return counts, left
}

// RouteDrops counts the entries of the client's queue lists that the learnt
// routes left out, by reason. An entry is counted once for each list that
// leaves it out, except a list that leaves out the same entries as the list
// of the topic before it (the client passes the same list on every send
// until its route changes).
type RouteDrops struct {
	// EmptyName counts lists with queues of an empty broker name.
	EmptyName uint64
	// TooManyQueues counts brokers with a queue id outside
	// 0..route.MaxQueuesPerBroker-1 (more queues than a broker may have):
	// all their queues are left out.
	TooManyQueues uint64
	// QueueIDGap counts brokers whose queue ids skip one: the queues after
	// the gap are left out.
	QueueIDGap uint64
	// NilQueue counts nil queues.
	NilQueue uint64
}

func (d RouteDrops) total() uint64 { return d.EmptyName + d.TooManyQueues + d.QueueIDGap + d.NilQueue }

func (r *clientRoutes) drops() RouteDrops {
	return RouteDrops{
		EmptyName:     r.dropped[dropEmptyName].Load(),
		TooManyQueues: r.dropped[dropQueueID].Load(),
		QueueIDGap:    r.dropped[dropGap].Load(),
		NilQueue:      r.dropped[dropNil].Load(),
	}
}

// RouteDrops returns how many entries of the client's queue lists the
// learnt routes left out so far, by reason; each time it leaves entries out
// the wrapper logs a warning naming the topic and the entries. It is safe
// for concurrent use.
func (p *Producer) RouteDrops() RouteDrops { return p.routes.drops() }

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
