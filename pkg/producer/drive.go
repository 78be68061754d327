package producer

import (
	"time"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/route"
)

// Drive is one send through the fault-tolerant path over a Strategy: the
// "pick, attempt, report, decide" that the producer's SendSync, SendAsync
// and SendOneway, the simulator and the trace runner all drive, so they
// decide alike. It steps a Loop (the budget, retry and result decisions, by
// the rules in the Loop documentation) joined to the strategy's picks: Start picks the attempt's queue, Dispatched and
// Finish report what the attempt met through that pick (latency.Pick.Done),
// where the strategy's mode applies its update rules, detector switch and
// policies. Like a Loop it reads no clock and starts no goroutine; drivers
// pass the time in and run the attempt however they like (a blocking
// Transport call, a simulated event).
//
//	d := producer.NewDrive(strategy, info, policy, producer.KindSync, now)
//	for {
//		for d.Next(now) {                 // may another attempt start?
//			plan, ok := d.Start(now)      // pick, note the broker, check the budget
//			if !ok {
//				break
//			}
//			// (async only) d.Dispatched(elapsed) when the request is handed over
//			o := run(plan)                // the attempt, ending at plan.Start+o.Elapsed
//			step := d.Finish(o)           // report through the pick, decide
//			now = plan.Start.Add(o.Elapsed) // (a real driver reads its clock)
//		}
//		until, waiting := d.Parked()      // waiting for room (Config.RoomWait)?
//		if !waiting {
//			break
//		}
//		now = sleepUntil(until)           // or d.Abort(err) to give up
//	}
//	res, err := d.Loop().Result()
//
// A driver may check its own reasons to stop (a closed producer, a done ctx)
// between Next and Start, and end the send with Abort. Next and Start may
// be given the same now (a pick takes no time in virtual time; the
// reference reads its clock after the pick, which Start models). Every
// method tolerates misuse (a call out of order does nothing and reports
// false or a zero value); none panics. A Drive is a value owned by one driver: it
// is not safe for concurrent use, and allocates nothing.
type Drive struct {
	loop  Loop
	strat Strategy
	info  *route.PublishInfo
	pick  latency.Pick
	pi    latency.PickInfo
	// open: pick is counted in flight by its strategy (load-aware picks)
	// and neither ended nor released yet.
	open bool
}

// Step is what Drive.Finish did with an attempt's outcome.
type Step struct {
	// Update is the fault update the outcome called for (made unless fault
	// tolerance is off): what the pick's Done returned.
	Update FaultUpdate
	// Retry is true when another attempt may follow.
	Retry bool
}

// NewDrive starts one send of kind to info's topic, begun at start (the
// reference's beginTimestampFirst: before the route lookup, which counts
// against the budget), picking with strat over info. A nil policy is
// Reference5's for v5.
func NewDrive(strat Strategy, info *route.PublishInfo, p *Policy, kind Kind, start time.Time) (d Drive) {
	d.Reset(strat, info, p, kind, start)
	return d
}

// Reset makes d a new send, as NewDrive, in place (a driver that keeps one
// Drive per sender saves the copy).
func (d *Drive) Reset(strat Strategy, info *route.PublishInfo, p *Policy, kind Kind, start time.Time) {
	topic := ""
	if info != nil {
		topic = info.Topic()
	}
	d.release() // a send abandoned mid-attempt
	d.strat, d.info, d.pick, d.pi = strat, info, latency.Pick{}, latency.PickInfo{}
	room, _ := strat.(RoomModel)
	d.loop.init(p, kind, topic, start, room)
}

// Next says whether another attempt may start at now; false means the send
// is over (Loop().Result has its end), unless it is waiting for room
// (Parked): then the driver calls Next again once the wait is over. From the second attempt on it tells
// the strategy's pick which broker to avoid and (v5, sync) to reset the
// index. Calling Next again before Start returns the same answer.
func (d *Drive) Next(now time.Time) bool {
	pi, ok := d.loop.next(now)
	d.pi = pi
	return ok
}

