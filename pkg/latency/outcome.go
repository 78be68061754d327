package latency

import (
	"strconv"
	"time"
)

// Class is what one send attempt met, as the update rules see it: the
// producer classifies its Transport's result (producer.Classify).
type Class uint8

const (
	// ClassAnswered: a send status came, or (PathSend) an async request was
	// handed over or a oneway one written.
	ClassAnswered Class = iota
	// ClassBusy: the broker refused the request under flow control (see
	// IsBusy). The reference modes treat it exactly as ClassBroker.
	ClassBusy
	// ClassBroker: the broker answered with an error response code.
	ClassBroker
	// ClassTransportFailed: the request may have reached the broker, but no
	// answer came (a broken connection, an unknown failure).
	ClassTransportFailed
	// ClassTransportTimeout: no answer before the attempt's deadline.
	ClassTransportTimeout
	// ClassTransportNotSent: the request could not be handed to the network.
	ClassTransportNotSent
	// ClassThrottled: the client's own flow control refused the request
	// (RemotingTooMuchRequestException), ruled as a transport failure.
	ClassThrottled
	// ClassClient: the attempt failed on the client before any request was
	// sent (no address for the broker, an unencodable message).
	ClassClient
	// ClassCancelled: the attempt was cancelled by the caller.
	ClassCancelled
	numClasses
)

var classNames = [numClasses]string{
	"answered", "busy", "broker", "transport_failed", "transport_timeout", "transport_not_sent",
	"throttled", "client", "cancelled",
}

// String returns the class's name, its constant's in snake case without
// Class ("transport_failed").
func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Classes lists every class, in order of value.
func Classes() []Class {
	out := make([]Class, numClasses)
	for i := range out {
		out[i] = Class(i)
	}
	return out
}

// Path is the reference's code path an outcome is reported on (rules differ).
type Path uint8

const (
	// PathSend is sendDefaultImpl's attempt: every sync and oneway one, an
	// async hand-over (ClassAnswered, the dispatch update), and a first
	// async attempt that failed before its request left.
	PathSend Path = iota
	// PathAsyncAnswer is the end of an async request that was handed over
	// (MQClientAPIImpl's response and failure callbacks).
	PathAsyncAnswer
	// PathAsyncResend is an async retry whose request could not be handed
	// over (MQClientAPIImpl's catch around its re-send).
	PathAsyncResend
	numPaths
)

var pathNames = [numPaths]string{"send", "async_answer", "async_resend"}

// String returns send, async_answer or async_resend.
func (p Path) String() string {
	if p < numPaths {
		return pathNames[p]
	}
	return "path(" + strconv.Itoa(int(p)) + ")"
}

// Outcome is what one attempt met, reported through its pick (Pick.Done).
type Outcome struct {
	// Class is what the attempt met.
	Class Class
	// Path is the reference code path it is reported on (zero: PathSend).
	Path Path
	// Latency is how long the attempt took: the latency of its fault update.
	Latency time.Duration
	// Code and Remark are the broker's response code and remark (ClassBusy,
	// ClassBroker).
	Code   int
	Remark string
	// Err is the attempt's error, if any (for other Reporters; rules ignore it).
	Err error
	// Pending: the attempt goes on (an async hand-over) and its end is
	// reported later through the same pick; only the end ends the attempt.
	Pending bool
}

// FaultUpdate is one fault-table update: the arguments of Strategy.Update.
// An empty Broker means there is nothing to update.
type FaultUpdate struct {
	Broker    string
	Latency   time.Duration
	Isolation bool
	// Reachable is the reachable flag (v5). v4 has none: its rules report
	// true, which a v4 table ignores.
	Reachable bool
}

// Reporter takes the outcome of an attempt on a pick: a Strategy reports its
// own picks; another selector sets itself (or nil: Done then does nothing).
// Report must be safe for concurrent use and non-blocking: it is on the send path.
type Reporter interface {
	Report(p Pick, o Outcome) FaultUpdate
}

// Done reports the outcome of the attempt made on the pick to whoever picked
// it, and returns the fault update that outcome calls for. Call it once per
// attempt; an async attempt calls it twice, for its hand-over (PathSend,
// ClassAnswered) and for its end (PathAsyncAnswer). It allocates nothing.
// On a zero Pick it does nothing.
func (p Pick) Done(o Outcome) FaultUpdate {
	if p.Reporter == nil || p.Queue == nil {
		return FaultUpdate{}
	}
	return p.Reporter.Report(p, o)
}

