package rocketmqgo_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/integrations/rocketmqgo"
	"github.com/mqfault/mqfault/integrations/rocketmqgo/internal/remotingtest"
	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/latency"
	mqproducer "github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/pkg/route"
)

// The end-to-end tests run the real rocketmq-client-go producer, wrapped by
// rocketmqgo.NewProducer, against loopback name servers and brokers that
// speak the remoting protocol (internal/remotingtest). The servers and the
// wrapper share one manual clock: fault isolations, attempt deadlines and
// the brokers' answer delays all move only when a test advances it, so the
// tests assert exact isolation windows without waiting for them. Every
// publish info's round-robin index starts at -e2e.start (0 unless given), so
// which queue a send lands on, and the capacity model's second candidate
// and share draw (both functions of the index value; a v5 retry's index
// reset takes the next value of fixedStart's sequence), are the same from
// run to run: a test that holds for one start and not another shows itself
// with -e2e.start, never as a flake.

const (
	e2eTopic = "TopicTest"
	// hangGuard bounds every send and log wait; no assertion depends on it.
	hangGuard = 20 * time.Second
)

var (
	quiet     = remotingtest.WithLogger(slog.New(slog.DiscardHandler))
	quietLog  = slog.New(slog.DiscardHandler)
	instances atomic.Int64
	start     = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	e2eStart  = flag.Int("e2e.start", 0, "the value every publish info's round-robin index starts at in the end-to-end tests")
)

// fixedStart is a route.RandomSource that starts indexes at v and draws
// the resets (a v5 sync retry resets the route's index) from a fixed
// sequence: the k-th reset of a producer's indexes gets a hash of v and k.
// Each reset lands somewhere new, as with a random source (a source that
// gave every reset the same value would replay one index value, and with it
// one share draw of the capacity model, after every retry), and a run is
// the same from run to run. Safe for concurrent use.
type fixedStart struct {
	v      int32
	resets *atomic.Uint64
}

func newFixedStart(v int32) fixedStart { return fixedStart{v: v, resets: new(atomic.Uint64)} }

func (r fixedStart) Int32() int32 { return r.v }

// Int32n returns the next value of the reset sequence, in [0, n).
func (r fixedStart) Int32n(n int32) int32 {
	x := uint64(uint32(r.v))<<32 | r.resets.Add(1)
	// splitmix64's finalizer.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int32(x % uint64(n))
}

// cluster is a name server, brokers, and a started wrapped producer, all on
// one manual clock.
type cluster struct {
	t       *testing.T
	clock   *clock.Manual
	ns      *remotingtest.NameServer
	brokers map[string]*remotingtest.Broker
	p       *rocketmqgo.Producer
}

// e2eStrategy is the strategy configuration of the end-to-end tests:
// latency.DefaultConfig with the background detector loop's period longer
// than any test moves the clock, so the only detector rounds are the ones a
// test runs (Strategy.DetectRound). The tests need that, not as a guard
// against a race: TestE2EDroppedRequests and TestE2EFailingBroker assert a
// broker unreachable after its failure and before their own round, and
// what their round reports (a probe answered); with the preset's 1 s period
// a clock move of a second (the dropped attempt's deadline) fires a
// background round that probes the broker first, and the test's round then
// finds it not due (TestE2EDroppedRequests failed 5 runs of 5 so). A test
// that sets its own strategy starts from this; one that gives WithConfig
// sets detect_period itself.
func e2eStrategy() latency.Config {
	cfg := latency.DefaultConfig()
	cfg.DetectPeriod = 1000 * time.Hour
	return cfg
}

// newCluster starts a name server and brokers (routing e2eTopic, and its
// namespaced form ns%TopicTest, to 4 queues on each), then a wrapped
// producer with e2eStrategy, clientOpts and opts. Cleanups shut the
// producer down before the servers close.
func newCluster(t *testing.T, names []string, clientOpts []producer.Option, opts ...rocketmqgo.Option) *cluster {
	t.Helper()
	c := newServers(t, names)
	c.p = c.newProducer(clientOpts, append([]rocketmqgo.Option{rocketmqgo.WithStrategyConfig(e2eStrategy())}, opts...)...)
	return c
}