// Start picks the attempt's queue with the strategy, records its broker (as
// the reference's brokersSent does, before the budget check) and starts the
// attempt at now, with the returned plan. ok=false means the send is over:
// the budget ran out (more than Timeout since the send began: StopCallTimeout,
// or StopAnswered with an earlier answer; async retries are checked by Next
// instead), or the strategy found no queue (the send then fails with a
// *RouteError).
func (d *Drive) Start(now time.Time) (Plan, bool) {
	if d.loop.phase != phaseStart {
		return Plan{}, false
	}
	if d.strat == nil || d.info == nil {
		d.loop.abort(&RouteError{Topic: d.loop.topic, Err: errNoWritableQueue})
		return Plan{}, false
	}
	pick, ok := d.strat.Select(d.info, d.pi)
	if !ok || pick.Queue == nil {
		d.loop.abort(&RouteError{Topic: d.loop.topic, Err: errNoWritableQueue})
		return Plan{}, false
	}
	d.pick, d.open = pick, true
	var plan Plan
	if ok = d.loop.begin(pick.Queue, now, &plan); !ok {
		d.release() // the call timeout ran out before the attempt: none made
	}
	return plan, ok
}

// release uncounts the current pick when no attempt end will report it.
func (d *Drive) release() {
	if d.open {
		d.open = false
		d.pick.Release()
	}
}

// Dispatched reports that an async attempt's request was handed over,
// elapsed after the attempt started, and for the first attempt makes the
// reference's dispatch update through the pick (latency.ClassAnswered on
// PathSend, with that latency), ok=true; otherwise (a retry, a sync or
// oneway send, a second call) it does nothing. A driver over a blocking
// Transport calls it when it hands the attempt over, before the outcome is
// known.
func (d *Drive) Dispatched(elapsed time.Duration) (FaultUpdate, bool) {
	o, ok := d.loop.dispatched(elapsed)
	if !ok {
		return FaultUpdate{}, false
	}
	return d.pick.Done(o), true
}

// Finish takes the current attempt's outcome (o.Elapsed after its start),
// reports it through the attempt's pick and says whether another attempt may
// follow, by the rules in the Loop documentation (the no-room rule
// included: a strategy that is a RoomModel is asked, after the report,
// about a full broker's busy answer). Out of order it does nothing.
func (d *Drive) Finish(o Outcome) Step {
	if d.loop.phase != phaseAttempt {
		return Step{}
	}
	dec := d.loop.decide(&o)
	d.open = false // the attempt's end, reported by Done
	up := d.pick.Done(dec.Report)
	return Step{Update: up, Retry: d.loop.settle(dec)}
}

// Abort ends the send now with err (ErrClosed, a ctx error, a *RouteError),
// unless it is already over. A sync send with an earlier answer returns that
// answer instead, as the reference does whenever its loop ends early. An
// attempt started and not finished is abandoned: its pick is released
// (latency.Pick.Release).
func (d *Drive) Abort(err error) {
	d.release()
	d.loop.abort(err)
}

// Abandon is Reset's release without a new send: a driver that drops a
// send mid-attempt (its owner closed) calls it so the pick's in-flight
// count is returned.
func (d *Drive) Abandon() { d.release() }

// Parked reports whether the send is waiting for room (Config.RoomWait; the
// Loop documentation's "Waiting for room") and until when: Next returned
// false, the send is not over, and the driver calls Next again at until (or
// Abort to give up). A driver that never waits may Abort at once.
func (d *Drive) Parked() (until time.Time, ok bool) { return d.loop.Parked() }

// Pick returns the current (or last) attempt's pick.
func (d *Drive) Pick() latency.Pick { return d.pick }

// Loop returns the send's decision state, to read how the send went: Done,
// Stop, Attempts, Elapsed, BrokersSent, RetryRefused and Result.
func (d *Drive) Loop() *Loop { return &d.loop }
