package latency

import (
	"math"
	"strconv"
	"sync/atomic"

	"github.com/mqfault/mqfault/pkg/route"
)

// PickInfo is the input of a pick.
type PickInfo struct {
	// LastBroker is the broker of the previous attempt of this send ("" for
	// the first attempt): the cascade avoids it.
	LastBroker string
	// ResetIndex asks for the publish info's index to be reset to a random
	// value first (v5, fault tolerance on: every retry of a synchronous send).
	ResetIndex bool
}

// Pick is the result of a pick.
type Pick struct {
	// Queue is the picked queue. It points into the publish info's queue
	// list (or, for v4's least-bad pick, a queue the strategy keeps), so a
	// pick copies nothing; it must not be modified.
	Queue *route.MessageQueue
	// Stage is the cascade stage that answered.
	Stage Stage
	// Reporter takes the attempt's outcome (Done): the Strategy that picked.
	Reporter Reporter
}

// Stage names a stage of the selection cascade.
type Stage uint8

const (
	// StageNone: nothing was picked (the route has no queues).
	StageNone Stage = iota
	// StageAvailable: fault tolerance on; a queue on an available broker
	// other than the last one, admitted by the user filters.
	StageAvailable
	// StageReachable: fault tolerance on; a queue on a reachable broker
	// other than the last one, admitted by the user filters (v5).
	StageReachable
	// StageNotLast: fault tolerance off; a queue not on the last broker,
	// admitted by the user filters.
	StageNotLast
	// StageFiltered: a queue the user filters admit, whatever its broker.
	StageFiltered
	// StageLeastBad: v4 with no available broker: a queue on the least bad
	// broker.
	StageLeastBad
	// StageAny: the unfiltered round-robin pick.
	StageAny
	numStages
)

var stageNames = [...]string{"none", "available", "reachable", "not_last", "filtered", "least_bad", "any"}

// String returns the stage's name: none, available, reachable, not_last,
// filtered, least_bad or any.
func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// Stages lists every stage that can answer a pick, in cascade order.
func Stages() []Stage {
	return []Stage{StageAvailable, StageReachable, StageNotLast, StageFiltered, StageLeastBad, StageAny}
}

// binding is what a strategy derives from one publish info, kept with it as
// its memo: each queue's broker slot, so a probe is a pointer load and an
// atomic load instead of a map lookup.
type binding struct {
	gen     uint64  // the table generation the slots belong to
	entries []entry // per queue position
	// With a FaultTolerance other than the built-in table, slots are
	// per-binding shadows refreshed from it at each Select.
	shadow  []*slot // per broker of the publish info
	brokers []string
	// sum summarizes the slots' flags so passes skip what they would refuse
	// (routeview.go); nil over shadow slots. nq and firstPos are, per
	// broker, its number of queues and its first queue's position.
	sum      *flagSummary
	nq       []int32
	firstPos []int32
	// cap is the isolation cap's state for this route (policy.go); nil when
	// the cap is off or cannot bind (too few brokers).
	cap *capState

	// v4's least-bad pick answers queues that may not be in the route's
	// list; they are made once per broker and kept here: per broker of the
	// route, and for a broker the route has no queue of, in a map (copy on
	// write).
	leastBadOf []atomic.Pointer[[]route.MessageQueue]
	leastBad   atomic.Pointer[map[string][]route.MessageQueue]
}

// leastBadQueue returns queue id of broker (of nums write queues), made once.
func (b *binding) leastBadQueue(info *route.PublishInfo, topic, broker string, nums, id int) *route.MessageQueue {
	if bi, ok := info.BrokerIndex(broker); ok {
		at := &b.leastBadOf[bi]
		qs := at.Load()
		if qs == nil || len(*qs) != nums {
			made := make([]route.MessageQueue, nums)
			for i := range made {
				made[i] = route.MessageQueue{Topic: topic, BrokerName: broker, QueueID: i}
			}
			at.CompareAndSwap(qs, &made)
			qs = at.Load()
		}
		return &(*qs)[id]
	}
	for {
		old := b.leastBad.Load()
		if old != nil {
			if qs := (*old)[broker]; len(qs) == nums {
				return &qs[id]
			}
		}
		qs := make([]route.MessageQueue, nums)
		for i := range qs {
			qs[i] = route.MessageQueue{Topic: topic, BrokerName: broker, QueueID: i}
		}
		m := make(map[string][]route.MessageQueue)
		if old != nil {
			for k, v := range *old {
				m[k] = v
			}
		}
		m[broker] = qs
		if b.leastBad.CompareAndSwap(old, &m) {
			return &qs[id]
		}
	}
}