// Report applies the mode's update rules (UpdateFor) to the outcome of an
// attempt on p, makes the update (Update) and returns it, made or not. Safe
// for concurrent use; allocates nothing for a known broker.
func (s *Strategy) Report(p Pick, o Outcome) FaultUpdate {
	if p.Queue == nil {
		return FaultUpdate{}
	}
	broker := p.Queue.BrokerName
	var live *slot // nil: the hooks read it as fault tolerance off
	if s.faultOn.Load() {
		if _, live = s.table.resolve(p.slot, broker); live == nil {
			live = s.table.slotFor(broker)
		}
		if s.policies.capacity != nil && !o.Pending {
			s.table.see(s.table.now()) // the capacity model's weights are read at it
		}
	}
	if p.Stage == StageTrial && live != nil && !o.Pending {
		if u, ok := s.trialDone(live, broker, o); ok {
			return u
		}
	}
	if len(s.policies.outcomes) != 0 {
		a := attempt{broker: broker, slot: live, table: tableTime{t: s.table, durations: &s.durations}}
		for _, h := range s.policies.outcomes {
			if u, ok := h.report(a, o); ok {
				return u
			}
		}
	}
	u := s.spec.rules.update(broker, o, s.detectorOn.Load())
	s.updateSlot(live, u.Broker, u.Latency, u.Isolation, u.Reachable)
	return u
}

// UpdateFor is the fault update (latency o.Latency) the rules of mode (v5 for
// "" or an unregistered one) call for when an attempt on broker met o, with the
// detector switch at detectorOn, as in 5.3.3 and 4.9.8:
//
//	path           class                               v5 (isolation, reachable)  v4 isolation
//	send           answered                            false, true                false
//	send           busy, broker                        true, false                true
//	send           transport_*, throttled              true, !detectorOn          true
//	send           client                              false, true                true
//	send           cancelled                           false, true                false
//	async_answer   answered, cancelled                 false, true                false
//	async_answer   busy, broker, transport_failed,     true, true                 true
//	               transport_timeout, throttled
//	async_answer   transport_not_sent, client          true, false                true
//	async_resend   answered, cancelled                 false, true                false
//	async_resend   every other class                   true, false                true
//
// v4 has no reachable flag: its updates carry true. An unknown class or path
// is a transport failure on PathSend.
func UpdateFor(mode Mode, broker string, o Outcome, detectorOn bool) FaultUpdate {
	return rulesFor(mode).update(broker, o, detectorOn)
}

// rulesFor returns mode's update rules (a mode "" is v5; an unknown mode
// has v5's).
func rulesFor(mode Mode) *ruleTable { return specOf(mode).rules }

// update is the fault update the rules call for when an attempt on broker
// met o.
func (rs *ruleTable) update(broker string, o Outcome, detectorOn bool) FaultUpdate {
	r := rs.rule(o.Path, o.Class)
	u := FaultUpdate{Broker: broker, Latency: o.Latency, Isolation: r.isolation}
	switch r.reach {
	case reachYes:
		u.Reachable = true
	case reachUnlessDetector:
		u.Reachable = !detectorOn
	}
	return u
}

// rule returns the rule for class on path. An unknown class or path, or a
// row left out (which TestRulesEveryClass forbids), is a transport failure
// on PathSend.
func (rs *ruleTable) rule(path Path, class Class) rule {
	if path < numPaths && class < numClasses {
		if r := rs[path][class]; r.reach != reachNone {
			return r
		}
	}
	return rs[PathSend][ClassTransportFailed]
}

// reach is a rule's reachable flag.
type reach uint8

const (
	reachNone reach = iota // no row: the zero rule (see ruleTable.rule)
	reachYes
	reachNo             // marks the broker unreachable
	reachUnlessDetector // unreachable only while the detector switch is on
)

// rule is what one class on one path does to the fault table.
type rule struct {
	isolation bool
	reach     reach
}

// ruleTable is a mode's outcome rules, by path and class (each mode's in its
// spec's file, mode5.go and mode4.go): a new class or path is a row in each
// of them, and TestModeSpecsComplete fails on one left out.
type ruleTable [numPaths][numClasses]rule

var (
	ruleAnswered  = rule{false, reachYes}
	ruleFailed    = rule{true, reachNo}
	ruleTransport = rule{true, reachUnlessDetector}
	ruleCharged   = rule{true, reachYes} // isolated, still reachable
)

// Response codes that mean flow control.
const (
	// CodeSystemBusy is RocketMQ's SYSTEM_BUSY.
	CodeSystemBusy = 2
	// CodeTooManyRequests is a 5.x gRPC proxy's TOO_MANY_REQUESTS (rocketmq-apis).
	CodeTooManyRequests = 42900
)

// IsBusy reports whether a broker's error code is flow control, not failure:
// SYSTEM_BUSY (2) whatever its remark (brokers word it differently), or a
// proxy's TOO_MANY_REQUESTS; every other code (14 among them) is a failure.
func IsBusy(code int) bool {
	return code == CodeSystemBusy || code == CodeTooManyRequests
}

// BrokerClass is the class of a broker's error answer with code: ClassBusy
// when IsBusy, else ClassBroker.
func BrokerClass(code int) Class {
	if IsBusy(code) {
		return ClassBusy
	}
	return ClassBroker
}

var _ Reporter = (*Strategy)(nil)
