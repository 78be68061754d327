package latency

import (
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
	// cap is the isolation cap's state for this route (policy.go); nil when
	// the cap is off or cannot bind (too few brokers).
	cap *capState

	// v4's least-bad pick answers queues that may not be in the route's
	// list; they are made once per broker and kept here (copy on write).
	leastBad atomic.Pointer[map[string][]route.MessageQueue]
}

// leastBadQueue returns queue id of broker (of nums write queues), made once.
func (b *binding) leastBadQueue(topic, broker string, nums, id int) *route.MessageQueue {
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
	for i := range b.entries {
		bi := info.BrokerOf(i)
		b.entries[i] = entry{s: slots[bi], broker: int32(bi)}
	}
	if s.table != nil && !s.v4 {
		if limit := capLimit(s.capFraction, len(brokers)); limit < len(brokers) {
			b.cap = newCapState(limit, slots, &s.durations)
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
// would, touching the shared index once at the start (Add(1)) and once at the
// end (Add of the remaining moves), so a pass over a long isolated block costs
// two atomic operations, and one goroutine sees exactly the reference's index.
type cursor struct {
	idx   *route.Index
	v     int32 // stored index value of the current probe
	pos   int
	n     int
	moved int32
}

func newCursor(idx *route.Index, n int) cursor { return cursor{idx: idx, n: n} }

// first makes the first probe and returns its position.
func (c *cursor) first() int {
	c.v = c.idx.Add(1)
	c.pos = route.Position(c.v, c.n)
	c.moved = 1
	return c.pos
}

// next moves to the next probe and returns its position.
func (c *cursor) next() int {
	if c.moved == 0 {
		c.v = c.idx.Add(1)
		c.pos = route.Position(c.v, c.n)
		c.moved = 1
		return c.pos
	}
	c.v++
	c.moved++
	if c.v&route.PositiveMask == 0 {
		c.pos = 0
	} else if c.pos++; c.pos == c.n {
		c.pos = 0
	}
	return c.pos
}

// done publishes the moves made after the first.
func (c *cursor) done() {
	if c.moved > 1 {
		c.idx.Add(c.moved - 1)
	}
}

// picked makes the result for queue p, counting it when asked to.
func (s *Strategy) picked(info *route.PublishInfo, p int, st Stage) (Pick, bool) {
	if s.stages != nil {
		s.stages.add(st, p)
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
	p := c.first()
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
// cap's view, nil without a cap.
func (s *Strategy) cascade5(info *route.PublishInfo, b *binding, v *capView, last int32, c cursor) (Pick, bool) {
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
	for i := range n {
		p := scanPosition(start, i, n)
		if !b.entries[p].s.isolated.Load() && s.admit(info, p) {
			return s.picked(info, p, StageAvailable)
		}
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
	broker, ok := s.ft.PickLeastBad()
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
			s.stages.add(StageLeastBad, id)
		}
		return Pick{Queue: b.leastBadQueue(q.Topic, broker, nums, id), Stage: StageLeastBad, Reporter: s}, true
	}
	if ok {
		s.ft.Remove(broker)
	}
	return s.picked(info, route.Position(info.Index().Add(1), n), StageAny)
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
