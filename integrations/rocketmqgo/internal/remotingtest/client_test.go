package remotingtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/clock"
)

// These tests drive the real rocketmq-client-go v2.1.2 producer against the
// loopback servers. v2.1.2 bounds each send attempt by min(ctx deadline, 3 s)
// and ignores producer.WithSendMsgTimeout, so every send here carries a short
// ctx deadline.

const (
	topic = "TopicTest"
	// attemptTimeout is the deadline of a send expected to time out.
	attemptTimeout = 200 * time.Millisecond
	// hangGuard bounds the waits of sends and log awaits that are expected
	// to finish; no assertion depends on it.
	hangGuard = 10 * time.Second
)

var quiet = remotingtest.WithLogger(slog.New(slog.DiscardHandler))

type cluster struct {
	ns      *remotingtest.NameServer
	brokers map[string]*remotingtest.Broker
}

// newCluster starts a name server and brokers, routes topic to all of them
// with 4 queues each, and closes everything when the test ends.
func newCluster(t *testing.T, names ...string) *cluster {
	return newClusterWith(t, nil, names...)
}

func newClusterWith(t *testing.T, opts []remotingtest.Option, names ...string) *cluster {
	t.Helper()
	opts = append([]remotingtest.Option{quiet}, opts...)
	ns, err := remotingtest.NewNameServer(opts...)
	if err != nil {
		t.Fatalf("NewNameServer() error = %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	c := &cluster{ns: ns, brokers: make(map[string]*remotingtest.Broker)}
	var list []*remotingtest.Broker
	for _, name := range names {
		b, err := remotingtest.NewBroker(name, opts...)
		if err != nil {
			t.Fatalf("NewBroker(%q) error = %v", name, err)
		}
		t.Cleanup(func() { _ = b.Close() })
		c.brokers[name] = b
		list = append(list, b)
	}
	if err := ns.SetRoute(topic, remotingtest.RouteOf(4, list...)); err != nil {
		t.Fatalf("SetRoute() error = %v", err)
	}
	return c
}

var instances atomic.Int64

// testProducer is a started producer and its group.
type testProducer struct {
	rocketmq.Producer
	group string
}

// newProducer starts a real producer on c's name server with no retries,
// and shuts it down when the test ends (before the servers close, as
// cleanups run last-in first-out).
func newProducer(t *testing.T, c *cluster, opts ...producer.Option) testProducer {
	t.Helper()
	// The client shares one instance per client id (IP@instance name) across
	// producers and refuses a second name server for it: one name per producer.
	instance := fmt.Sprintf("remotingtest-%d", instances.Add(1))
	base := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
		producer.WithGroupName("pg-" + instance),
		producer.WithInstanceName(instance),
		producer.WithRetry(0),
	}
	p, err := rocketmq.NewProducer(append(base, opts...)...)
	if err != nil {
		t.Fatalf("NewProducer() error = %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return testProducer{Producer: p, group: "pg-" + instance}
}

// fixedSelector sends to one queue and records what the client told it.
type fixedSelector struct {
	broker string
	queue  int

	mu    sync.Mutex // guards lasts
	lasts []string   // lastBrokerName of every call
}

func (s *fixedSelector) Select(_ *primitive.Message, mqs []*primitive.MessageQueue, last string) *primitive.MessageQueue {
	s.mu.Lock()
	s.lasts = append(s.lasts, last)
	s.mu.Unlock()
	for _, q := range mqs {
		if q.BrokerName == s.broker && q.QueueId == s.queue {
			return q
		}
	}
	return nil
}

func (s *fixedSelector) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lasts...)
}

func send(p testProducer, timeout time.Duration, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.SendSync(ctx, msgs...)
}

func await(t *testing.T, b interface {
	Await(context.Context, func([]remotingtest.Request) bool) ([]remotingtest.Request, error)
}, cond func([]remotingtest.Request) bool) []remotingtest.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	rs, err := b.Await(ctx, cond)
	if err != nil {
		t.Fatalf("Await() error = %v; log %v", err, rs)
	}
	return rs
}

func codes(rs []remotingtest.Request) []string {
	var out []string
	for _, r := range rs {
		out = append(out, remotingtest.CodeName(r.Code))
	}
	return out
}

