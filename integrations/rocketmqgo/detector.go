package rocketmqgo

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/mqfault/mqfault/pkg/probe"
)

// addressBook is the strategy's probe.Resolver: broker addresses learnt
// from the client's send context. The client fills primitive.ProducerCtx
// (broker name and address of the attempt's queue) on synchronous sends when
// an interceptor is installed; the wrapper installs one (intercept) and sends
// every sync and async attempt through SendSync, so every broker the loop
// sends to has its address from its first attempt on. Oneway sends carry no
// send context.
//
// Resolve answers for the detector:
//   - a broker no learnt route lists: ok=false (it left the route; the
//     detector drops its fault item, as the reference does);
//   - a listed broker with a learnt address: that address;
//   - a listed broker with no address yet (never sent to synchronously, or
//     the interceptor is off): "" with ok=true, which guardedDetector answers
//     as inconclusive: nothing about the broker changes, its isolation ends on
//     time, and it turns reachable again with its next successful send.
//
// All methods are safe for concurrent use.
type addressBook struct {
	routes *clientRoutes
	log    *slog.Logger

	mu     sync.RWMutex                   // guards addrs and byAddr
	addrs  map[string]string              // broker name -> address
	byAddr map[string]map[string]struct{} // address -> broker names

	proxyLogged atomic.Bool // the shared address was logged
	shared      atomic.Bool // some address is shared by several brokers
}

var _ probe.Resolver = (*addressBook)(nil)

func newAddressBook(routes *clientRoutes, log *slog.Logger) *addressBook {
	return &addressBook{routes: routes, log: log, addrs: make(map[string]string), byAddr: make(map[string]map[string]struct{})}
}

// Resolve implements probe.Resolver.
func (a *addressBook) Resolve(broker string) (string, bool) {
	if !a.routes.hasBroker(broker) {
		return "", false
	}
	return a.addr(broker), true
}

// addr returns broker's learnt address, or "".
func (a *addressBook) addr(broker string) string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.addrs[broker]
}

// learn records broker's address.
func (a *addressBook) learn(broker, addr string) {
	if broker == "" || addr == "" {
		return
	}
	a.mu.RLock()
	same := a.addrs[broker] == addr
	a.mu.RUnlock()
	if same {
		return
	}
	a.mu.Lock()
	if old, ok := a.addrs[broker]; ok {
		delete(a.byAddr[old], broker)
		if len(a.byAddr[old]) == 0 {
			delete(a.byAddr, old)
		}
	}
	a.addrs[broker] = addr
	at := a.byAddr[addr]
	if at == nil {
		at = make(map[string]struct{})
		a.byAddr[addr] = at
	}
	at[broker] = struct{}{}
	var sharing []string
	if len(at) > 1 {
		sharing = slices.Sorted(maps.Keys(at))
	}
	a.mu.Unlock()
	if sharing != nil {
		a.shared.Store(true)
		if a.proxyLogged.CompareAndSwap(false, true) {
			a.log.Warn("rocketmqgo: several brokers share one address, as behind a RocketMQ 5.x proxy: "+
				"sends still avoid a broker whose sends fail, but probes of the address say nothing about one broker, "+
				"so they are inconclusive and an isolated broker comes back only when its isolation ends",
				"addr", addr, "brokers", sharing)
		}
	}
}

// brokersAt returns the brokers learnt at addr.
func (a *addressBook) brokersAt(addr string) []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Sorted(maps.Keys(a.byAddr[addr]))
}

// intercept is the interceptor the wrapper installs first in the client's
// chain: after the call it reads the send context the client filled in and
// learns the broker's address (also when the attempt failed: the client sets
// it before sending).
func (a *addressBook) intercept(ctx context.Context, req, reply any, next primitive.Invoker) error {
	err := next(ctx, req, reply)
	if pc, ok := primitive.GetProducerCtx(ctx); ok && pc != nil {
		a.learn(pc.MQ.BrokerName, pc.BrokerAddr)
	}
	return err
}

// queueDetector is a detector that can be told which queue to ask about
// (RemotingDetector).
type queueDetector interface {
	DetectQueue(ctx context.Context, endpoint string, q ProbeQueue) error
}

// guardedDetector probes learnt addresses with the configured
// probe.ServiceDetector. It answers as inconclusive, so the probe changes
// nothing, a broker with no address yet (endpoint "") and an address
// several brokers share (a 5.x proxy: reaching it says nothing about one
// broker behind it). A detector that takes a queue (RemotingDetector) is
// asked about queue 0 of a topic the client routes to the broker at the
// address (its own default topic while none is learnt).
type guardedDetector struct {
	d     probe.ServiceDetector
	addrs *addressBook
}

var _ probe.ServiceDetector = guardedDetector{}

// Detect implements probe.ServiceDetector.
func (g guardedDetector) Detect(ctx context.Context, endpoint string) error {
	if endpoint == "" {
		return fmt.Errorf("%w: no address learnt for the broker yet", probe.ErrInconclusive)
	}
	brokers := g.addrs.brokersAt(endpoint)
	if len(brokers) > 1 {
		return fmt.Errorf("%w: brokers %s share the address %s (a proxy): a probe cannot tell them apart",
			probe.ErrInconclusive, strings.Join(brokers, ", "), endpoint)
	}
	if qd, ok := g.d.(queueDetector); ok && len(brokers) == 1 {
		return qd.DetectQueue(ctx, endpoint, ProbeQueue{Topic: g.addrs.routes.topicOf(brokers[0])})
	}
	return g.d.Detect(ctx, endpoint)
}
