package remotingtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
)

// Queue permissions of QueueData.Perm (RocketMQ's PermName).
const (
	PermInherit   = 1
	PermWrite     = 2
	PermRead      = 4
	PermReadWrite = PermRead | PermWrite
)

// MasterID is the broker id of a master in BrokerData.Addrs.
const MasterID int64 = 0

// Route is a topic's route as a name server hands it out.
type Route struct {
	// Queues lists, per broker, the topic's queue counts and permission.
	Queues []QueueData
	// Brokers lists the brokers' addresses by broker id (MasterID for the
	// master).
	Brokers []BrokerData
	// OrderTopicConf, when set ("brokerA:4;brokerB:4"), marks an ordered
	// topic; clients then take their queues from it alone.
	OrderTopicConf string
}

// QueueData is one broker's share of a topic.
type QueueData struct {
	BrokerName     string
	ReadQueueNums  int
	WriteQueueNums int
	// Perm is a combination of PermRead, PermWrite and PermInherit.
	Perm         int
	TopicSysFlag int
}

// BrokerData is one broker's addresses.
type BrokerData struct {
	Cluster    string
	BrokerName string
	// Addrs maps broker id to "host:port".
	Addrs map[int64]string
}

// RouteOf returns a route giving each broker queues read and write queues
// with read-write permission and its address as master, in the order given.
func RouteOf(queues int, brokers ...*Broker) Route {
	var r Route
	for _, b := range brokers {
		r.Queues = append(r.Queues, QueueData{
			BrokerName: b.Name(), ReadQueueNums: queues, WriteQueueNums: queues, Perm: PermReadWrite,
		})
		r.Brokers = append(r.Brokers, BrokerData{
			Cluster: b.Cluster(), BrokerName: b.Name(), Addrs: map[int64]string{MasterID: b.Addr()},
		})
	}
	return r
}

func (r Route) validate() error {
	for i, q := range r.Queues {
		if q.BrokerName == "" {
			return fmt.Errorf("route queue data %d names no broker", i)
		}
		if q.ReadQueueNums < 0 || q.WriteQueueNums < 0 {
			return fmt.Errorf("route queue data %d (%s): negative queue count", i, q.BrokerName)
		}
	}
	for i, b := range r.Brokers {
		if b.BrokerName == "" {
			return fmt.Errorf("route broker data %d names no broker", i)
		}
		if len(b.Addrs) == 0 {
			// The Go client slices brokerAddrs' text and would panic on "".
			return fmt.Errorf("route broker data %d (%s) has no address", i, b.BrokerName)
		}
	}
	return nil
}

func (r Route) clone() Route {
	c := Route{
		Queues:         slices.Clone(r.Queues),
		Brokers:        slices.Clone(r.Brokers),
		OrderTopicConf: r.OrderTopicConf,
	}
	for i := range c.Brokers {
		c.Brokers[i].Addrs = maps.Clone(c.Brokers[i].Addrs)
	}
	return c
}

