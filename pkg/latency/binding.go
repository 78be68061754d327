package latency

import (
	"sync"
	"sync/atomic"

	"github.com/mqfault/mqfault/pkg/route"
)

// binding is what a strategy derives from one publish info: each queue's broker slot, so a probe is a pointer load and an
// atomic load instead of a map lookup.
type binding struct {
	gen     uint64  // the table generation the slots belong to
	entries []entry // per queue position
	posM    uint64  // len(entries)'s fastPosition constant (pick.go)
	info    *route.PublishInfo
	brokers []string
	// sum summarizes the slots' flags so passes skip what they would refuse
	// (routeview.go). nq and firstPos are, per
	// broker, its number of queues and its first queue's position.
	sum      *flagSummary
	nq       []int32
	firstPos []int32
	// cap is the isolation cap's state for this route (isolationcap.go); nil when
	// the cap is off or cannot bind (too few brokers).
	cap *capState
	// room caches whether brokers the first stage takes have room
	// (roomcache.go).
	room roomCache
	// trialScan is the table time from which a refused probe may look for
	// a due send trial (dueTrial, trial.go).
	trialScan atomic.Int64

	// v4's least-bad pick answers queues that may not be in the route's
	// list; they are made once per broker and kept here: per broker of the
	// route, and for a broker the route has no queue of, in a map (copy on
	// write).
	leastBadOf []atomic.Pointer[[]route.MessageQueue]
	leastBad   atomic.Pointer[map[string][]route.MessageQueue]
	// bySlot maps a slot id to its broker's index in the route plus one (0:
	// not in the route), and writeNums is each route broker's write queue
	// count: the least-bad pick reads them instead of looking names up.
	bySlot    []int32
	slots     []*slot
	writeNums []int
}

// brokerOf returns the route's index of sl's broker, or -1.
func (b *binding) brokerOf(sl *slot) int {
	if sl == nil || int(sl.id) >= len(b.bySlot) {
		return -1
	}
	if bi := int(b.bySlot[sl.id]) - 1; bi >= 0 && b.slots[bi] == sl {
		return bi
	}
	return -1
}

// leastBadQueue returns queue id of broker (of nums write queues), made
// once; bi is the broker's index in the route, or -1.
func (b *binding) leastBadQueue(bi int, topic, broker string, nums, id int) *route.MessageQueue {
	if bi >= 0 {
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

// bindings is a strategy's binding of each topic's route: the binding of
// the publish info last installed or picked from for the topic. A route
// change builds the new publish info's binding once and swaps the topic's
// entry (copy on write), so a pick finds its binding with atomic loads and
// one map lookup, or with one load when it picks from the same route as
// the pick before it; nothing is stored with the publish info, and
// strategies sharing a publish info never displace each other's bindings.
type bindings struct {
	last    atomic.Pointer[binding]
	mu      sync.Mutex // serializes changes to byTopic
	byTopic atomic.Pointer[map[string]*binding]
}

// bind returns the binding for info, building it when the strategy has none
// for it or the one it has is stale (the table dropped a slot since).
func (s *Strategy) bind(info *route.PublishInfo) *binding {
	if b := s.binds.last.Load(); b.fits(info, s.table) {
		return b
	}
	return s.bindTopic(info)
}

// fits reports whether b, which may be nil, is the binding of info for
// table t as it is now (no slot dropped since b was built).
func (b *binding) fits(info *route.PublishInfo, t *FaultTable) bool {
	return b != nil && b.info == info && b.gen == t.gen.Load()
}

func (s *Strategy) bindTopic(info *route.PublishInfo) *binding {
	gen := s.table.gen.Load()
	if m := s.binds.byTopic.Load(); m != nil {
		if b := (*m)[info.Topic()]; b != nil && b.info == info && b.gen == gen {
			s.binds.last.Store(b)
			return b
		}
	}
	b := s.newBinding(info, gen)
	s.binds.mu.Lock()
	nm := make(map[string]*binding)
	if m := s.binds.byTopic.Load(); m != nil {
		for k, v := range *m {
			nm[k] = v
		}
	}
	nm[info.Topic()] = b
	s.binds.byTopic.Store(&nm)
	s.binds.mu.Unlock()
	s.binds.last.Store(b)
	return b
}

// unbind forgets topic's binding.
func (s *Strategy) unbind(topic string) {
	s.binds.mu.Lock()
	defer s.binds.mu.Unlock()
	m := s.binds.byTopic.Load()
	if m == nil {
		return
	}
	b, ok := (*m)[topic]
	if !ok {
		return
	}
	nm := make(map[string]*binding, len(*m))
	for k, v := range *m {
		if k != topic {
			nm[k] = v
		}
	}
	s.binds.byTopic.Store(&nm)
	s.binds.last.CompareAndSwap(b, nil)
}

func (s *Strategy) newBinding(info *route.PublishInfo, gen uint64) *binding {
	brokers := info.Brokers()
	slots := s.table.slotsFor(brokers)
	b := &binding{gen: gen, info: info, entries: make([]entry, info.Len()), brokers: brokers}
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
	b.posM = positionConst(len(b.entries))
	b.sum = newFlagSummary(len(b.entries))
	b.slots = slots
	b.writeNums = make([]int, len(brokers))
	maxID := int32(-1)
	for bi, sl := range slots {
		maxID = max(maxID, sl.id)
		b.writeNums[bi] = info.WriteQueueNums(brokers[bi])
	}
	b.bySlot = make([]int32, maxID+1)
	for bi, sl := range slots {
		b.bySlot[sl.id] = int32(bi) + 1
	}
	if r := s.policies.release; r != nil {
		b.cap = r.bind(slots, b.entries, &s.durations)
		if m, t := s.policies.capacity, s.table; b.cap != nil && m != nil {
			b.cap.noRoom = func(sl *slot) (bool, int64) {
				if !m.noRoom(sl, t.units(t.seen.Load())) {
					return false, 0
				}
				return true, m.roomBackAt(t, sl)
			}
		}
	}
	return b
}
