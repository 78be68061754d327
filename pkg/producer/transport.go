package producer

import (
	"context"
	"sort"
	"sync"
	"unicode/utf16"

	"github.com/mqfault/mqfault/pkg/route"
)

// Transport puts one message on one queue: the user's way to talk to
// brokers (a RocketMQ client, a gRPC proxy, a test double). The producer
// decides which queue, how often to retry and what the fault table learns;
// the Transport only makes the one attempt it is given.
//
// Send blocks until the attempt is over and returns either the broker's
// answer (a nil error; Result.Status says how the message was stored) or an
// error saying what went wrong, which decides the fault update and whether
// the send is retried:
//
//   - *ClientError: the attempt failed on the client before any request was
//     sent (no address for the broker, the message could not be encoded).
//   - *TransportError: the network failed it; its Class says how:
//     latency.ClassTransportTimeout when no answer came before the deadline,
//     latency.ClassTransportNotSent when no connection could be made,
//     latency.ClassThrottled when local flow control refused the request,
//     latency.ClassTransportFailed for anything else after the request may
//     have left (a broken connection). Returning ctx.Err()
//     (context.DeadlineExceeded) when the attempt's ctx expired is the same
//     as a transport timeout.
//   - *BrokerError: the broker answered with an error response code.
//   - context.Canceled or ErrInterrupted: the attempt was cancelled (ctx was
//     cancelled by the caller of the send, or the transport was shut down).
//
// Any other error is a transport failure. Classify is the one mapping from
// these errors to latency's outcome classes. Errors may be wrapped; the
// producer finds them with errors.As and errors.Is.
//
// ctx is done when the attempt's deadline (Attempt.Deadline, on the
// producer's Clock) passes or the send's own ctx is done; Send must return
// promptly then. ctx is valid until Send returns and must not be used after
// (the producer reuses it for a later attempt when nothing waited on it):
// work that outlives Send needs a context of its own. For KindOneway, Send returns once the request is written,
// with a zero Result. Send is called from the goroutine of a sync send and
// from the producer's goroutines for async sends, possibly many at once: it
// must be safe for concurrent use.
type Transport interface {
	Send(ctx context.Context, a Attempt) (Result, error)
}

// TransportFunc adapts a function to a Transport.
type TransportFunc func(ctx context.Context, a Attempt) (Result, error)

// Send calls f(ctx, a).
func (f TransportFunc) Send(ctx context.Context, a Attempt) (Result, error) { return f(ctx, a) }

// RouteSource tells the producer where a topic's queues are: the user's
// name-server lookup. A topic that does not exist is an error wrapping
// ErrNoRoute, or nil data. The producer caches what Lookup returns, runs at
// most one Lookup per topic at a time, and asks again every
// Config.RouteRefreshInterval; the data returned must not be modified
// afterwards. Lookup must be safe for concurrent use and should return
// promptly once ctx is done. ctx is the producer's, not a sender's (a first
// lookup serves every send that waits for it): it is done after
// Config.Timeout on the producer's Clock, or when the producer closes. A
// panicking Lookup fails the lookup with a *PanicError.
type RouteSource interface {
	Lookup(ctx context.Context, topic string) (*route.TopicRouteData, error)
}

// RouteSourceFunc adapts a function to a RouteSource.
type RouteSourceFunc func(ctx context.Context, topic string) (*route.TopicRouteData, error)

// Lookup calls f(ctx, topic).
func (f RouteSourceFunc) Lookup(ctx context.Context, topic string) (*route.TopicRouteData, error) {
	return f(ctx, topic)
}

// StaticRoutes is a RouteSource over routes set in code, for producers whose
// brokers do not come from a RocketMQ name server. The zero value is empty
// and ready to use; all methods are safe for concurrent use. Changes reach a
// producer at its next route refresh (or Producer.RefreshRoutes).
type StaticRoutes struct {
	mu     sync.RWMutex // guards routes
	routes map[string]*route.TopicRouteData
}

var _ RouteSource = (*StaticRoutes)(nil)

// Set makes data the route of topic; data must not be modified afterwards.
// A nil data removes the topic.
func (s *StaticRoutes) Set(topic string, data *route.TopicRouteData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if data == nil {
		delete(s.routes, topic)
		return
	}
	if s.routes == nil {
		s.routes = map[string]*route.TopicRouteData{}
	}
	s.routes[topic] = data
}

// SetQueues makes topic's route writeQueues[b] writable queues on each broker
// b, every broker a master named after itself (addresses are the Transport's
// business). Brokers with a count of 0 or less contribute no queue.
func (s *StaticRoutes) SetQueues(topic string, writeQueues map[string]int) {
	names := make([]string, 0, len(writeQueues))
	for b := range writeQueues {
		names = append(names, b)
	}
	sort.Strings(names)
	data := &route.TopicRouteData{}
	for _, b := range names {
		n := max(writeQueues[b], 0)
		data.QueueDatas = append(data.QueueDatas, route.QueueData{
			BrokerName: b, ReadQueueNums: n, WriteQueueNums: n, Perm: route.PermRead | route.PermWrite,
		})
		data.BrokerDatas = append(data.BrokerDatas, route.BrokerData{BrokerName: b, BrokerAddrs: map[int64]string{route.MasterID: b}})
	}
	s.Set(topic, data)
}

// Lookup returns topic's route, or an error wrapping ErrNoRoute.
func (s *StaticRoutes) Lookup(_ context.Context, topic string) (*route.TopicRouteData, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if d, ok := s.routes[topic]; ok {
		return d, nil
	}
	return nil, ErrNoRoute
}

// Selector picks the queue of an ordered send by key (the reference's
// MessageQueueSelector): messages with the same key go to the same queue as
// long as the route does not change. It must be safe for concurrent use and
// must not block. ok=false means no queue; the send then fails.
type Selector interface {
	SelectQueue(info *route.PublishInfo, msg *Message, key string) (q route.MessageQueue, ok bool)
}

// SelectorFunc adapts a function to a Selector.
type SelectorFunc func(info *route.PublishInfo, msg *Message, key string) (route.MessageQueue, bool)

// SelectQueue calls f(info, msg, key).
func (f SelectorFunc) SelectQueue(info *route.PublishInfo, msg *Message, key string) (route.MessageQueue, bool) {
	return f(info, msg, key)
}

// HashSelector picks queue abs(h % n) of the publish info's n queues, h being
// Java's String.hashCode of key: the reference's SelectMessageQueueByHash, so
// a Go producer and a Java producer over the same route put a key on the same
// queue.
type HashSelector struct{}

var _ Selector = HashSelector{}

// SelectQueue implements Selector.
func (HashSelector) SelectQueue(info *route.PublishInfo, _ *Message, key string) (route.MessageQueue, bool) {
	n := info.Len()
	if n == 0 {
		return route.MessageQueue{}, false
	}
	v := JavaStringHash(key) % int32(n)
	if v < 0 {
		v = -v
	}
	return info.Queue(int(v)), true
}

// JavaStringHash returns Java's String.hashCode of s (over its UTF-16 code
// units; invalid UTF-8 counts as U+FFFD, as Java's decoder makes it).
func JavaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
