package rocketmqgo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

const topic = "TopicTest"

// failFirst answers the first send call with err and every later one SEND_OK.
func failFirst(err error) func(context.Context, *primitive.MessageQueue, *primitive.Message) (*primitive.SendResult, error) {
	var once sync.Once
	return func(_ context.Context, q *primitive.MessageQueue, msg *primitive.Message) (*primitive.SendResult, error) {
		failed := false
		once.Do(func() { failed = true })
		if failed {
			return primitive.NewSendResult(), err
		}
		return ok(q, msg), nil
	}
}

// TestSendSyncRetriesOnAnotherBroker checks, for each form of failure the
// client reports, that the send is retried on another broker with the same
// message (same unique key), the topic put back before each attempt although
// the client prefixes the namespace, and the fault table taught as the
// reference teaches it.
func TestSendSyncRetriesOnAnotherBroker(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name     string
		err      error
		isolated bool // the first broker is isolated afterwards
	}{
		{name: "broker busy", err: errors.New("CODE: 2, DESC: too many requests"), isolated: true},
		{name: "request timeout", err: rmqerrors.ErrRequestTimeout, isolated: true},
		{name: "connection refused", err: refused, isolated: true},
		{name: "client error", err: errors.New("topic=TopicTest route info not found"), isolated: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{ns: "ns", mqs: queues("ns%"+topic, 2, "broker-a", "broker-b", "broker-c"), answer: failFirst(tt.err)}
			p := newTestProducer(t, fake)
			msg := primitive.NewMessage(topic, []byte("hello"))
			res, err := p.SendSync(context.Background(), msg)
			if err != nil {
				t.Fatalf("SendSync() error = %v", err)
			}
			sends := fake.sends()
			if len(sends) != 2 {
				t.Fatalf("client sends = %d, want 2 (one failure, one retry)", len(sends))
			}
			first, second := sends[0], sends[1]
			if first.queue.BrokerName == second.queue.BrokerName {
				t.Errorf("retry went to %s again, want another broker", second.queue.BrokerName)
			}
			for i, c := range sends {
				if c.topicIn != topic {
					t.Errorf("attempt %d began with topic %q, want %q (namespace prefix not put back)", i, c.topicIn, topic)
				}
				if c.msg != msg {
					t.Errorf("attempt %d sent another message, want the caller's", i)
				}
			}
			if first.uniqKey == "" || second.uniqKey != first.uniqKey {
				t.Errorf("unique keys = %q, %q, want the same key on both attempts", first.uniqKey, second.uniqKey)
			}
			if res.MessageQueue != second.queue {
				t.Errorf("SendSync() result queue = %v, want the retry's %v", res.MessageQueue, second.queue)
			}
			if msg.Topic != topic {
				t.Errorf("msg.Topic after the send = %q, want %q", msg.Topic, topic)
			}
			item, _ := p.Strategy().Table().Item(first.queue.BrokerName)
			if isolated := !item.Available; isolated != tt.isolated {
				t.Errorf("%s isolated = %v, want %v (item %+v)", first.queue.BrokerName, isolated, tt.isolated, item)
			}
		})
	}
}

// TestSendSyncStops checks the sends that end without a retry or after all
// attempts failed, and the error they return.
func TestSendSyncStops(t *testing.T) {
	tests := []struct {
		name     string
		answer   error
		attempts int
		stop     mqproducer.Stop
		code     int
	}{
		{name: "broker error that is not retried", answer: errors.New("CODE: 13, DESC: message illegal"),
			attempts: 1, stop: mqproducer.StopBrokerError, code: 13},
		{name: "every attempt fails", answer: errors.New("CODE: 14, DESC: service not available"),
			attempts: 3, stop: mqproducer.StopFailed, code: 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{mqs: queues(topic, 2, "broker-a", "broker-b", "broker-c"),
				answer: func(context.Context, *primitive.MessageQueue, *primitive.Message) (*primitive.SendResult, error) {
					return primitive.NewSendResult(), tt.answer
				}}
			p := newTestProducer(t, fake)
			res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil))
			if res != nil {
				t.Errorf("SendSync() result = %+v, want nil on error", res)
			}
			var se *mqproducer.SendError
			if !errors.As(err, &se) {
				t.Fatalf("SendSync() error = %v, want a *producer.SendError", err)
			}
			if se.Attempts != tt.attempts || se.Stop != tt.stop {
				t.Errorf("SendError attempts = %d stop = %v, want %d %v", se.Attempts, se.Stop, tt.attempts, tt.stop)
			}
			var be *mqproducer.BrokerError
			if !errors.As(err, &be) || be.Code != tt.code {
				t.Errorf("SendSync() error = %v, want a *BrokerError with code %d", err, tt.code)
			}
			var brokers []string
			for _, c := range fake.sends() {
				brokers = append(brokers, c.queue.BrokerName)
			}
			if !slices.Equal(se.Brokers, brokers) {
				t.Errorf("SendError.Brokers = %v, want the brokers sent to, %v", se.Brokers, brokers)
			}
			if n := len(slices.Compact(slices.Sorted(slices.Values(brokers)))); n != len(brokers) {
				t.Errorf("brokers sent to = %v, want each attempt on another broker", brokers)
			}
		})
	}
}

