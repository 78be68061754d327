package rocketmqgo

import (
	"log/slog"
	"runtime/debug"
	"sync"
	_ "unsafe" // go:linkname

	_ "github.com/apache/rocketmq-client-go/v2/primitive" // defines the handler variables linked below
)

// rocketmq-client-go runs its connection readers, callbacks and timers in
// goroutines wrapped by primitive.WithRecover, which recovers a panic only
// when a package variable of primitive holds a handler; it is nil by
// default, so a panic there ends the process. One a broker can cause: v2.1.2
// reads a frame's length as a signed int32 and allocates it, so a frame
// announcing a negative length panics with "makeslice: len out of range" in
// the connection's reader.
//
// The variable is primitive.PanicHandler in v2.1.2 and
// primitive.DefaultPanicHandler on the client's master (where PanicHandler
// became its type). The module builds against both, so it reaches them by
// their link names: the one the client defines is the client's; the other is
// an unused variable of this package.
//
// The first NewProducer (unless WithoutPanicHandler) sets the handler, once
// for the process, to one that logs the panic with its stack (on that
// producer's logger, at level Error) and then calls the handler that was set
// before, if any. A user's own handler thus keeps working: set before the
// first NewProducer, it is chained; set after, it replaces ours. The
// goroutine that panicked is gone after the handler returns: for the reader
// above, requests on that connection get no answer and time out, and the
// wrapper retries them elsewhere and isolates the broker.

//go:linkname handlerV212 github.com/apache/rocketmq-client-go/v2/primitive.PanicHandler
var handlerV212 func(any)

//go:linkname handlerMaster github.com/apache/rocketmq-client-go/v2/primitive.DefaultPanicHandler
var handlerMaster func(any)

var panicHandlerOnce sync.Once

// installPanicHandler sets the client's panic handler as described above,
// once. It runs before the producer's client starts its goroutines.
func installPanicHandler(log *slog.Logger) {
	panicHandlerOnce.Do(func() {
		prevV212, prevMaster := handlerV212, handlerMaster
		handle := func(prev func(any)) func(any) {
			return func(r any) {
				log.Error("rocketmqgo: a rocketmq-client-go goroutine panicked; recovered through the client's panic handler",
					"panic", r, "stack", string(debug.Stack()))
				if prev != nil {
					prev(r)
				}
			}
		}
		handlerV212, handlerMaster = handle(prevV212), handle(prevMaster)
	})
}
