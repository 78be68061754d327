package remotingtest

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Outcome is what a server did with a request it read.
type Outcome int

const (
	// OutcomePending means the request was read and is not answered yet
	// (it waits out a Fault.Delay, or is being handled).
	OutcomePending Outcome = iota
	// OutcomeAnswered means the response was written to the connection (the
	// entry says so just before the write, so a client holding the answer
	// finds it settled; a write that then fails turns it into abandoned).
	OutcomeAnswered
	// OutcomeDropped means a Fault.Drop (or a Fault.Hung without LateStore)
	// swallowed the request: never answered.
	OutcomeDropped
	// OutcomeOneway means the request was handled and, being one-way (flag
	// bit 1), not answered.
	OutcomeOneway
	// OutcomeAbandoned means the answer could not be written: the server was
	// closed or refusing, or the connection failed, before it was.
	OutcomeAbandoned
	// OutcomeMalformed means the frame could not be decoded and the
	// connection was closed; Remark says what was wrong.
	OutcomeMalformed
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case OutcomePending:
		return "pending"
	case OutcomeAnswered:
		return "answered"
	case OutcomeDropped:
		return "dropped"
	case OutcomeOneway:
		return "oneway"
	case OutcomeAbandoned:
		return "abandoned"
	case OutcomeMalformed:
		return "malformed"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Request is one entry of a server's request log: what was read, and what
// the server answered. The slices and maps it holds are shared between
// copies of the log and must be treated as read only.
type Request struct {
	// Seq numbers a server's requests from 1 in the order read; it keeps
	// counting across ResetLog.
	Seq int
	// Time is when the request was read, on the server's clock.
	Time time.Time
	// Remote is the client's address.
	Remote string
	// Code is the request code (CodeSendMessage, ...); -1 for a malformed frame.
	Code int16
	// Opaque is the client's request id.
	Opaque int32
	// Topic is the topic named by a send or route request.
	Topic string
	// QueueID is the queue a send request names; -1 for other requests.
	QueueID int
	// Group is the producer group of a send request, the first group of a
	// heartbeat, or the group an unregister request names.
	Group string
	// ClientID is the client id of a heartbeat or unregister request.
	ClientID string
	// BodySize is the request body's length in bytes.
	BodySize int
	// Messages holds the messages of a send request (several for a batch).
	Messages []Message

	// Hung reports that the request was read while the broker was hung
	// (Fault.Hung); with Fault.LateStore it is handled when the hang ends,
	// and AnsweredAt says when.
	Hung bool

	// Outcome says what became of the request.
	Outcome Outcome
	// AnsweredAt is when the outcome was settled, on the server's clock.
	AnsweredAt time.Time
	// ResponseCode is the code answered (meaningful for OutcomeAnswered and
	// OutcomeOneway, and for OutcomeAbandoned: the code that was not delivered).
	ResponseCode int16
	// Remark is the remark answered, or what was wrong with a malformed frame.
	Remark string
	// QueueOffset is the first queue offset given to the stored messages, -1
	// when nothing was stored.
	QueueOffset int64
	// MsgID is the offset message id answered for a stored message.
	MsgID string
}

// UniqKey returns the unique key of the request's first message, "" when
// it carries none.
func (r Request) UniqKey() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[0].UniqKey
}

// IsSend reports whether the request is a send-message request (single,
// V2 or batch).
func (r Request) IsSend() bool { return isSend(r.Code) }

// String formats the entry for test failure messages.
func (r Request) String() string {
	return fmt.Sprintf("#%d %s topic=%q queue=%d uniq=%q -> %s %s %q",
		r.Seq, CodeName(r.Code), r.Topic, r.QueueID, r.UniqKey(), r.Outcome, ResponseName(r.ResponseCode), r.Remark)
}

// requestLog is a server's log of requests. It is safe for concurrent use.
type requestLog struct {
	mu      sync.Mutex    // guards the fields below
	entries []Request     // in the order read; entries[i].Seq == base+i+1
	base    int           // entries dropped by reset
	changed chan struct{} // closed and replaced on every change
}

func newRequestLog() *requestLog {
	return &requestLog{changed: make(chan struct{})}
}

// notify wakes waiters. Caller must hold mu.
func (l *requestLog) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// add appends r, numbering it, and returns its Seq.
func (l *requestLog) add(r Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.Seq = l.base + len(l.entries) + 1
	l.entries = append(l.entries, r)
	l.notify()
	return r.Seq
}

// settle records the outcome of entry seq through set.
func (l *requestLog) settle(seq int, set func(*Request)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := seq - l.base - 1
	if i < 0 || i >= len(l.entries) {
		return // dropped by a reset
	}
	set(&l.entries[i])
	l.notify()
}

// snapshot returns a copy of the entries and the channel closed at the
// next change.
func (l *requestLog) snapshot() ([]Request, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.entries...), l.changed
}

// await blocks until cond holds for the log, ctx is done, or stop is closed.
func (l *requestLog) await(ctx context.Context, stop <-chan struct{}, cond func([]Request) bool) ([]Request, error) {
	for {
		entries, changed := l.snapshot()
		if cond(entries) {
			return entries, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return entries, fmt.Errorf("remotingtest: await the request log (%d entries): %w", len(entries), ctx.Err())
		case <-stop:
			// One last look: the change that closed the server may be the one awaited.
			if entries, _ = l.snapshot(); cond(entries) {
				return entries, nil
			}
			return entries, fmt.Errorf("remotingtest: await the request log (%d entries): %w", len(entries), ErrClosed)
		}
	}
}

// reset empties the log; Seq numbering goes on.
func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.base += len(l.entries)
	l.entries = nil
	l.notify()
}
