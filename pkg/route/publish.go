package route

import (
	"errors"
	"strconv"
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

	_     [64]byte // keep the index, written on every pick, off the lines read with it
	index Index
	_     [60]byte
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
		// A size hint: a normal topic's brokers are among writeNums'.
		brokerIndex: make(map[string]int32, min(len(queues), len(writeNums))),
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
