package rocketmqgo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
)

// TestE2EFailingBroker makes one of three brokers answer SYSTEM_ERROR
// (code 1, a failure the reference isolates for) mid-run and checks, from
// the brokers' logs, its isolation window.
//
//  1. 12 sends on healthy brokers.
//  2. broker-b answers SYSTEM_ERROR: sends go on until it has answered one
//     (its first error); each is retried elsewhere and stored. The failure
//     isolates broker-b for the duration table's failure isolation and
//     marks it unreachable (v5's rule for a broker error).
//  3. A detector round probes it: its GET_MAX_OFFSET is answered (the
//     fault is on sends only, as a broker failing its sends still answers
//     offsets), so it is reachable again and still isolated.
//  4. More sends at the same instant and just before the isolation ends:
//     none reaches broker-b but a send trial, one a detect interval from
//     the failure on (the preset's trial for a broker under a failure
//     isolation, whatever its probes say: an answered one would end the
//     isolation; this one meets the error again and is retried elsewhere).
//  5. broker-b recovers and the clock reaches the end of the isolation:
//     broker-b is used again.
//  6. Every send returned its own result; every message was stored.
func TestE2EFailingBroker(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b", "broker-c"}, nil)
	b := c.brokers["broker-b"]
	msgs := c.sendN(12)
	if n := len(b.Sends()); n == 0 {
		t.Fatalf("broker-b read no send among the first 12, want round robin over every broker")
	}

	if err := b.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemError, Remark: "store error"}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	var firstErr remotingtest.Request
	for i := 0; firstErr.Seq == 0; i++ {
		if i == 24 {
			t.Fatalf("broker-b answered no error after 24 sends, want it picked")
		}
		m := message(100 + i)
		msgs = append(msgs, m)
		c.sendOK(m)
		for _, r := range b.Sends() {
			if r.ResponseCode == remotingtest.CodeSystemError {
				firstErr = r
				break
			}
		}
	}
	until := firstErr.AnsweredAt.Add(c.isolation(0, true))
	strat := c.p.Strategy()
	if item, _ := strat.Table().Item("broker-b"); !item.IsolatedUntil.Equal(until) || item.Reachable {
		t.Errorf("broker-b isolated until +%v reachable %v, want +%v (the duration table's isolation for a failure), unreachable",
			item.IsolatedUntil.Sub(start), item.Reachable, until.Sub(start))
	}
	rep, err := strat.DetectRound(context.Background())
	if err != nil {
		t.Fatalf("DetectRound() error = %v", err)
	}
	if item, _ := strat.Table().Item("broker-b"); !item.Reachable || !item.IsolatedUntil.Equal(until) || rep.Reachable == 0 {
		t.Errorf("after a detector round: %+v (round %+v), want broker-b reachable (it answers the probe), isolated until +%v", item, rep, until.Sub(start))
	}

	msgs = append(msgs, c.sendN(24)...)
	c.clock.Set(until.Add(-time.Millisecond))
	msgs = append(msgs, c.sendN(24)...)

	msgs = append(msgs, c.healAt(b, until, 12)...)
	c.checkIsolatedTrials(b, firstErr.Seq, until, firstErr.AnsweredAt, latency.DefaultConfig().DetectInterval)
	c.checkNothingLost(msgs)
}