// TestRouteProbe checks that the first send of a topic learns the client's
// queues with a probe that sends nothing, that later sends do not probe, and
// that a topic the client has no route for fails with ErrNoRoute.
func TestRouteProbe(t *testing.T) {
	fake := &fakeClient{mqs: queues(topic, 4, "broker-a", "broker-b")}
	p := newTestProducer(t, fake)
	for range 2 {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil)); err != nil {
			t.Fatalf("SendSync() error = %v", err)
		}
	}
	calls := fake.seen()
	if len(calls) != 3 {
		t.Fatalf("client calls = %d, want 3 (a probe, then two sends)", len(calls))
	}
	if calls[0].queue != nil || calls[0].msg.GetProperty(RouteProbeProperty) != "true" {
		t.Errorf("first call = %+v, want a route probe the selector answered nil", calls[0])
	}
	info, err := p.sender.Load().PublishInfo(context.Background(), topic)
	if err != nil {
		t.Fatalf("PublishInfo() error = %v", err)
	}
	if got := info.Len(); got != 8 {
		t.Errorf("learnt route has %d queues, want 8", got)
	}

	empty := &fakeClient{}
	q := newTestProducer(t, empty)
	_, err = q.SendSync(context.Background(), primitive.NewMessage("Nowhere", nil))
	if !errors.Is(err, mqproducer.ErrNoRoute) {
		t.Errorf("SendSync(unknown topic) error = %v, want one matching producer.ErrNoRoute", err)
	}
	if n := len(empty.sends()); n != 0 {
		t.Errorf("sends to brokers = %d, want 0", n)
	}
}

// fixedRandom makes publish infos start their index at v.
type fixedRandom struct{ v int32 }

func (r fixedRandom) Int32() int32         { return r.v }
func (r fixedRandom) Int32n(n int32) int32 { return 0 }

// attempts records the send loop's attempts.
type attempts struct {
	mqproducer.NopObserver
	mu  sync.Mutex // guards evs
	evs []mqproducer.AttemptEvent
}

func (a *attempts) OnAttempt(ev mqproducer.AttemptEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.evs = append(a.evs, ev)
}

func (a *attempts) list() []mqproducer.AttemptEvent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.evs)
}

// TestQueueNotInClientRoute checks an attempt whose pick the client's route
// no longer lists: a client error (nothing sent, the broker not isolated),
// then a retry elsewhere; the learnt route follows the client's.
func TestQueueNotInClientRoute(t *testing.T) {
	fake := &fakeClient{mqs: queues(topic, 2, "broker-a", "broker-b", "broker-c")}
	obs := &attempts{}
	// Queues sorted a0 a1 b0 b1 c0 c1; an index starting at 3 picks c0 first.
	p := newTestProducer(t, fake, WithProducerOptions(mqproducer.WithObserver(obs),
		mqproducer.WithRouteOptions(route.WithRandom(fixedRandom{3}))))
	if _, err := p.sender.Load().PublishInfo(context.Background(), topic); err != nil {
		t.Fatalf("PublishInfo() error = %v", err)
	}
	fake.mu.Lock()
	fake.mqs = queues(topic, 2, "broker-a", "broker-b") // broker-c left the client's route
	fake.mu.Unlock()
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil)); err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	evs := obs.list()
	if len(evs) != 2 {
		t.Fatalf("attempts = %d, want 2", len(evs))
	}
	if evs[0].Queue.BrokerName != "broker-c" || evs[0].Outcome.Class != latency.ClassClient || !errors.Is(evs[0].Outcome.Err, ErrQueueNotInRoute) {
		t.Errorf("first attempt = %+v, want a client error ErrQueueNotInRoute on broker-c", evs[0])
	}
	if evs[0].Update.Isolation {
		t.Errorf("first attempt's update = %+v, want no isolation (nothing was sent)", evs[0].Update)
	}
	if evs[1].Queue.BrokerName == "broker-c" || evs[1].Outcome.Class != latency.ClassAnswered {
		t.Errorf("second attempt = %+v, want an answer from another broker", evs[1])
	}
	if err := p.sender.Load().RefreshRoutes(context.Background()); err != nil {
		t.Fatalf("RefreshRoutes() error = %v", err)
	}
	info, _ := p.sender.Load().PublishInfo(context.Background(), topic)
	if info.HasBroker("broker-c") || info.Len() != 4 {
		t.Errorf("route after refresh = %v, want broker-c gone", info.Queues())
	}
}

