package remotingtest

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
)

// Broker is a loopback broker. It stores nothing but counts: each send
// answered with success gets the next offsets of its topic's queue and an
// offset message id. Faults set with SetFault and Refuse change how it
// answers while it runs. All its methods are safe for concurrent use.
type Broker struct {
	name    string
	cluster string
	srv     *server
	idBase  [8]byte // the IPv4 address and port part of offset message ids

	mu        sync.Mutex // guards the fields below
	offsets   map[topicQueue]int64
	commitLog int64 // next commit log offset, advanced by body sizes
}

type topicQueue struct {
	topic string
	queue int
}

// NewBroker starts a broker named name on 127.0.0.1 with a kernel-chosen
// port. Close it when done.
func NewBroker(name string, opts ...Option) (*Broker, error) {
	if name == "" {
		return nil, errors.New("remotingtest: NewBroker with an empty name")
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	b := &Broker{name: name, cluster: o.cluster, offsets: make(map[topicQueue]int64)}
	if b.srv, err = startServer("broker "+name, b, o); err != nil {
		return nil, err
	}
	// Offset message ids start with the broker's IPv4 address and port.
	if ap, err := netip.ParseAddrPort(b.srv.addr); err == nil && ap.Addr().Is4() {
		ip := ap.Addr().As4()
		copy(b.idBase[:4], ip[:])
		binary.BigEndian.PutUint32(b.idBase[4:], uint32(ap.Port()))
	}
	return b, nil
}

// Name returns the broker's name.
func (b *Broker) Name() string { return b.name }

// Cluster returns the broker's cluster name.
func (b *Broker) Cluster() string { return b.cluster }

// Addr returns the "127.0.0.1:port" the broker listens on; it stays the same
// across Refuse and Resume.
func (b *Broker) Addr() string { return b.srv.addr }

// SetFault puts f in force for every request read from now on; requests
// already read keep the fault they were read under. SetFault(Fault{}) heals
// the broker. It fails only for a fault that cannot be applied.
func (b *Broker) SetFault(f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	b.srv.setFault(f)
	return nil
}

// Fault returns the fault in force.
func (b *Broker) Fault() Fault { return b.srv.currentFault() }

// Refuse closes the broker's listener and every open connection, so the
// client's next dial is refused ("connection refused"). Answers still
// pending are abandoned. Resume listens again on the same address.
func (b *Broker) Refuse() error { return b.srv.refuse() }

// Resume listens again on the broker's address after Refuse; the client
// reconnects on its next request. It is a no-op while the broker accepts.
func (b *Broker) Resume() error { return b.srv.resume() }

// Refusing reports whether the broker is between Refuse and Resume.
func (b *Broker) Refusing() bool { return b.srv.refusing() }

// Requests returns a copy of the request log, in the order read.
func (b *Broker) Requests() []Request { return b.srv.requests() }

// Sends returns the send-message entries of the request log.
func (b *Broker) Sends() []Request {
	var out []Request
	for _, r := range b.srv.requests() {
		if r.IsSend() {
			out = append(out, r)
		}
	}
	return out
}

// Await blocks until cond holds for the request log and returns the log it
// held for; it fails when ctx is done or the broker is closed first. cond
// runs without locks held, once per change of the log.
func (b *Broker) Await(ctx context.Context, cond func([]Request) bool) ([]Request, error) {
	return b.srv.await(ctx, cond)
}

// ResetLog empties the request log; Seq numbers go on.
func (b *Broker) ResetLog() { b.srv.log.reset() }

// Close stops listening, closes every connection and waits for all the
// broker's goroutines, abandoning answers still delayed. It is idempotent
// and returns nil.
func (b *Broker) Close() error { return b.srv.close() }

// read implements service.
func (b *Broker) read(req *command) (Request, func() reply) {
	switch req.code {
	case CodeSendMessage, CodeSendMessageV2, CodeSendBatchMessage:
		return b.readSend(req)
	case CodeHeartbeat:
		rec := Request{QueueID: -1}
		hb, err := parseHeartbeat(req.body)
		if err == nil {
			rec.ClientID = hb.ClientID
			if g := hb.groups(); len(g) > 0 {
				rec.Group = g[0]
			}
		}
		return rec, func() reply {
			if err != nil {
				return reply{code: CodeSystemError, remark: err.Error(), queueOffset: -1}
			}
			return reply{code: CodeSuccess, queueOffset: -1}
		}
	case CodeGetMaxOffset:
		return b.readMaxOffset(req)
	case CodeUnregisterClient:
		rec := Request{QueueID: -1, ClientID: req.extFields["clientID"], Group: req.extFields["producerGroup"]}
		if rec.Group == "" {
			rec.Group = req.extFields["consumerGroup"]
		}
		return rec, func() reply { return reply{code: CodeSuccess, queueOffset: -1} }
	}
	return Request{}, nil
}

func (b *Broker) readSend(req *command) (Request, func() reply) {
	rec := Request{QueueID: -1}
	h, err := parseSendHeader(req.extFields)
	rec.Topic, rec.Group = h.topic, h.group
	if err == nil {
		rec.QueueID = h.queueID
		if req.code == CodeSendBatchMessage || h.batch {
			rec.Messages, err = decodeBatch(req.body)
		} else {
			rec.Messages = []Message{messageOf(parseProperties(h.properties), len(req.body))}
		}
	}
	if err != nil {
		remark := fmt.Sprintf("remotingtest broker %s: %s: %v", b.name, CodeName(req.code), err)
		return rec, func() reply { return reply{code: CodeSystemError, remark: remark, queueOffset: -1} }
	}
	queue := max(h.queueID, 0) // a broker picks a queue for a negative id; we pick 0
	count, size := int64(len(rec.Messages)), int64(len(req.body))
	return rec, func() reply { return b.store(h.topic, queue, count, size) }
}

// readMaxOffset answers GET_MAX_OFFSET as a 4.9.x/5.x broker does: the
// next offset of the queue, 0 for a topic or queue it never stored to (no
// check that the topic exists); a queue id that is not an integer is a
// SYSTEM_ERROR, as the broker's header decoding fails.
func (b *Broker) readMaxOffset(req *command) (Request, func() reply) {
	topic := req.extFields["topic"]
	rec := Request{Topic: topic, QueueID: -1}
	queue, err := strconv.Atoi(req.extFields["queueId"])
	if err != nil || topic == "" {
		remark := fmt.Sprintf("remotingtest broker %s: GET_MAX_OFFSET: topic %q, queueId %q", b.name, topic, req.extFields["queueId"])
		return rec, func() reply { return reply{code: CodeSystemError, remark: remark, queueOffset: -1} }
	}
	rec.QueueID = queue
	return rec, func() reply {
		b.mu.Lock()
		offset := b.offsets[topicQueue{topic, queue}]
		b.mu.Unlock()
		return reply{code: CodeSuccess, ext: map[string]string{"offset": strconv.FormatInt(offset, 10)}, queueOffset: -1}
	}
}

// store gives count messages the next offsets of topic's queue.
func (b *Broker) store(topic string, queue int, count, size int64) reply {
	b.mu.Lock()
	tq := topicQueue{topic, queue}
	offset := b.offsets[tq]
	b.offsets[tq] = offset + count
	phys := b.commitLog
	b.commitLog += size
	b.mu.Unlock()

	var id [16]byte
	copy(id[:8], b.idBase[:])
	binary.BigEndian.PutUint64(id[8:], uint64(phys))
	msgID := strings.ToUpper(hex.EncodeToString(id[:]))
	return reply{
		code: CodeSuccess,
		ext: map[string]string{
			"msgId":       msgID,
			"queueId":     strconv.Itoa(queue),
			"queueOffset": strconv.FormatInt(offset, 10),
			"MSG_REGION":  "DefaultRegion",
			"TRACE_ON":    "true",
		},
		queueOffset: offset,
		msgID:       msgID,
	}
}

// unsupported implements service.
func (b *Broker) unsupported(code int16) reply {
	return unsupportedReply("broker "+b.name, code)
}
