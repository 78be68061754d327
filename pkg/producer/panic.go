package producer

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrPanicked is matched (errors.Is) by every *PanicError.
var ErrPanicked = errors.New("producer: a collaborator panicked")

// PanicError is what a send fails with when a collaborator it called
// panicked: a Transport (wrapped in a *TransportError: the attempt failed on
// that broker) or a RouteSource (wrapped in a *RouteError: the topic has no
// route). The panic is recovered, so the process lives and the send still
// ends in exactly one error (an async send in exactly one callback). It
// matches ErrPanicked.
type PanicError struct {
	Func  string // what panicked, e.g. "RouteSource.Lookup"
	Value any    // what it panicked with
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("producer: %s panicked: %v", e.Func, e.Value) }

// Is makes errors.Is(err, ErrPanicked) true.
func (e *PanicError) Is(target error) bool { return target == ErrPanicked }

// Unwrap returns the panic value when it is an error (panic(err)).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered returns the *PanicError for r, a value recover returned in a
// deferred call of the panicking goroutine.
func recovered(fn string, r any) *PanicError {
	return &PanicError{Func: fn, Value: r, Stack: debug.Stack()}
}

// catch calls f and returns nil, or a *PanicError for fn when f panicked.
func catch(fn string, f func()) (err *PanicError) {
	defer func() {
		if r := recover(); r != nil {
			err = recovered(fn, r)
		}
	}()
	f()
	return nil
}