type entry struct {
	s      *slot
	broker int32 // index into the publish info's brokers
}

// bind returns the binding for info, building it if the memo is missing or
// stale (the table dropped a slot since).
func (s *Strategy) bind(info *route.PublishInfo) *binding {
	if b, ok := info.Memo(s.owner).(*binding); ok && b.gen == s.gen() {
		return b
	}
	return s.rebind(info, s.gen())
}

// gen is the fault table's generation (0 with a custom FaultTolerance).
func (s *Strategy) gen() uint64 {
	if s.table != nil {
		return s.table.gen.Load()
	}
	return 0
}

func (s *Strategy) rebind(info *route.PublishInfo, gen uint64) *binding {
	brokers := info.Brokers()
	var slots []*slot
	b := &binding{gen: gen, entries: make([]entry, info.Len()), brokers: brokers}
	if s.table != nil {
		slots = s.table.slotsFor(brokers)
	} else {
		slots = make([]*slot, len(brokers))
		for i, name := range brokers {
			slots[i] = &slot{name: name}
		}
		b.shadow = slots
	}
	b.leastBadOf = make([]atomic.Pointer[[]route.MessageQueue], len(brokers))
	b.nq = make([]int32, len(brokers))
	b.firstPos = make([]int32, len(brokers))
	for i := range b.entries {
		bi := info.BrokerOf(i)
		b.entries[i] = entry{s: slots[bi], broker: int32(bi)}
		if b.nq[bi] == 0 {
			b.firstPos[bi] = int32(i)
		}
		b.nq[bi]++
	}
	if s.table != nil {
		b.sum = newFlagSummary(len(b.entries))
	}
	if s.table != nil && !s.v4 {
		if limit := capLimit(s.capFraction, len(brokers)); limit < len(brokers) {
			b.cap = newCapState(limit, slots, b.entries, &s.durations)
		}
	}
	info.SetMemo(s.owner, b)
	return b
}

// refreshAvailable copies availability from a custom FaultTolerance into the
// shadow slots; the built-in table needs nothing.
func (s *Strategy) refreshAvailable(b *binding) {
	for i, sh := range b.shadow {
		sh.isolated.Store(!s.ft.IsAvailable(b.brokers[i]))
	}
}

func (s *Strategy) refreshReachable(b *binding) {
	for i, sh := range b.shadow {
		sh.reachable.Store(s.ft.IsReachable(b.brokers[i]))
	}
}

// cursor walks queue positions as consecutive calls of the index's next()
// would, touching the shared index once at the start (Add(1), the claim) and
// once at the end (Add of the remaining moves), so a pass over a long
// isolated block costs two atomic operations, and one goroutine sees exactly
// the reference's index.
type cursor struct {
	idx     *route.Index
	v       int32 // stored index value of the last probe (the claim's minus one before any)
	pos     int   // position of the last probe, when posOK
	n       int
	moved   int32 // probes made
	pub     int32 // moves published so far (the claim)
	claimed bool
	posOK   bool
}

func newCursor(idx *route.Index, n int) cursor { return cursor{idx: idx, n: n} }

// claim makes the index's first move, which the first probe stands on.
func (c *cursor) claim() { c.claimAhead(1) }

// claimAhead is claim for a pick that knows it will move the index at
// least k times: one atomic add instead of two.
func (c *cursor) claimAhead(k int32) {
	if !c.claimed {
		c.v = c.idx.Add(k) - k
		c.pub = k
		c.claimed = true
	}
}