// encodeRoute writes the route as RocketMQ's name server does (fastjson,
// keys sorted): standard JSON except that brokerAddrs has bare integer keys,
// {0:"127.0.0.1:10911"}, which the Go client parses by hand.
func encodeRoute(r Route) []byte {
	var b bytes.Buffer
	str := func(s string) { b.WriteString(quote(s)) }
	b.WriteString(`{"brokerDatas":[`)
	for i, bd := range r.Brokers {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"brokerAddrs":{`)
		for j, id := range slices.Sorted(maps.Keys(bd.Addrs)) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(id, 10))
			b.WriteByte(':')
			str(bd.Addrs[id])
		}
		b.WriteString(`},"brokerName":`)
		str(bd.BrokerName)
		b.WriteString(`,"cluster":`)
		str(bd.Cluster)
		b.WriteByte('}')
	}
	b.WriteString(`],"filterServerTable":{}`)
	if r.OrderTopicConf != "" {
		b.WriteString(`,"orderTopicConf":`)
		str(r.OrderTopicConf)
	}
	b.WriteString(`,"queueDatas":[`)
	for i, q := range r.Queues {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"brokerName":%s,"perm":%d,"readQueueNums":%d,"topicSysFlag":%d,"writeQueueNums":%d}`,
			quote(q.BrokerName), q.Perm, q.ReadQueueNums, q.TopicSysFlag, q.WriteQueueNums)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// quote returns s as a JSON string.
func quote(s string) string {
	q, _ := json.Marshal(s) // a string always marshals
	return string(q)
}

// NameServer is a loopback name server. It answers GET_ROUTEINFO_BY_TOPIC
// from the routes set with SetRoute and TOPIC_NOT_EXIST for other topics;
// every other request code gets REQUEST_CODE_NOT_SUPPORTED. All its methods
// are safe for concurrent use.
type NameServer struct {
	srv *server

	mu     sync.RWMutex // guards routes
	routes map[string]Route
}

// NewNameServer starts a name server on 127.0.0.1 with a kernel-chosen port.
// Close it when done.
func NewNameServer(opts ...Option) (*NameServer, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	ns := &NameServer{routes: make(map[string]Route)}
	if ns.srv, err = startServer("name server", ns, o); err != nil {
		return nil, err
	}
	return ns, nil
}

// Addr returns the "127.0.0.1:port" the name server listens on.
func (ns *NameServer) Addr() string { return ns.srv.addr }

// SetRoute sets or replaces the route of topic; lookups read afterwards see
// it. The Go client asks again every 30 s (and on its first send of a topic).
func (ns *NameServer) SetRoute(topic string, r Route) error {
	if topic == "" {
		return errors.New("remotingtest: SetRoute with an empty topic")
	}
	if err := r.validate(); err != nil {
		return fmt.Errorf("remotingtest: SetRoute(%q): %w", topic, err)
	}
	ns.mu.Lock()
	ns.routes[topic] = r.clone()
	ns.mu.Unlock()
	return nil
}

// DeleteRoute forgets topic's route: lookups answer TOPIC_NOT_EXIST.
func (ns *NameServer) DeleteRoute(topic string) {
	ns.mu.Lock()
	delete(ns.routes, topic)
	ns.mu.Unlock()
}

// Route returns topic's route and whether it has one.
func (ns *NameServer) Route(topic string) (Route, bool) {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	r, ok := ns.routes[topic]
	return r.clone(), ok
}

// Requests returns a copy of the request log, in the order read.
func (ns *NameServer) Requests() []Request { return ns.srv.requests() }

// Await blocks until cond holds for the request log and returns the log it
// held for; it fails when ctx is done or the server is closed first. cond
// runs without locks held, once per change of the log.
func (ns *NameServer) Await(ctx context.Context, cond func([]Request) bool) ([]Request, error) {
	return ns.srv.await(ctx, cond)
}

// ResetLog empties the request log; Seq numbers go on.
func (ns *NameServer) ResetLog() { ns.srv.log.reset() }

// Close stops listening, closes every connection and waits for all the
// server's goroutines. It is idempotent and returns nil.
func (ns *NameServer) Close() error { return ns.srv.close() }

// read implements service.
func (ns *NameServer) read(req *command) (Request, func() reply) {
	if req.code != CodeGetRouteInfoByTopic {
		return Request{}, nil
	}
	topic := req.extFields["topic"]
	return Request{Topic: topic, QueueID: -1}, func() reply {
		r, ok := ns.Route(topic)
		if !ok {
			return reply{
				code:        CodeTopicNotExist,
				remark:      fmt.Sprintf("No topic route info in name server for the topic: %s", topic),
				queueOffset: -1,
			}
		}
		return reply{code: CodeSuccess, body: encodeRoute(r), queueOffset: -1}
	}
}

// unsupported implements service.
func (ns *NameServer) unsupported(code int16) reply {
	return unsupportedReply("name server", code)
}

func unsupportedReply(kind string, code int16) reply {
	name := ""
	if n, ok := requestNames[code]; ok {
		name = " (" + n + ")"
	}
	return reply{
		code:        CodeRequestCodeNotSupported,
		remark:      fmt.Sprintf("remotingtest %s: request code %d%s is not supported", kind, code, name),
		queueOffset: -1,
	}
}