// TestE2EBusyBroker makes one of three brokers answer SYSTEM_BUSY (flow
// control, as a real broker answers when its send queue is full) mid-run.
// Under the preset's capacity model a busy answer is push-back, not
// failure:
//
//  1. 24 sends on healthy brokers: round robin, a third on each.
//  2. broker-b answers SYSTEM_BUSY, the clock standing still: each busy
//     answer lowers its weight; it is never isolated and stays reachable;
//     its share of the next 180 sends falls well below round robin's third
//     and, near the weight's floor, still is not zero; every send is
//     retried elsewhere and stored.
//  3. broker-b has room again (the fault cleared). Before the capacity
//     recovery has passed since its last busy answer it is still below full
//     weight; once it has, it is at full weight and round robin gives it
//     its third of the sends again.
//  4. Every message was stored.
func TestE2EBusyBroker(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b", "broker-c"}, nil)
	b := c.brokers["broker-b"]
	strat := c.p.Strategy()
	recovery := e2eStrategy().Capacity.Recovery
	if recovery == 0 {
		recovery = latency.DefaultCapacityRecovery
	}
	share := func(from int, n int) int { // sends broker-b read after its send from
		return len(slices.DeleteFunc(b.Sends(), func(r remotingtest.Request) bool { return r.Seq <= from }))
	}
	lastSeq := func() int {
		s := b.Sends()
		if len(s) == 0 {
			return 0
		}
		return s[len(s)-1].Seq
	}
	msgs := c.sendN(24)
	if got := len(b.Sends()); got != 8 {
		t.Fatalf("broker-b read %d of the first 24 sends, want 8 (round robin over 3 brokers)", got)
	}

	if err := b.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemBusy, Remark: "[OVERLOAD]system busy, start flow control for a while"}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	// Two runs: in the first (30 sends) the weight falls from 1, by
	// Capacity.Decrease with each busy answer; in the second (150 sends,
	// enough for a trickle that falls to the floor's, capacityFloor of the
	// share, to show) broker-b keeps the picks the weights leave on it.
	runs := [2]int{30, 150}
	var shares [2]int
	for half, n := range runs {
		from := lastSeq()
		for i := range n {
			m := message(100 + runs[0]*half + i)
			msgs = append(msgs, m)
			c.sendOK(m)
			if !strat.Table().IsAvailable("broker-b") || !strat.Table().IsReachable("broker-b") {
				t.Fatalf("after busy send %d broker-b available %v reachable %v, want a busy broker neither isolated nor unreachable",
					runs[0]*half+i, strat.Table().IsAvailable("broker-b"), strat.Table().IsReachable("broker-b"))
			}
		}
		shares[half] = share(from, n)
	}
	t.Logf("broker-b read %v of %v sends while busy", shares, runs)
	busy := b.Sends()
	if len(busy) == 0 || busy[len(busy)-1].ResponseCode != remotingtest.CodeSystemBusy {
		t.Fatalf("broker-b's last send = %v, want answered SYSTEM_BUSY", busy)
	}
	last := busy[len(busy)-1]
	// Round robin over 3 brokers: a third of each run.
	if all, rr := shares[0]+shares[1], (runs[0]+runs[1])/3; 10*all >= 7*rr || shares[1] == 0 || shares[1] >= runs[1]/3 {
		t.Errorf("broker-b read %v of %v sends while busy, want fewer than 70%% of round robin's %d in all, "+
			"and in the second run some (the trickle: never idle), fewer than round robin's %d", shares, runs, rr, runs[1]/3)
	}
	if w := strat.Weight("broker-b"); w >= 0.5 {
		t.Errorf("broker-b's weight after its busy answers = %v, want below 0.5", w)
	}

	if err := b.SetFault(remotingtest.Fault{}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	c.clock.Set(last.AnsweredAt.Add(recovery - recovery/8))
	if w := strat.Weight("broker-b"); w >= 1 {
		t.Errorf("broker-b's weight %v after its last busy answer = %v, want below full weight", recovery-recovery/8, w)
	}
	c.clock.Set(last.AnsweredAt.Add(recovery))
	if w := strat.Weight("broker-b"); w != 1 {
		t.Errorf("broker-b's weight %v after its last busy answer = %v, want 1 (full weight)", recovery, w)
	}
	// A pick weighs shares at the fault table's last seen time, which an
	// outcome moves: the first pick after the clock's jump may still see
	// broker-b's weight as at its last busy answer. Its outcome brings the
	// table's time to the clock's.
	msgs = append(msgs, c.sendN(1)...)
	from := lastSeq()
	msgs = append(msgs, c.sendN(24)...)
	if got := share(from, 24); got != 8 {
		t.Errorf("broker-b read %d of 24 sends once back at full weight, want 8 (round robin over 3 brokers)", got)
	}
	c.checkNothingLost(msgs)
}

