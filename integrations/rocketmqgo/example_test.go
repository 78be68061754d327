package rocketmqgo_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
)

// ExampleNewProducer wraps the client's producer and sends through a
// cluster (here loopback stand-ins) where one broker is busy: every message
// is stored on the other, and the busy broker is isolated.
func ExampleNewProducer() {
	quiet := remotingtest.WithLogger(slog.New(slog.DiscardHandler))
	ns, _ := remotingtest.NewNameServer(quiet)
	defer ns.Close()
	a, _ := remotingtest.NewBroker("broker-a", quiet)
	defer a.Close()
	b, _ := remotingtest.NewBroker("broker-b", quiet)
	defer b.Close()
	_ = ns.SetRoute("TopicTest", remotingtest.RouteOf(4, a, b))
	_ = b.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemBusy})

	p, err := rocketmqgo.NewProducer([]producer.Option{ // the options rocketmq.NewProducer takes
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns.Addr()})),
		producer.WithGroupName("example"),
		producer.WithInstanceName("example-new-producer"),
	}, rocketmqgo.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer p.Shutdown() // before the servers close

	stored := 0
	for i := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage("TopicTest", fmt.Appendf(nil, "hello %d", i)))
		cancel()
		if err == nil && res.MessageQueue.BrokerName == "broker-a" {
			stored++
		}
	}
	item, _ := p.Strategy().Table().Item("broker-b")
	fmt.Printf("stored on broker-a: %d of 10\n", stored)
	fmt.Println("broker-b isolated:", !item.Available)
	// Output:
	// stored on broker-a: 10 of 10
	// broker-b isolated: true
}

// readmeSend is the README's snippet: the wrapper in place of
// rocketmq.NewProducer, started, sending once.
func readmeSend(ctx context.Context, body []byte) error {
	p, err := rocketmqgo.NewProducer([]producer.Option{ // the options you gave rocketmq.NewProducer
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{"127.0.0.1:9876"})),
		producer.WithGroupName("orders"),
	})
	if err != nil {
		return err
	}
	// p is a rocketmq.Producer
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown()
	res, err := p.SendSync(ctx, primitive.NewMessage("TopicTest", body))
	if err != nil {
		return err
	}
	fmt.Println(res.MsgID)
	return nil
}

// p is a rocketmq.Producer, as the README's snippet says.
var _ rocketmq.Producer = (*rocketmqgo.Producer)(nil)
