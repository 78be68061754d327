package producer

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/mqfault/mqfault/internal/input/configerr"
	"github.com/mqfault/mqfault/pkg/latency"
)

// ErrNoRoute is what every "the producer has no route for this topic" error
// matches with errors.Is. The errors themselves are *RouteError values, which
// name the topic. A RouteSource returns (or wraps) ErrNoRoute when the topic
// does not exist.
var ErrNoRoute = errors.New("producer: no route")

// ErrCallTimeout is matched (errors.Is) by a *SendError whose send budget
// (Config.Timeout) ran out before an attempt could start, with no earlier
// answer to return: the reference's RemotingTooMuchRequestException("call
// timeout"). It is also matched by a *LimitError when the wait for an async
// slot used up the budget.
var ErrCallTimeout = errors.New("producer: send timed out before the next attempt")

// ErrNoRoom is matched (errors.Is) by a *SendError that ended with
// StopNoRoom: a busy answer saying the broker's send pool was full was not
// retried, since the strategy's capacity model (RoomModel) found no other
// broker with room. errors.As finds the busy answer's *BrokerError behind it.
var ErrNoRoom = errors.New("producer: busy answer not retried: no broker has room")

// ErrClosed is returned by sends on a closed producer, and ends sends that
// were in progress when it closed before they could start another attempt.
var ErrClosed = errors.New("producer: closed")

// ErrInterrupted is the cancellation a Transport may return (or wrap) when an
// attempt was interrupted (the reference's InterruptedException). A Transport
// may return context.Canceled instead; both classify as latency.ClassCancelled.
var ErrInterrupted = errors.New("producer: send interrupted")

// ErrAsyncLimit is matched by a *LimitError: an async send found the bound on
// in-flight async sends (Config.AsyncMaxInFlight, Config.AsyncMaxBytes)
// reached, and either fails fast or waited until its budget ran out.
var ErrAsyncLimit = errors.New("producer: too many async sends in flight")

// ErrInvalidMessage is matched by the error a send returns for a nil message,
// an empty topic, a queue of another topic, or a nil callback.
var ErrInvalidMessage = errors.New("producer: invalid message")

// ErrInvalidConfig is matched by every *ConfigError.
var ErrInvalidConfig = errors.New("producer: invalid configuration")

// ConfigError names the setting that is wrong, its value and why: Field is a
// Config field as Go spells it ("RetryTimes") or a New argument
// ("transport"), and Err is ErrInvalidConfig, which it matches.
// Config.Validate joins one per problem. It is the same type as
// latency.ConfigError (see there), so one errors.As finds either.
type ConfigError = configerr.Error

// invalid returns a *ConfigError matching ErrInvalidConfig.
func invalid(field string, value any, reason string) *ConfigError {
	return &ConfigError{Field: field, Value: value, Reason: reason, Err: ErrInvalidConfig}
}

// RouteError says that the producer has no usable route for Topic: the
// RouteSource failed (Err is its error), said the topic does not exist, or
// the route has no writable queue. It matches ErrNoRoute.
type RouteError struct {
	Topic string
	Err   error
}

func (e *RouteError) Error() string {
	s := "producer: no route for topic " + strconv.Quote(e.Topic)
	if e.Err == nil || e.Err == ErrNoRoute {
		return s
	}
	// A cause that is ErrNoRoute with a reason ("producer: no route: ...")
	// adds only its reason: the sentence says "no route" once.
	cause := e.Err.Error()
	if rest, ok := strings.CutPrefix(cause, ErrNoRoute.Error()+": "); ok && errors.Is(e.Err, ErrNoRoute) {
		cause = rest
	}
	return s + ": " + cause
}

// Unwrap returns the cause.
func (e *RouteError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoRoute) true.
func (e *RouteError) Is(target error) bool { return target == ErrNoRoute }

// ClientError is what a Transport returns when an attempt failed on the
// client before any request was sent: no address for the broker, a message
// the transport cannot encode, a local resource missing (the reference's
// MQClientException from sendKernelImpl). The broker was not at fault.
//
// Sync and oneway sends (v5): fault update (isolation false, reachable true),
// then the next attempt. v4: isolation true. Async: see Loop.
type ClientError struct {
	Broker string
	Err    error
}

func (e *ClientError) Error() string {
	return "producer: client error before sending to broker " + e.Broker + ": " + errString(e.Err)
}

// Unwrap returns the cause.
func (e *ClientError) Unwrap() error { return e.Err }

