package rocketmqgo

import (
	"context"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/pkg/clock"
)

// benchClient answers every send at once, after asking sel for a queue as
// the client does.
type benchClient struct {
	sel producer.QueueSelector
	mqs []*primitive.MessageQueue
}

func (c *benchClient) Start() error    { return nil }
func (c *benchClient) Shutdown() error { return nil }
func (c *benchClient) SendOneWay(ctx context.Context, msgs ...*primitive.Message) error {
	_, err := c.SendSync(ctx, msgs...)
	return err
}

func (c *benchClient) SendSync(_ context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	q := c.sel.Select(msgs[0], c.mqs, "")
	return &primitive.SendResult{Status: primitive.SendOK, MessageQueue: q}, nil
}

// BenchmarkSendSync measures what the wrapper adds to a send that the client
// answers at once: "client" is the bare client call with its round-robin
// selector (the baseline), "wrapper" the same call through the fault-tolerant
// loop (slot, strategy pick, fault update, result conversion).
func BenchmarkSendSync(b *testing.B) {
	mqs := queues(topic, 4, "broker-a", "broker-b", "broker-c", "broker-d")
	b.Run("client", func(b *testing.B) {
		c := &benchClient{sel: producer.NewRoundRobinQueueSelector(), mqs: mqs}
		msg := primitive.NewMessage(topic, []byte("hello"))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.SendSync(context.Background(), msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wrapper", func(b *testing.B) {
		c := &benchClient{mqs: mqs}
		o := defaultOptions()
		o.log = quietLog
		o.clock = clock.Real{}
		p, err := newProducer(c, o)
		if err != nil {
			b.Fatal(err)
		}
		c.sel = p.sel
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		defer p.Shutdown()
		msg := primitive.NewMessage(topic, []byte("hello"))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.SendSync(context.Background(), msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