// newServers starts newCluster's name server and brokers, without a
// producer (a test that configures it with WithConfig starts its own,
// newProducer).
func newServers(t *testing.T, names []string) *cluster {
	t.Helper()
	c := &cluster{t: t, clock: clock.NewManual(start), brokers: map[string]*remotingtest.Broker{}}
	sopts := []remotingtest.Option{quiet, remotingtest.WithClock(c.clock)}
	ns, err := remotingtest.NewNameServer(sopts...)
	if err != nil {
		t.Fatalf("NewNameServer() error = %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	c.ns = ns
	var list []*remotingtest.Broker
	for _, name := range names {
		b, err := remotingtest.NewBroker(name, sopts...)
		if err != nil {
			t.Fatalf("NewBroker(%q) error = %v", name, err)
		}
		t.Cleanup(func() { _ = b.Close() })
		c.brokers[name] = b
		list = append(list, b)
	}
	for _, topic := range []string{e2eTopic, "ns%" + e2eTopic} {
		if err := ns.SetRoute(topic, remotingtest.RouteOf(4, list...)); err != nil {
			t.Fatalf("SetRoute(%q) error = %v", topic, err)
		}
	}
	return c
}

// newProducer starts a wrapped producer on c's name server and clock.
func (c *cluster) newProducer(clientOpts []producer.Option, opts ...rocketmqgo.Option) *rocketmqgo.Producer {
	c.t.Helper()
	instance := fmt.Sprintf("e2e-%d", instances.Add(1)) // the client shares one instance per client id
	base := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.ns.Addr()})),
		producer.WithGroupName("pg-" + instance),
		producer.WithInstanceName(instance),
	}
	opts = append([]rocketmqgo.Option{
		rocketmqgo.WithClock(c.clock),
		rocketmqgo.WithLogger(quietLog),
		rocketmqgo.WithProducerOptions(mqproducer.WithRouteOptions(route.WithRandom(newFixedStart(int32(*e2eStart))))),
	}, opts...)
	p, err := rocketmqgo.NewProducer(append(base, clientOpts...), opts...)
	if err != nil {
		c.t.Fatalf("NewProducer() error = %v", err)
	}
	if err := p.Start(); err != nil {
		c.t.Fatalf("Start() error = %v", err)
	}
	c.t.Cleanup(func() {
		if err := p.Shutdown(); err != nil {
			c.t.Errorf("Shutdown() error = %v", err)
		}
	})
	return p
}

// isolation returns how long the duration table isolates a broker after a
// send that took latency, or failed (isolation=true, charged the mode's
// isolation latency).
func (c *cluster) isolation(latency time.Duration, failed bool) time.Duration {
	s := c.p.Strategy()
	if failed {
		info, _ := s.Mode().Info()
		latency = info.IsolationLatency
	}
	return s.Durations().Isolation(latency)
}

// message returns a new message with a unique key set, so the brokers' logs
// can be matched to it.
func message(i int) *primitive.Message {
	m := primitive.NewMessage(e2eTopic, fmt.Appendf(nil, "message %d", i))
	m.WithProperty(primitive.PropertyUniqueClientMessageIdKeyIndex, primitive.CreateUniqID())
	return m
}

func uniqKey(m *primitive.Message) string {
	return m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
}

// sendOK sends msg synchronously and fails the test unless it is stored.
func (c *cluster) sendOK(msg *primitive.Message) *primitive.SendResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := c.p.SendSync(ctx, msg)
	if err != nil {
		c.t.Fatalf("SendSync() error = %v", err)
	}
	if res.Status != primitive.SendOK || res.MsgID != uniqKey(msg) {
		c.t.Fatalf("SendSync() = %v %q, want SEND_OK for %q", res.Status, res.MsgID, uniqKey(msg))
	}
	return res
}