func TestProducerStartSendShutdown(t *testing.T) {
	c := newCluster(t, "broker-a", "broker-b")
	sel := &fixedSelector{broker: "broker-b", queue: 3}
	p := newProducer(t, c, producer.WithQueueSelector(sel))

	// Start sends nothing: the client knows no topic and no broker yet.
	if rs := c.ns.Requests(); len(rs) != 0 {
		t.Errorf("name server log after Start = %v, want empty", rs)
	}

	msg := primitive.NewMessage(topic, []byte("hello")).WithKeys([]string{"k1", "k2"}).WithTag("tagA")
	res, err := send(p, hangGuard, msg)
	if err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	if res.Status != primitive.SendOK || res.MessageQueue.BrokerName != "broker-b" || res.MessageQueue.QueueId != 3 || res.QueueOffset != 0 {
		t.Errorf("SendSync() = %v, want SendOK on broker-b queue 3 at offset 0", res)
	}

	sends := c.brokers["broker-b"].Sends()
	if len(sends) != 1 {
		t.Fatalf("broker-b sends = %v, want 1", sends)
	}
	got := sends[0]
	if got.Code != remotingtest.CodeSendMessage || got.Topic != topic || got.QueueID != 3 || got.Group != p.group {
		t.Errorf("broker-b logged %v group %q, want SEND_MESSAGE of %s to queue 3 from %s", got, got.Group, topic, p.group)
	}
	if m := got.Messages[0]; strings.Join(m.Keys, ",") != "k1,k2" || m.Tags != "tagA" || m.BodySize != 5 || got.BodySize != 5 {
		t.Errorf("broker-b logged message %+v body %d, want keys k1,k2 tag tagA body 5", m, got.BodySize)
	}
	if got.UniqKey() == "" || got.UniqKey() != res.MsgID || got.MsgID != res.OffsetMsgID {
		t.Errorf("log uniq key %q msg id %q, result MsgID %q OffsetMsgID %q; want them equal",
			got.UniqKey(), got.MsgID, res.MsgID, res.OffsetMsgID)
	}
	if got.Outcome != remotingtest.OutcomeAnswered || got.ResponseCode != remotingtest.CodeSuccess {
		t.Errorf("broker-b outcome %v %d, want answered SUCCESS", got.Outcome, got.ResponseCode)
	}
	if sends := c.brokers["broker-a"].Sends(); len(sends) != 0 {
		t.Errorf("broker-a sends = %v, want none", sends)
	}
	// The first send looks the route up; the client's route loop, 10 ms
	// after Start, may look it up once more if the send came first.
	rs := c.ns.Requests()
	if len(rs) == 0 {
		t.Errorf("name server log is empty, want a route lookup of %s", topic)
	}
	for _, r := range rs {
		if r.Code != remotingtest.CodeGetRouteInfoByTopic || r.Topic != topic || r.ResponseCode != remotingtest.CodeSuccess {
			t.Errorf("name server logged %v, want route lookups of %s answered SUCCESS", r, topic)
		}
	}

	res, err = send(p, hangGuard, primitive.NewMessage(topic, []byte("again")))
	if err != nil || res.QueueOffset != 1 {
		t.Errorf("second SendSync() = %v, %v; want offset 1", res, err)
	}

	if err := p.Shutdown(); err != nil {
		t.Fatalf("Shutdown() error = %v", err)
	}
	// v2.1.2 unregisters nothing with the brokers at shutdown.
	for name, b := range c.brokers {
		for _, r := range b.Requests() {
			if r.Code == remotingtest.CodeUnregisterClient {
				t.Errorf("%s got %v at shutdown; v2.1.2 sends no UNREGISTER_CLIENT", name, r)
			}
		}
	}
	if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("late"))); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("SendSync() after Shutdown error = %v, want ErrNotRunning", err)
	}
}

func TestBatchSend(t *testing.T) {
	c := newCluster(t, "broker-a")
	p := newProducer(t, c, producer.WithQueueSelector(&fixedSelector{broker: "broker-a", queue: 1}))
	res, err := send(p, hangGuard,
		primitive.NewMessage(topic, []byte("one")).WithKeys([]string{"a"}),
		primitive.NewMessage(topic, []byte("two")).WithKeys([]string{"b"}))
	if err != nil {
		t.Fatalf("SendSync(batch) error = %v", err)
	}
	if res.Status != primitive.SendOK || res.MessageQueue.QueueId != 1 {
		t.Errorf("SendSync(batch) = %v, want SendOK on queue 1", res)
	}
	sends := c.brokers["broker-a"].Sends()
	if len(sends) != 1 || sends[0].Code != remotingtest.CodeSendBatchMessage || len(sends[0].Messages) != 2 {
		t.Fatalf("broker-a sends = %v, want one SEND_BATCH_MESSAGE of 2", sends)
	}
	if k := sends[0].Messages[1].Keys; len(k) != 1 || k[0] != "b" {
		t.Errorf("second batch message keys = %v, want [b]", k)
	}
	res, err = send(p, hangGuard, primitive.NewMessage(topic, []byte("three")))
	if err != nil || res.QueueOffset != 2 {
		t.Errorf("SendSync() after a batch of 2 = %v, %v; want offset 2", res, err)
	}
}