// next moves to the next probe and returns its position.
func (c *cursor) next() int {
	c.claim()
	c.v++
	c.moved++
	if !c.posOK {
		c.pos, c.posOK = route.Position(c.v, c.n), true
	} else if c.v&route.PositiveMask == 0 {
		c.pos = 0
	} else if c.pos++; c.pos == c.n {
		c.pos = 0
	}
	return c.pos
}

// skip makes k probes that find nothing.
func (c *cursor) skip(k int) {
	if k <= 0 {
		return
	}
	c.claim()
	if c.posOK && c.moved > 0 && k <= c.n && int64(uint32(c.v)&route.PositiveMask)+int64(k) <= route.PositiveMask {
		// No wrap of the index on the way: the position moves by k.
		if c.pos += k; c.pos >= c.n {
			c.pos -= c.n
		}
	} else {
		c.posOK = false
	}
	c.v += int32(k)
	c.moved += int32(k)
}

// done publishes the moves made after the claim.
func (c *cursor) done() {
	if c.claimed && c.moved != c.pub {
		c.idx.Add(c.moved - c.pub)
	}
}

// seek makes up to k probes, as next() would, for the first position that
// is in set or in extra (nil for none) and that accept admits (nil admits
// all). Positions in neither set cost nothing: the probe sequence runs
// through consecutive positions between the index's wraps at 2^31, so seek
// finds the next candidate by scanning set words, and probes that find none
// only add up. It reports whether it found one (then at c.pos).
func (c *cursor) seek(k int, set, extra bitset, accept func(p int) bool) bool {
	if k <= 0 {
		return false
	}
	c.claim()
	n := c.n
	done := 0
	u := uint32(c.v+1) & route.PositiveMask // the next probe's value, sign bit cleared
	var p int
	switch {
	case u == 0:
	case c.posOK && c.moved > 0:
		if p = c.pos + 1; p == n {
			p = 0
		}
	default:
		p = int(u % uint32(n))
	}
	for done < k {
		// Positions run p, p+1, ... (wrapping at n) for seg probes, until
		// the index's own wrap sends the next probe to position 0.
		seg := k - done
		if r := (1 << 31) - int64(u); int64(seg) > r {
			seg = int(r)
		}
		for seg > 0 {
			d, ok := set.next(p, n, seg)
			if extra != nil {
				if d2, ok2 := extra.next(p, n, seg); ok2 && (!ok || d2 < d) {
					d, ok = d2, true
				}
			}
			if !ok {
				done += seg
				u += uint32(seg)
				p = (p + seg) % n
				break
			}
			q := p + d
			if q >= n {
				q -= n
			}
			done += d + 1
			seg -= d + 1
			u += uint32(d + 1)
			if accept == nil || accept(q) {
				c.v += int32(done)
				c.moved += int32(done)
				c.pos, c.posOK = q, true
				return true
			}
			if p = q + 1; p == n {
				p = 0
			}
		}
		if u == 1<<31 {
			u, p = 0, 0
		}
	}
	c.v += int32(k)
	c.moved += int32(k)
	c.posOK = false
	return false
}

// picked makes the result for queue p, counting it when asked to.
func (s *Strategy) picked(info *route.PublishInfo, p int, st Stage) (Pick, bool) {
	if s.stages != nil {
		s.stages.add(st)
	}
	return Pick{Queue: info.QueueRef(p), Stage: st, Reporter: s}, true
}

// admit applies the user filters to queue p.
func (s *Strategy) admit(info *route.PublishInfo, p int) bool {
	for _, f := range s.filters {
		if !f.Filter(info.Queue(p)) {
			return false
		}
	}
	return true
}

func lastBrokerIndex(info *route.PublishInfo, last string) int32 {
	if last == "" {
		return -1
	}
	if b, ok := info.BrokerIndex(last); ok {
		return int32(b)
	}
	return -1
}

