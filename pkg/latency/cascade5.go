package latency

import "github.com/mqfault/mqfault/pkg/route"

// cascade5 is RocketMQ 5.3.3's selection cascade (MQFaultStrategy with its
// filters), with the isolation cap (isolationcap.go) and user filters joined in.
type cascade5 struct{ s *Strategy }

func (c5 cascade5) pick(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	s := c5.s
	if info.Len() == 0 {
		return Pick{}, false
	}
	// The common case, kept small so it stays cheap: fault tolerance on, a
	// first attempt, no user filters, and the first probe lands on an
	// available broker.
	if !s.faultOn.Load() || in.LastBroker != "" || in.ResetIndex || len(s.filters) != 0 {
		return c5.pickSlow(info, in)
	}
	// Everything the probe needs, inlined: no call unless it is refused.
	b := s.binds.last.Load()
	if !b.fits(info, s.table) {
		b = s.bindTopic(info)
	}
	var v *capView
	// capState.current, by hand (too big to inline), but on an epoch change
	// only: a view that keeps isolated brokers in service for want of room
	// holds on first attempts until the next isolation change, not only
	// until its stale time, when a broker it counted has room again by its
	// weight's climb (POLICIES.md, "Isolation cap").
	if b.cap != nil {
		if v = b.cap.view.Load(); v.epoch.Load() != s.table.epoch.Load() {
			v = b.cap.recompute(s.table)
		}
	}
	if v == nil && b.sum.nAvail.Load() == 0 { // all isolated, as last summarized
		return c5.allIsolated(info, b, b.cursor(info))
	}
	// The cursor's claim and first probe (cursor.next), by hand.
	iv := info.Index().Add(1)
	p := b.position(iv)
	e := &b.entries[p]
	if (!e.s.isolated.Load() || v.releases(e.broker)) && c5.reachOK(e) {
		if s.policies.capacity != nil && e.s.cap.below() {
			p = c5.share(b, v, p, -1, iv, false)
			e = &b.entries[p]
		}
		return s.pickedSlot(info, e.s, p, s.stageOf(e.s, StageAvailable)), true
	}
	return c5.refused(info, b, v, e, p, iv)
}

// refused is the fast path's pick when its first probe, e at position p of
// index value iv, was refused: a send trial to e, or to another broker of
// the route whose trial is due (trial.go), else the cascade from the probe
// on. Out of line, so the fast path stays small.
func (c5 cascade5) refused(info *route.PublishInfo, b *binding, v *capView, e *entry, p int, iv int32) (Pick, bool) {
	if e.s.isolated.Load() && c5.isolatedTrial(e) {
		return c5.s.pickedSlot(info, e.s, p, StageTrial), true
	}
	if q, ok := c5.dueTrial(b); ok {
		return c5.s.pickedSlot(info, b.entries[q].s, q, StageTrial), true
	}
	return c5.cascade(info, b, v, -1, b.probed(info, iv, p))
}

// allIsolated is the fast path's pick when no queue of the route is
// available (a cluster-wide outage): the first pass makes its n probes in
// vain, and when every broker is reachable the second takes its first
// probe, so the pick is one move of the index by n+1.
func (c5 cascade5) allIsolated(info *route.PublishInfo, b *binding, c cursor) (Pick, bool) {
	s, f, n := c5.s, b.sum, c.n
	if e, ok := f.fresh(s.table, b.entries); ok && !s.walkOnly && f.nAvail.Load() == 0 && f.nReach.Load() == int64(n) {
		c.claimAhead(int32(n) + 1)
		p := route.Position(c.v+int32(n)+1, n)
		if f.valid(e) {
			return s.picked(info, b, p, StageReachable)
		}
		return c5.walk(info, b, nil, -1, c)
	}
	return c5.cascade(info, b, nil, -1, c)
}

// pickSlow is pick for every case but the common one.
func (c5 cascade5) pickSlow(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	s := c5.s
	if !s.faultOn.Load() {
		return c5.pickOff(info, in)
	}
	b := s.bind(info)
	c := b.cursor(info)
	if in.ResetIndex {
		if s.policies.capacity != nil && in.LastClass.pushBack() {
			// Under the capacity model a retry after a push-back starts
			// from a random place of its own (PickInfo.ResetIndex).
			c = b.ownCursor(info.Index().Draw())
		} else {
			info.ResetIndex()
		}
	}
	var v *capView
	if b.cap != nil {
		v = b.cap.current(s.table)
	}
	return c5.cascade(info, b, v, lastBrokerIndex(info, in.LastBroker), c)
}

