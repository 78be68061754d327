package rocketmqgo

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	rmqerrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/integrations/rocketmqgo/mocks"
	"github.com/mqfault/mqfault/pkg/clock"
)

// TestShutdownWaitsForAsyncSends checks the shutdown order: an async send
// in flight (fault-tolerant or direct) completes and its callback returns
// before the client's producer is shut down.
//
//  1. Start two async sends whose client calls block.
//  2. Call Shutdown; it must not shut the client down yet.
//  3. Unblock the calls: both callbacks run, then the client shuts down.
func TestShutdownWaitsForAsyncSends(t *testing.T) {
	ctrl := gomock.NewController(t)
	client := mocks.NewMockClient(ctrl)
	o := defaultOptions()
	o.clock = clock.NewManual(epoch)
	o.log = quietLog
	p, err := newProducer(client, o)
	if err != nil {
		t.Fatalf("newProducer() error = %v", err)
	}
	var mu sync.Mutex // guards events
	var events []string
	event := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	fake := &fakeClient{sel: p.sel, mqs: queues(topic, 2, "broker-a"),
		answer: func(_ context.Context, q *primitive.MessageQueue, msg *primitive.Message) (*primitive.SendResult, error) {
			entered <- struct{}{}
			<-release
			return ok(q, msg), nil
		}}
	client.EXPECT().Start().Return(nil)
	client.EXPECT().SendSync(gomock.Any(), gomock.Any()).DoAndReturn(fake.sendSync).AnyTimes()
	client.EXPECT().Shutdown().DoAndReturn(func() error { event("client shutdown"); return nil })
	if err := p.Start(); err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	cb := func(name string) func(context.Context, *primitive.SendResult, error) {
		return func(_ context.Context, res *primitive.SendResult, err error) {
			if err != nil || res == nil {
				t.Errorf("%s callback = %v, %v, want a result", name, res, err)
			}
			event(name)
		}
	}
	if err := p.SendAsync(context.Background(), cb("loop"), primitive.NewMessage(topic, nil)); err != nil {
		t.Fatalf("SendAsync() error = %v", err)
	}
	if err := p.SendAsync(context.Background(), cb("direct"), primitive.NewMessage(topic, nil).WithShardingKey("k")); err != nil {
		t.Fatalf("SendAsync(keyed) error = %v", err)
	}
	<-entered
	<-entered
	done := make(chan error)
	go func() { done <- p.Shutdown() }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown() = %v returned while sends were in flight", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Shutdown() error = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 3 || events[2] != "client shutdown" || !slices.Contains(events, "loop") || !slices.Contains(events, "direct") {
		t.Errorf("events = %v, want both callbacks, then the client shut down", events)
	}
}

// TestStartAndShutdownStates checks Start's and Shutdown's edges: a client
// that fails to start leaves the producer unstarted; Shutdown without Start
// releases the client; Shutdown is idempotent; Start after it is refused.
func TestStartAndShutdownStates(t *testing.T) {
	ctrl := gomock.NewController(t)
	client := mocks.NewMockClient(ctrl)
	o := defaultOptions()
	o.log = quietLog
	p, err := newProducer(client, o)
	if err != nil {
		t.Fatalf("newProducer() error = %v", err)
	}
	gomock.InOrder(
		client.EXPECT().Start().Return(rmqerrors.ErrProducerCreated),
		client.EXPECT().Shutdown().Return(nil),
	)
	if err := p.Start(); !errors.Is(err, rmqerrors.ErrProducerCreated) {
		t.Errorf("Start() error = %v, want the client's ErrProducerCreated", err)
	}
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil)); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("SendSync() after a failed Start error = %v, want ErrNotRunning", err)
	}
	for range 2 {
		if err := p.Shutdown(); err != nil {
			t.Errorf("Shutdown() error = %v", err)
		}
	}
	if err := p.Start(); !errors.Is(err, rmqerrors.ErrNotRunning) {
		t.Errorf("Start() after Shutdown error = %v, want ErrNotRunning", err)
	}
}
