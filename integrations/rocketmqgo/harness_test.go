package rocketmqgo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
)

// epoch is where the tests' manual clocks start.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// queues builds the list the client hands its selector: n queues on each
// broker, in the order given, with the (possibly namespaced) topic.
func queues(topic string, n int, brokers ...string) []*primitive.MessageQueue {
	var mqs []*primitive.MessageQueue
	for _, b := range brokers {
		for i := range n {
			mqs = append(mqs, &primitive.MessageQueue{Topic: topic, BrokerName: b, QueueId: i})
		}
	}
	return mqs
}

// call is what fakeClient saw of one client call.
type call struct {
	topicIn string // msg.Topic when the call began
	msg     *primitive.Message
	queue   *primitive.MessageQueue // the selector's answer
	uniqKey string
	oneway  bool
}

// fakeClient stands in for the client's producer behind a MockClient: it
// does what v2.1.2's SendSync and SendOneWay do with a message (prefix the
// namespace, ask the selector, give the message a unique key) and lets the
// test decide each call's answer.
type fakeClient struct {
	sel *selector
	ns  string
	mqs []*primitive.MessageQueue
	// answer decides the answer to a call on q (nil: SEND_OK).
	answer func(ctx context.Context, q *primitive.MessageQueue, msg *primitive.Message) (*primitive.SendResult, error)

	mu    sync.Mutex // guards calls
	calls []call
}

func (f *fakeClient) sendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error) {
	msg := msgs[0]
	in := msg.Topic
	if f.ns != "" {
		msg.Topic = f.ns + "%" + msg.Topic
	}
	f.mu.Lock()
	mqs := f.mqs
	f.mu.Unlock()
	var q *primitive.MessageQueue
	if len(mqs) > 0 { // the client asks its selector only when it has queues
		q = f.sel.Select(msg, mqs, "")
	}
	f.record(call{topicIn: in, msg: msg, queue: q})
	if q == nil {
		return primitive.NewSendResult(), fmt.Errorf("the topic=%s route info not found", msg.Topic)
	}
	if !msg.Batch && msg.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex) == "" {
		msg.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, primitive.CreateUniqID())
	}
	f.setKey(msg)
	if f.answer != nil {
		return f.answer(ctx, q, msg)
	}
	return ok(q, msg), nil
}

func (f *fakeClient) sendOneWay(ctx context.Context, msgs ...*primitive.Message) error {
	_, err := f.sendSync(ctx, msgs...)
	f.mu.Lock()
	f.calls[len(f.calls)-1].oneway = true
	f.mu.Unlock()
	return err
}

func (f *fakeClient) record(c call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeClient) setKey(msg *primitive.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[len(f.calls)-1].uniqKey = msg.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
}

func (f *fakeClient) seen() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// sends returns the calls that reached a queue (not probes).
func (f *fakeClient) sends() []call {
	var out []call
	for _, c := range f.seen() {
		if c.queue != nil {
			out = append(out, c)
		}
	}
	return out
}

// ok is the client's result of a stored message on q.
func ok(q *primitive.MessageQueue, msg *primitive.Message) *primitive.SendResult {
	return &primitive.SendResult{Status: primitive.SendOK, MsgID: msg.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex),
		MessageQueue: q, QueueOffset: 7, OffsetMsgID: "7F00000100002A9F0000000000000007"}
}

// testProducer is a started Producer over a MockClient driven by a
// fakeClient, on a manual clock.
type testProducer struct {
	*Producer
	fake  *fakeClient
	clock *clock.Manual
}

// newTestProducer starts a Producer over a mocked client whose sends the
// fake answers, and shuts it down when the test ends (expecting the client
// to be shut down once).
func newTestProducer(t *testing.T, fake *fakeClient, opts ...Option) testProducer {
	t.Helper()
	ctrl := gomock.NewController(t)
	client := mocks.NewMockClient(ctrl)
	clk := clock.NewManual(epoch)
	o := defaultOptions()
	o.clock = clk
	o.strategy.Detector = false
	o.log = quietLog
	for _, opt := range opts {
		opt(&o)
	}
	p, err := newProducer(client, o)
	if err != nil {
		t.Fatalf("newProducer() error = %v", err)
	}
	fake.sel = p.sel
	client.EXPECT().Start().Return(nil)
	client.EXPECT().SendSync(gomock.Any(), gomock.Any()).DoAndReturn(fake.sendSync).AnyTimes()
	client.EXPECT().SendOneWay(gomock.Any(), gomock.Any()).DoAndReturn(fake.sendOneWay).AnyTimes()
	client.EXPECT().Shutdown().Return(nil)
	if err := p.Start(); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	t.Cleanup(func() {
		if err := p.Shutdown(); err != nil {
			t.Errorf("Shutdown() error = %v", err)
		}
	})
	return testProducer{Producer: p, fake: fake, clock: clk}
}