// TransportError is what a Transport returns when the network failed the
// attempt: a timeout, a broken or refused connection (the reference's
// RemotingException). A Transport may also return context.DeadlineExceeded
// when the attempt's ctx expired; it classifies as
// latency.ClassTransportTimeout.
//
// Sync and oneway sends (v5): fault update (isolation true, reachable false
// when the detector is on, else true), then the next attempt. v4: isolation
// true.
type TransportError struct {
	Broker string
	Addr   string
	// Class is what the network did: latency.ClassTransportTimeout (no
	// answer before the deadline), latency.ClassTransportNotSent (the
	// request could not be handed to the network: no connection could be
	// made), latency.ClassThrottled (local flow control refused the
	// request, the reference's RemotingTooMuchRequestException) or
	// latency.ClassTransportFailed (the request may have left but no answer
	// came back). Any other value, the zero value included, classifies as
	// latency.ClassTransportFailed.
	Class latency.Class
	Err   error
}

func (e *TransportError) Error() string {
	s := "producer: transport to broker " + e.Broker
	if e.Addr != "" {
		s += " (" + e.Addr + ")"
	}
	return s + ": " + e.class().String() + ": " + errString(e.Err)
}

// class is the class Classify gives e.
func (e *TransportError) class() latency.Class {
	switch e.Class {
	case latency.ClassTransportTimeout, latency.ClassTransportNotSent, latency.ClassThrottled:
		return e.Class
	}
	return latency.ClassTransportFailed
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// BrokerError is what a Transport returns when the broker answered with an
// error code instead of a send status (the reference's MQBrokerException):
// Code is the response code.
//
// Sync sends (v5): fault update (isolation true, reachable false); the next
// attempt only if Code is a retry code (Config.RetryCodes), else the send
// ends with the last answered result if there is one, or this error. v4:
// isolation true. Async: no retry (see Loop). A Transport that does
// not know the broker's name may leave Broker empty: the error then reads
// "the broker", and the producer's logs and SendError name the attempt's
// broker.
type BrokerError struct {
	Broker string
	Code   int
	Remark string
}

func (e *BrokerError) Error() string {
	s := "producer: the broker answered code " + strconv.Itoa(e.Code)
	if e.Broker != "" {
		s = "producer: broker " + e.Broker + " answered code " + strconv.Itoa(e.Code)
	}
	if e.Remark != "" {
		s += ": " + e.Remark
	}
	return s
}

// SendError is how a send through the fault-tolerant path fails: which
// attempts were made on which brokers, how long it took, why it stopped, and
// the last attempt's error (Err, which it wraps; nil only when the budget ran
// out before the first attempt). errors.Is(err, ErrCallTimeout) is true when
// Stop is StopCallTimeout, errors.Is(err, ErrNoRoom) when it is StopNoRoom;
// errors.As finds the *BrokerError, *TransportError,
// *ClientError or cancellation behind it.
type SendError struct {
	Topic    string
	Kind     Kind
	Attempts int
	// Brokers lists the broker of each attempt made, in order.
	Brokers []string
	Elapsed time.Duration
	Stop    Stop
	Err     error
}

func (e *SendError) Error() string {
	var b strings.Builder
	b.WriteString("producer: ")
	b.WriteString(e.Kind.String())
	b.WriteString(" send to topic ")
	b.WriteString(strconv.Quote(e.Topic))
	b.WriteString(" failed after ")
	b.WriteString(strconv.Itoa(e.Attempts))
	if e.Attempts == 1 {
		b.WriteString(" attempt")
	} else {
		b.WriteString(" attempts")
	}
	if len(e.Brokers) > 0 {
		b.WriteString(" (brokers ")
		b.WriteString(strings.Join(e.Brokers, ", "))
		b.WriteString(")")
	}
	b.WriteString(" in ")
	b.WriteString(e.Elapsed.String())
	if e.Stop == StopCallTimeout {
		b.WriteString(": call timeout")
		if e.Err != nil {
			b.WriteString(" (last error: ")
			b.WriteString(e.Err.Error())
			b.WriteString(")")
		}
		return b.String()
	}
	if e.Stop == StopNoRoom {
		b.WriteString(": not retried, no broker has room")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the last attempt's error.
func (e *SendError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCallTimeout) true for a call timeout, and
// errors.Is(err, ErrNoRoom) for a busy answer not retried for want of room.
func (e *SendError) Is(target error) bool {
	return (target == ErrCallTimeout && e.Stop == StopCallTimeout) || (target == ErrNoRoom && e.Stop == StopNoRoom)
}

// LimitError is an async send refused by the bound on in-flight async sends.
// It matches ErrAsyncLimit, and ErrCallTimeout when it waited until the send's
// budget ran out.
type LimitError struct {
	// Limit is "count" (Config.AsyncMaxInFlight) or "bytes"
	// (Config.AsyncMaxBytes).
	Limit string
	// Max is the bound.
	Max int64
	// Waited is true when the send waited for room and its budget ran out;
	// false when it failed fast (Config.AsyncFailFast) or the message alone
	// is larger than the byte bound.
	Waited bool
}

func (e *LimitError) Error() string {
	s := "producer: async in-flight " + e.Limit + " bound " + strconv.FormatInt(e.Max, 10) + " reached"
	if e.Waited {
		s += "; the send timed out waiting for room"
	}
	return s
}

// Is makes errors.Is(err, ErrAsyncLimit) true, and errors.Is(err,
// ErrCallTimeout) when the wait ran out of budget.
func (e *LimitError) Is(target error) bool {
	return target == ErrAsyncLimit || (e.Waited && target == ErrCallTimeout)
}

func errString(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// enumName returns names[v], or "kind(v)" for a value without a name.
func enumName(names []string, v int, kind string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return kind + "(" + strconv.Itoa(v) + ")"
}

// Outcome is what one attempt met, classified, with how long it took: the
// input of Drive.Finish. Drivers build it with Classify (from what
// Transport.Send returned) or directly (the simulator).
type Outcome struct {
	// Class is what the attempt met, in latency's vocabulary: the class the
	// send loop's rules, the fault table's update rules, the metrics and
	// the logs read.
	Class latency.Class
	// Result is the answer (latency.ClassAnswered).
	Result Result
	// Code and Remark are the broker's response code and remark
	// (latency.ClassBroker, latency.ClassBusy).
	Code   int
	Remark string
	// Err is the attempt's error (nil for latency.ClassAnswered).
	Err error
	// Elapsed is how long the attempt took: the latency of its fault update.
	Elapsed time.Duration
}

// Classify turns what Transport.Send returned into an Outcome (Elapsed left
// 0); it is the one mapping from errors to classes. In order: a nil error is
// latency.ClassAnswered; a *BrokerError is latency.BrokerClass of its code
// (busy for flow control, else broker); a *ClientError latency.ClassClient;
// a *TransportError its Class (see there); context.Canceled or
// ErrInterrupted latency.ClassCancelled; context.DeadlineExceeded
// latency.ClassTransportTimeout; any other error
// latency.ClassTransportFailed (the broker is presumed at fault). The typed
// errors are found with errors.As, so a Transport may wrap them.
func Classify(res Result, err error) Outcome {
	if err == nil {
		return Outcome{Class: latency.ClassAnswered, Result: res}
	}
	o := Outcome{Err: err, Class: latency.ClassTransportFailed}
	var be *BrokerError
	var ce *ClientError
	var te *TransportError
	switch {
	case errors.As(err, &be):
		o.Class, o.Code, o.Remark = latency.BrokerClass(be.Code), be.Code, be.Remark
	case errors.As(err, &ce):
		o.Class = latency.ClassClient
	case errors.As(err, &te):
		o.Class = te.class()
	case errors.Is(err, context.Canceled) || errors.Is(err, ErrInterrupted):
		o.Class = latency.ClassCancelled
	case errors.Is(err, context.DeadlineExceeded):
		o.Class = latency.ClassTransportTimeout
	}
	return o
}

// FailedStop is how a send ends when its one attempt met o and is not
// retried (an ordered send, or a direct send of an adapter):
// StopBrokerError for a broker's error code (busy included), StopCancelled
// for a cancellation, StopFailed for every other failure, StopAnswered for
// an answer. It is the class's end in the send loop's rules (classEnds in
// moderules.go), the same in every mode.
func (o Outcome) FailedStop() Stop { return classStop(o.Class) }

// Report is o as latency's update rules read it (the value a pick's Done
// takes), met on path: the class, the elapsed time as the latency, the
// code, remark and error.
func (o Outcome) Report(path latency.Path) latency.Outcome { return o.report(path) }

func (o *Outcome) report(path latency.Path) latency.Outcome {
	return latency.Outcome{Class: o.Class, Path: path, Latency: o.Elapsed, Code: o.Code, Remark: o.Remark, Err: o.Err}
}
