package route

import (
	"errors"
	"strconv"
	"sync/atomic"
)

// PublishInfo is the list of message queues a producer picks from for one
// topic, in the reference's order, with its round-robin index (Java
// TopicPublishInfo). Build it with NewPublishInfo from route data or with
// NewPublishInfoFromQueues.
//
// A PublishInfo never changes after construction except for its index, so all
// methods are safe for concurrent use; none blocks or allocates.
type PublishInfo struct {
	topic       string
	queues      []MessageQueue
	ordered     bool
	brokers     []string         // distinct broker names, in order of first appearance
	queueBroker []int32          // queue position -> index into brokers
	brokerIndex map[string]int32 // broker name -> index into brokers
	writeNums   map[string]int   // broker -> write queue count of its first writable queue data

	memo atomic.Pointer[memo]

	_     [64]byte // keep the index, written on every pick, off the lines read with it
	index Index
	_     [60]byte
}

type memo struct {
	owner uint64
	value any
}

// Option configures a PublishInfo.
type Option func(*options)

type options struct {
	random RandomSource
}

// WithRandom sets the random source of the publish info's index (a fresh
// index starts from a random value and Reset draws another); the default is
// DefaultRandom.
func WithRandom(src RandomSource) Option {
	return func(o *options) { o.random = src }
}

func newPublishInfo(topic string, queues []MessageQueue, ordered bool, writeNums map[string]int, opts []Option) *PublishInfo {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	p := &PublishInfo{
		topic:       topic,
		queues:      queues,
		ordered:     ordered,
		queueBroker: make([]int32, len(queues)),
		brokerIndex: make(map[string]int32),
		writeNums:   writeNums,
	}
	for i, q := range queues {
		b, ok := p.brokerIndex[q.BrokerName]
		if !ok {
			b = int32(len(p.brokers))
			p.brokers = append(p.brokers, q.BrokerName)
			p.brokerIndex[q.BrokerName] = b
		}
		p.queueBroker[i] = b
	}
	p.index.init(o.random)
	return p
}

// NewPublishInfoFromQueues builds a publish info over the given queues, in the
// given order, for producers whose routes do not come from a RocketMQ name
// server. WriteQueueNums of a broker is then the number of its queues in the
// list. The slice is copied; a queue whose Topic is empty gets topic.
//
// An empty topic, a queue of another topic and a queue without a broker name
// are errors: a *Error per problem in the order of the queues (at most 10,
// then one saying how many more), joined.
func NewPublishInfoFromQueues(topic string, queues []MessageQueue, opts ...Option) (*PublishInfo, error) {
	if topic == "" {
		return nil, &Error{Topic: topic, Field: "topic", Reason: "is empty"}
	}
	qs := make([]MessageQueue, len(queues))
	copy(qs, queues)
	nums := make(map[string]int)
	var errs []error
	for i := range qs {
		q := &qs[i]
		switch {
		case q.BrokerName == "":
			errs = append(errs, &Error{Topic: topic, Field: "queues", Value: q.String(), Reason: "queue " + strconv.Itoa(i) + " has an empty broker name"})
		case q.Topic != "" && q.Topic != topic:
			errs = append(errs, &Error{Topic: topic, Field: "queues", Value: q.String(), Reason: "queue " + strconv.Itoa(i) + " is of topic " + strconv.Quote(q.Topic)})
		}
		if q.Topic == "" {
			q.Topic = topic
		}
		nums[q.BrokerName]++
	}
	if len(errs) > 0 {
		const most = 10
		if len(errs) > most {
			errs = append(errs[:most], &Error{Topic: topic, Field: "queues", Reason: "and " + strconv.Itoa(len(errs)-most) + " more queues with problems"})
		}
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, errors.Join(errs...)
	}
	return newPublishInfo(topic, qs, false, nums, opts), nil
}

// Topic returns the topic the queues belong to.
func (p *PublishInfo) Topic() string { return p.topic }

// Len returns the number of queues (0 for a nil publish info).
func (p *PublishInfo) Len() int {
	if p == nil {
		return 0
	}
	return len(p.queues)
}

// OK reports whether there is at least one queue to send to (Java ok()).
func (p *PublishInfo) OK() bool { return len(p.queues) > 0 }

// Queue returns the queue at position i, 0 <= i < Len().
func (p *PublishInfo) Queue(i int) MessageQueue { return p.queues[i] }

// QueueRef returns a pointer to the queue at position i, 0 <= i < Len(),
// without copying it; the queue must not be modified. Pick paths use it
// because returning a queue by value costs more than the whole pick.
func (p *PublishInfo) QueueRef(i int) *MessageQueue { return &p.queues[i] }

