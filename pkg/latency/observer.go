package latency

import (
	"sync"
	"time"
)

// Observer is told of isolations, recoveries and probe results, synchronously
// from Update, expiry timers and detector goroutines, never from Select: its
// methods must be safe for concurrent use and must not block. It is never
// called after its strategy's Close returns (Close waits for calls in
// progress: an observer must not call Close).
type Observer interface {
	OnIsolate(ev IsolationEvent)
	OnRecover(ev RecoveryEvent)
	OnProbe(ev ProbeEvent)
}

// Reason says why a broker was isolated.
type Reason string

const (
	// ReasonLatency: a send was slow enough for the duration table.
	ReasonLatency Reason = "latency"
	// ReasonFailure: a send failed (the reference's isolation=true).
	ReasonFailure Reason = "failure"
	// ReasonExplicit: the fault table was updated directly with a duration.
	ReasonExplicit Reason = "explicit"
	// ReasonStall: the mqfault preset's capacity model: a busy answer said
	// the broker's store stalled (stall.go).
	ReasonStall Reason = "stall"
)

// Reasons lists every Reason an IsolationEvent carries.
func Reasons() []Reason { return []Reason{ReasonLatency, ReasonFailure, ReasonExplicit, ReasonStall} }

// IsolationEvent reports that a broker's isolation began or was extended.
type IsolationEvent struct {
	Broker    string
	Reason    Reason
	Latency   time.Duration // the latency the update carried
	Duration  time.Duration // the isolation the duration table gave
	Until     time.Time     // when the broker becomes available again, on the wall clock as it read at the event
	Reachable bool
	// Extended: this moved a running isolation's end later; the events
	// with Extended false count the isolations exactly.
	Extended bool
}

// RecoveryEvent reports that a broker's isolation ended.
type RecoveryEvent struct {
	Broker string
	At     time.Time // the wall clock's reading
}

// ProbeEvent reports one detector probe.
type ProbeEvent struct {
	Broker string
	Addr   string
	// Err is nil when the broker answered, wraps probe.ErrInconclusive when
	// the probe told nothing, and is any other error when it failed.
	Err               error
	Elapsed           time.Duration
	BecameReachable   bool // the probe turned the broker reachable
	BecameUnreachable bool // the failed probe turned it unreachable (Config.ProbeFailures)
}

// NopObserver ignores everything; embed it to implement only some methods.
type NopObserver struct{}

func (NopObserver) OnIsolate(IsolationEvent) {}
func (NopObserver) OnRecover(RecoveryEvent)  {}
func (NopObserver) OnProbe(ProbeEvent)       {}

// observerGate passes a strategy's observer calls on until close, which
// waits for the calls in progress: once close has returned, obs is never
// called again, whatever expiry timer, Update or probe comes late. It takes
// a lock only around the counting, never across a call out.
type observerGate struct {
	obs Observer

	mu     sync.Mutex
	idle   sync.Cond // signalled when active drops to 0
	active int       // calls in progress
	closed bool
}

func newObserverGate(obs Observer) *observerGate {
	g := &observerGate{obs: obs}
	g.idle.L = &g.mu
	return g
}

func (g *observerGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.active++
	return true
}

func (g *observerGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active--; g.active == 0 {
		g.idle.Broadcast()
	}
}

// close refuses every later call and waits for the calls in progress.
func (g *observerGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for g.active > 0 {
		g.idle.Wait()
	}
}

func (g *observerGate) OnIsolate(ev IsolationEvent) {
	if g.enter() {
		defer g.leave()
		g.obs.OnIsolate(ev)
	}
}

func (g *observerGate) OnRecover(ev RecoveryEvent) {
	if g.enter() {
		defer g.leave()
		g.obs.OnRecover(ev)
	}
}

func (g *observerGate) OnProbe(ev ProbeEvent) {
	if g.enter() {
		defer g.leave()
		g.obs.OnProbe(ev)
	}
}
