package rocketmqgo

import (
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// rocketmq-client-go runs its connection readers, callbacks and timers in
// goroutines wrapped by primitive.WithRecover, which recovers a panic only
// when the package variable primitive.PanicHandler is set; it is nil by
// default, so a panic there ends the process. One a broker can cause: v2.1.2
// reads a frame's length as a signed int32 and allocates it, so a frame
// announcing a negative length panics with "makeslice: len out of range" in
// the connection's reader.
//
// The first NewProducer (unless WithoutPanicHandler) sets PanicHandler, once
// for the process, to a handler that logs the panic with its stack (on that
// producer's logger, at level Error) and then calls the handler that was set
// before, if any. A user's own handler thus keeps working: set before the
// first NewProducer, it is chained; set after, it replaces ours. The
// goroutine that panicked is gone after the handler returns: for the reader
// above, requests on that connection get no answer and time out, and the
// wrapper retries them elsewhere and isolates the broker.
var panicHandlerOnce sync.Once

// installPanicHandler sets primitive.PanicHandler as described above, once.
// It runs before the producer's client starts its goroutines.
func installPanicHandler(log *slog.Logger) {
	panicHandlerOnce.Do(func() {
		prev := primitive.PanicHandler
		primitive.PanicHandler = func(r any) {
			log.Error("rocketmqgo: a rocketmq-client-go goroutine panicked; recovered through primitive.PanicHandler",
				"panic", r, "stack", string(debug.Stack()))
			if prev != nil {
				prev(r)
			}
		}
	})
}
