package rocketmqgo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"

	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// ErrQueueNotInRoute is wrapped by the *producer.ClientError of an attempt
// whose queue the client's current route does not list (the route changed
// between the strategy's pick and the client call). Nothing was sent; the
// send loop retries on another broker while the wrapper refreshes its route.
var ErrQueueNotInRoute = errors.New("rocketmqgo: the picked queue is not in the client's route")

// errNoAnswer is what an attempt meets when the client returned neither a
// result nor an error.
var errNoAnswer = errors.New("rocketmqgo: the client returned no result and no error")

// brokerCodePrefix starts the error the client makes of a broker's error
// response: fmt.Errorf("CODE: %d, DESC: %s", code, remark).
const (
	brokerCodePrefix = "CODE: "
	brokerDescSep    = ", DESC: "
	// routeNotFound ends the client's errors for a send it could not route:
	// "the topic=T route info not found" (no queue: the selector answered
	// nil, or the client has no route) and "topic=T route info not found"
	// (no address for the selected queue's broker).
	routeNotFound = "route info not found"
	// producerCtxMissing is the client's error when an interceptor dropped
	// the send context before the send.
	producerCtxMissing = "ProducerCtx Not Exist"
)

// mapError turns the error of one client call to broker (at addr, "" if not
// known) into what a producer.Transport returns, so that the send loop makes
// the reference's fault update and retry decision:
//
//   - context.Canceled or producer.ErrInterrupted: returned as is (cancelled).
//   - the client shut down (errors.ErrService, errors.ErrNotRunning): wraps
//     producer.ErrInterrupted (cancelled: the broker is not at fault).
//   - errors.ErrRequestTimeout or context.DeadlineExceeded: a
//     *producer.TransportError of class transport_timeout, unless ctx was
//     cancelled (the client reports a cancelled ctx as a timeout too), then
//     an error matching context.Canceled.
//   - "CODE: n, DESC: remark", wrapped or not: a *producer.BrokerError.
//   - "... route info not found" and "ProducerCtx Not Exist": a
//     *producer.ClientError (nothing was sent).
//   - a *net.OpError from dialing: a *producer.TransportError of class
//     transport_not_sent; any other error (a write on a broken connection,
//     EPIPE, ECONNRESET, EOF, ...): transport_failed.
//
// The client's error stays reachable with errors.Is/As through the typed
// errors' Unwrap (a BrokerError keeps its code and remark instead).
func mapError(ctx context.Context, broker, addr string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, mqproducer.ErrInterrupted):
		return err
	case errors.Is(err, rmqerrors.ErrService), errors.Is(err, rmqerrors.ErrNotRunning):
		return fmt.Errorf("%w: the client is shut down: %w", mqproducer.ErrInterrupted, err)
	case errors.Is(err, rmqerrors.ErrRequestTimeout), errors.Is(err, context.DeadlineExceeded):
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("%w: %w", context.Canceled, err)
		}
		return &mqproducer.TransportError{Broker: broker, Addr: addr, Class: latency.ClassTransportTimeout, Err: err}
	}
	if code, remark, ok := parseBrokerError(err.Error()); ok {
		return &mqproducer.BrokerError{Broker: broker, Code: code, Remark: remark}
	}
	msg := err.Error()
	if strings.HasSuffix(msg, routeNotFound) || strings.Contains(msg, producerCtxMissing) {
		return &mqproducer.ClientError{Broker: broker, Err: err}
	}
	class := latency.ClassTransportFailed
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		class = latency.ClassTransportNotSent
	}
	return &mqproducer.TransportError{Broker: broker, Addr: addr, Class: class, Err: err}
}

// parseBrokerError reads the code and remark out of the client's broker error
// text "CODE: n, DESC: remark", which may be wrapped (prefixed) by an
// interceptor.
func parseBrokerError(s string) (code int, remark string, ok bool) {
	i := strings.Index(s, brokerCodePrefix)
	if i < 0 {
		return 0, "", false
	}
	num, remark, found := strings.Cut(s[i+len(brokerCodePrefix):], brokerDescSep)
	if !found {
		return 0, "", false
	}
	code, err := strconv.Atoi(num)
	if err != nil {
		return 0, "", false
	}
	return code, remark, true
}
