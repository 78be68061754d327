package rocketmqgo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	pkgerrors "github.com/pkg/errors"

	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// TestMapError feeds mapError every form of error the client returns for one
// send attempt and checks how the send loop classifies the result.
func TestMapError(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	broken := &net.OpError{Op: "write", Net: "tcp", Err: &os.SyscallError{Syscall: "write", Err: syscall.EPIPE}}
	tests := []struct {
		name   string
		ctx    context.Context
		err    error
		class  latency.Class
		code   int    // ClassBroker
		remark string // ClassBroker
		is     error  // the mapped error still matches it
	}{
		{name: "request timeout", ctx: live, err: rmqerrors.ErrRequestTimeout,
			class: latency.ClassTransportTimeout, is: rmqerrors.ErrRequestTimeout},
		{name: "request timeout of a cancelled send", ctx: cancelled, err: rmqerrors.ErrRequestTimeout,
			class: latency.ClassCancelled, is: context.Canceled},
		{name: "ctx deadline", ctx: live, err: context.DeadlineExceeded,
			class: latency.ClassTransportTimeout, is: context.DeadlineExceeded},
		{name: "ctx cancelled", ctx: cancelled, err: context.Canceled, class: latency.ClassCancelled, is: context.Canceled},
		{name: "client shut down (remoting)", ctx: live, err: rmqerrors.ErrService,
			class: latency.ClassCancelled, is: mqproducer.ErrInterrupted},
		{name: "producer not running", ctx: live, err: rmqerrors.ErrNotRunning,
			class: latency.ClassCancelled, is: rmqerrors.ErrNotRunning},
		{name: "busy (flow control)", ctx: live, err: fmt.Errorf("CODE: %d, DESC: %s", 2, "[TIMEOUT_CLEAN_QUEUE]broker busy"),
			class: latency.ClassBusy, code: 2, remark: "[TIMEOUT_CLEAN_QUEUE]broker busy"},
		{name: "broker error with an empty remark", ctx: live, err: errors.New("CODE: 17, DESC: "),
			class: latency.ClassBroker, code: 17},
		{name: "broker error wrapped by an interceptor", ctx: live, err: pkgerrors.Wrap(errors.New("CODE: 13, DESC: bad, really"), "trace"),
			class: latency.ClassBroker, code: 13, remark: "bad, really"},
		{name: "no queue selected", ctx: live, err: errors.New("the topic=ns%TopicTest route info not found"),
			class: latency.ClassClient},
		{name: "no broker address", ctx: live, err: errors.New("topic=TopicTest route info not found"),
			class: latency.ClassClient},
		{name: "send context dropped", ctx: live, err: errors.New("ProducerCtx Not Exist"), class: latency.ClassClient},
		{name: "connection refused", ctx: live, err: refused,
			class: latency.ClassTransportNotSent, is: syscall.ECONNREFUSED},
		{name: "broken pipe", ctx: live, err: broken,
			class: latency.ClassTransportFailed, is: syscall.EPIPE},
		{name: "connection reset", ctx: live, err: syscall.ECONNRESET,
			class: latency.ClassTransportFailed, is: syscall.ECONNRESET},
		{name: "EOF", ctx: live, err: io.EOF, class: latency.ClassTransportFailed, is: io.EOF},
		{name: "code that is not a number", ctx: live, err: errors.New("CODE: x, DESC: y"),
			class: latency.ClassTransportFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := mapError(tt.ctx, "broker-a", "127.0.0.1:10911", tt.err)
			o := mqproducer.Classify(mqproducer.Result{}, err)
			if o.Class != tt.class {
				t.Fatalf("Classify(mapError(%v)).Class = %v, want %v (mapped: %v)", tt.err, o.Class, tt.class, err)
			}
			switch tt.class {
			case latency.ClassTransportFailed, latency.ClassTransportTimeout, latency.ClassTransportNotSent:
				var te *mqproducer.TransportError
				if errors.As(err, &te) && (te.Broker != "broker-a" || te.Addr != "127.0.0.1:10911") {
					t.Errorf("TransportError names %q at %q, want broker-a at 127.0.0.1:10911", te.Broker, te.Addr)
				}
			case latency.ClassBroker, latency.ClassBusy:
				var be *mqproducer.BrokerError
				if !errors.As(err, &be) {
					t.Fatalf("mapError(%v) = %v, want a *BrokerError", tt.err, err)
				}
				if be.Code != tt.code || be.Remark != tt.remark || be.Broker != "broker-a" {
					t.Errorf("BrokerError = %+v, want code %d remark %q broker broker-a", be, tt.code, tt.remark)
				}
			case latency.ClassClient:
				var ce *mqproducer.ClientError
				if !errors.As(err, &ce) || !errors.Is(err, tt.err) {
					t.Errorf("mapError(%v) = %v, want a *ClientError wrapping it", tt.err, err)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(mapError(%v), %v) = false, want true", tt.err, tt.is)
			}
		})
	}
}

func TestMapErrorNil(t *testing.T) {
	if err := mapError(context.Background(), "b", "", nil); err != nil {
		t.Errorf("mapError(nil) = %v, want nil", err)
	}
}

func TestParseBrokerError(t *testing.T) {
	tests := []struct {
		in     string
		code   int
		remark string
		ok     bool
	}{
		{"CODE: 2, DESC: busy", 2, "busy", true},
		{"CODE: -1, DESC: odd", -1, "odd", true},
		{"send: CODE: 14, DESC: service not available now", 14, "service not available now", true},
		{"CODE: 2", 0, "", false},
		{"request timeout", 0, "", false},
		{"CODE: , DESC: x", 0, "", false},
	}
	for _, tt := range tests {
		code, remark, ok := parseBrokerError(tt.in)
		if code != tt.code || remark != tt.remark || ok != tt.ok {
			t.Errorf("parseBrokerError(%q) = %d, %q, %v, want %d, %q, %v", tt.in, code, remark, ok, tt.code, tt.remark, tt.ok)
		}
	}
}
