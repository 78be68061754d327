package rocketmqgo_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/config"
)

// ExampleNewProducer wraps the client's producer and sends through a
// cluster (here loopback stand-ins) where one broker is busy (it answers
// every send SYSTEM_BUSY, as a broker's flow control does): every send it
// refuses is retried on the other, so every message is stored there. The
// busy broker is not isolated: the mqfault preset takes a busy answer as
// push-back, not failure, and lowers the broker's share of sends for about
// a second after each one (latency.Config.Capacity).
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
	fmt.Printf("stored on broker-a: %d of 10\n", stored)
	fmt.Println("broker-b answered busy:", answeredBusy(b))
	fmt.Println("broker-b isolated:", !p.Strategy().Table().IsAvailable("broker-b"))
	// Output:
	// stored on broker-a: 10 of 10
	// broker-b answered busy: true
	// broker-b isolated: false
}

// answeredBusy reports whether b answered some send SYSTEM_BUSY.
func answeredBusy(b *remotingtest.Broker) bool {
	for _, r := range b.Sends() {
		if r.ResponseCode == remotingtest.CodeSystemBusy {
			return true
		}
	}
	return false
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

// newObservedProducer is the README's "Configuration, logs and metrics":
// a producer with the settings of a configuration file, logging to logger
// and exporting to a registry of its own.
func newObservedProducer(path string, clientOpts []producer.Option, logger *slog.Logger) (*rocketmqgo.Producer, *prometheus.Registry, error) {
	cfg, err := config.Load(path) // the file, then the MQFAULT_ variables over it
	if err != nil {
		return nil, nil, err // every bad knob, each with its file:line or variable
	}
	reg := prometheus.NewRegistry() // serve it: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	p, err := rocketmqgo.NewProducer(clientOpts,
		rocketmqgo.WithConfig(cfg),            // strategy, send loop, log_interval, count_stages
		rocketmqgo.WithLogger(logger),         // isolations, recoveries, probe verdicts, failed attempts
		rocketmqgo.WithMetrics(reg, "orders"), // the mqfault_* series, labelled producer="orders"
	)
	return p, reg, err
}

// ExampleWithConfig builds a producer from a configuration file, with a
// logger and Prometheus metrics (newObservedProducer), and sends through a
// cluster where one broker is busy (every send answered SYSTEM_BUSY). Under
// the preset a busy answer isolates nothing, so the logger writes nothing at
// Warn (no "broker isolated" record) and the registry counts no isolation;
// each send the busy broker refused was retried on the other broker, and the
// registry counts every send answered.
func ExampleWithConfig() {
	quiet := remotingtest.WithLogger(slog.New(slog.DiscardHandler))
	ns, _ := remotingtest.NewNameServer(quiet)
	defer ns.Close()
	a, _ := remotingtest.NewBroker("broker-a", quiet)
	defer a.Close()
	b, _ := remotingtest.NewBroker("broker-b", quiet)
	defer b.Close()
	_ = ns.SetRoute("TopicTest", remotingtest.RouteOf(4, a, b))
	_ = b.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemBusy})

	dir, _ := os.MkdirTemp("", "mqfault")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mqfault.yaml")
	_ = os.WriteFile(path, []byte("preset: default\nretry_times: 1\nlog_interval: 0s\n"), 0o600)
	// The records at Warn and above, with their level, message, broker and
	// reason only (the rest varies from run to run).
	keep := map[string]bool{slog.LevelKey: true, slog.MessageKey: true, "broker": true, "reason": true}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if !keep[a.Key] {
				return slog.Attr{}
			}
			return a
		}}))

	p, reg, err := newObservedProducer(path, []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns.Addr()})),
		producer.WithGroupName("example"),
		producer.WithInstanceName("example-with-config"),
	}, logger)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer p.Shutdown() // before the servers close

	for i := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = p.SendSync(ctx, primitive.NewMessage("TopicTest", fmt.Appendf(nil, "hello %d", i)))
		cancel()
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "mqfault_sends_total" && mf.GetName() != "mqfault_isolations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			if v := m.GetCounter().GetValue(); v > 0 {
				fmt.Printf("%s{%s} %v\n", mf.GetName(), strings.Join(labels, ","), v)
			}
		}
	}
	fmt.Println("broker-b answered busy:", answeredBusy(b))
	fmt.Println("broker-b isolated:", !p.Strategy().Table().IsAvailable("broker-b"))
	// Output:
	// mqfault_sends_total{kind="sync",producer="orders",result="answered"} 10
	// broker-b answered busy: true
	// broker-b isolated: false
}
