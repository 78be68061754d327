package rocketmqgo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	mqproducer "github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// withIDs is a queue list of broker with the given queue ids.
func withIDs(topic, broker string, ids ...int) []*primitive.MessageQueue {
	mqs := make([]*primitive.MessageQueue, len(ids))
	for i, id := range ids {
		mqs[i] = &primitive.MessageQueue{Topic: topic, BrokerName: broker, QueueId: id}
	}
	return mqs
}

func concat(lists ...[]*primitive.MessageQueue) []*primitive.MessageQueue {
	var out []*primitive.MessageQueue
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// learnt returns each broker's write queue count in topic's learnt route,
// failing the test unless the route converts.
func learnt(t *testing.T, r *clientRoutes, topic string) map[string]int {
	t.Helper()
	data, err := r.known.Lookup(context.Background(), topic)
	if err != nil {
		t.Fatalf("Lookup(%q) error = %v", topic, err)
	}
	if _, err := route.NewPublishInfo(topic, data); err != nil {
		t.Fatalf("NewPublishInfo(learnt route) error = %v", err)
	}
	got := map[string]int{}
	for _, qd := range data.QueueDatas {
		got[qd.BrokerName] = qd.WriteQueueNums
	}
	return got
}

func newTextLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// lockedBuffer is a bytes.Buffer for a logger written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLearnClientLists checks the route learnt from lists the client can
// pass: a broker whose queue data the name server lists twice comes once
// with the queues the client has (v2.1.2's routeData2PublishInfo appends
// both entries' queues, a:0..3 a:0..3), bad entries are left out and
// counted, and odd but valid names are kept.
func TestLearnClientLists(t *testing.T) {
	tests := []struct {
		name  string
		mqs   []*primitive.MessageQueue
		want  map[string]int
		drops RouteDrops
	}{
		{name: "broker listed twice", mqs: queues(topic, 4, "broker-a", "broker-a", "broker-b"),
			want: map[string]int{"broker-a": 4, "broker-b": 4}},
		{name: "broker listed twice with other counts",
			mqs:  concat(queues(topic, 4, "broker-a"), queues(topic, 2, "broker-a"), queues(topic, 4, "broker-b"), queues(topic, 6, "broker-a")),
			want: map[string]int{"broker-a": 6, "broker-b": 4}},
		{name: "empty broker name", mqs: queues(topic, 4, "", "broker-b"),
			want: map[string]int{"broker-b": 4}, drops: RouteDrops{EmptyName: 1}},
		{name: "broker with 70,000 queues", mqs: concat(queues(topic, 70_000, "broker-a"), queues(topic, 4, "broker-b")),
			want: map[string]int{"broker-b": 4}, drops: RouteDrops{TooManyQueues: 1}},
		{name: "broker with the most queues a broker may have", mqs: queues(topic, route.MaxQueuesPerBroker, "broker-a"),
			want: map[string]int{"broker-a": route.MaxQueuesPerBroker}},
		{name: "negative queue id", mqs: concat(withIDs(topic, "broker-a", 0, -1, 1), queues(topic, 4, "broker-b")),
			want: map[string]int{"broker-b": 4}, drops: RouteDrops{TooManyQueues: 1}},
		{name: "queue ids with a gap", mqs: concat(withIDs(topic, "broker-a", 0, 1, 3), queues(topic, 4, "broker-b")),
			want: map[string]int{"broker-a": 2, "broker-b": 4}, drops: RouteDrops{QueueIDGap: 1}},
		{name: "nil queue", mqs: concat([]*primitive.MessageQueue{nil}, queues(topic, 4, "broker-b")),
			want: map[string]int{"broker-b": 4}, drops: RouteDrops{NilQueue: 1}},
		{name: "odd but valid names", mqs: queues(topic, 2, "broker\nb", "b%c", "日本", "broker b"),
			want: map[string]int{"broker\nb": 2, "b%c": 2, "日本": 2, "broker b": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs lockedBuffer
			r := &clientRoutes{log: newTextLog(&logs)}
			r.learn(topic, tt.mqs)
			r.learn(topic, tt.mqs) // the same list again: nothing new to count or log
			if got := learnt(t, r, topic); !maps.Equal(got, tt.want) {
				t.Errorf("learnt route = %v, want %v", got, tt.want)
			}
			if got := r.drops(); got != tt.drops {
				t.Errorf("drops = %+v, want %+v", got, tt.drops)
			}
			if n, want := strings.Count(logs.String(), "left out of the route"), min(1, int(tt.drops.total())); n != want {
				t.Errorf("logged %d times, want %d:\n%s", n, want, logs.String())
			}
			for b := range tt.want {
				if !r.hasBroker(b) {
					t.Errorf("hasBroker(%q) = false, want true", b)
				}
			}
		})
	}
}

// TestDuplicateBrokerEntry sends through a client whose list has broker-a's
// queues twice (a:0..3 a:0..3 b:0..3, what v2.1.2 builds when the name
// server lists broker-a's queue data twice): every pick is a queue the
// client has, so every send is stored at the first attempt.
func TestDuplicateBrokerEntry(t *testing.T) {
	fake := &fakeClient{mqs: queues(topic, 4, "broker-a", "broker-a", "broker-b")}
	obs := &attempts{}
	p := newTestProducer(t, fake, WithProducerOptions(mqproducer.WithObserver(obs)))
	const sends = 200
	for range sends {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil)); err != nil {
			t.Fatalf("SendSync() error = %v", err)
		}
	}
	evs := obs.list()
	missed := 0
	for _, ev := range evs {
		if errors.Is(ev.Outcome.Err, ErrQueueNotInRoute) {
			missed++
		}
	}
	if len(evs) != sends || missed != 0 {
		t.Errorf("%d sends took %d attempts, %d of them on a queue the client does not have; want %d attempts, none missed",
			sends, len(evs), missed, sends)
	}
	info, err := p.sender.Load().PublishInfo(context.Background(), topic)
	if err != nil {
		t.Fatalf("PublishInfo() error = %v", err)
	}
	if info.Len() != 8 {
		t.Errorf("learnt route = %v, want broker-a and broker-b with 4 queues each", info.Queues())
	}
}