// cascade runs v5's cascade with fault tolerance on from cursor c, which
// may already have made its first probe (a refused one). v is the isolation
// cap's view, nil without a cap. With an up-to-date flag summary it seeks;
// otherwise, or when the summary was rebuilt under it, it walks.
func (c5 cascade5) cascade(info *route.PublishInfo, b *binding, v *capView, last int32, c cursor) (Pick, bool) {
	s := c5.s
	if f := b.sum; f != nil && !s.walkOnly {
		if e, ok := f.fresh(s.table, b.entries); ok {
			if v == nil && f.nAvail.Load() == 0 {
				// No queue is available: the first pass makes its n
				// probes, the second at least one.
				c.claimAhead(int32(c.n) + 1)
			}
			c.claim()
			walk := c
			p, st := c5.seek(info, b, f, v, last, &c)
			if f.valid(e) {
				c.done()
				if st == StageAvailable {
					// A retry's partner is a broker nothing isolates when the
					// cap is on (its retry pass), as seek's first pass.
					p = c5.share(b, v, p, last, c.v, last >= 0 && v != nil)
				}
				return s.picked(info, b, p, st)
			}
			c = walk
		}
	}
	return c5.walk(info, b, v, last, c)
}

// seek is walk over the flag summary f: the same answer and index moves,
// without probing what the summary says a stage refuses. It leaves the moves
// in c for the caller to publish.
func (c5 cascade5) seek(info *route.PublishInfo, b *binding, f *flagSummary, v *capView, last int32, c *cursor) (int, Stage) {
	s := c5.s
	n := c.n
	k := n - int(c.moved) // the fast path's refused first probe counts
	accept := func(p int) bool { return b.entries[p].broker != last && s.admit(info, p) }
	if last < 0 && len(s.filters) == 0 {
		accept = nil
	}
	first := accept // the first stage's: reachable too under reachFirst
	if s.policies.reachFirst {
		first = func(p int) bool { return (accept == nil || accept(p)) && c5.reachOK(&b.entries[p]) }
	}
	if v != nil && last >= 0 {
		// The cap's retry pass: a broker nothing isolates first (walk).
		if b.seekIn(c, n, f.avail, nil, f.nAvail.Load(), last, first) {
			return c.pos, StageAvailable
		}
		k = n
	}
	var rel bitset
	cnt := f.nAvail.Load()
	if v != nil {
		rel, cnt = v.rel, cnt+v.nRel.Load()
	}
	if b.seekIn(c, k, f.avail, rel, cnt, last, first) {
		return c.pos, StageAvailable
	}
	if b.seekIn(c, n, f.reach, nil, f.nReach.Load(), last, accept) {
		return c.pos, StageReachable
	}
	if len(s.filters) > 0 {
		for range n {
			if p := c.next(); s.admit(info, p) {
				return p, StageFiltered
			}
		}
	}
	return c.next(), StageAny
}

// walk is v5's cascade probe by probe, as the reference makes it.
func (c5 cascade5) walk(info *route.PublishInfo, b *binding, v *capView, last int32, c cursor) (Pick, bool) {
	s := c5.s
	n := c.n
	start := int(c.moved) // the fast path's refused first probe counts
	if v != nil && last >= 0 {
		// A retry with the isolation cap: a broker nothing isolates before
		// one the cap keeps in service, so a retry does not go back to a
		// broker that just failed while an untried healthy one is there.
		for range n {
			p := c.next()
			if e := &b.entries[p]; !e.s.isolated.Load() && e.broker != last && s.admit(info, p) && c5.reachOK(e) {
				c.done()
				return s.picked(info, b, c5.share(b, v, p, last, c.v, true), StageAvailable)
			}
		}
		start = 0
	}
	for i := start; i < n; i++ {
		p := c.next()
		if e := &b.entries[p]; (!e.s.isolated.Load() || v.releases(e.broker)) && e.broker != last && s.admit(info, p) && c5.reachOK(e) {
			c.done()
			return s.picked(info, b, c5.share(b, v, p, last, c.v, last >= 0 && v != nil), StageAvailable)
		}
	}
	for range n {
		p := c.next()
		if e := &b.entries[p]; e.s.reachable.Load() && e.broker != last && s.admit(info, p) {
			c.done()
			return s.picked(info, b, p, StageReachable)
		}
	}
	return s.finish(info, b, &c, n)
}

// reachOK reports whether entry e passes the first stage's reachability
// test: always, unless reachFirst asks for a reachable broker or a send
// trial (trial.go), which it claims. Callers test it last, so a claimed
// trial is the pick.
func (c5 cascade5) reachOK(e *entry) bool {
	return !c5.s.policies.reachFirst || e.s.reachable.Load() || c5.trial(e)
}

// pickOff is v5 with fault tolerance off: a filtered pass avoiding the last
// broker, then the unfiltered pick.
func (c5 cascade5) pickOff(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	s := c5.s
	n := info.Len()
	last := lastBrokerIndex(info, in.LastBroker)
	c := newCursor(info.Index(), n)
	for range n {
		p := c.next()
		if int32(info.BrokerOf(p)) != last && s.admit(info, p) {
			c.done()
			return s.picked(info, nil, p, StageNotLast)
		}
	}
	return s.finish(info, nil, &c, n)
}