// Queues returns a copy of the queue list.
func (p *PublishInfo) Queues() []MessageQueue {
	out := make([]MessageQueue, len(p.queues))
	copy(out, p.queues)
	return out
}

// Ordered reports whether the queues came from an orderTopicConf.
func (p *PublishInfo) Ordered() bool { return p.ordered }

// Brokers returns the distinct broker names of the queues, in order of first
// appearance. The slice must not be modified.
func (p *PublishInfo) Brokers() []string { return p.brokers }

// BrokerOf returns the position in Brokers() of the broker of queue i.
func (p *PublishInfo) BrokerOf(i int) int { return int(p.queueBroker[i]) }

// BrokerIndex returns the position in Brokers() of the named broker.
func (p *PublishInfo) BrokerIndex(broker string) (int, bool) {
	b, ok := p.brokerIndex[broker]
	return int(b), ok
}

// HasBroker reports whether any queue is on the named broker.
func (p *PublishInfo) HasBroker(broker string) bool {
	_, ok := p.brokerIndex[broker]
	return ok
}

// WriteQueueNums returns the write queue count of the first writable queue
// data of broker in the route (sorted by broker name), or -1 when there is
// none (Java getQueueIdByBroker, 4.x). It does not look at broker data: a
// broker without a master still answers.
func (p *PublishInfo) WriteQueueNums(broker string) int {
	if n, ok := p.writeNums[broker]; ok {
		return n
	}
	return -1
}

// Index returns the publish info's round-robin index.
func (p *PublishInfo) Index() *Index { return &p.index }

// ResetIndex resets the index to a fresh random value (Java resetIndex).
func (p *PublishInfo) ResetIndex() { p.index.Reset() }

// Select is the reference's filtered pick: up to Len() probes, each moving the
// index by one and looking at position abs(next() % n); it returns the first
// queue that every filter admits (all filters are evaluated on each probe).
// With no filters it is one unfiltered probe. ok is false when no queue
// passes or there are no queues.
func (p *PublishInfo) Select(filters ...QueueFilter) (q MessageQueue, ok bool) {
	n := len(p.queues)
	if n == 0 {
		return MessageQueue{}, false
	}
	if len(filters) == 0 {
		return p.queues[Position(p.index.Add(1), n)], true
	}
	for range n {
		q := p.queues[Position(p.index.Add(1), n)]
		pass := true
		for _, f := range filters {
			if !f.Filter(q) {
				pass = false
			}
		}
		if pass {
			return q, true
		}
	}
	return MessageQueue{}, false
}

// SelectAny is the reference's unfiltered pick: one move of the index,
// position next() % n. ok is false only when there are no queues (where the
// reference divides by zero).
func (p *PublishInfo) SelectAny() (q MessageQueue, ok bool) {
	n := len(p.queues)
	if n == 0 {
		return MessageQueue{}, false
	}
	return p.queues[Position(p.index.Add(1), n)], true
}

// SelectAvoiding is the reference's "avoid the last broker" pick (Java
// selectOneMessageQueue(lastBrokerName)): with an empty last broker one
// unfiltered pick; otherwise up to Len() unfiltered picks, returning the first
// whose broker is not last, and after Len() misses one more unfiltered pick.
func (p *PublishInfo) SelectAvoiding(last string) (q MessageQueue, ok bool) {
	n := len(p.queues)
	if n == 0 {
		return MessageQueue{}, false
	}
	if last != "" {
		for range n {
			q := p.queues[Position(p.index.Add(1), n)]
			if q.BrokerName != last {
				return q, true
			}
		}
	}
	return p.queues[Position(p.index.Add(1), n)], true
}

// Memo returns the value stored with SetMemo under owner, or nil. It lets a
// package that picks over publish infos (the latency strategy) keep state it
// derived from this route with the route itself, found with one atomic load.
// Owners are numbers from NewMemoOwner.
func (p *PublishInfo) Memo(owner uint64) any {
	if m := p.memo.Load(); m != nil && m.owner == owner {
		return m.value
	}
	return nil
}

// SetMemo stores v under owner, replacing whatever another owner stored (a
// publish info keeps one memo; two owners sharing one publish info still
// work, each rebuilding its memo when it finds the other's).
func (p *PublishInfo) SetMemo(owner uint64, v any) {
	p.memo.Store(&memo{owner: owner, value: v})
}

var memoOwners atomic.Uint64

// NewMemoOwner returns a number no other call returned, for Memo and SetMemo.
func NewMemoOwner() uint64 { return memoOwners.Add(1) }