// TestE2ESlowBroker makes one of three brokers answer slowly mid-run: a
// latency the duration table does not isolate for, then one it does.
//
//  1. broker-b answers after 100 ms (table: no isolation): it keeps being
//     picked.
//  2. broker-b answers after 600 ms: after that answer it is isolated for the
//     table's duration for 600 ms (2 s with the 5.x table), to the
//     nanosecond, and no send reaches it before.
//  3. broker-b is fast again and the isolation ends: it is used again,
//     within the seconds the capacity model's latency average takes to
//     forget the 600 ms answer.
func TestE2ESlowBroker(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b", "broker-c"}, nil)
	b := c.brokers["broker-b"]
	const fast, slow = 100 * time.Millisecond, 600 * time.Millisecond
	if d := c.isolation(fast, false); d != 0 {
		t.Fatalf("the duration table isolates %v for %v, want 0 for this test", d, fast)
	}
	var msgs []*primitive.Message
	send := func(delay time.Duration) bool {
		m := message(len(msgs))
		msgs = append(msgs, m)
		res, err, held := c.sendAdvancing(m, b, delay)
		if err != nil || res.Status != primitive.SendOK || res.MsgID != uniqKey(m) {
			t.Fatalf("SendSync() = %v, %v, want SEND_OK for %s", res, err, uniqKey(m))
		}
		return held
	}

	if err := b.SetFault(remotingtest.Fault{Delay: fast}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	// After each slow answer broker-b is not isolated, and it is picked again.
	for slowAnswers, i := 0, 0; slowAnswers < 3; i++ {
		if i == 120 {
			t.Fatalf("broker-b answered %d of 120 sends after %v, want it still picked (no isolation)", slowAnswers, fast)
		}
		if !send(fast) {
			continue
		}
		slowAnswers++
		if item, _ := c.p.Strategy().Table().Item("broker-b"); item.Latency != fast || item.IsolatedUntil.After(c.clock.Now()) {
			t.Fatalf("after answer %d, broker-b item = latency %v until +%v, want %v and not isolated", slowAnswers, item.Latency, item.IsolatedUntil.Sub(start), fast)
		}
	}

	if err := b.SetFault(remotingtest.Fault{Delay: slow}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	// broker-b's latency average (the capacity model's latency term) is past
	// 25 ms and 4 times the others' after its 100 ms answers, so a pick that
	// lands on it moves to its second candidate (another broker's queue)
	// with a probability that grows with the ratio: a few sends may go by
	// before one reaches it.
	for i := 0; !send(slow); i++ {
		if i == 120 {
			t.Fatalf("broker-b read no send in 120, want it picked")
		}
	}
	sends := b.Sends()
	held := sends[len(sends)-1]
	if got := held.AnsweredAt.Sub(held.Time); got != slow {
		t.Fatalf("broker-b answered after %v, want %v", got, slow)
	}
	until := held.AnsweredAt.Add(c.isolation(slow, false))
	if item, _ := c.p.Strategy().Table().Item("broker-b"); !item.IsolatedUntil.Equal(until) || item.Latency != slow {
		t.Errorf("broker-b item = latency %v until +%v, want %v until +%v", item.Latency, item.IsolatedUntil.Sub(start), slow, until.Sub(start))
	}
	for range 24 {
		send(0)
	}
	c.clock.Set(until.Add(-time.Nanosecond))
	for range 24 {
		send(0)
	}
	if err := b.SetFault(remotingtest.Fault{}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	c.clock.Set(until)
	for range 12 {
		send(0)
	}
	// The capacity model's latency term weighs broker-b's 600 ms answer
	// until its average fades (time constant 1 s) under 25 ms, so it may
	// take a few seconds more to be picked again: within 8 s.
	usedAgain := func() bool {
		return slices.ContainsFunc(b.Sends(), func(r remotingtest.Request) bool { return r.Seq > held.Seq })
	}
	for sec := 1; sec <= 8 && !usedAgain(); sec++ {
		c.clock.Set(until.Add(time.Duration(sec) * time.Second))
		for range 12 {
			send(0)
		}
	}
	c.checkIsolated(b, held.Seq, until)
	c.checkNothingLost(msgs)
}

// TestE2EDroppedRequests makes a broker swallow requests mid-run: the
// attempt times out at its deadline (the per-attempt cap), the send is
// retried on another broker and stored there; the broker is isolated for
// a failure's duration and marked unreachable until the detector probes
// its learnt address.
func TestE2EDroppedRequests(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b"}, nil)
	b := c.brokers["broker-b"]
	msgs := c.sendN(8)
	if err := b.SetFault(remotingtest.Fault{Drop: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	attempt := mqproducer.DefaultConfig().MaxTimeoutPerRequest
	for i := 0; ; i++ {
		if i == 16 {
			t.Fatalf("broker-b read no send in 16, want it picked")
		}
		m := message(100 + i)
		msgs = append(msgs, m)
		res, err, held := c.sendAdvancing(m, b, attempt)
		if err != nil || res.MsgID != uniqKey(m) || res.MessageQueue.BrokerName != "broker-a" {
			t.Fatalf("SendSync() = %v, %v, want it stored on broker-a", res, err)
		}
		if held {
			break
		}
	}
	sends := b.Sends()
	dropped := sends[len(sends)-1]
	if dropped.Outcome != remotingtest.OutcomeDropped {
		t.Fatalf("broker-b's last send = %v, want dropped", dropped)
	}
	until := dropped.Time.Add(attempt + c.isolation(0, true))
	strat := c.p.Strategy()
	item, _ := strat.Table().Item("broker-b")
	if !item.IsolatedUntil.Equal(until) || item.Reachable {
		t.Errorf("broker-b item = until +%v reachable %v, want until +%v, unreachable", item.IsolatedUntil.Sub(start), item.Reachable, until.Sub(start))
	}
	rep, err := strat.DetectRound(context.Background())
	if err != nil {
		t.Fatalf("DetectRound() error = %v", err)
	}
	if item, _ := strat.Table().Item("broker-b"); !item.Reachable || item.Available || rep.Reachable == 0 {
		t.Errorf("after a detector round: %+v (round %+v), want broker-b reachable (its address was learnt), still isolated", item, rep)
	}
	msgs = append(msgs, c.sendN(8)...)
	msgs = append(msgs, c.healAt(b, until, 8)...)
	c.checkIsolated(b, dropped.Seq, until)
	c.checkNothingLost(msgs)
}

// TestE2EAsyncRefusedBroker sends concurrently while one of three brokers
// refuses connections: every send gets exactly one callback, every message
// is stored; the broker is isolated and unreachable (its address was learnt
// from the failed attempts' send context), reachable again once it listens
// and a detector round probes it, and used again once its isolation is over.
func TestE2EAsyncRefusedBroker(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b", "broker-c"}, nil)
	refused := c.brokers["broker-c"]
	// Refused before the client ever connects: a connection the broker
	// closed under the client can leave a request pending until its
	// deadline, which on the manual clock would wait for the test.
	if err := refused.Refuse(); err != nil {
		t.Fatalf("Refuse() error = %v", err)
	}
	var msgs []*primitive.Message
	const n = 90
	var (
		mu        sync.Mutex // guards callbacks and failures
		callbacks = map[string]int{}
		failures  []error
		wg        sync.WaitGroup
	)
	batch := make([]*primitive.Message, n)
	for i := range batch {
		m := message(1000 + i)
		batch[i] = m
		wg.Add(1)
		err := c.p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			callbacks[uniqKey(m)]++
			if err != nil {
				failures = append(failures, err)
			} else if res.MsgID != uniqKey(m) {
				failures = append(failures, fmt.Errorf("result for %s names %s", uniqKey(m), res.MsgID))
			}
		}, m)
		if err != nil {
			t.Fatalf("SendAsync() error = %v", err)
		}
	}
	wg.Wait()
	msgs = append(msgs, batch...)
	for _, m := range batch {
		if got := callbacks[uniqKey(m)]; got != 1 {
			t.Errorf("%s: %d callbacks, want exactly 1", uniqKey(m), got)
		}
	}
	if len(failures) != 0 {
		t.Errorf("async sends failed: %v", failures)
	}
	strat := c.p.Strategy()
	item, ok := strat.Table().Item("broker-c")
	if !ok || item.Available || item.Reachable {
		t.Fatalf("broker-c item = %+v, want isolated and unreachable", item)
	}
	if _, err := strat.DetectRound(context.Background()); err != nil {
		t.Fatalf("DetectRound() error = %v", err)
	}
	if item, _ := strat.Table().Item("broker-c"); item.Reachable {
		t.Errorf("broker-c reachable while it refuses connections")
	}
	seq := len(refused.Requests())
	if err := refused.Resume(); err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	c.clock.Set(item.IsolatedUntil)
	if _, err := strat.DetectRound(context.Background()); err != nil {
		t.Fatalf("DetectRound() error = %v", err)
	}
	if item, _ := strat.Table().Item("broker-c"); !item.Reachable {
		t.Errorf("broker-c unreachable after it listens again and a detector round probed it")
	}
	msgs = append(msgs, c.sendN(12)...)
	if got := countSends(refused.Requests()[seq:]); got == 0 {
		t.Errorf("broker-c read no send after its isolation ended, want it used again")
	}
	c.checkNothingLost(msgs)
}

// TestE2EShardingKeysAndQueues checks the sends that bypass the
// fault-tolerant path against the real client: a sharding key lands on the
// queue the client's own hash selector gives it (the same queue a plain
// client producer with producer.NewHashQueueSelector uses), a message with
// Queue set lands there, and a failure is not retried elsewhere.
func TestE2EShardingKeysAndQueues(t *testing.T) {
	c := newCluster(t, []string{"broker-b", "broker-a", "broker-c"}, nil)
	plain := newPlainProducer(t, c)
	for i := range 40 {
		key := fmt.Sprintf("order-%d", i*31)
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		want, err := plain.SendSync(ctx, primitive.NewMessage(e2eTopic, nil).WithShardingKey(key))
		if err != nil {
			cancel()
			t.Fatalf("plain SendSync(%q) error = %v", key, err)
		}
		got, err := c.p.SendSync(ctx, primitive.NewMessage(e2eTopic, nil).WithShardingKey(key))
		cancel()
		if err != nil {
			t.Fatalf("SendSync(%q) error = %v", key, err)
		}
		if *got.MessageQueue != *want.MessageQueue {
			t.Errorf("key %q went to %v, the client's hash selector to %v", key, got.MessageQueue, want.MessageQueue)
		}
	}

	m := message(1)
	m.Queue = &primitive.MessageQueue{Topic: e2eTopic, BrokerName: "broker-c", QueueId: 3}
	if res := c.sendOK(m); res.MessageQueue.BrokerName != "broker-c" || res.MessageQueue.QueueId != 3 {
		t.Errorf("explicit queue send went to %v, want broker-c:3", res.MessageQueue)
	}

	a := c.brokers["broker-a"]
	if err := a.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemBusy}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	failed := 0
	for i := range 40 {
		m := primitive.NewMessage(e2eTopic, nil).WithShardingKey(fmt.Sprint("k", i))
		m.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, primitive.CreateUniqID())
		before := len(a.Sends())
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		_, err := c.p.SendSync(ctx, m)
		cancel()
		if err == nil {
			continue
		}
		failed++
		var se *mqproducer.SendError
		var be *mqproducer.BrokerError
		if !errors.As(err, &se) || se.Attempts != 1 || !errors.As(err, &be) || be.Code != int(remotingtest.CodeSystemBusy) || be.Broker != "broker-a" {
			t.Errorf("keyed send error = %v, want one attempt failing on broker-a with SYSTEM_BUSY", err)
		}
		if got := len(a.Sends()) - before; got != 1 {
			t.Errorf("broker-a read %d sends of one keyed message, want 1", got)
		}
		if c.stored()[uniqKey(m)] != 0 {
			t.Errorf("a keyed message that failed on broker-a was stored elsewhere")
		}
	}
	if failed == 0 {
		t.Errorf("no key of 40 mapped to broker-a, want some")
	}
	if items := c.p.Strategy().Table().Items(); len(items) != 0 {
		t.Errorf("fault items = %+v, want none (keyed sends teach nothing)", items)
	}
}

// newPlainProducer starts an unwrapped client producer with the client's
// hash selector on c's name server.
func newPlainProducer(t *testing.T, c *cluster) rocketmq.Producer {
	t.Helper()
	instance := fmt.Sprintf("plain-%d", instances.Add(1))
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
		producer.WithGroupName("pg-"+instance), producer.WithInstanceName(instance),
		producer.WithQueueSelector(producer.NewHashQueueSelector()), producer.WithRetry(0))
	if err != nil {
		t.Fatalf("NewProducer() error = %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// TestE2ENamespace checks that retries keep the namespace prefix single:
// the client prefixes it on every call, the wrapper puts the topic back
// before each attempt.
func TestE2ENamespace(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b"}, []producer.Option{producer.WithNamespace("ns")})
	b := c.brokers["broker-b"]
	if err := b.SetFault(remotingtest.Fault{Code: remotingtest.CodeServiceNotAvailable}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	msgs := c.sendN(16)
	for _, m := range msgs {
		if m.Topic != e2eTopic {
			t.Errorf("message topic after the send = %q, want %q", m.Topic, e2eTopic)
		}
	}
	if len(b.Sends()) == 0 {
		t.Fatalf("broker-b read no send, want one retried")
	}
	for _, br := range c.brokers {
		for _, r := range br.Sends() {
			if r.Topic != "ns%"+e2eTopic {
				t.Errorf("%s read topic %q, want ns%%%s", br.Name(), r.Topic, e2eTopic)
			}
		}
	}
	c.checkNothingLost(msgs)
}

// TestE2EOnewayAndBatch checks oneway sends (one request each, no answer)
// and a batch retried after a broker error (the same batch, each message
// with its unique key, stored once).
func TestE2EOnewayAndBatch(t *testing.T) {
	c := newCluster(t, []string{"broker-a", "broker-b"}, nil)
	var msgs []*primitive.Message
	for i := range 8 {
		m := message(i)
		msgs = append(msgs, m)
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		err := c.p.SendOneWay(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("SendOneWay() error = %v", err)
		}
	}
	awaitStored(t, c, msgs)

	b := c.brokers["broker-b"]
	if err := b.SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemError}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var failed *remotingtest.Request // broker-b's failed batch attempt
	for round := 0; failed == nil; round++ {
		if round == 12 {
			t.Fatalf("broker-b read no batch in 12, want one")
		}
		batch := []*primitive.Message{message(100 + round), message(200 + round), message(300 + round)}
		res, err := c.p.SendSync(ctx, batch...)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("SendSync(batch) = %v, %v, want stored", res, err)
		}
		keys := []string{uniqKey(batch[0]), uniqKey(batch[1]), uniqKey(batch[2])}
		if want := strings.Join(keys, ","); res.MsgID != want {
			t.Errorf("batch MsgID = %q, want %q", res.MsgID, want)
		}
		msgs = append(msgs, batch...)
		for _, r := range b.Sends() {
			if r.Code == remotingtest.CodeSendBatchMessage {
				failed = &r
			}
		}
	}
	var got []string
	for _, m := range failed.Messages {
		got = append(got, m.UniqKey)
	}
	stored := c.stored()
	for _, k := range got {
		if stored[k] != 1 {
			t.Errorf("message %s of the failed batch %v stored %d times, want once, by the retry", k, got, stored[k])
		}
	}
	if len(got) != 3 || slices.Contains(got, "") {
		t.Errorf("failed batch carried keys %v, want 3 unique keys", got)
	}
	c.checkNothingLost(msgs)
}

// awaitStored waits until every message was stored: oneway sends return
// once the request is written, and a broker settles a oneway request after
// logging it.
func awaitStored(t *testing.T, c *cluster, msgs []*primitive.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for _, m := range msgs {
		key := uniqKey(m)
		settled := func(rs []remotingtest.Request) bool {
			return slices.ContainsFunc(rs, func(r remotingtest.Request) bool {
				return r.UniqKey() == key && r.Outcome != remotingtest.OutcomePending
			})
		}
		wctx, wcancel := context.WithCancel(ctx)
		got := make(chan struct{}, len(c.brokers))
		var wg sync.WaitGroup
		for _, b := range c.brokers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.Await(wctx, settled); err == nil {
					got <- struct{}{}
				}
			}()
		}
		select {
		case <-got:
		case <-ctx.Done():
			t.Errorf("oneway message %s was never settled by a broker", key)
		}
		wcancel()
		wg.Wait()
	}
}
