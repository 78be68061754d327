package route

import "strconv"

// MessageQueue names one queue of a topic on one broker.
type MessageQueue struct {
	Topic      string
	BrokerName string
	QueueID    int
}

// String formats the queue as "broker:queue", the form the routing traces print.
func (q MessageQueue) String() string {
	return q.BrokerName + ":" + strconv.Itoa(q.QueueID)
}
