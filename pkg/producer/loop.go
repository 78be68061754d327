package producer

import (
	"errors"
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// Stop says why a send ended.
type Stop uint8

const (
	// StopNone: the send is still going.
	StopNone Stop = iota
	// StopAnswered: the send returns a broker's answer (Result). For a sync
	// send this is the last answered result: SendOK, a stored-but-not-OK
	// status, or an earlier answer returned because a later attempt ended the
	// loop without one (budget spent, a broker error that is not retried).
	StopAnswered
	// StopFailed: no answer, and no further attempt (the attempts ran out,
	// the async budget ran out, or the error is not retried). The reference
	// throws MQClientException("Send [N] times, still failed").
	StopFailed
	// StopCallTimeout: the budget ran out before an attempt could start, with
	// no earlier answer. The error matches ErrCallTimeout.
	StopCallTimeout
	// StopBrokerError: a sync (or first async dispatch) broker error whose
	// code is not a retry code, with no earlier answer; or (async, after
	// dispatch) any broker error. The reference throws the MQBrokerException
	// itself.
	StopBrokerError
	// StopCancelled: the attempt was cancelled. The reference throws the
	// InterruptedException, even when an earlier attempt was answered.
	StopCancelled
	// StopAborted: the driver ended the send (Drive.Abort): the producer
	// closed, the ctx was done before an attempt, the route had no queue.
	StopAborted
	// StopNoRoom: a busy answer saying the broker's send pool was full
	// (latency.FullRemark), which the mode's rules would retry, is not
	// retried because the strategy's capacity model (RoomModel) found no
	// other broker with room, with no earlier answer. The error wraps the
	// busy answer's *BrokerError and matches ErrNoRoom. The reference has no
	// such stop: its strategies have no capacity model.
	StopNoRoom
)

const numStops = StopNoRoom + 1

var stopNames = [numStops]string{"none", "answered", "failed", "call_timeout", "broker_error", "cancelled", "aborted", "no_room"}

// String returns none, answered, failed, call_timeout, broker_error,
// cancelled, aborted or no_room.
func (s Stop) String() string { return enumName(stopNames[:], int(s), "stop") }

// Stops lists every Stop, in order of value (for metrics that keep a series
// per stop).
func Stops() []Stop {
	out := make([]Stop, numStops)
	for i := range out {
		out[i] = Stop(i)
	}
	return out
}

// FaultUpdate is a fault-table update: the arguments of
// latency.Strategy.Update. An empty Broker means there is nothing to update.
type FaultUpdate = latency.FaultUpdate

// decision is what Loop.decide decides after an attempt.
type decision struct {
	// Report is the outcome to report through the attempt's pick
	// (latency.Pick.Done): the attempt's Outcome as latency's update rules
	// read it (latency.UpdateFor), on the reference code path it was met
	// on. Its Latency is the attempt's elapsed time.
	Report latency.Outcome
	// Retry is true when the outcome allows another attempt; next then
	// decides with the attempts and (async) the budget left. False means the
	// send is over: Result has its end.
	Retry bool
	// askRoom: Retry is for a full broker's busy answer, which the
	// strategy's capacity model is asked about (settle).
	askRoom bool
}

// Plan is an attempt about to be made, as Drive.Start returns it.
type Plan struct {
	// Attempt counts the send's attempts from 0.
	Attempt int
	// Queue is the picked queue.
	Queue route.MessageQueue
	// Start is when the attempt starts (the now given to Start).
	Start time.Time
	// Timeout is the attempt's own timeout: the budget left (Config.Timeout
	// minus the time since the send began), capped by
	// Config.MaxTimeoutPerRequest while another sync attempt remains. Never
	// negative.
	Timeout time.Duration
	// Deadline is Start + Timeout.
	Deadline time.Time
}

type loopPhase uint8

const (
	phaseNext    loopPhase = iota // waiting for next
	phaseStart                    // next said pick; waiting for begin
	phaseAttempt                  // an attempt is running; waiting for dispatched/decide
	phaseDone
)

// Loop is the decision state of one send through the fault-tolerant path:
// RocketMQ's sendDefaultImpl loop (sync, oneway, and the first async
// dispatch) and MQClientAPIImpl's async retries, as a pure step function. It
// reads no clock and starts no goroutine. It keeps the budget, retry and
// result decisions only: what an outcome does to the fault table is the
// strategy's (latency.UpdateFor, applied when the outcome is reported
// through the attempt's pick). A Drive steps its Loop and joins it to a
// Strategy's picks; the producer's SendSync, SendAsync and SendOneway, the
// trace runner's send and the discrete-event simulator all drive a Drive,
// so they decide alike. A driver reads the Loop (Drive.Loop) for how the
// send went: Done, Stop, Attempts, Elapsed, BrokersSent, RetryRefused and
// Result.
//
// The rules below name the Drive's steps: Next (may another attempt
// start?), Start (pick, note the broker, check the budget), Dispatched
// (async: the request was handed over) and Finish (the attempt's outcome).
//
// # Sync and oneway (sendDefaultImpl)
//
// Sync makes up to 1 + RetryTimes attempts, oneway one. From the second
// attempt on, Next asks for a pick avoiding the previous attempt's broker
// and (v5) resetting the index, and says what that attempt met
// (latency.PickInfo.LastClass). Start records the picked broker, then stops
// the send if more than Timeout has passed since it began (StopCallTimeout,
// or StopAnswered when an earlier attempt was answered). Finish reports every
// outcome on latency.PathSend (v5: answered, client and cancelled (false,
// true); broker and busy (true, false); transport_* and throttled (true,
// !detectorOn); v4 isolates all but answered and cancelled), and decides by
// the outcome's latency.Class (each mode's row in its latency.SendRules,
// with the class's stop from moderules.go):
//
//	class                  then
//	answered               sync: a status other than SendOK retries only with RetryAnotherBrokerWhenNotStoreOK;
//	                       else the send ends
//	client                 retry
//	transport_*, throttled retry
//	broker, busy           retry if a retry code, else end with the last answer or the error (StopBrokerError)
//	cancelled              end with the error (StopCancelled)
//
// After the last attempt the send returns the last answered result if there
// is one, else fails (StopFailed) wrapping the last error. A busy answer
// (latency.ClassBusy: SYSTEM_BUSY, a proxy's TOO_MANY_REQUESTS) is a broker error to
// the reference modes, retried when its code is a retry code (2 is in 5.x's
// set, not in 4.x's).
//
// # No room
//
// One rule is the strategy's, not the mode's: when a send's second busy
// answer whose remark says the broker's send pool was full
// (latency.FullRemark: "[OVERLOAD]...") would be retried by the rules here,
// and the strategy is a RoomModel (*latency.Strategy is) whose Room's RetryElsewhere
// reports no other broker with room, the send is not retried: it returns an
// earlier answer (a sync send's StopAnswered) or ends with the busy answer's
// error (StopNoRoom, matching ErrNoRoom). Two full brokers in one send, and
// no other with room, say every broker is refusing its excess, and a retry
// would only take the room another send's attempt would have had; the
// first full answer is one broker's word, and its retry is made.
// Finish asks after it has reported the outcome through the pick, so the
// model has learnt the busy answer. The question is asked only then (never for another class or remark, nor
// for an outcome the rules do not retry), and *latency.Strategy answers it
// under its capacity model only: with the model off (the reference
// configurations, every v4 strategy) it reports room, so the reference modes
// retry exactly as the reference does. A Strategy that is not a RoomModel
// is never asked.
//
// # Waiting for room
//
// With Config.RoomWait on (DefaultConfig), a sync send that would end for
// want of room may wait instead: the no-room rule above ends it, or the
// retry budget refuses its retry after a busy answer (latency.ClassBusy).
// When it has an attempt left and no earlier answer, has not waited
// before, more than one attempt's share of its budget is left (Timeout / (1
// + RetryTimes): 1 s of 3 s), and the producer's room-wait allowance grants
// it (roomwait.go: a share of the sends, while waiting relieves the
// push-back), the send waits until its budget has that share left: Finish
// reports Retry, Next returns false until then and Parked says until when. The attempt after
// the wait is paid for by the allowance, not the retry budget, and picks
// as any retry does; from there the rules above go on. Abort ends a
// waiting send as any other. The reference modes never wait (their
// configurations have RoomWait 0), and neither do async and oneway sends,
// whose callers a wait would not hold back.
//
// # Async (sendDefaultImpl's dispatch, then MQClientAPIImpl)
//
// Async makes up to 1 + AsyncRetryTimes attempts. The first is picked as a
// sync first attempt is and passes the same budget check. An async attempt
// has two moments: the request is handed over (dispatch), then its answer or
// failure arrives. The driver reports the hand-over with Dispatched; for the
// first attempt that returns the reference's dispatch report (answered on
// PathSend: the update (false, true) with the dispatch latency). Finish then
// reports the answer or failure on latency.PathAsyncAnswer and decides:
//
//	class (after dispatch)             v5 update       v4     then
//	answered (any status)              false, true     false  end: success callback
//	broker, busy                       true, true      true   end, no retry (StopBrokerError)
//	transport_failed, _timeout         true, true      true   retry
//	transport_not_sent                 true, false     true   retry (the reference's "could not send" path)
//	throttled                          true, true      true   v5: end, no retry (StopFailed); v4: retry
//	cancelled                          false, true     false  end (StopCancelled)
//
// A failure reported before Dispatched, and a client class at any time (the
// request never left), is a failure before dispatch: on the first attempt it
// is reported on PathSend, as a sync attempt's, and ends the send (the
// reference's sendDefaultImpl makes one attempt for async, so retry codes
// only decide between StopFailed and StopBrokerError); on a retry it is
// reported on latency.PathAsyncResend (true, false) and retries. A retry
// picks with the failed attempt's broker as LastBroker and never resets the
// index; v5 retries only while the budget left is positive (Next checks it),
// v4 whatever the budget. A retry's Plan.Timeout is the budget left,
// uncapped.
//
// Producer drives async sends over a blocking Transport: it calls
// Dispatched(0) just before Transport.Send (the hand-over is the call), so
// the dispatch update has latency 0 and is made while the attempt is in
// flight, as the reference's is; every error Send returns is then an
// after-dispatch outcome, except a ClientError. The reference makes no
// dispatch update for a request that never left; Producer's extra update is
// overwritten by the failure's own at once, so the fault table ends the same.
//
// A simulator ends an attempt at Plan.Deadline with a
// latency.ClassTransportTimeout outcome (Elapsed = Plan.Timeout) when its broker has not answered by then.
//
// DESIGN.md's summary says a failed answer of an async send is retried; the
// reference (5.3.3 and 4.9.8 MQClientAPIImpl.sendMessageAsync) does not retry
// an answer carrying a broker error code (needRetry=false), and Loop follows
// the source. Another difference: the reference's async retry re-sends the
// same request, queue id included, to the broker of the new pick; mqfault
// sends to the picked queue.
//
// A Loop is a value owned by one driver: it is not safe for concurrent use.
// Its methods only read it.
type Loop struct {
	p         *Policy
	kind      Kind
	topic     string
	sendStart time.Time
	seen      time.Time // the latest time the loop was told of

	phase      loopPhase
	total      int // attempts allowed
	attempts   int // attempts started
	fulls      int // busy answers that said the broker's send pool was full (the no-room rule)
	picks      int // brokers recorded: the attempts, plus a pick the budget refused
	broker     string
	queue      route.MessageQueue
	begun      time.Time // start of the current attempt
	handedOver bool

	answered  bool
	result    Result
	lastErr   error
	lastClass latency.Class // the class of the latest attempt's outcome

	stop Stop
	err  error
	// budgetRefused: the retry budget refused the send's retry.
	budgetRefused bool
	// charges: the retry budget's slots the send's retries were charged
	// to (its refund gives each back there; retrybudget.go).
	charges retryCharges
	// room: the strategy's capacity model, asked about a full broker's
	// busy answer (the no-room rule); nil when the strategy has none.
	room RoomModel

	// until is when a send waiting for room (Config.RoomWait) may go on;
	// zero when it is not waiting.
	until time.Time
	// waited: the send has waited for room (it waits at most once).
	waited bool

	brokers [4]string // the first picks
	more    []string  // picks after the fourth
}

// init makes l the state of a new send of kind to topic, begun at start
// (the reference's beginTimestampFirst: before the route lookup, which
// counts against the budget), in place, asking room (nil: nothing) the
// no-room rule's question. A nil policy is Reference5's for v5.
func (l *Loop) init(p *Policy, kind Kind, topic string, start time.Time, room RoomModel) {
	if p == nil {
		p = defaultPolicy
	}
	if kind > KindOneway {
		kind = KindSync
	}
	*l = Loop{}
	l.p, l.kind, l.topic, l.sendStart, l.seen, l.total = p, kind, topic, start, start, p.MaxAttempts(kind)
	l.room = room
}

var defaultPolicy, _ = NewPolicy(Reference5(), latency.ModeV5)

func (l *Loop) see(t time.Time) {
	if t.After(l.seen) {
		l.seen = t
	}
}

// next says whether another attempt may start at now, and how to pick its
// queue: ok=false means the send is over and Result has its end. Calling
// next again before begin returns the same answer.
func (l *Loop) next(now time.Time) (latency.PickInfo, bool) {
	if l.phase != phaseNext && l.phase != phaseStart {
		return latency.PickInfo{}, false
	}
	l.see(now)
	resumed := false // the attempt after a wait for room: the allowance paid for it
	if !l.until.IsZero() {
		if now.Before(l.until) {
			return latency.PickInfo{}, false // still waiting for room
		}
		l.until, resumed = time.Time{}, true
	}
	if l.attempts >= l.total {
		l.end()
		return latency.PickInfo{}, false
	}
	if l.phase == phaseNext && l.attempts == 0 && l.kind == KindSync {
		if w := l.p.wait; w != nil {
			w.deposit(now)
		}
	}
	if b := l.p.budget; b != nil && l.phase == phaseNext {
		switch {
		case l.attempts == 0:
			b.deposit(now)
		case resumed: // the room-wait allowance paid for it, not the retry budget
		default:
			slot, ok := b.withdraw(now)
			switch {
			case ok:
				l.charges.add(slot)
			case l.park(now):
				return latency.PickInfo{}, false
			default:
				l.refused()
				return latency.PickInfo{}, false
			}
		}
	}
	var pi latency.PickInfo
	if l.attempts > 0 {
		pi.LastBroker, pi.LastClass = l.broker, l.lastClass
		if l.kind == KindAsync {
			if l.p.rules.asyncRetryBudget && l.p.timeout-now.Sub(l.sendStart) <= 0 {
				l.end()
				return latency.PickInfo{}, false
			}
		} else {
			pi.ResetIndex = l.p.rules.resetIndex
		}
	}
	l.phase = phaseStart
	return pi, true
}

// begin records the picked queue's broker (as the reference's brokersSent
// does, before the budget check) and checks the budget at now: false means
// it ran out (more than Timeout since the send began) and the send is over:
// StopCallTimeout, or StopAnswered with an earlier answer. Async retries are
// not checked here (next did). Otherwise the attempt is on, with the plan
// written into *plan (left zero when the attempt is off).
func (l *Loop) begin(q *route.MessageQueue, now time.Time, plan *Plan) bool {
	if l.phase != phaseStart {
		return false
	}
	l.see(now)
	l.record(q.BrokerName)
	cost := now.Sub(l.sendStart)
	retry := l.kind == KindAsync && l.attempts > 0
	if !retry && l.p.timeout < cost {
		if l.answered {
			l.finishAnswered()
		} else {
			l.fail(StopCallTimeout, l.lastErr)
		}
		return false
	}
	cur := max(l.p.timeout-cost, 0)
	if l.kind == KindSync && l.p.perRequest > 0 && l.attempts+1 < l.total && cur > l.p.perRequest {
		var r latency.Room
		if l.room != nil {
			r = l.room.Room(q.BrokerName)
		}
		switch {
		case 2*r.Latency >= l.p.perRequest:
			// The broker answers, slowly: the cap would turn most of its
			// answers into timeouts and their sends into retries, so the
			// attempt keeps the whole budget. The threshold is half the
			// cap because capped attempts see only the answers under the
			// cap: their average stays below it however slow the broker
			// is, and reaches half of it once most answers come near the
			// cap. Timeouts add no sample, so the average of a broker
			// that stops answering fades below half the cap within a
			// second or so.
		case 2*r.ElsewhereLatency >= l.p.perRequest:
			// Every other broker a retry could go to answers as slowly:
			// the retry would meet the same slowness, so the attempt
			// keeps the whole budget.
		case r.AttemptElsewhere():
			cur = l.p.perRequest
		case r.Only():
			// The broker answers and is the only room: a retry would
			// meet push-back, so the attempt keeps the whole budget.
		default:
			// Nowhere else for a retry to go now: the attempt keeps all
			// but one cap of the budget, the rest left for a retry on a
			// broker that may be back by then.
			cur = max(cur-l.p.perRequest, l.p.perRequest)
		}
	}
	*plan = Plan{Attempt: l.attempts, Queue: *q, Start: now, Timeout: cur, Deadline: now.Add(cur)}
	l.attempts++
	l.phase = phaseAttempt
	l.broker, l.queue, l.begun, l.handedOver = q.BrokerName, *q, now, false
	return true
}

func (l *Loop) record(broker string) {
	if l.picks < len(l.brokers) {
		l.brokers[l.picks] = broker
	} else {
		l.more = append(l.more, broker)
	}
	l.picks++
}

// dispatched reports that an async attempt's request was handed over, elapsed
// after the attempt started. For the first attempt it returns the outcome
// to report through the pick for the reference's dispatch update
// (latency.ClassAnswered on PathSend, with that latency), ok=true; otherwise (a
// retry, a sync or oneway send, a second call) nothing. A driver over a
// blocking Transport calls it when it hands the attempt over, before the
// outcome is known.
func (l *Loop) dispatched(elapsed time.Duration) (latency.Outcome, bool) {
	if l.phase != phaseAttempt || l.kind != KindAsync || l.handedOver {
		return latency.Outcome{}, false
	}
	l.handedOver = true
	l.see(l.begun.Add(elapsed))
	if l.attempts != 1 {
		return latency.Outcome{}, false
	}
	return latency.Outcome{Class: latency.ClassAnswered, Path: latency.PathSend, Latency: elapsed, Pending: true}, true
}

// decide takes the current attempt's outcome (o.Elapsed after its start)
// and returns what to report through the attempt's pick and whether another
// attempt may follow, by the rules in the Loop documentation.
func (l *Loop) decide(o *Outcome) decision {
	if l.phase != phaseAttempt {
		return decision{}
	}
	l.phase = phaseNext
	l.see(l.begun.Add(o.Elapsed))
	l.lastClass = o.Class
	if o.Class != latency.ClassAnswered {
		l.lastErr = o.Err
		if l.lastErr == nil {
			l.lastErr = errNoDetail(*o)
		}
	}
	var d decision
	if l.kind == KindAsync {
		d = l.finishAsync(o)
	} else {
		d = l.finishDefault(o)
	}
	if o.Class == latency.ClassBusy && latency.FullRemark(o.Remark) {
		l.fulls++
		d.askRoom = d.Retry && l.room != nil && l.fulls > 1
	}
	return d
}

// settle completes decide once d.Report has been reported through the
// attempt's pick (so the strategy has learnt the outcome) and returns
// whether another attempt may follow: d.Retry, unless the no-room rule (the
// Loop documentation's "No room") ends the send, after asking the strategy's
// capacity model once.
func (l *Loop) settle(d decision) bool {
	if !d.askRoom || l.room.Room(l.broker).RetryElsewhere() {
		return d.Retry
	}
	if l.park(l.seen) {
		return true
	}
	if l.answered {
		l.finishAnswered()
	} else {
		l.fail(StopNoRoom, l.lastErr)
	}
	return false
}

// park makes the send wait for room from now (the Loop documentation's
// "Waiting for room"), if it may and the producer's room-wait allowance
// grants it, and reports whether it waits.
func (l *Loop) park(now time.Time) bool {
	w := l.p.wait
	if w == nil || l.kind != KindSync || l.waited || l.answered || l.lastClass != latency.ClassBusy || l.attempts >= l.total {
		return false
	}
	d := l.p.timeout - now.Sub(l.sendStart) - l.p.timeout/time.Duration(l.total)
	if d <= 0 || !w.request(now) {
		return false
	}
	l.waited, l.until = true, now.Add(d)
	return true
}

// answer keeps res as the last answer, with the attempt's queue when the
// Transport left it out.
func (l *Loop) answer(res *Result) {
	l.answered, l.result = true, *res
	if l.result.Queue == (route.MessageQueue{}) {
		l.result.Queue = l.queue
	}
}

// finishDefault is sendDefaultImpl's handling of one attempt.
func (l *Loop) finishDefault(o *Outcome) decision {
	d := decision{Report: o.report(latency.PathSend)}
	r := l.p.rules.classes.class(o.Class)
	switch r.sync {
	case latency.NextAnswer:
		l.answer(&o.Result)
		if l.kind == KindSync && o.Result.Status != SendOK && l.p.retryAnother {
			d.Retry = true
			return d
		}
		l.finishAnswered()
	case latency.NextRetryCode:
		if l.p.IsRetryCode(o.Code) {
			d.Retry = true
			return d
		}
		if l.answered {
			l.finishAnswered()
		} else {
			l.fail(r.stop, l.lastErr)
		}
	case latency.NextEnd:
		l.fail(r.stop, l.lastErr)
	default: // latency.NextRetry
		d.Retry = true
	}
	return d
}

// finishAsync is MQClientAPIImpl's handling of an async attempt, and
// sendDefaultImpl's for a first attempt that failed before dispatch.
func (l *Loop) finishAsync(o *Outcome) decision {
	first := l.attempts == 1
	r := l.p.rules.classes.class(o.Class)
	if r.async == latency.NextUnsent || (!l.handedOver && r.failed()) {
		if first {
			d := l.finishDefault(o)
			if d.Retry {
				d.Retry = false
				l.end()
			}
			return d
		}
		return decision{Report: o.report(latency.PathAsyncResend), Retry: true}
	}
	d := decision{Report: o.report(latency.PathAsyncAnswer)}
	switch r.async {
	case latency.NextAnswer:
		l.answer(&o.Result)
		l.finishAnswered()
	case latency.NextEnd:
		l.fail(r.stop, l.lastErr)
	default: // latency.NextRetry
		d.Retry = true
	}
	return d
}

// abort ends the send now with err (ErrClosed, a ctx error, a *RouteError),
// unless it is already over. A sync send with an earlier answer returns that
// answer instead, as the reference does whenever its loop ends early.
func (l *Loop) abort(err error) {
	if l.phase == phaseDone {
		return
	}
	if l.answered && l.kind == KindSync {
		l.finishAnswered()
		return
	}
	if err == nil {
		err = errAborted
	}
	l.lastErr = err
	l.fail(StopAborted, err)
}

var errAborted = errors.New("producer: send aborted")

// end closes the loop when no attempt may follow.
func (l *Loop) end() {
	if l.answered {
		l.finishAnswered()
		return
	}
	l.fail(StopFailed, l.lastErr)
}

// refused ends the send whose retry the retry budget refused: with its
// earlier answer if it has one, else failed with its last error wrapped in a
// *RetryBudgetError.
func (l *Loop) refused() {
	l.budgetRefused = true
	if l.answered {
		l.finishAnswered()
		return
	}
	l.fail(StopFailed, &RetryBudgetError{Err: l.lastErr})
}

func (l *Loop) finishAnswered() {
	l.stop, l.phase = StopAnswered, phaseDone
	if b := l.p.budget; b != nil {
		b.refund(l.seen, &l.charges) // retrybudget.go: retries that found an answer are given back
	}
}

func (l *Loop) fail(stop Stop, cause error) {
	l.stop, l.phase = stop, phaseDone
	l.err = &SendError{
		Topic:    l.topic,
		Kind:     l.kind,
		Attempts: l.attempts,
		Brokers:  l.brokerList(l.attempts),
		Elapsed:  l.seen.Sub(l.sendStart),
		Stop:     stop,
		Err:      cause,
	}
}

// errNoDetail stands in for an outcome that came without an error value.
func errNoDetail(o Outcome) error {
	switch o.Class {
	case latency.ClassClient:
		return &ClientError{Err: errors.New("client error")}
	case latency.ClassBroker, latency.ClassBusy:
		return &BrokerError{Code: o.Code, Remark: o.Remark}
	case latency.ClassCancelled:
		return ErrInterrupted
	}
	return &TransportError{Class: o.Class, Err: errors.New("transport error")}
}

// RetryRefused reports whether the retry budget refused the send's retry
// (the send then ended with its last error, or an earlier answer).
func (l *Loop) RetryRefused() bool { return l.budgetRefused }

// Done reports whether the send is over.
func (l *Loop) Done() bool { return l.phase == phaseDone }

// Parked reports whether the send is waiting for room (Config.RoomWait),
// and until when: Next returns false until then, and the send is not over.
func (l *Loop) Parked() (until time.Time, ok bool) {
	if l.until.IsZero() || l.phase == phaseDone {
		return time.Time{}, false
	}
	return l.until, true
}

// Waited reports whether the send waited for room.
func (l *Loop) Waited() bool { return l.waited }

// Stop returns why the send ended (StopNone while it goes on).
func (l *Loop) Stop() Stop { return l.stop }

// Kind returns the send's kind.
func (l *Loop) Kind() Kind { return l.kind }

// Attempts returns how many attempts have started.
func (l *Loop) Attempts() int { return l.attempts }

// Elapsed returns the time from the send's start to the latest time the loop
// was told of (by the Drive's Next, Start, Dispatched or an outcome's end).
func (l *Loop) Elapsed() time.Duration { return l.seen.Sub(l.sendStart) }

// BrokersSent returns the broker of every pick in order, as the reference's
// brokersSent: each attempt's, plus the one picked for an attempt the budget
// then refused.
func (l *Loop) BrokersSent() []string { return l.brokerList(l.picks) }

func (l *Loop) brokerList(n int) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := range min(n, len(l.brokers)) {
		out = append(out, l.brokers[i])
	}
	if n > len(l.brokers) {
		out = append(out, l.more[:n-len(l.brokers)]...)
	}
	return out
}

// errLoopRunning is Result's answer before the send is over.
var errLoopRunning = errors.New("producer: Loop.Result called before the send ended")

// Result returns how the send ended: the answer (StopAnswered) with the
// send's Attempts and (after more than one) Brokers, or a *SendError
// wrapping the last attempt's error. A driver that only needs to know
// whether the send was answered reads Stop, which allocates nothing.
func (l *Loop) Result() (Result, error) {
	switch {
	case l.phase != phaseDone:
		return Result{}, errLoopRunning
	case l.stop == StopAnswered:
		res := l.result
		res.Attempts = l.attempts
		if l.attempts > 1 {
			res.Brokers = l.brokerList(l.attempts)
		}
		return res, nil
	}
	return Result{}, l.err
}
