package rocketmqgo

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/mqfault/mqfault/pkg/probe"
)

// TestAddressBook checks that the interceptor learns addresses from the
// send context, and what the resolver answers for brokers with and without
// one, in a route and not.
func TestAddressBook(t *testing.T) {
	routes := &clientRoutes{}
	routes.learn(topic, queues(topic, 2, "broker-a", "broker-b"))
	book := newAddressBook(routes, slog.New(slog.DiscardHandler))

	pc := &primitive.ProducerCtx{}
	ctx := primitive.WithProducerCtx(context.Background(), pc)
	sendErr := errors.New("CODE: 2, DESC: busy")
	err := book.intercept(ctx, nil, nil, func(context.Context, any, any) error {
		pc.MQ = primitive.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueId: 1}
		pc.BrokerAddr = "127.0.0.1:10911"
		return sendErr
	})
	if err != sendErr {
		t.Errorf("intercept() = %v, want the call's own error", err)
	}
	if err := book.intercept(context.Background(), nil, nil, func(context.Context, any, any) error { return nil }); err != nil {
		t.Errorf("intercept(no send context) = %v, want nil", err)
	}
	tests := []struct {
		broker string
		addr   string
		ok     bool
	}{
		{"broker-a", "127.0.0.1:10911", true},
		{"broker-b", "", true},  // in the route, never sent to synchronously
		{"broker-z", "", false}, // in no route
	}
	for _, tt := range tests {
		if addr, ok := book.Resolve(tt.broker); addr != tt.addr || ok != tt.ok {
			t.Errorf("Resolve(%q) = %q, %v, want %q, %v", tt.broker, addr, ok, tt.addr, tt.ok)
		}
	}
}

// TestGuardedDetector checks that a broker with no address is never probed
// and counts as inconclusive.
func TestGuardedDetector(t *testing.T) {
	var probed atomic.Value
	d := guardedDetector{d: probe.ServiceDetectorFunc(func(_ context.Context, endpoint string) error {
		probed.Store(endpoint)
		return nil
	}), addrs: newAddressBook(&clientRoutes{}, slog.New(slog.DiscardHandler))}
	if err := d.Detect(context.Background(), ""); !errors.Is(err, probe.ErrInconclusive) {
		t.Errorf("Detect(\"\") = %v, want probe.ErrInconclusive", err)
	}
	if v := probed.Load(); v != nil {
		t.Errorf("probed %v for a broker without an address", v)
	}
	if err := d.Detect(context.Background(), "127.0.0.1:1"); err != nil || probed.Load() != "127.0.0.1:1" {
		t.Errorf("Detect(addr) = %v, probed %v, want the detector's answer for that address", err, probed.Load())
	}
}

// TestDetectorRound runs the strategy's detector over two unreachable
// brokers, one with a learnt address: only that one is probed and turns
// reachable; the other keeps its state; isolations are untouched.
func TestDetectorRound(t *testing.T) {
	var mu sync.Mutex // guards probes
	var probes []string
	fake := &fakeClient{mqs: queues(topic, 1, "broker-a", "broker-b")}
	p := newTestProducer(t, fake, WithServiceDetector(probe.ServiceDetectorFunc(func(_ context.Context, endpoint string) error {
		mu.Lock()
		defer mu.Unlock()
		probes = append(probes, endpoint)
		return nil
	})))
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, nil)); err != nil { // learns the route
		t.Fatalf("SendSync() error = %v", err)
	}
	p.addrs.learn("broker-a", "127.0.0.1:10911")
	strat := p.Strategy()
	strat.SetDetector(true)
	for _, b := range []string{"broker-a", "broker-b"} {
		strat.Update(b, 0, true, false)
	}
	rep, err := strat.DetectRound(context.Background())
	if err != nil {
		t.Fatalf("DetectRound() error = %v", err)
	}
	if rep.Probed != 2 || rep.Reachable != 1 || rep.Inconclusive != 1 || rep.Removed != 0 {
		t.Errorf("DetectRound() = %+v, want one probe answered, one inconclusive, none removed", rep)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(probes) != 1 || probes[0] != "127.0.0.1:10911" {
		t.Errorf("probes = %v, want only broker-a's address", probes)
	}
	a, _ := strat.Table().Item("broker-a")
	b, _ := strat.Table().Item("broker-b")
	if !a.Reachable || b.Reachable || a.Available || b.Available {
		t.Errorf("items = %+v, %+v, want broker-a reachable, broker-b not, both still isolated", a, b)
	}
}