func TestSendAsync(t *testing.T) {
	c := newCluster(t, "broker-a")
	p := newProducer(t, c, producer.WithQueueSelector(&fixedSelector{broker: "broker-a", queue: 0}))
	done := make(chan error, 1)
	err := p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("status %d", res.Status)
		}
		done <- err
	}, primitive.NewMessage(topic, []byte("async")))
	if err != nil {
		t.Fatalf("SendAsync() error = %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("SendAsync() callback error = %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("SendAsync() callback never ran")
	}
}

func TestHeartbeat(t *testing.T) {
	c := newCluster(t, "broker-a")
	p := newProducer(t, c)
	if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("x"))); err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	// The client's heartbeat loop first runs 1 s after Start, then every 30 s,
	// to every broker of the routes it knows.
	rs := await(t, c.brokers["broker-a"], func(rs []remotingtest.Request) bool {
		for _, r := range rs {
			if r.Code == remotingtest.CodeHeartbeat && r.Outcome != remotingtest.OutcomePending {
				return true
			}
		}
		return false
	})
	for _, r := range rs {
		if r.Code != remotingtest.CodeHeartbeat {
			continue
		}
		if !strings.HasSuffix(r.ClientID, "@"+strings.TrimPrefix(p.group, "pg-")) || r.Group != p.group ||
			r.Outcome != remotingtest.OutcomeAnswered {
			t.Errorf("heartbeat logged %+v, want the producer's client id and group, answered", r)
		}
	}
}

func TestUnknownTopic(t *testing.T) {
	c := newCluster(t, "broker-a")
	p := newProducer(t, c)
	_, err := send(p, hangGuard, primitive.NewMessage("NoSuchTopic", []byte("x")))
	if err == nil || !strings.Contains(err.Error(), "route info not found") {
		t.Errorf("SendSync(unknown topic) error = %v, want route info not found", err)
	}
	// The client asks for the topic, then for the default topic TBW102.
	var lookups []string
	for _, r := range c.ns.Requests() {
		if r.ResponseCode != remotingtest.CodeTopicNotExist {
			t.Errorf("name server answered %v, want TOPIC_NOT_EXIST", r)
		}
		lookups = append(lookups, r.Topic)
	}
	if strings.Join(lookups, ",") != "NoSuchTopic,TBW102" {
		t.Errorf("name server lookups = %v, want [NoSuchTopic TBW102]", lookups)
	}
}