// TestDirectSends checks the sends that bypass the fault-tolerant path: one
// client call, no retry, no fault update, the queue by the client's hash
// rule or as set.
func TestDirectSends(t *testing.T) {
	mqs := queues(topic, 4, "broker-b", "broker-a")
	busy := errors.New("CODE: 2, DESC: busy")
	tests := []struct {
		name string
		msg  func() *primitive.Message
		want func(msg *primitive.Message) *primitive.MessageQueue
	}{
		{
			name: "sharding key",
			msg:  func() *primitive.Message { return primitive.NewMessage(topic, nil).WithShardingKey("order-42") },
			want: func(msg *primitive.Message) *primitive.MessageQueue {
				return producer.NewHashQueueSelector().Select(msg, mqs, "")
			},
		},
		{
			name: "explicit queue",
			msg: func() *primitive.Message {
				m := primitive.NewMessage(topic, nil)
				m.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueId: 3}
				return m
			},
			want: func(msg *primitive.Message) *primitive.MessageQueue { return msg.Queue },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeClient{mqs: mqs, answer: failFirst(busy)}
			p := newTestProducer(t, fake)
			msg := tt.msg()
			_, err := p.SendSync(context.Background(), msg)
			var se *mqproducer.SendError
			if !errors.As(err, &se) || se.Attempts != 1 || se.Stop != mqproducer.StopBrokerError {
				t.Fatalf("SendSync() error = %v, want a *SendError of one attempt stopped by the broker error", err)
			}
			var be *mqproducer.BrokerError
			if !errors.As(err, &be) || be.Code != 2 {
				t.Errorf("SendSync() error = %v, want a *BrokerError with code 2", err)
			}
			res, err := p.SendSync(context.Background(), msg)
			if err != nil {
				t.Fatalf("second SendSync() error = %v", err)
			}
			want := tt.want(msg)
			calls := fake.seen()
			if len(calls) != 2 {
				t.Fatalf("client calls = %d, want 2 (no probe, no retry)", len(calls))
			}
			for i, c := range calls {
				if c.queue != want {
					t.Errorf("call %d went to %v, want %v", i, c.queue, want)
				}
			}
			if res.MessageQueue != want {
				t.Errorf("result queue = %v, want %v", res.MessageQueue, want)
			}
			if items := p.Strategy().Table().Items(); len(items) != 0 {
				t.Errorf("fault items = %+v, want none", items)
			}
		})
	}
}

// TestHashMatchesClient proves that the key → queue rule is the client's
// own: for many keys and every queue count up to 40, hashQueue answers the
// very queue producer.NewHashQueueSelector does.
func TestHashMatchesClient(t *testing.T) {
	client := producer.NewHashQueueSelector()
	for n := 1; n <= 40; n++ {
		mqs := queues(topic, n, "broker-a")
		for i := range 500 {
			key := fmt.Sprintf("key-%d-%d", n, i*7919)
			msg := primitive.NewMessage(topic, nil).WithShardingKey(key)
			if got, want := hashQueue(key, mqs), client.Select(msg, mqs, ""); got != want {
				t.Fatalf("hashQueue(%q, %d queues) = %v, want the client's %v", key, n, got, want)
			}
		}
	}
	if q := hashQueue("k", nil); q != nil {
		t.Errorf("hashQueue(k, no queues) = %v, want nil", q)
	}
}