// TestLearnRoutes checks how the learnt routes follow the client's lists.
func TestLearnRoutes(t *testing.T) {
	changes := 0
	probes := 0
	r := &clientRoutes{changed: func() { changes++ }}
	r.probe = func(context.Context, string) error {
		probes++
		r.learn(topic, queues(topic, 4, "broker-a"))
		return errors.New("the topic=TopicTest route info not found")
	}
	data, err := r.Lookup(context.Background(), topic)
	if err != nil || probes != 1 || changes != 1 {
		t.Fatalf("Lookup() = %v, %v after %d probes, %d changes, want a route after 1 probe, 1 change", data, err, probes, changes)
	}
	if len(data.QueueDatas) != 1 || data.QueueDatas[0].WriteQueueNums != 4 {
		t.Errorf("route = %+v, want broker-a with 4 write queues", data.QueueDatas)
	}
	same := queues(topic, 4, "broker-a")
	r.learn(topic, same)
	r.learn(topic, same)
	if changes != 1 {
		t.Errorf("changes after an equal list = %d, want 1", changes)
	}
	r.learn(topic, queues(topic, 4, "broker-a", "broker-b"))
	if changes != 2 || !r.hasBroker("broker-b") {
		t.Errorf("changes after a new broker = %d (has broker-b %v), want 2 (true)", changes, r.hasBroker("broker-b"))
	}
	if _, err := r.Lookup(context.Background(), topic); err != nil || probes != 1 {
		t.Errorf("Lookup(known topic) = %v after %d probes, want no new probe", err, probes)
	}

	none := &clientRoutes{probe: func(context.Context, string) error { return errors.New("no route") }}
	if _, err := none.Lookup(context.Background(), "Nowhere"); err == nil || err.Error() == "" {
		t.Errorf("Lookup(unknown) error = %v, want one", err)
	}
}

// recordingQueueDetector records the queues it is asked about.
type recordingQueueDetector struct {
	mu     sync.Mutex
	queues []ProbeQueue
}

func (r *recordingQueueDetector) Detect(ctx context.Context, endpoint string) error {
	return r.DetectQueue(ctx, endpoint, ProbeQueue{})
}

func (r *recordingQueueDetector) DetectQueue(_ context.Context, _ string, q ProbeQueue) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queues = append(r.queues, q)
	return nil
}

// TestGuardedDetectorQueue: a queue-taking detector is asked about queue 0
// of a learnt topic that has queues on the broker at the address.
func TestGuardedDetectorQueue(t *testing.T) {
	routes := &clientRoutes{}
	routes.learn("other", queues("other", 2, "broker-b"))
	routes.learn(topic, queues(topic, 2, "broker-a", "broker-b"))
	book := newAddressBook(routes, slog.New(slog.DiscardHandler))
	book.learn("broker-a", "127.0.0.1:1")
	rec := &recordingQueueDetector{}
	d := guardedDetector{d: rec, addrs: book}
	if err := d.Detect(context.Background(), "127.0.0.1:1"); err != nil {
		t.Fatalf("Detect() = %v", err)
	}
	if err := d.Detect(context.Background(), "127.0.0.1:2"); err != nil { // no broker learnt there
		t.Fatalf("Detect() = %v", err)
	}
	if len(rec.queues) != 2 || rec.queues[0] != (ProbeQueue{Topic: topic}) || rec.queues[1] != (ProbeQueue{}) {
		t.Errorf("queues asked = %+v, want queue 0 of %s, then the detector's default", rec.queues, topic)
	}
}

// TestSharedAddress: two brokers learnt at one address (a 5.x proxy) are
// logged once, reported by BehindProxy, and probes of that address are
// inconclusive without reaching the detector; a broker moving away ends the
// sharing for probes.
func TestSharedAddress(t *testing.T) {
	var logs bytes.Buffer
	routes := &clientRoutes{}
	routes.learn(topic, queues(topic, 2, "broker-a", "broker-b"))
	book := newAddressBook(routes, slog.New(slog.NewTextHandler(&logs, nil)))
	probed := 0
	d := guardedDetector{d: probe.ServiceDetectorFunc(func(context.Context, string) error { probed++; return nil }), addrs: book}
	book.learn("broker-a", "127.0.0.1:8081")
	if book.shared.Load() {
		t.Fatal("shared after one broker")
	}
	book.learn("broker-b", "127.0.0.1:8081")
	book.learn("broker-b", "127.0.0.1:8081")
	book.learn("broker-c", "127.0.0.1:8081")
	if !book.shared.Load() {
		t.Fatal("not shared after two brokers on one address")
	}
	if n := strings.Count(logs.String(), "share one address"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "addr=127.0.0.1:8081") || !strings.Contains(logs.String(), "broker-a broker-b") {
		t.Errorf("log = %q, want the address and the brokers", logs.String())
	}
	err := d.Detect(context.Background(), "127.0.0.1:8081")
	if !errors.Is(err, probe.ErrInconclusive) || !strings.Contains(err.Error(), "broker-a, broker-b") || probed != 0 {
		t.Errorf("Detect(shared) = %v (probed %d), want inconclusive naming the brokers, no probe", err, probed)
	}
	book.learn("broker-b", "127.0.0.1:9")
	book.learn("broker-c", "127.0.0.1:10")
	if err := d.Detect(context.Background(), "127.0.0.1:8081"); err != nil || probed != 1 {
		t.Errorf("Detect(no longer shared) = %v (probed %d), want the detector's answer", err, probed)
	}
}
