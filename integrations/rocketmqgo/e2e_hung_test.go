package rocketmqgo_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// hangUntilHeld sends new messages while b is hung until one attempt
// reaches b (it times out at the per-attempt cap and is retried elsewhere),
// and returns the messages and b's send request that was held.
func (c *cluster) hangUntilHeld(b *remotingtest.Broker, first int) ([]*primitive.Message, remotingtest.Request) {
	c.t.Helper()
	attempt := mqproducer.DefaultConfig().MaxTimeoutPerRequest
	var msgs []*primitive.Message
	for i := 0; ; i++ {
		if i == 16 {
			c.t.Fatalf("%s read no send in 16, want it picked", b.Name())
		}
		m := message(first + i)
		msgs = append(msgs, m)
		res, err, held := c.sendAdvancing(m, b, attempt)
		if err != nil || res.MsgID != uniqKey(m) || res.MessageQueue.BrokerName == b.Name() {
			c.t.Fatalf("SendSync() = %v, %v, want it stored on another broker than %s", res, err, b.Name())
		}
		if held {
			break
		}
	}
	sends := b.Sends()
	return msgs, sends[len(sends)-1]
}

// round runs one detector round after moving the clock past the detector's
// check interval (a broker probed within it is not probed again).
func (c *cluster) round() latency.RoundReport {
	c.t.Helper()
	c.clock.Advance(latency.DefaultConfig().DetectInterval + time.Millisecond)
	rep, err := c.p.Strategy().DetectRound(context.Background())
	if err != nil {
		c.t.Fatalf("DetectRound() error = %v", err)
	}
	return rep
}

// TestE2EHungBroker stops a broker as SIGSTOP does (Fault.Hung: it accepts
// connections and reads requests, answers nothing). The attempt that reaches
// it times out at the per-attempt cap and is retried elsewhere; the broker is
// isolated and unreachable. A TCP connect to it still succeeds, but the
// default detector (RemotingDetector) asks it GET_MAX_OFFSET and gets no
// answer, so detector rounds keep it unreachable, and sends keep avoiding it
// after its isolation has ended. Once it answers again, the next round
// finds it reachable and sends reach it again. Nothing is lost.
func TestE2EHungBroker(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b"}, nil)
	b := c.brokers["broker-b"]
	msgs := c.sendN(8)
	if err := b.SetFault(remotingtest.Fault{Hung: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	more, held := c.hangUntilHeld(b, 100)
	msgs = append(msgs, more...)
	strat := c.p.Strategy()
	if item, _ := strat.Table().Item("broker-b"); item.Available || item.Reachable {
		t.Fatalf("broker-b item = %+v after its attempt timed out, want isolated and unreachable", item)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := (probe.TCPDetector{}).Detect(ctx, b.Addr()); err != nil {
		t.Fatalf("TCPDetector on the hung broker = %v, want nil (its kernel still accepts): the case this test is about", err)
	}
	attempt := mqproducer.DefaultConfig().MaxTimeoutPerRequest
	until := held.Time.Add(attempt + c.isolation(0, true))
	interval := latency.DefaultConfig().DetectInterval + time.Millisecond
	rounds := 0
	for ; c.clock.Now().Add(interval).Before(until); rounds++ {
		// This round or the background loop's (on the same clock) probes
		// broker-b: the probes are counted below.
		rep := c.round()
		if item, _ := strat.Table().Item("broker-b"); item.Reachable || rep.Reachable > 1 {
			t.Fatalf("round %d while hung: %+v, item %+v, want broker-b still unreachable", rounds, rep, item)
		}
		msgs = append(msgs, c.sendN(4)...) // inside the isolation: none reaches broker-b
	}
	if rounds < 3 {
		t.Fatalf("%d rounds inside the isolation, want at least 3", rounds)
	}
	probes := 0
	for _, r := range b.Requests() {
		if r.Code == remotingtest.CodeGetMaxOffset && r.Hung {
			probes++
		}
	}
	// One probe per check interval; the background loop's round and ours
	// can share one interval's probe.
	if probes < rounds-1 || probes < 3 {
		t.Errorf("broker-b read %d GET_MAX_OFFSET probes while hung in %d rounds, want about one per round", probes, rounds)
	}
	if err := b.SetFault(remotingtest.Fault{}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	for i := 0; ; i++ {
		c.round()
		if item, _ := strat.Table().Item("broker-b"); item.Reachable {
			break
		}
		if i == 3 {
			t.Fatalf("broker-b unreachable after 4 rounds since it answers again")
		}
	}
	msgs = append(msgs, c.healAt(b, until, 16)...)
	c.checkIsolated(b, held.Seq, until)
	c.checkNothingLost(msgs)
}

func itemAvailable(s *latency.Strategy, broker string) bool {
	item, _ := s.Table().Item(broker)
	return item.Available
}

// TestE2ELateStore: a broker hangs and, when it resumes, stores the sends
// it read meanwhile (Fault.LateStore), as a broker resumed after SIGCONT
// does. Each of those sends timed out at the client and was stored again on
// another broker: the message is stored twice, with the same unique key,
// and the send returned one result. That is the at-least-once delivery the
// README describes; the test counts the duplicates.
//
// The detector is off here, so a timed-out broker is only isolated, not
// marked unreachable, and is picked again once its isolation is over.
func TestE2ELateStore(t *testing.T) {
	cfg := e2eStrategy()
	cfg.Detector = false
	c := newCluster(t, []string{"broker-a", "broker-b"}, nil, rocketmqgo.WithStrategyConfig(cfg))
	b := c.brokers["broker-b"]
	msgs := c.sendN(8)
	if err := b.SetFault(remotingtest.Fault{Hung: true, LateStore: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	var late []*primitive.Message
	for range 2 {
		more, _ := c.hangUntilHeld(b, 100+len(late)*100)
		msgs = append(msgs, more...)
		late = append(late, more[len(more)-1])
		// The broker is isolated now; let the isolation pass so it is picked again.
		c.clock.Advance(time.Hour)
	}
	if err := b.SetFault(remotingtest.Fault{}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := b.Await(ctx, func(rs []remotingtest.Request) bool {
		for _, r := range rs {
			if r.Hung && r.IsSend() && r.Outcome == remotingtest.OutcomePending {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("the held sends were not handled after the hang: %v", err)
	}
	stored := c.stored()
	dups := 0
	for _, m := range msgs {
		if stored[uniqKey(m)] > 1 {
			dups++
		}
	}
	for _, m := range late {
		if stored[uniqKey(m)] != 2 {
			t.Errorf("message %s stored %d times, want 2 (late on broker-b, retried on broker-a)", uniqKey(m), stored[uniqKey(m)])
		}
	}
	if dups != len(late) {
		t.Errorf("%d duplicates among %d messages, want exactly the %d held ones", dups, len(msgs), len(late))
	}
	t.Logf("%d messages, %d stored twice (late store after the hang)", len(msgs), dups)
	c.checkNothingLost(msgs)
}
