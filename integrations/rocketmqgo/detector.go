package rocketmqgo

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/mqfault/mqfault/pkg/latency"
)

// addressBook is the strategy's latency.Resolver: broker addresses learnt
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

	mu    sync.RWMutex      // guards addrs
	addrs map[string]string // broker name -> address
}

var _ latency.Resolver = (*addressBook)(nil)

func newAddressBook(routes *clientRoutes) *addressBook {
	return &addressBook{routes: routes, addrs: make(map[string]string)}
}

// Resolve implements latency.Resolver.
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
	a.addrs[broker] = addr
	a.mu.Unlock()
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

// guardedDetector probes learnt addresses with the configured
// latency.ServiceDetector and answers a broker with no address yet (endpoint
// "") as inconclusive, so the probe changes nothing.
type guardedDetector struct {
	d latency.ServiceDetector
}

var _ latency.ServiceDetector = guardedDetector{}

// Detect implements latency.ServiceDetector.
func (g guardedDetector) Detect(ctx context.Context, endpoint string) error {
	if endpoint == "" {
		return fmt.Errorf("%w: no address learnt for the broker yet", latency.ErrProbeInconclusive)
	}
	return g.d.Detect(ctx, endpoint)
}