func TestFaultsAsTheClientSeesThem(t *testing.T) {
	isTimeout := func(err error) bool { return errors.Is(err, rmqerrors.ErrRequestTimeout) }
	brokerError := func(code int16, remark string) func(error) bool {
		want := fmt.Sprintf("CODE: %d, DESC: %s", code, remark)
		return func(err error) bool { return err != nil && err.Error() == want }
	}
	tests := []struct {
		name        string
		fault       remotingtest.Fault
		timeout     time.Duration
		wantErr     func(error) bool // nil: no error
		wantStatus  primitive.SendStatus
		wantOutcome remotingtest.Outcome
		wantStored  bool
	}{
		{name: "drop times out", fault: remotingtest.Fault{Drop: true}, timeout: attemptTimeout,
			wantErr: isTimeout, wantOutcome: remotingtest.OutcomeDropped},
		{name: "system busy", fault: remotingtest.Fault{Code: remotingtest.CodeSystemBusy, Remark: "too busy"}, timeout: hangGuard,
			wantErr: brokerError(2, "too busy"), wantOutcome: remotingtest.OutcomeAnswered},
		{name: "system error", fault: remotingtest.Fault{Code: remotingtest.CodeSystemError, Remark: "boom"}, timeout: hangGuard,
			wantErr: brokerError(1, "boom"), wantOutcome: remotingtest.OutcomeAnswered},
		{name: "topic not exist, default remark", fault: remotingtest.Fault{Code: remotingtest.CodeTopicNotExist}, timeout: hangGuard,
			wantErr:     brokerError(17, "remotingtest: broker broker-a answers TOPIC_NOT_EXIST by fault injection"),
			wantOutcome: remotingtest.OutcomeAnswered},
		{name: "flush disk timeout is a status", fault: remotingtest.Fault{Code: remotingtest.CodeFlushDiskTimeout}, timeout: hangGuard,
			wantStatus: primitive.SendFlushDiskTimeout, wantOutcome: remotingtest.OutcomeAnswered, wantStored: true},
		{name: "slave not available is a status", fault: remotingtest.Fault{Code: remotingtest.CodeSlaveNotAvailable}, timeout: hangGuard,
			wantStatus: primitive.SendSlaveNotAvailable, wantOutcome: remotingtest.OutcomeAnswered, wantStored: true},
		{name: "short delay within the deadline", fault: remotingtest.Fault{Delay: 20 * time.Millisecond}, timeout: hangGuard,
			wantStatus: primitive.SendOK, wantOutcome: remotingtest.OutcomeAnswered, wantStored: true},
		{name: "delay past the deadline times out", fault: remotingtest.Fault{Delay: time.Hour}, timeout: attemptTimeout,
			wantErr: isTimeout, wantOutcome: remotingtest.OutcomePending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, "broker-a")
			b := c.brokers["broker-a"]
			p := newProducer(t, c, producer.WithQueueSelector(&fixedSelector{broker: "broker-a", queue: 2}))
			if err := b.SetFault(tt.fault); err != nil {
				t.Fatalf("SetFault(%v) error = %v", tt.fault, err)
			}
			res, err := send(p, tt.timeout, primitive.NewMessage(topic, []byte("x")))
			// A timed-out request may still be on its way to the broker.
			await(t, b, func(rs []remotingtest.Request) bool { return len(sendsOf(rs)) > 0 })
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Errorf("SendSync() under %v error = %v", tt.fault, err)
				}
			} else if err != nil || res.Status != tt.wantStatus {
				t.Errorf("SendSync() under %v = %v, %v; want status %d", tt.fault, res, err, tt.wantStatus)
			}
			sends := b.Sends()
			if len(sends) != 1 {
				t.Fatalf("broker sends = %v, want 1", sends)
			}
			got := sends[0]
			if got.Outcome != tt.wantOutcome || got.QueueID != 2 || got.Topic != topic {
				t.Errorf("broker logged %v, want outcome %v on queue 2", got, tt.wantOutcome)
			}
			if stored := got.QueueOffset >= 0; stored != tt.wantStored {
				t.Errorf("broker logged offset %d, want stored = %v", got.QueueOffset, tt.wantStored)
			}
			if tt.fault.Delay > 0 && tt.wantErr == nil && got.AnsweredAt.Sub(got.Time) < tt.fault.Delay {
				t.Errorf("answered %v after reading, want at least the %v delay", got.AnsweredAt.Sub(got.Time), tt.fault.Delay)
			}
			if err := b.SetFault(remotingtest.Fault{}); err != nil {
				t.Fatalf("SetFault(none) error = %v", err)
			}
			if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("healed"))); err != nil {
				t.Errorf("SendSync() after healing error = %v", err)
			}
		})
	}
}

// TestSlowAnswerOnManualClock shows a late answer: the client gives up, the
// broker answers when the test moves its clock, and the client ignores it.
func TestSlowAnswerOnManualClock(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	c := newClusterWith(t, []remotingtest.Option{remotingtest.WithClock(clk)}, "broker-a")
	b := c.brokers["broker-a"]
	p := newProducer(t, c, producer.WithQueueSelector(&fixedSelector{broker: "broker-a", queue: 0}))
	if err := b.SetFault(remotingtest.Fault{Delay: 5 * time.Second}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	if _, err := send(p, attemptTimeout, primitive.NewMessage(topic, []byte("x"))); !errors.Is(err, rmqerrors.ErrRequestTimeout) {
		t.Fatalf("SendSync() to a slow broker error = %v, want ErrRequestTimeout", err)
	}
	// Once the send is logged its delay timer is set.
	await(t, b, func(rs []remotingtest.Request) bool { return len(sendsOf(rs)) > 0 })
	clk.Advance(5 * time.Second)
	rs := await(t, b, func(rs []remotingtest.Request) bool {
		return len(rs) > 0 && rs[0].Outcome == remotingtest.OutcomeAnswered
	})
	if d := rs[0].AnsweredAt.Sub(rs[0].Time); d != 5*time.Second {
		t.Errorf("late answer logged %v after reading, want 5s on the manual clk", d)
	}
	if err := b.SetFault(remotingtest.Fault{}); err != nil {
		t.Fatalf("SetFault(none) error = %v", err)
	}
	if res, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("y"))); err != nil || res.QueueOffset != 1 {
		t.Errorf("SendSync() after the late answer = %v, %v; want success at offset 1", res, err)
	}
}