// sendAdvancing sends msg synchronously; if an attempt reaches hold (a
// broker that holds its answer until the clock moves: a delay or a drop),
// it advances the clock by d once. It reports whether it did.
func (c *cluster) sendAdvancing(msg *primitive.Message, hold *remotingtest.Broker, d time.Duration) (*primitive.SendResult, error, bool) {
	c.t.Helper()
	before := len(hold.Sends())
	type outcome struct {
		res *primitive.SendResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		res, err := c.p.SendSync(ctx, msg)
		done <- outcome{res, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	reached := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := hold.Await(ctx, func(rs []remotingtest.Request) bool { return countSends(rs) > before }); err == nil {
			close(reached)
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()
	select {
	case o := <-done:
		return o.res, o.err, false
	case <-reached:
		c.clock.Advance(d)
		o := <-done
		return o.res, o.err, true
	}
}

func countSends(rs []remotingtest.Request) int {
	n := 0
	for _, r := range rs {
		if r.IsSend() {
			n++
		}
	}
	return n
}

// stored returns the unique keys of every message some broker stored.
func (c *cluster) stored() map[string]int {
	keys := map[string]int{}
	for _, b := range c.brokers {
		for _, r := range b.Sends() {
			if r.Outcome != remotingtest.OutcomeAnswered && r.Outcome != remotingtest.OutcomeOneway || r.ResponseCode != remotingtest.CodeSuccess {
				continue
			}
			for _, m := range r.Messages {
				keys[m.UniqKey]++
			}
		}
	}
	return keys
}

// checkNothingLost fails the test unless every message's unique key was
// stored by some broker.
func (c *cluster) checkNothingLost(msgs []*primitive.Message) {
	c.t.Helper()
	stored := c.stored()
	for i, m := range msgs {
		if stored[uniqKey(m)] == 0 {
			var seen []string
			for _, b := range c.brokers {
				for _, r := range b.Requests() {
					if slices.ContainsFunc(r.Messages, func(x remotingtest.Message) bool { return x.UniqKey == uniqKey(m) }) {
						seen = append(seen, b.Name()+" "+r.String())
					}
				}
			}
			c.t.Errorf("message %d (%s) was stored by no broker; requests carrying it: %v", i, uniqKey(m), seen)
		}
	}
}

// checkIsolated fails the test unless every send request b read after the
// one numbered seq arrived at or after until, and at least one did.
func (c *cluster) checkIsolated(b *remotingtest.Broker, seq int, until time.Time) {
	c.t.Helper()
	c.checkIsolatedTrials(b, seq, until, time.Time{}, 0)
}

// checkIsolatedTrials is checkIsolated for a broker that gets send trials
// while isolated (gap > 0, the preset's detect interval: trial.go): the
// requests b read before until must be trials, the first at least gap
// after failedAt and each later one at least gap after the one before.
func (c *cluster) checkIsolatedTrials(b *remotingtest.Broker, seq int, until, failedAt time.Time, gap time.Duration) {
	c.t.Helper()
	later := slices.DeleteFunc(b.Sends(), func(r remotingtest.Request) bool { return r.Seq <= seq })
	last := failedAt
	for _, r := range later {
		if !r.Time.Before(until) {
			continue
		}
		if gap > 0 && r.Time.Sub(last) >= gap {
			last = r.Time // a send trial
			continue
		}
		c.t.Errorf("%s read %v at +%v, inside its isolation (until +%v)", b.Name(), r, r.Time.Sub(start), until.Sub(start))
	}
	if len(later) == 0 {
		c.t.Errorf("%s read no send after its isolation ended at +%v, want it used again", b.Name(), until.Sub(start))
	}
}

// sendN sends n new messages synchronously, each stored, and returns them.
func (c *cluster) sendN(n int) []*primitive.Message {
	c.t.Helper()
	msgs := make([]*primitive.Message, n)
	for i := range msgs {
		msgs[i] = message(i)
		c.sendOK(msgs[i])
	}
	return msgs
}

// healAt clears b's fault, moves the clock to at and sends n messages.
func (c *cluster) healAt(b *remotingtest.Broker, at time.Time, n int) []*primitive.Message {
	c.t.Helper()
	if err := b.SetFault(remotingtest.Fault{}); err != nil {
		c.t.Fatalf("SetFault() error = %v", err)
	}
	c.clock.Set(at)
	return c.sendN(n)
}
