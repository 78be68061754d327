package rocketmqgo_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/clock"
)

// TestE2EBehindProxy routes two brokers to one address, as a 5.x proxy's
// name server answers: the wrapper sends through it, logs the shared
// address once, reports BehindProxy, and its detector probes nothing there
// (a probe of the proxy says nothing about one broker): a round over the
// isolated brokers is inconclusive and reads no GET_MAX_OFFSET.
func TestE2EBehindProxy(t *testing.T) {
	clk := clock.NewManual(start)
	sopts := []remotingtest.Option{quiet, remotingtest.WithClock(clk)}
	ns, err := remotingtest.NewNameServer(sopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	proxy, err := remotingtest.NewBroker("proxy", sopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	var route remotingtest.Route
	for _, name := range []string{"broker-a", "broker-b"} {
		route.Queues = append(route.Queues, remotingtest.QueueData{BrokerName: name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: remotingtest.PermReadWrite})
		route.Brokers = append(route.Brokers, remotingtest.BrokerData{Cluster: proxy.Cluster(), BrokerName: name, Addrs: map[int64]string{remotingtest.MasterID: proxy.Addr()}})
	}
	if err := ns.SetRoute(e2eTopic, route); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	c := &cluster{t: t, clock: clk, ns: ns, brokers: map[string]*remotingtest.Broker{"proxy": proxy}}
	c.p = c.newProducer(nil, rocketmqgo.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	msgs := c.sendN(16)
	brokers := map[string]bool{}
	for i := range 16 {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		res, err := c.p.SendSync(ctx, primitive.NewMessage(e2eTopic, []byte{byte(i)}))
		cancel()
		if err != nil {
			t.Fatalf("SendSync() error = %v", err)
		}
		brokers[res.MessageQueue.BrokerName] = true
	}
	if !brokers["broker-a"] || !brokers["broker-b"] {
		t.Fatalf("sends went to %v, want both brokers (through the one address)", brokers)
	}
	if !c.p.BehindProxy() {
		t.Fatal("BehindProxy() = false with both brokers at one address")
	}
	if n := strings.Count(logs.String(), "share one address"); n != 1 {
		t.Errorf("the shared address was logged %d times, want once:\n%s", n, logs.String())
	}
	strat := c.p.Strategy()
	strat.Update("broker-a", 0, true, false)
	strat.Update("broker-b", 0, true, false)
	rep, err := strat.DetectRound(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Inconclusive != 2 || rep.Reachable != 0 || rep.Unreachable != 0 {
		t.Errorf("round = %+v, want both probes inconclusive", rep)
	}
	for _, r := range proxy.Requests() {
		if r.Code == remotingtest.CodeGetMaxOffset {
			t.Errorf("the proxy read %v, want no probe of a shared address", r)
		}
	}
	c.checkNothingLost(msgs)
}