// TestSelectorWithoutSlot checks the answers to calls the wrapper did not
// make (Request and RequestAsync): the sharding key's queue, else the
// client's round robin.
func TestSelectorWithoutSlot(t *testing.T) {
	s := newSelector(func(string, []*primitive.MessageQueue) { t.Error("learnt from a call the wrapper did not make") })
	mqs := queues(topic, 2, "broker-a", "broker-b")
	keyed := primitive.NewMessage(topic, nil).WithShardingKey("k")
	if got, want := s.Select(keyed, mqs, ""), hashQueue("k", mqs); got != want {
		t.Errorf("Select(keyed) = %v, want %v", got, want)
	}
	plain := primitive.NewMessage(topic, nil)
	seen := map[*primitive.MessageQueue]bool{}
	for range len(mqs) {
		seen[s.Select(plain, mqs, "")] = true
	}
	if len(seen) != len(mqs) {
		t.Errorf("round robin over %d queues chose %d distinct ones, want all", len(mqs), len(seen))
	}
	if got := s.Select(plain, nil, ""); got != nil {
		t.Errorf("Select(no queues) = %v, want nil", got)
	}
}

// TestBatch checks that a batch is one client call of the client's batch
// encoding, each message with a unique key, resent as it is on a retry.
func TestBatch(t *testing.T) {
	fake := &fakeClient{mqs: queues(topic, 2, "broker-a", "broker-b"), answer: failFirst(rmqerrors.ErrRequestTimeout)}
	p := newTestProducer(t, fake)
	msgs := []*primitive.Message{primitive.NewMessage(topic, []byte("1")), primitive.NewMessage(topic, []byte("2"))}
	res, err := p.SendSync(context.Background(), msgs...)
	if err != nil {
		t.Fatalf("SendSync() error = %v", err)
	}
	var keys []string
	for _, m := range msgs {
		k := m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
		if k == "" {
			t.Fatalf("batched message has no unique key")
		}
		keys = append(keys, k)
	}
	sends := fake.sends()
	if len(sends) != 2 {
		t.Fatalf("client sends = %d, want 2", len(sends))
	}
	want := producer.MarshalMessageBatch(msgs...)
	for i, c := range sends {
		if !c.msg.Batch || string(c.msg.Body) != string(want) || c.msg != sends[0].msg {
			t.Errorf("send %d = batch %v body %q, want the same batch message with the client's encoding", i, c.msg.Batch, c.msg.Body)
		}
	}
	if got, want := res.MsgID, keys[0]+","+keys[1]; got != want {
		t.Errorf("result MsgID = %q, want %q", got, want)
	}
}

// TestValidation checks the errors a send returns before sending, as the
// client returns them.
func TestValidation(t *testing.T) {
	fake := &fakeClient{mqs: queues(topic, 1, "broker-a")}
	p := newTestProducer(t, fake)
	ctx := context.Background()
	tests := []struct {
		name string
		msgs []*primitive.Message
		want error
	}{
		{"no message", nil, rmqerrors.ErrMessageEmpty},
		{"nil message", []*primitive.Message{nil}, rmqerrors.ErrMessageEmpty},
		{"empty topic", []*primitive.Message{primitive.NewMessage("", nil)}, rmqerrors.ErrTopicEmpty},
		{"two topics", []*primitive.Message{primitive.NewMessage("A", nil), primitive.NewMessage("B", nil)}, rmqerrors.ErrMultipleTopics},
		{"nil in a batch", []*primitive.Message{primitive.NewMessage("A", nil), nil}, rmqerrors.ErrMessageEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := p.SendSync(ctx, tt.msgs...); !errors.Is(err, tt.want) {
				t.Errorf("SendSync() error = %v, want %v", err, tt.want)
			}
			if err := p.SendOneWay(ctx, tt.msgs...); !errors.Is(err, tt.want) {
				t.Errorf("SendOneWay() error = %v, want %v", err, tt.want)
			}
			if err := p.SendAsync(ctx, func(context.Context, *primitive.SendResult, error) { t.Error("callback called") }, tt.msgs...); !errors.Is(err, tt.want) {
				t.Errorf("SendAsync() error = %v, want %v", err, tt.want)
			}
		})
	}
	if err := p.SendAsync(ctx, nil, primitive.NewMessage(topic, nil)); !errors.Is(err, mqproducer.ErrInvalidMessage) {
		t.Errorf("SendAsync(nil callback) error = %v, want ErrInvalidMessage", err)
	}
	if n := len(fake.seen()); n != 0 {
		t.Errorf("client calls = %d, want 0", n)
	}
}