func TestRefusedConnections(t *testing.T) {
	t.Run("never connected", func(t *testing.T) {
		c := newCluster(t, "broker-a")
		b := c.brokers["broker-a"]
		if err := b.Refuse(); err != nil {
			t.Fatalf("Refuse() error = %v", err)
		}
		p := newProducer(t, c)
		if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("x"))); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("SendSync() to a refusing broker error = %v, want ECONNREFUSED", err)
		}
		if err := b.Resume(); err != nil {
			t.Fatalf("Resume() error = %v", err)
		}
		if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("x"))); err != nil {
			t.Errorf("SendSync() after Resume error = %v", err)
		}
	})
	t.Run("mid-run, then resumed on the same port", func(t *testing.T) {
		c := newCluster(t, "broker-a")
		b := c.brokers["broker-a"]
		p := newProducer(t, c)
		if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("x"))); err != nil {
			t.Fatalf("SendSync() error = %v", err)
		}
		if err := b.Refuse(); err != nil {
			t.Fatalf("Refuse() error = %v", err)
		}
		// The client drops its connection when its reader sees the close; a
		// send racing that may still go out on the dead connection and fail
		// to write (EPIPE, ECONNRESET) or time out. Within a few sends the
		// client dials, and is refused.
		var errs []error
		for range 5 {
			_, err := send(p, attemptTimeout, primitive.NewMessage(topic, []byte("x")))
			errs = append(errs, err)
			if errors.Is(err, syscall.ECONNREFUSED) {
				break
			}
			if !errors.Is(err, rmqerrors.ErrRequestTimeout) && !errors.Is(err, syscall.EPIPE) &&
				!errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, net.ErrClosed) {
				t.Fatalf("SendSync() while refusing error = %v, want a connection error or a timeout", err)
			}
		}
		if !errors.Is(errs[len(errs)-1], syscall.ECONNREFUSED) {
			t.Fatalf("SendSync() while refusing errors = %v, want ECONNREFUSED at last", errs)
		}
		if err := b.Resume(); err != nil {
			t.Fatalf("Resume() error = %v", err)
		}
		if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("back"))); err != nil {
			t.Errorf("SendSync() after Resume error = %v", err)
		}
		if sends := b.Sends(); sends[len(sends)-1].Outcome != remotingtest.OutcomeAnswered {
			t.Errorf("last send logged %v, want answered", sends[len(sends)-1])
		}
	})
}

// TestRetryV212 records how v2.1.2 retries: every attempt is a new request
// with the same unique key, and the selector is never told the broker that
// just failed (a variable shadowed in sendSync; fixed on master).
func TestRetryV212(t *testing.T) {
	c := newCluster(t, "broker-a", "broker-b")
	sel := &fixedSelector{broker: "broker-a", queue: 0}
	p := newProducer(t, c, producer.WithQueueSelector(sel), producer.WithRetry(2))
	if err := c.brokers["broker-a"].SetFault(remotingtest.Fault{Code: remotingtest.CodeSystemError, Remark: "down"}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	_, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("x")))
	if err == nil || err.Error() != "CODE: 1, DESC: down" {
		t.Errorf("SendSync() error = %v, want the last attempt's broker error", err)
	}
	sends := c.brokers["broker-a"].Sends()
	if len(sends) != 3 {
		t.Fatalf("broker-a sends = %v, want 3 attempts", sends)
	}
	for _, s := range sends[1:] {
		if s.UniqKey() != sends[0].UniqKey() {
			t.Errorf("retry unique key %q, want the first attempt's %q", s.UniqKey(), sends[0].UniqKey())
		}
	}
	want := ",," // v2.1.2: never told
	if !isV212(t) {
		want = ",broker-a,broker-a" // master: the broker of the attempt before
	}
	if got := sel.calls(); strings.Join(got, ",") != want {
		t.Errorf("selector lastBrokerName per attempt = %q, want %q on the client %s", got, want, clientVersion(t))
	}
}