// Select picks a queue of info for one send attempt. ok is false only when
// info has no queues.
//
// v5 with fault tolerance on: reset the index if asked, then (1) a queue on an
// available broker other than in.LastBroker; (2) on a reachable broker other
// than in.LastBroker; (3) any queue. Each stage is a filtered pass of up to
// Len() probes, every probe moving the index by one. With fault tolerance off
// the reset is ignored: (1) a queue not on in.LastBroker; (2) any queue.
// Unknown brokers are available and reachable.
//
// v4 with fault tolerance on: one scan from one move of the index for an
// available broker (in.LastBroker is ignored, as 4.9.8 ignores it); failing
// that, a queue on the least bad broker (see FaultTolerance.PickLeastBad),
// or, if the route has no writable queue data for it, that broker leaves the
// table and the pick is unfiltered. Off: the publish info's "avoid the last
// broker" pick.
//
// User filters (Config.Filters) join stages (1) and (2), then a pass with
// the user filters alone comes before the unfiltered pick (and before the
// least-bad broker in v4). With no user filters this is exactly the
// reference's cascade.
//
// With the isolation cap on (Config.MaxIsolatedFraction), a broker that the
// fault table isolates but the cap keeps in service counts as available in
// stage (1), except that a retry (in.LastBroker set) first makes a pass for
// a broker nothing isolates; see Config.MaxIsolatedFraction for how a pick
// reads the cap at the cost of a few flag loads.
//
// Select is safe for concurrent use. With the built-in fault table it never
// blocks and allocates nothing (the first pick on a new publish info builds
// the strategy's per-route memo).
func (s *Strategy) Select(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	// The common case, kept small so it stays cheap: fault tolerance on, a
	// first attempt, no user filters, and the first probe lands on an
	// available broker.
	if s.v4 || !s.faultOn.Load() || in.LastBroker != "" || in.ResetIndex || len(s.filters) != 0 {
		return s.selectSlow(info, in)
	}
	n := info.Len()
	if n == 0 {
		return Pick{}, false
	}
	b := s.bind(info)
	if b.shadow != nil {
		return s.selectSlow(info, in)
	}
	var v *capView
	if b.cap != nil { // capState.current, by hand: too big to inline
		if v = b.cap.view.Load(); v.epoch.Load() != s.table.epoch.Load() {
			v = b.cap.recompute(s.table)
		}
	}
	c := newCursor(info.Index(), n)
	if v == nil && b.sum.nAvail.Load() == 0 { // all isolated, as last summarized
		return s.cascade5(info, b, v, -1, c)
	}
	p := c.next()
	if e := &b.entries[p]; !e.s.isolated.Load() || v.releases(e.broker) {
		return s.picked(info, p, StageAvailable)
	}
	return s.cascade5(info, b, v, -1, c)
}

// selectSlow is Select for every case but the common one.
func (s *Strategy) selectSlow(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	n := info.Len()
	if n == 0 {
		return Pick{}, false
	}
	if s.v4 {
		return s.select4(info, in)
	}
	if !s.faultOn.Load() {
		return s.selectOff(info, in)
	}
	b := s.bind(info)
	if in.ResetIndex {
		info.ResetIndex()
	}
	if b.shadow != nil {
		s.refreshAvailable(b)
	}
	var v *capView
	if b.cap != nil {
		v = b.cap.current(s.table)
	}
	return s.cascade5(info, b, v, lastBrokerIndex(info, in.LastBroker), newCursor(info.Index(), n))
}

// cascade5 runs v5's cascade with fault tolerance on from cursor c, which
// may already have made its first probe (a refused one). v is the isolation
// cap's view, nil without a cap. With an up-to-date flag summary it seeks;
// otherwise, or when the summary was rebuilt under it, it walks.
func (s *Strategy) cascade5(info *route.PublishInfo, b *binding, v *capView, last int32, c cursor) (Pick, bool) {
	if f := b.sum; f != nil && !s.walkOnly {
		if e, ok := f.fresh(s.table, b.entries); ok {
			if v == nil && f.nAvail.Load() == 0 {
				// No queue is available: the first pass makes its n
				// probes, the second at least one.
				c.claimAhead(int32(c.n) + 1)
			}
			c.claim()
			walk := c
			p, st := s.seek5(info, b, f, v, last, &c)
			if f.valid(e) {
				c.done()
				return s.picked(info, p, st)
			}
			c = walk
		}
	}
	return s.walk5(info, b, v, last, c)
}

