package rocketmqgo

import (
	"context"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// Client is the part of the client's producer the wrapper calls: starting and
// stopping it, and one send attempt at a time (the client's producer is built
// with producer.WithRetry(0)). rocketmq.Producer satisfies it; tests mock it.
//
// Implementations must be safe for concurrent use. SendSync blocks until the
// broker answers or ctx is done (the client waits at most 3 s per call in
// v2.1.2); SendOneWay blocks until the request is written.
type Client interface {
	Start() error
	Shutdown() error
	SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
	SendOneWay(ctx context.Context, msgs ...*primitive.Message) error
}

var _ Client = rocketmq.Producer(nil)
