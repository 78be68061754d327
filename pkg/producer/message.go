package producer

import (
	"time"

	"github.com/mqfault/mqfault/pkg/route"
)

// Message is what a producer sends. The producer reads Topic (to find the
// route) and the length of Body (for the async byte bound); everything else is
// carried to the Transport untouched. A Message must not be modified while a
// send of it is in progress.
type Message struct {
	// Topic names the topic whose route the message follows. It must not be
	// empty.
	Topic string
	// Tags and Keys are the reference's message tags and keys.
	Tags string
	Keys []string
	// Body is the payload.
	Body []byte
	// Properties are user properties.
	Properties map[string]string
	// Native carries a transport's own message value (for instance the
	// *primitive.Message of rocketmq-client-go) to the Transport untouched.
	Native any
}

// size is what the message counts against the async byte bound: the body
// length, at least 1.
func (m *Message) size() int64 {
	if n := int64(len(m.Body)); n > 0 {
		return n
	}
	return 1
}

// Kind is how a send waits for its broker: the reference's communication
// mode.
type Kind uint8

const (
	// KindSync waits for the broker's answer and retries on another broker
	// (1 + Config.RetryTimes attempts).
	KindSync Kind = iota
	// KindAsync returns at once and reports through a callback; it retries
	// as the reference's async path does (up to Config.AsyncRetryTimes).
	KindAsync
	// KindOneway sends without waiting for an answer: one attempt.
	KindOneway
)

var kindNames = [KindOneway + 1]string{"SYNC", "ASYNC", "ONEWAY"}

// String returns SYNC, ASYNC or ONEWAY.
func (k Kind) String() string { return enumName(kindNames[:], int(k), "kind") }

// Kinds lists every Kind, in order of value (for metrics that keep a series
// per kind).
func Kinds() []Kind { return []Kind{KindSync, KindAsync, KindOneway} }

// SendStatus is how a broker stored an answered message (the reference's
// SendStatus). The zero value is SendOK.
type SendStatus uint8

const (
	// SendOK: stored (and flushed and replicated as the broker requires).
	SendOK SendStatus = iota
	// FlushDiskTimeout: stored, but the synchronous flush timed out.
	FlushDiskTimeout
	// FlushSlaveTimeout: stored, but replication to the slave timed out.
	FlushSlaveTimeout
	// SlaveNotAvailable: stored, but no slave was available to replicate to.
	SlaveNotAvailable
)

var statusNames = []string{"SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"}

// String returns the reference's name: SEND_OK, FLUSH_DISK_TIMEOUT,
// FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE.
func (s SendStatus) String() string { return enumName(statusNames, int(s), "status") }

// Result is a broker's answer to one send.
type Result struct {
	// Status says how the message was stored. Only SendOK is a full
	// success; the others mean the message was stored but not as safely as
	// the broker is configured to (see Config.RetryAnotherBrokerWhenNotStoreOK).
	Status SendStatus
	// Queue is where the message went. The producer fills it in with the
	// attempt's queue when the Transport leaves it zero.
	Queue route.MessageQueue
	// MsgID and OffsetMsgID are the client and broker message ids.
	MsgID       string
	OffsetMsgID string
	// QueueOffset is the message's offset in its queue.
	QueueOffset int64
	// Native carries a transport's own result value untouched.
	Native any
	// Attempts is how many attempts the send made (retries included, as
	// SendError.Attempts): 1 when the first attempt was answered. More means
	// earlier attempts failed (or were answered but not SendOK, with
	// Config.RetryAnotherBrokerWhenNotStoreOK); the answer is the last
	// answered attempt's. The producer sets it (and Brokers), whatever the
	// Transport put there.
	Attempts int
	// Brokers lists the broker of each attempt, in order, as
	// SendError.Brokers, when the send took more than one attempt; nil when
	// the first attempt was answered (its broker is Queue.BrokerName), so
	// that such a send allocates nothing.
	Brokers []string
}

// Attempt is one try at putting a message on one queue, as the producer
// hands it to the Transport.
type Attempt struct {
	// Message is the message; the Transport must not modify it.
	Message *Message
	// Queue is the queue to put it on.
	Queue route.MessageQueue
	// Kind says whether the producer waits for the broker's answer
	// (KindOneway: it does not; the Transport returns once the request is
	// written).
	Kind Kind
	// Number counts the attempts of this send from 0.
	Number int
	// Timeout is how long this attempt may take: what is left of the send's
	// budget, capped by Config.MaxTimeoutPerRequest while another attempt
	// remains. It may be 0 when the budget is exactly spent.
	Timeout time.Duration
	// Deadline is when the attempt must be over, on the producer's Clock
	// (Start + Timeout). The ctx given to Transport.Send is done at Deadline
	// on that clock, and its Deadline method reports the same instant on the
	// wall clock.
	Deadline time.Time
}