// clientVersion returns the rocketmq-client-go version the tests build
// with (ci.sh also runs them on the client's master), as `go list -m`
// reports it under the same GOFLAGS and GOWORK: test binaries carry no
// dependency versions in their build info.
func clientVersion(t *testing.T) string {
	t.Helper()
	clientVersionOnce.Do(func() {
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		out, err := exec.Command(gobin, "list", "-m", "-f", "{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}",
			"github.com/apache/rocketmq-client-go/v2").Output()
		if err != nil {
			clientVersionErr = fmt.Errorf("go list -m rocketmq-client-go: %w", err)
			return
		}
		clientVersionStr = strings.TrimSpace(string(out))
	})
	if clientVersionErr != nil {
		t.Fatal(clientVersionErr)
	}
	return clientVersionStr
}

var (
	clientVersionOnce sync.Once
	clientVersionStr  string
	clientVersionErr  error
)

func isV212(t *testing.T) bool { return clientVersion(t) == "v2.1.2" }

// TestQueueOrderV212 records the queue list a selector gets in v2.1.2: in
// route order (master sorts it by broker name).
func TestQueueOrderV212(t *testing.T) {
	c := newCluster(t, "broker-c", "broker-a", "broker-b")
	var got []string
	sel := selectorFunc(func(_ *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
		got = got[:0]
		for _, q := range mqs {
			got = append(got, fmt.Sprintf("%s/%d", q.BrokerName, q.QueueId))
		}
		return mqs[0]
	})
	if err := c.ns.SetRoute(topic, remotingtest.RouteOf(2,
		c.brokers["broker-c"], c.brokers["broker-a"], c.brokers["broker-b"])); err != nil {
		t.Fatalf("SetRoute() error = %v", err)
	}
	p := newProducer(t, c, producer.WithQueueSelector(sel))
	if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("x"))); err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	want := "broker-c/0,broker-c/1,broker-a/0,broker-a/1,broker-b/0,broker-b/1"
	if !isV212(t) {
		want = "broker-a/0,broker-a/1,broker-b/0,broker-b/1,broker-c/0,broker-c/1" // master sorts
	}
	if strings.Join(got, ",") != want {
		t.Errorf("selector queues = %v, want %s on the client %s", got, want, clientVersion(t))
	}
}

type selectorFunc func(*primitive.Message, []*primitive.MessageQueue, string) *primitive.MessageQueue

func (f selectorFunc) Select(m *primitive.Message, mqs []*primitive.MessageQueue, last string) *primitive.MessageQueue {
	return f(m, mqs, last)
}

// TestUnknownCodeFromTheClient sends, with the client's own admin API,
// request codes the servers do not speak: each is answered
// REQUEST_CODE_NOT_SUPPORTED at once and logged.
func TestUnknownCodeFromTheClient(t *testing.T) {
	c := newCluster(t, "broker-a")
	b := c.brokers["broker-a"]
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})))
	if err != nil {
		t.Fatalf("NewAdmin() error = %v", err)
	}
	t.Cleanup(func() { _ = adm.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	// v2.1.2's CreateTopic returns nil whatever the broker answers.
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate("NewTopic"), admin.WithBrokerAddrCreate(b.Addr())); err != nil {
		t.Errorf("CreateTopic() error = %v", err)
	}
	// FetchAllTopicList gets our error answer with no body and fails decoding it.
	if _, err := adm.FetchAllTopicList(ctx); err == nil || errors.Is(err, rmqerrors.ErrRequestTimeout) {
		t.Errorf("FetchAllTopicList() error = %v, want a decode error, not a timeout", err)
	}
	for _, srv := range []struct {
		name string
		log  []remotingtest.Request
		code int16
	}{
		{"broker", b.Requests(), 17},          // UPDATE_AND_CREATE_TOPIC
		{"name server", c.ns.Requests(), 206}, // GET_ALL_TOPIC_LIST_FROM_NAMESERVER
	} {
		if len(srv.log) != 1 {
			t.Fatalf("%s log = %v, want one request", srv.name, codes(srv.log))
		}
		got := srv.log[0]
		if got.Code != srv.code || got.Outcome != remotingtest.OutcomeAnswered ||
			got.ResponseCode != remotingtest.CodeRequestCodeNotSupported ||
			!strings.Contains(got.Remark, fmt.Sprintf("request code %d is not supported", srv.code)) {
			t.Errorf("%s logged %v, want code %d answered REQUEST_CODE_NOT_SUPPORTED naming it", srv.name, got, srv.code)
		}
	}
}

