package brokerprobe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/probe"
)

// DefaultTopic is the topic a probe asks about when none is given:
// TBW102, the topic every broker with auto-creation keeps and every
// reference producer holds in its publish table from its start (so the
// reference's 5.x detector, which asks about the first topic of that
// table, often asks about it). A 4.9.x or 5.x broker answers GET_MAX_OFFSET
// for any topic name and queue without checking that it exists (offset 0
// for one it does not serve), so the answer proves the broker's request
// processing is alive either way.
const DefaultTopic = "TBW102"

// Detector is a probe.ServiceDetector for RocketMQ brokers. Detect dials
// the endpoint (host:port of a broker's remoting port), sends one
// GET_MAX_OFFSET request for queue QueueID of Topic, and reads one frame:
//
//   - a response with the request's opaque, code SUCCESS and an integer
//     offset field: nil (reachable);
//   - a well-formed answer with another code: an unreachable error wrapping
//     an *AnswerError, as the reference counts only a successful answer;
//   - anything else (a length out of [8, MaxFrameSize], a cut frame, an
//     undecodable header, a request, a foreign opaque, no offset): an
//     unreachable error wrapping ErrMalformed that says what was wrong;
//   - a refused or failed dial, a connection closed before the answer, or
//     no answer by ctx's deadline: unreachable (a *probe.Error);
//   - ctx cancelled (not its deadline passing): inconclusive
//     (probe.ErrInconclusive).
//
// Detect returns once ctx is done, whatever the peer does; it allocates at
// most MaxFrameSize for an answer and never panics on what it reads. The
// zero value is ready to use; a Detector is safe for concurrent use and not
// to be modified while in use.
type Detector struct {
	// Topic and QueueID name the queue asked about (default DefaultTopic,
	// queue 0).
	Topic   string
	QueueID int
	// Broker, when set, is sent as the request's "bname" field, which a
	// 5.x proxy's remoting port requires of some requests. Empty: not sent
	// (the reference sends none for this request).
	Broker string
	// MaxFrameSize bounds the answer read (default DefaultMaxFrameSize).
	MaxFrameSize int
	// Dialer, when set, dials the connection; its Timeout combines with
	// ctx's deadline.
	Dialer *net.Dialer
}

var _ probe.ServiceDetector = (*Detector)(nil)

// opaques numbers requests across every Detector of the process.
var opaques atomic.Int32

// Queue names the queue a probe asks about.
type Queue struct {
	Topic   string
	QueueID int
	// Broker is sent as "bname" when not empty.
	Broker string
}

// Detect implements probe.ServiceDetector, asking about d's queue.
func (d *Detector) Detect(ctx context.Context, endpoint string) error {
	return d.DetectQueue(ctx, endpoint, Queue{Topic: d.Topic, QueueID: d.QueueID, Broker: d.Broker})
}

// DetectQueue is Detect asking about q (an empty q.Topic: d.Topic, then
// DefaultTopic; an empty q.Broker: d.Broker).
func (d *Detector) DetectQueue(ctx context.Context, endpoint string, q Queue) error {
	if err := ctx.Err(); err != nil {
		return inconclusiveOr(ctx, endpoint, err)
	}
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return &probe.Error{Endpoint: endpoint, Err: err}
	}
	topic := q.Topic
	if topic == "" {
		topic = d.Topic
	}
	if topic == "" {
		topic = DefaultTopic
	}
	bname := q.Broker
	if bname == "" {
		bname = d.Broker
	}
	dialer := d.Dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	conn, err := dialer.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return inconclusiveOr(ctx, endpoint, err)
	}
	defer conn.Close()
	// The socket deadline is ctx's wall-clock one; ctx.Done (which may run
	// on another clock) also cuts the exchange short.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	opaque := opaques.Add(1) & 0x7FFFFFFF
	var buf [256]byte
	req := appendRequest(buf[:0], opaque, topic, q.QueueID, bname)
	if _, err := conn.Write(req); err != nil {
		return inconclusiveOr(ctx, endpoint, fmt.Errorf("send GET_MAX_OFFSET: %w", err))
	}
	maxFrame := d.MaxFrameSize
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameSize
	}
	h, err := readFrame(conn, maxFrame, buf[:])
	if err != nil {
		if errors.Is(err, ErrMalformed) {
			return &probe.Error{Endpoint: endpoint, Err: err}
		}
		return inconclusiveOr(ctx, endpoint, err)
	}
	if _, err := checkAnswer(h, opaque); err != nil {
		return &probe.Error{Endpoint: endpoint, Err: err}
	}
	return nil
}

// inconclusiveOr classifies err, which ended a probe: inconclusive when ctx
// was cancelled, otherwise unreachable, naming a passed deadline as such.
func inconclusiveOr(ctx context.Context, endpoint string, err error) error {
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.Canceled):
		return errors.Join(probe.ErrInconclusive, err)
	case errors.Is(ctxErr, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		// The socket deadline is ctx's: it may fire a moment before ctx is done.
		return &probe.Error{Endpoint: endpoint, Err: fmt.Errorf("no answer within the probe's deadline: %w", errors.Join(context.DeadlineExceeded, err))}
	}
	return &probe.Error{Endpoint: endpoint, Err: err}
}

// readFrame reads one frame of at most maxFrame bytes after its length
// prefix, using scratch when it is large enough, and decodes its header.
func readFrame(r io.Reader, maxFrame int, scratch []byte) (*header, error) {
	var prefix [4]byte
	if n, err := io.ReadFull(r, prefix[:]); err != nil {
		if n > 0 {
			return nil, fmt.Errorf("%w (after %d bytes of the length prefix)", closedErr(err), n)
		}
		return nil, closedErr(err)
	}
	total := int64(int32(binary.BigEndian.Uint32(prefix[:])))
	if total < 4 || total > int64(maxFrame) {
		return nil, malformed("frame length %d (bytes % x) outside [4, %d]", total, prefix, maxFrame)
	}
	var frame []byte
	if int(total) <= len(scratch) {
		frame = scratch[:total]
	} else {
		frame = make([]byte, total)
	}
	if n, err := io.ReadFull(r, frame); err != nil {
		return nil, fmt.Errorf("%w inside a %d-byte frame (%d bytes read)", closedErr(err), total, n)
	}
	return decodeFrame(frame)
}

// errClosedEarly is a connection closed before the answer was complete.
var errClosedEarly = errors.New("connection closed before the answer")

func closedErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errClosedEarly
	}
	return err
}
