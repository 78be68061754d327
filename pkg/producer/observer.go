package producer

import (
	"time"

	"github.com/mqfault/mqfault/pkg/route"
)

// Observer is told what sends do: every attempt's outcome and every send's
// end. It is the hook for metrics and tracing (a Prometheus adapter
// implements it). Methods are called synchronously on the send's goroutine
// (the caller's for sync sends, the producer's for async ones), possibly
// from many goroutines at once: they must be safe for concurrent use and
// must not block. Without an Observer (the default) the producer builds no
// events.
type Observer interface {
	// OnAttempt is called after each attempt of the fault-tolerant path,
	// once its fault update is made.
	OnAttempt(ev AttemptEvent)
	// OnSend is called once per send, when it ends (before an async
	// callback runs).
	OnSend(ev SendEvent)
}

// AttemptEvent describes one attempt.
type AttemptEvent struct {
	Topic   string
	Kind    Kind
	Attempt int
	Queue   route.MessageQueue
	// Outcome is what the attempt met (Outcome.Err is its error).
	Outcome Outcome
	// Update is the fault update it caused.
	Update FaultUpdate
	// Retry is true when another attempt may follow.
	Retry bool
}

// SendEvent describes a send's end.
type SendEvent struct {
	Topic    string
	Kind     Kind
	Ordered  bool // SendToQueue or SendByKey
	Attempts int
	Elapsed  time.Duration
	Stop     Stop
	// Status is the answer's status when Err is nil.
	Status SendStatus
	Err    error
	// RetryRefused is true when the retry budget (Config.RetryBudget)
	// refused the send's retry: it ended with its last error, or with an
	// earlier answer.
	RetryRefused bool
	// Waited is true when the send waited for room (Config.RoomWait)
	// before its last attempt.
	Waited bool
}

// NopObserver ignores everything; embed it to implement only some methods.
type NopObserver struct{}

// OnAttempt does nothing.
func (NopObserver) OnAttempt(AttemptEvent) {}

// OnSend does nothing.
func (NopObserver) OnSend(SendEvent) {}
