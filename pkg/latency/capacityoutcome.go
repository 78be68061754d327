package latency

// This file holds the capacity model's outcome hook (capacity.go): what a
// push-back, an answer from a broker below full weight (queued) and a
// timeout on a broker that answers (slow) do to the fault table.

// report takes a push-back under the model: it lowers the broker's weight
// and makes the fault update itself, which isolates nothing. A busy answer
// is an answer: the broker is reachable. A throttled attempt met no broker:
// its reachability stays as it was. A push-back that leaves the broker
// without room bumps the table's isolation epoch: the isolation cap counts
// brokers without room (noRoomCounts). An answer from a broker below full
// weight is queued, and a timeout on a broker that answered while the
// attempt waited is slow: the model makes their updates too (queued, slow). Other classes go to the mode's rules.
func (m *capacityModel) report(a attempt, o Outcome) (FaultUpdate, bool) {
	sl := a.slot
	if o.Class == ClassAnswered && !o.Pending && o.Path != PathAsyncResend && sl != nil {
		now := a.table.seen()
		sl.cap.observe(now, o.Latency)
		sl.cap.answered.Store(now)
		if m.belowFull(sl, a.table.units(now)) {
			return m.queued(a, o), true
		}
	}
	if o.Class == ClassTransportTimeout && !o.Pending && o.Path != PathAsyncResend && sl != nil {
		if now := a.table.seen(); sl.cap.answeredSince(now - int64(max(o.Latency, 0)) + 1) {
			return m.slow(a, o, now), true
		}
	}
	if !o.Class.pushBack() {
		return FaultUpdate{}, false
	}
	u := FaultUpdate{Broker: a.broker, Latency: max(o.Latency, 0), Reachable: true}
	if sl == nil {
		return u, true // fault tolerance off: nothing is recorded
	}
	now := a.table.now()
	a.table.see(now)
	if m.pushBack(&sl.cap, a.table.units(now)) {
		a.table.t.bump()
	}
	if o.Class == ClassBusy && stallRemark(o.Remark) {
		m.stall(a, o, now)
	} else if o.Class == ClassBusy && fullAnswer(o.Remark) {
		m.relieve(a, now)
	}
	if o.Class == ClassThrottled {
		u.Reachable = sl.reachable.Load()
		return u, true
	}
	sl.cap.answered.Store(now)
	if sl.setReachable(true) {
		a.table.changed()
	}
	return u, true
}

// queued is the fault update of an answer from a broker below full weight
// (it pushed back within Capacity.Recovery): a broker that rejects sends
// answers the ones it takes late because they waited in its send queue, so
// the answer's latency is load, which the weight already accounts for, not
// a fault. It records the latency and the broker's reachability as the
// mode's rules do for an answer, and isolates nothing however late the
// answer (the duration table would isolate it for 550 ms and up, and on a
// saturated cluster every broker answers that late).
func (m *capacityModel) queued(a attempt, o Outcome) FaultUpdate {
	lat := max(o.Latency, 0)
	t := a.table.t
	t.updateSlot(a.slot, lat, 0, true, ReasonLatency, m.pol.isolation)
	return FaultUpdate{Broker: a.broker, Latency: lat, Reachable: true}
}

// slow is the fault update of a timeout on a broker that answered another
// send while the attempt waited (its last answer is after the attempt's
// start): the broker is slow, not down. A broker that stops
// answering (down, blackholed, frozen) answers nothing after an attempt's
// start, so its timeouts go to the mode's rules. The mode's rules would
// mark it unreachable (with the detector on), and reachable first would
// then keep every first attempt off it, and the cap and the model's room
// would count it out, until a probe answered; but a broker that answers is
// reachable, so slow keeps it so. The isolation depends on the room around
// it (Room):
//   - other brokers serve and none has room (the cluster is full, not
//     broken): the timeout is taken as an answer as late as the attempt
//     waited, isolated as the duration table isolates for that latency (a
//     latency isolation, which the isolation cap releases before a
//     failure's and which raises no backoff level), or, from a broker below
//     full weight, not at all (queued). A per-attempt cap (producer's
//     MaxTimeoutPerRequest) cuts a slow broker's tail into timeouts, and
//     isolated as failed, the slow broker, which still stores messages,
//     was held out while the others refused what it could have taken;
//   - otherwise the failure's isolation, as the mode's rules give it: where
//     another broker has room the sends have somewhere better to go, and
//     where none other serves the slow broker is picked anyway.
func (m *capacityModel) slow(a attempt, o Outcome, now int64) FaultUpdate {
	lat := max(o.Latency, 0)
	u := FaultUpdate{Broker: a.broker, Latency: lat, Isolation: true, Reachable: true}
	d, reason, bo := a.table.isolation(m.failureLatency), ReasonFailure, m.pol.isolation
	if r := a.table.t.room(m, a.broker, now); r.Serving > 0 && r.ServingRoom == 0 {
		u.Isolation, reason = false, ReasonLatency
		d = a.table.isolation(lat)
		if m.belowFull(a.slot, a.table.units(now)) {
			d = 0
		}
		if d == 0 {
			bo = nil // a timeout forgives no backoff level
		}
	}
	t := a.table.t
	if r, ok := t.updateSlot(a.slot, lat, d, true, reason, bo); ok && t.obs != nil {
		t.obs.OnIsolate(t.event(a.broker, reason, lat, r))
	}
	return u
}

// belowFull reports whether broker slot sl is below full weight at u
// (stamp units): it pushed back within Capacity.Recovery, so what it
// answers late waited in its send queue (queued, slow).
func (m *capacityModel) belowFull(sl *slot, u int64) bool {
	st := sl.cap.state.Load()
	return st != 0 && m.weightQ(st, u) < weightScale
}