// TestBadBrokerEntry sends through a client whose list has one bad broker
// entry besides broker-b: the bad entry is left out, logged and counted
// once, and every send is stored on broker-b.
func TestBadBrokerEntry(t *testing.T) {
	tests := []struct {
		name   string
		bad    []*primitive.MessageQueue
		drops  RouteDrops
		reason string
	}{
		{name: "empty broker name", bad: queues(topic, 4, ""), drops: RouteDrops{EmptyName: 1}, reason: "empty broker name"},
		{name: "70,000 queues", bad: queues(topic, 70_000, "broker-a"), drops: RouteDrops{TooManyQueues: 1}, reason: "65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs lockedBuffer
			fake := &fakeClient{mqs: concat(tt.bad, queues(topic, 4, "broker-b"))}
			p := newTestProducer(t, fake, WithLogger(newTextLog(&logs)))
			for i := range 20 {
				res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil))
				if err != nil {
					t.Fatalf("send %d: SendSync() error = %v", i, err)
				}
				if res.MessageQueue.BrokerName != "broker-b" {
					t.Errorf("send %d stored on %q, want broker-b", i, res.MessageQueue.BrokerName)
				}
			}
			if n := len(fake.sends()); n != 20 {
				t.Errorf("client sends = %d, want 20 (one attempt each)", n)
			}
			if got := p.RouteDrops(); got != tt.drops {
				t.Errorf("RouteDrops() = %+v, want %+v", got, tt.drops)
			}
			log := logs.String()
			if strings.Count(log, "left out of the route") != 1 || !strings.Contains(log, tt.reason) || !strings.Contains(log, topic) {
				t.Errorf("log = %q, want one line naming the topic and %q", log, tt.reason)
			}
		})
	}
}

// TestOddBrokerNames: brokers with a newline, a %, non-ASCII letters or a
// space in their names are sent to like any other.
func TestOddBrokerNames(t *testing.T) {
	names := []string{"broker\nb", "b%c", "日本", "broker b"}
	fake := &fakeClient{mqs: queues(topic, 2, names...)}
	p := newTestProducer(t, fake)
	reached := map[string]int{}
	for range 4 * len(names) {
		res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil))
		if err != nil {
			t.Fatalf("SendSync() error = %v", err)
		}
		reached[res.MessageQueue.BrokerName]++
	}
	for _, b := range names {
		if reached[b] == 0 {
			t.Errorf("broker %q got no send, want some (sends per broker: %v)", b, reached)
		}
	}
	if got := p.RouteDrops(); got != (RouteDrops{}) {
		t.Errorf("RouteDrops() = %+v, want none", got)
	}
}

// TestLearnPublishesAfterRoute: a learn that returns because the topic's
// last list is already the one it was handed must find the route known.
// Concurrent sends of a new list race on learn's unlocked check of last:
// when last was published before the route was set, a send that lost the
// lock returned early and its Lookup found no route. Each round starts
// learners of one new topic at once and has each look the topic up as
// soon as its learn returns.
func TestLearnPublishesAfterRoute(t *testing.T) {
	const rounds, learners = 300, 4
	r := &clientRoutes{}
	var missed sync.Map
	for i := range rounds {
		topic := fmt.Sprintf("Race%d", i)
		mqs := queues(topic, 8, "broker-a", "broker-b", "broker-c", "broker-d")
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range learners {
			wg.Go(func() {
				<-start
				r.learn(topic, mqs)
				if _, err := r.known.Lookup(context.Background(), topic); err != nil {
					missed.Store(topic, err)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	missed.Range(func(k, v any) bool {
		t.Errorf("topic %v: Lookup right after learn = %v, want the learnt route", k, v)
		return true
	})
}