// TestConcurrentSends has goroutines share a producer over two brokers:
// every message is logged exactly once, under the offset its result names.
func TestConcurrentSends(t *testing.T) {
	c := newCluster(t, "broker-a", "broker-b")
	p := newProducer(t, c) // the client's round-robin selector
	const workers, perWorker = 8, 25
	type result struct {
		uniq, broker string
		queue        int
		offset       int64
	}
	results := make(chan result, workers*perWorker+1)
	// One send first, so the client has the topic's route before the
	// workers start: concurrent first sends of a topic through v2.1.2 can
	// fail "route info not found" in the client's own route lookup
	// (tryToFindTopicPublishInfo) before any request reaches a broker, and
	// that lookup is not what this test checks.
	first, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("first")))
	if err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	results <- result{first.MsgID, first.MessageQueue.BrokerName, first.MessageQueue.QueueId, first.QueueOffset}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				res, err := send(p, hangGuard, primitive.NewMessage(topic, []byte(fmt.Sprintf("%d-%d", w, i))))
				if err != nil {
					t.Errorf("SendSync() error = %v", err)
					return
				}
				results <- result{res.MsgID, res.MessageQueue.BrokerName, res.MessageQueue.QueueId, res.QueueOffset}
			}
		})
	}
	wg.Wait()
	close(results)

	logged := make(map[string]result)
	for name, b := range c.brokers {
		for _, r := range b.Sends() {
			if _, dup := logged[r.UniqKey()]; dup {
				t.Errorf("unique key %s logged twice", r.UniqKey())
			}
			logged[r.UniqKey()] = result{r.UniqKey(), name, r.QueueID, r.QueueOffset}
		}
	}
	n := 0
	for res := range results {
		n++
		if got := logged[res.uniq]; got != res {
			t.Errorf("broker logged %+v, client got %+v", got, res)
		}
	}
	if n != workers*perWorker+1 || len(logged) != n {
		t.Errorf("%d results, %d logged sends, want %d of each", n, len(logged), workers*perWorker+1)
	}
}

// TestRetryAfterDeadlineV212 records that v2.1.2 goes on retrying after the
// ctx deadline passed: each later attempt is still written to the broker
// (the write deadline comes from the remoting config, not ctx) and fails at
// once as a timeout, so the broker gets the message once per attempt.
func TestRetryAfterDeadlineV212(t *testing.T) {
	if !isV212(t) {
		t.Skipf("records a fact of v2.1.2; the client is %s", clientVersion(t))
	}
	c := newCluster(t, "broker-a")
	b := c.brokers["broker-a"]
	p := newProducer(t, c, producer.WithQueueSelector(&fixedSelector{broker: "broker-a", queue: 0}), producer.WithRetry(2))
	if _, err := send(p, hangGuard, primitive.NewMessage(topic, []byte("connect"))); err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	b.ResetLog()
	if err := b.SetFault(remotingtest.Fault{Drop: true}); err != nil {
		t.Fatalf("SetFault() error = %v", err)
	}
	if _, err := send(p, attemptTimeout, primitive.NewMessage(topic, []byte("x"))); !errors.Is(err, rmqerrors.ErrRequestTimeout) {
		t.Errorf("SendSync() error = %v, want ErrRequestTimeout", err)
	}
	await(t, b, func(rs []remotingtest.Request) bool { return len(sendsOf(rs)) >= 3 })
	sends := b.Sends()
	if len(sends) != 3 {
		t.Errorf("broker sends = %v, want 3 attempts", sends)
	}
	for _, r := range sends {
		if r.Outcome != remotingtest.OutcomeDropped || r.UniqKey() != sends[0].UniqKey() {
			t.Errorf("broker logged %v, want dropped attempts of one message", r)
		}
	}
}

func sendsOf(rs []remotingtest.Request) []remotingtest.Request {
	var out []remotingtest.Request
	for _, r := range rs {
		if r.IsSend() {
			out = append(out, r)
		}
	}
	return out
}
