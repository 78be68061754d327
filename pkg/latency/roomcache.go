package latency

import (
	"math"
	"sync/atomic"
)

// roomCache keeps, per route binding, the answer roomElsewhere would scan
// the route's brokers for: which brokers the first stage takes (reachable,
// and not isolated, or released by the cap outside its strict pass) have
// room. A pick on a broker without room whose second candidate is isolated
// asks it (share), and on a saturated cluster that is most picks; the scan
// looks at every broker, the cache at a few words.
//
// The cache is exact: it holds only while nothing its answer depends on has
// changed, and every change moves something it compares.
//
//   - An isolation that starts, is extended or ends, and a reachability
//     change of an isolated broker, bump the table's epoch; a reachability
//     change of any broker bumps its flags.
//   - A broker that loses its room (its weight falls below roomWeight)
//     bumps the epoch (capacityModel.report).
//   - A broker without room gets it back by its weight's climb alone, at a
//     stamp unit the cache computes when it counts it (roomUnit): the cache
//     holds only before the earliest.
//   - The cap's releases are the view's: the cache records the generation
//     of the view it was filled with.
//
// Readers and the writer meet through a sequence number (a seqlock): the
// writer, the goroutine that moves it from even to odd, fills the words and
// moves it on to even; a reader that sees it odd, or changed across its
// reads, scans instead. So no reader waits, none reads a half-written
// answer, and nothing is allocated after the binding is built.
type roomCache struct {
	seq   atomic.Uint64 // odd while the writer fills the words
	epoch atomic.Uint64 // the table's isolation epoch when filled
	flags atomic.Uint64 // the table's flag generation when filled
	view  atomic.Uint64 // the cap view's generation (0: no cap view)
	until atomic.Int64  // the stamp unit from which a broker counted without room has room
	// n counts the brokers with room: [0] those the first stage takes
	// (isolated ones the cap releases too), [1] those nothing isolates (the
	// strict pass); first holds the first two of each, by route index.
	n     [2]atomic.Int32
	first [2][2]atomic.Int32
}

// viewGen is v's fill generation, 0 for no view.
func viewGen(v *capView) uint64 {
	if v == nil {
		return 0
	}
	return v.gen.Load()
}

// roomElsewhere reports whether a broker other than broker and last has
// room (weight at least roomWeight), is reachable, and is not isolated
// (or, unless strict, is one the cap releases), at stamp unit u. Only a
// pick on a broker without room asks it: no lock, no allocation, no clock
// read. It answers from the binding's roomCache when that holds, else
// refills it (or, when another goroutine is filling it, scans).
func (c5 cascade5) roomElsewhere(b *binding, v *capView, broker int32, last int32, strict bool, u int64) bool {
	rc, t := &b.room, c5.s.table
	k := 0
	if strict {
		k = 1
	}
	if s := rc.seq.Load(); s&1 == 0 {
		if rc.epoch.Load() == t.epoch.Load() && rc.flags.Load() == t.flags.Load() &&
			rc.view.Load() == viewGen(v) && u < rc.until.Load() {
			n, a, z := rc.n[k].Load(), rc.first[k][0].Load(), rc.first[k][1].Load()
			if rc.seq.Load() == s {
				return roomOther(n, a, z, broker, last)
			}
		}
		if rc.seq.CompareAndSwap(s, s+1) {
			c5.fillRoom(b, v, u)
			rc.seq.Store(s + 2)
			return roomOther(rc.n[k].Load(), rc.first[k][0].Load(), rc.first[k][1].Load(), broker, last)
		}
	}
	return c5.scanRoom(b, v, broker, last, strict, u)
}

// roomOther reports whether n brokers with room, the first two a and z
// (-1: none), include one that is neither broker nor last.
func roomOther(n, a, z, broker, last int32) bool {
	switch {
	case n >= 3:
		return true
	case n >= 1 && a != broker && a != last:
		return true
	case n >= 2 && z != broker && z != last:
		return true
	}
	return false
}

// fillRoom counts the brokers with room at u into b's roomCache. The
// caller holds the cache's sequence number odd.
func (c5 cascade5) fillRoom(b *binding, v *capView, u int64) {
	rc, t, m := &b.room, c5.s.table, c5.s.policies.capacity
	// Before any slot is read: a later change moves them again.
	rc.epoch.Store(t.epoch.Load())
	rc.flags.Store(t.flags.Load())
	rc.view.Store(viewGen(v))
	var n [2]int32
	first := [2][2]int32{{-1, -1}, {-1, -1}}
	until := int64(math.MaxInt64)
	for i, sl := range b.slots {
		bi := int32(i)
		if !sl.reachable.Load() {
			continue
		}
		iso := sl.isolated.Load()
		if iso && !v.releases(bi) {
			continue
		}
		st := sl.cap.state.Load()
		if m.weightQ(st, u) < roomWeight {
			until = min(until, m.roomUnit(st))
			continue
		}
		for k := range 2 {
			if k == 1 && iso {
				continue
			}
			if n[k] < 2 {
				first[k][n[k]] = bi
			}
			n[k]++
		}
	}
	rc.until.Store(until)
	for k := range 2 {
		rc.n[k].Store(n[k])
		rc.first[k][0].Store(first[k][0])
		rc.first[k][1].Store(first[k][1])
	}
}

// scanRoom is roomElsewhere by a scan of the route's brokers, each once.
func (c5 cascade5) scanRoom(b *binding, v *capView, broker int32, last int32, strict bool, u int64) bool {
	m := c5.s.policies.capacity
	for i, sl := range b.slots {
		bi := int32(i)
		if bi == broker || bi == last || !sl.reachable.Load() {
			continue
		}
		if sl.isolated.Load() && (strict || !v.releases(bi)) {
			continue
		}
		if m.weightQ(sl.cap.state.Load(), u) >= roomWeight {
			return true
		}
	}
	return false
}