// TestSendAsync checks that every async send, fault-tolerant or direct, ends
// in exactly one callback, retried elsewhere after a failure.
func TestSendAsync(t *testing.T) {
	const n = 40
	fake := &fakeClient{mqs: queues(topic, 2, "broker-a", "broker-b", "broker-c"),
		answer: func(_ context.Context, q *primitive.MessageQueue, msg *primitive.Message) (*primitive.SendResult, error) {
			if q.BrokerName == "broker-b" { // a failure an async send retries
				return primitive.NewSendResult(), &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			return ok(q, msg), nil
		}}
	p := newTestProducer(t, fake)
	var wg sync.WaitGroup
	var mu sync.Mutex
	calls := map[int]int{}
	var failures []error
	for i := range n {
		msg := primitive.NewMessage(topic, []byte{byte(i)})
		if i%4 == 0 {
			msg.WithShardingKey(fmt.Sprint("key-", i))
		}
		wg.Add(1)
		err := p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			calls[i]++
			if err != nil && i%4 != 0 {
				failures = append(failures, err)
			}
			if err == nil && res == nil {
				failures = append(failures, fmt.Errorf("message %d: nil result and nil error", i))
			}
		}, msg)
		if err != nil {
			t.Fatalf("SendAsync(%d) error = %v", i, err)
		}
	}
	wg.Wait()
	for i := range n {
		if calls[i] != 1 {
			t.Errorf("message %d: %d callbacks, want exactly 1", i, calls[i])
		}
	}
	if len(failures) != 0 {
		t.Errorf("fault-tolerant async sends failed: %v", failures)
	}
}

// TestSendOneWay checks that a oneway send is one SendOneWay call on the
// strategy's pick.
func TestSendOneWay(t *testing.T) {
	fake := &fakeClient{mqs: queues(topic, 2, "broker-a", "broker-b")}
	p := newTestProducer(t, fake)
	if err := p.SendOneWay(context.Background(), primitive.NewMessage(topic, nil)); err != nil {
		t.Fatalf("SendOneWay() error = %v", err)
	}
	sends := fake.sends()
	if len(sends) != 1 || !sends[0].oneway {
		t.Errorf("client sends = %+v, want one SendOneWay call", sends)
	}
}

// TestNotRunning checks sends before Start and after Shutdown.
func TestNotRunning(t *testing.T) {
	o := defaultOptions()
	o.log = quietLog
	p, err := newProducer(nil, o)
	if err != nil {
		t.Fatalf("newProducer() error = %v", err)
	}
	msg := primitive.NewMessage(topic, nil)
	if _, err := p.SendSync(context.Background(), msg); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("SendSync() before Start error = %v, want ErrNotRunning", err)
	}
	if err := p.SendAsync(context.Background(), func(context.Context, *primitive.SendResult, error) {}, msg); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("SendAsync() before Start error = %v, want ErrNotRunning", err)
	}
	if err := p.SendOneWay(context.Background(), msg); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("SendOneWay() before Start error = %v, want ErrNotRunning", err)
	}

	fake := &fakeClient{mqs: queues(topic, 1, "broker-a")}
	q := newTestProducer(t, fake)
	if err := q.Shutdown(); err != nil {
		t.Fatalf("Shutdown() error = %v", err)
	}
	if _, err := q.SendSync(context.Background(), msg); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("SendSync() after Shutdown error = %v, want ErrNotRunning", err)
	}
	if err := q.Start(); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("Start() after Shutdown error = %v, want ErrNotRunning", err)
	}
}

// TestNewProducerValidates checks that invalid settings are refused at
// construction.
func TestNewProducerValidates(t *testing.T) {
	bad := mqproducer.DefaultConfig()
	bad.Timeout = 0
	if _, err := NewProducer(nil, WithSendConfig(bad)); !errors.Is(err, mqproducer.ErrInvalidConfig) {
		t.Errorf("NewProducer(Timeout 0) error = %v, want ErrInvalidConfig", err)
	}
	strat := latency.DefaultConfig()
	strat.DetectTimeout = -time.Second
	if _, err := NewProducer(nil, WithStrategyConfig(strat)); !errors.Is(err, latency.ErrInvalidConfig) {
		t.Errorf("NewProducer(DetectTimeout < 0) error = %v, want ErrInvalidConfig", err)
	}
}