// seek5 is walk5 over the flag summary f: the same answer and index moves,
// without probing what the summary says a stage refuses. It leaves the moves
// in c for the caller to publish.
func (s *Strategy) seek5(info *route.PublishInfo, b *binding, f *flagSummary, v *capView, last int32, c *cursor) (int, Stage) {
	n := c.n
	k := n - int(c.moved) // the fast path's refused first probe counts
	accept := func(p int) bool { return b.entries[p].broker != last && s.admit(info, p) }
	if last < 0 && len(s.filters) == 0 {
		accept = nil
	}
	if v != nil && last >= 0 {
		// The cap's retry pass: a broker nothing isolates first (walk5).
		if b.seekIn(c, n, f.avail, nil, f.nAvail.Load(), last, accept) {
			return c.pos, StageAvailable
		}
		k = n
	}
	var rel bitset
	cnt := f.nAvail.Load()
	if v != nil {
		rel, cnt = v.rel, cnt+v.nRel.Load()
	}
	if b.seekIn(c, k, f.avail, rel, cnt, last, accept) {
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

// seekIn makes a pass of k probes for a position in set or extra (holding
// cnt positions between them) not on broker last that accept admits; a pass
// with no such position left is skipped in one step.
func (b *binding) seekIn(c *cursor, k int, set, extra bitset, cnt int64, last int32, accept func(int) bool) bool {
	if last >= 0 {
		if fp := int(b.firstPos[last]); set.has(fp) || extra != nil && extra.has(fp) {
			cnt -= int64(b.nq[last])
		}
	}
	if cnt <= 0 {
		c.skip(k)
		return false
	}
	return c.seek(k, set, extra, accept)
}

// walk5 is v5's cascade probe by probe, as the reference makes it.
func (s *Strategy) walk5(info *route.PublishInfo, b *binding, v *capView, last int32, c cursor) (Pick, bool) {
	n := c.n
	start := int(c.moved) // the fast path's refused first probe counts
	if v != nil && last >= 0 {
		// A retry with the isolation cap: a broker nothing isolates before
		// one the cap keeps in service, so a retry does not go back to a
		// broker that just failed while an untried healthy one is there.
		for range n {
			p := c.next()
			if e := &b.entries[p]; !e.s.isolated.Load() && e.broker != last && s.admit(info, p) {
				c.done()
				return s.picked(info, p, StageAvailable)
			}
		}
		start = 0
	}
	for i := start; i < n; i++ {
		p := c.next()
		if e := &b.entries[p]; (!e.s.isolated.Load() || v.releases(e.broker)) && e.broker != last && s.admit(info, p) {
			c.done()
			return s.picked(info, p, StageAvailable)
		}
	}
	if b.shadow != nil {
		s.refreshReachable(b)
	}
	for range n {
		p := c.next()
		if e := &b.entries[p]; e.s.reachable.Load() && e.broker != last && s.admit(info, p) {
			c.done()
			return s.picked(info, p, StageReachable)
		}
	}
	return s.finish(info, &c, n)
}

// finish runs the last stages: user filters alone (when there are any), then
// the unfiltered pick.
func (s *Strategy) finish(info *route.PublishInfo, c *cursor, n int) (Pick, bool) {
	if len(s.filters) > 0 {
		for range n {
			p := c.next()
			if s.admit(info, p) {
				c.done()
				return s.picked(info, p, StageFiltered)
			}
		}
	}
	p := c.next()
	c.done()
	return s.picked(info, p, StageAny)
}

// selectOff is v5 with fault tolerance off: a filtered pass avoiding the last
// broker, then the unfiltered pick.
func (s *Strategy) selectOff(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	n := info.Len()
	last := lastBrokerIndex(info, in.LastBroker)
	c := newCursor(info.Index(), n)
	for range n {
		p := c.next()
		if int32(info.BrokerOf(p)) != last && s.admit(info, p) {
			c.done()
			return s.picked(info, p, StageNotLast)
		}
	}
	return s.finish(info, &c, n)
}

// select4 is RocketMQ 4.9.8's MQFaultStrategy.selectOneMessageQueue.
func (s *Strategy) select4(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	n := info.Len()
	if !s.faultOn.Load() {
		return s.select4Off(info, in)
	}
	b := s.bind(info)
	if b.shadow != nil {
		s.refreshAvailable(b)
	}
	start := info.Index().Next()
	if p, ok := s.scan4(info, b, start); ok {
		return s.picked(info, p, StageAvailable)
	}
	if len(s.filters) > 0 {
		c := newCursor(info.Index(), n)
		for range n {
			p := c.next()
			if s.admit(info, p) {
				c.done()
				return s.picked(info, p, StageFiltered)
			}
		}
		c.done()
	}
	var broker string
	var ok bool
	if s.walkOnly && s.table != nil {
		broker, ok = s.table.pickLeastBadSorting(-1)
	} else {
		broker, ok = s.ft.PickLeastBad()
	}
	nums := -1
	if ok {
		nums = info.WriteQueueNums(broker)
	}
	if nums > 0 {
		// The reference makes an unfiltered pick, keeps only its topic, and
		// takes the queue id from one more move of the index.
		q := info.QueueRef(route.Position(info.Index().Add(1), n))
		id := int(info.Index().Next()) % nums
		if s.stages != nil {
			s.stages.add(StageLeastBad)
		}
		return Pick{Queue: b.leastBadQueue(info, q.Topic, broker, nums, id), Stage: StageLeastBad, Reporter: s}, true
	}
	if ok {
		s.ft.Remove(broker)
	}
	return s.picked(info, route.Position(info.Index().Add(1), n), StageAny)
}

// scan4 is 4.9.8's scan for an available broker from start: over an
// up-to-date flag summary it looks only at available positions (none: no
// probe at all), else it probes every position.
func (s *Strategy) scan4(info *route.PublishInfo, b *binding, start int32) (int, bool) {
	n := len(b.entries)
	// Without a wrap of start+i, the scan is one turn round the positions
	// from start % n.
	if f := b.sum; f != nil && !s.walkOnly && int64(start)+int64(n)-1 <= math.MaxInt32 {
		if e, ok := f.fresh(s.table, b.entries); ok {
			p, found := -1, false
			if f.nAvail.Load() > 0 {
				p0 := int(start) % n
				for d := 0; d < n; {
					k, ok := f.avail.next((p0+d)%n, n, n-d)
					if !ok {
						break
					}
					if q := (p0 + d + k) % n; s.admit(info, q) {
						p, found = q, true
						break
					}
					d += k + 1
				}
			}
			if f.valid(e) {
				return p, found
			}
		}
	}
	for i := range n {
		p := scanPosition(start, i, n)
		if !b.entries[p].s.isolated.Load() && s.admit(info, p) {
			return p, true
		}
	}
	return -1, false
}

// scanPosition is 4.9.8's probe position abs(start+i) % n, with start+i
// wrapping as an int32 and a negative result (from abs(MinInt32)) taken as 0.
func scanPosition(start int32, i, n int) int {
	v := start + int32(i)
	if v < 0 {
		v = -v
	}
	if v < 0 {
		return 0
	}
	return int(v) % n
}

// select4Off is 4.9.8 with fault tolerance off: up to Len() unfiltered picks
// for a queue not on the last broker, then one more. User filters first get a
// pass of their own (with the last broker avoided), then one alone.
func (s *Strategy) select4Off(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	n := info.Len()
	last := lastBrokerIndex(info, in.LastBroker)
	c := newCursor(info.Index(), n)
	if len(s.filters) > 0 {
		for range n {
			p := c.next()
			if int32(info.BrokerOf(p)) != last && s.admit(info, p) {
				c.done()
				return s.picked(info, p, StageNotLast)
			}
		}
		for range n {
			p := c.next()
			if s.admit(info, p) {
				c.done()
				return s.picked(info, p, StageFiltered)
			}
		}
	}
	if in.LastBroker == "" {
		p := c.next()
		c.done()
		return s.picked(info, p, StageNotLast)
	}
	for range n {
		p := c.next()
		if info.Queue(p).BrokerName != in.LastBroker {
			c.done()
			return s.picked(info, p, StageNotLast)
		}
	}
	p := c.next()
	c.done()
	return s.picked(info, p, StageAny)
}
