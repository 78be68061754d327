// Command example sends messages through a rocketmq-client-go producer made
// fault tolerant by rocketmqgo, and prints where each one went and what the
// fault table learnt.
//
// With -namesrv it talks to a real RocketMQ name server:
//
//	go run ./example -namesrv 127.0.0.1:9876 -topic TopicTest -n 20
//
// Without it, it starts loopback stand-ins (a name server and three brokers
// speaking the remoting protocol, from internal/remotingtest) and makes one
// broker answer SYSTEM_BUSY, so the run shows a broker being isolated and the
// sends retried elsewhere.
//
// It exits with status 1 when a message was not sent (with a line saying how
// many failed and, for a topic without a route, what to do), 0 when every
// message was stored.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

func main() {
	namesrv := flag.String("namesrv", "", "name server address (host:port); empty starts loopback servers")
	topic := flag.String("topic", "TopicTest", "topic to send to")
	n := flag.Int("n", 12, "messages to send")
	flag.Parse()
	if err := run(*namesrv, *topic, *n); err != nil {
		log.SetFlags(0)
		log.Fatal("example: ", err)
	}
}

// run sends n messages to topic through the name server namesrv (loopback
// servers when empty) and returns an error unless every one was stored.
func run(namesrv, topic string, n int) error {
	if n <= 0 {
		return fmt.Errorf("-n %d: nothing to send, want at least 1 message", n)
	}
	if topic == "" {
		return errors.New("-topic: empty")
	}
	rlog.SetLogLevel("error")
	if namesrv == "" {
		addr, stop, err := loopback(topic)
		if err != nil {
			return err
		}
		defer stop()
		namesrv = addr
	}

	// The client's own options, as for rocketmq.NewProducer; the wrapper adds
	// WithRetry(0), its queue selector and its interceptor.
	clientOpts := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		producer.WithGroupName("example_group"),
		producer.WithInstanceName(fmt.Sprintf("example-%d", os.Getpid())),
	}
	send := mqproducer.DefaultConfig() // 2 retries, 3 s per send, 1 s per attempt while another may follow
	p, err := rocketmqgo.NewProducer(clientOpts,
		rocketmqgo.WithSendConfig(send),
		rocketmqgo.WithStrategyConfig(latency.DefaultConfig()),
		rocketmqgo.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown() // before the loopback servers stop (defers run last-in first-out)

	failed := 0
	var firstErr error
	for i := range n {
		msg := primitive.NewMessage(topic, fmt.Appendf(nil, "hello %d", i))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := p.SendSync(ctx, msg)
		cancel()
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		}
		var se *mqproducer.SendError
		switch {
		case errors.As(err, &se):
			fmt.Printf("message %2d: failed after %d attempts on %v: %v\n", i, se.Attempts, se.Brokers, se.Err)
		case err != nil:
			fmt.Printf("message %2d: %v\n", i, err)
		default:
			fmt.Printf("message %2d: %s on %s:%d\n", i, res.MsgID, res.MessageQueue.BrokerName, res.MessageQueue.QueueId)
		}
	}
	fmt.Println("fault table:")
	for _, it := range p.Strategy().Table().Items() {
		fmt.Printf("  %s latency=%v available=%v reachable=%v\n", it.Broker, it.Latency, it.Available, it.Reachable)
	}
	switch {
	case failed == 0:
		fmt.Printf("sent %d of %d messages\n", n, n)
		return nil
	case errors.Is(firstErr, mqproducer.ErrNoRoute):
		return fmt.Errorf("%d of %d messages failed: the name server %s has no route for topic %q: "+
			"create the topic (mqadmin updateTopic -t %s ...) or run the brokers with autoCreateTopicEnable=true; first error: %w",
			failed, n, namesrv, topic, topic, firstErr)
	}
	return fmt.Errorf("%d of %d messages failed; first error: %w", failed, n, firstErr)
}

// loopback starts a name server and three brokers routing topic, with
// broker-b answering SYSTEM_BUSY, and returns the name server's address and
// a func that stops them all.
func loopback(topic string) (string, func(), error) {
	quiet := remotingtest.WithLogger(slog.New(slog.DiscardHandler))
	var stops []func() error
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			_ = stops[i]()
		}
	}
	ns, err := remotingtest.NewNameServer(quiet)
	if err != nil {
		return "", nil, err
	}
	stops = append(stops, ns.Close)
	var brokers []*remotingtest.Broker
	for _, name := range []string{"broker-a", "broker-b", "broker-c"} {
		b, err := remotingtest.NewBroker(name, quiet)
		if err != nil {
			stop()
			return "", nil, err
		}
		stops = append(stops, b.Close)
		brokers = append(brokers, b)
	}
	if err := brokers[1].SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemBusy, Remark: "too many requests"}); err != nil {
		stop()
		return "", nil, err
	}
	if err := ns.SetRoute(topic, remotingtest.RouteOf(4, brokers...)); err != nil {
		stop()
		return "", nil, err
	}
	fmt.Printf("loopback name server %s; brokers a, b (answers SYSTEM_BUSY), c\n", ns.Addr())
	return ns.Addr(), stop, nil
}
