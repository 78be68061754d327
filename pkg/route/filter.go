package route

// QueueFilter judges one queue: true admits it. A pick calls Filter on the
// pick path, once per probed queue, so it must be fast, must not block and
// must be safe for concurrent use. A filter that needs to see the whole route
// (for example "prefer my zone, else all") decides in batch when the route
// changes and answers per queue from that decision.
type QueueFilter interface {
	Filter(q MessageQueue) bool
}

// QueueFilterFunc adapts a function to a QueueFilter.
type QueueFilterFunc func(q MessageQueue) bool

// Filter calls f(q).
func (f QueueFilterFunc) Filter(q MessageQueue) bool { return f(q) }

// AvoidBroker returns a filter that admits every queue not on broker; with an
// empty broker it admits everything (the reference's BrokerFilter).
func AvoidBroker(broker string) QueueFilter {
	return QueueFilterFunc(func(q MessageQueue) bool { return broker == "" || q.BrokerName != broker })
}
