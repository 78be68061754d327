package remotingtest_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
)

// Example runs the real producer against a loopback name server and broker,
// makes the broker busy, and reads what the broker logged.
func Example() {
	quiet := remotingtest.WithLogger(slog.New(slog.DiscardHandler))
	ns, err := remotingtest.NewNameServer(quiet)
	if err != nil {
		panic(err)
	}
	defer ns.Close()
	b, err := remotingtest.NewBroker("broker-a", quiet)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	if err := ns.SetRoute("TopicTest", remotingtest.RouteOf(4, b)); err != nil {
		panic(err)
	}

	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns.Addr()})),
		producer.WithInstanceName("example"),
		producer.WithQueueSelector(producer.NewManualQueueSelector()),
		producer.WithRetry(0))
	if err != nil {
		panic(err)
	}
	if err := p.Start(); err != nil {
		panic(err)
	}
	defer p.Shutdown() // runs before the servers close

	msg := func() *primitive.Message {
		m := primitive.NewMessage("TopicTest", []byte("hello")).WithKeys([]string{"order-1"})
		m.Queue = &primitive.MessageQueue{Topic: "TopicTest", BrokerName: "broker-a", QueueId: 2}
		return m
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	res, err := p.SendSync(ctx, msg())
	fmt.Println(res.Status == primitive.SendOK, err)

	_ = b.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemBusy, Remark: "busy"})
	_, err = p.SendSync(ctx, msg())
	fmt.Println(err)

	for _, r := range b.Sends() {
		fmt.Println(remotingtest.CodeName(r.Code), r.Topic, r.QueueID, r.Messages[0].Keys, r.Outcome, remotingtest.ResponseName(r.ResponseCode))
	}
	// Output:
	// true <nil>
	// CODE: 2, DESC: busy
	// SEND_MESSAGE TopicTest 2 [order-1] answered SUCCESS
	// SEND_MESSAGE TopicTest 2 [order-1] answered SYSTEM_BUSY
}

// readmeUse is the README's snippet ("Use"): two brokers behind a name
// server, the real producer over them, faults on demand, a wait on the log.
func readmeUse(ctx context.Context) ([]remotingtest.Request, error) {
	ns, _ := remotingtest.NewNameServer()      // Close() it when done
	a, _ := remotingtest.NewBroker("broker-a") // idem
	b, _ := remotingtest.NewBroker("broker-b")
	_ = ns.SetRoute("TopicTest", remotingtest.RouteOf(4, a, b)) // 4 read/write queues each, perm 6

	p, _ := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns.Addr()})),
		producer.WithInstanceName("unique-per-producer"), // see "client facts" below
		producer.WithRetry(0))
	_ = p.Start()

	_ = b.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemBusy}) // from now on
	_ = a.Refuse()                                                        // until a.Resume()
	rs, err := a.Await(ctx, func(rs []remotingtest.Request) bool { return len(rs) > 3 })
	defer ns.Close()
	defer a.Close()
	defer b.Close()
	defer p.Shutdown()
	return rs, err
}
