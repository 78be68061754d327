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

// RouteFilter is a QueueFilter that decides per route: it sees a topic's
// whole route when the route changes (Update) and answers Filter from that
// decision, so the pick path only reads what Update prepared. A filter that
// prefers the brokers of one zone but admits all when none of the route is in
// it is one. The latency strategy passes route changes on to the user filters
// that implement it (Strategy.RouteChanged), and the producer tells the
// strategy whenever its route cache installs or drops a route.
//
// Update and Remove may block for a while (a plugin's batch call); they are
// never called on the pick path. A producer recovers an Update or Remove
// that panics (a producer.PanicError, logged and returned by the refresh or
// the first send that installed the route): the route is installed all the
// same, the strategy's other filters are still told, and the filter keeps
// answering Filter from what it decided last until the route changes again.
type RouteFilter interface {
	QueueFilter
	// Update decides for info, the current route of info.Topic().
	Update(info *PublishInfo)
	// Remove forgets topic, whose route is gone.
	Remove(topic string)
}
