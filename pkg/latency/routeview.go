package latency

import (
	"math/bits"
	"sync/atomic"
)

// A route's flag summary lets a pick skip what a walk would refuse. The
// reference's passes probe queue after queue, each probe moving the index by
// one; over a route whose brokers are mostly isolated that is a walk of
// thousands of probes, and exactly when a producer must not slow down (a
// cluster-wide outage). The summary holds, per queue position, whether its
// broker is available and whether it is reachable, as bitsets with their
// counts, so a pass finds its next candidate by scanning words, and a pass
// that has no candidate at all moves the index by its length in one step.
// The answers, index movements included, are the walk's.
//
// The summary is rebuilt when a slot's isolated or reachable flag flips (the
// table's flag epoch moves), which is rare next to picks: an isolation starts
// or ends, a broker becomes reachable or not. The pick that notices and wins
// the summary's busy flag rebuilds it; a pick that cannot use an up-to-date
// summary (another goroutine is rebuilding it) walks, as the reference does.
// One goroutine (the simulator, a trace) therefore always uses a summary
// equal to the flags.

// bitset is a set of queue positions, read and written with atomics.
type bitset []atomic.Uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(p int) bool { return b[p>>6].Load()&(1<<(p&63)) != 0 }

// next returns the distance d < limit, going up from position p and
// wrapping at n, of the first position in b; ok is false when there is none
// (limit is at most n).
func (b bitset) next(p, n, limit int) (d int, ok bool) {
	for d < limit {
		i := p + d
		if i >= n {
			i -= n
		}
		if w := b[i>>6].Load() >> (i & 63); w != 0 {
			k := d + bits.TrailingZeros64(w) // positions past n are never set
			return k, k < limit
		}
		step := 64 - i&63
		if i+step > n {
			step = n - i
		}
		d += step
	}
	return 0, false
}

// flagSummary is a binding's summary of its slots' flags.
type flagSummary struct {
	busy atomic.Bool
	// epoch is the table's flag epoch the summary was built at, or noVer
	// while it is being rebuilt (a reader checks it before and after).
	epoch  atomic.Uint64
	avail  bitset // positions whose broker is not isolated
	reach  bitset // positions whose broker is reachable
	nAvail atomic.Int64
	nReach atomic.Int64
}

func newFlagSummary(n int) *flagSummary {
	f := &flagSummary{avail: newBitset(n), reach: newBitset(n)}
	f.epoch.Store(noVer)
	return f
}

// fresh returns the summary's epoch when it is up to date with t, to be
// checked again with valid after reading it; ok is false when the pick must
// walk instead. It rebuilds the summary first when the table has moved on
// and no other goroutine is already doing so.
func (f *flagSummary) fresh(t *FaultTable, entries []entry) (e uint64, ok bool) {
	if e = f.epoch.Load(); e == t.flags.Load() {
		return e, true
	}
	return f.rebuild(t, entries)
}

// rebuild brings the summary up to date unless another goroutine is doing so.
func (f *flagSummary) rebuild(t *FaultTable, entries []entry) (uint64, bool) {
	want := t.flags.Load()
	if !f.busy.CompareAndSwap(false, true) {
		return 0, false
	}
	f.epoch.Store(noVer)
	var avail, reach uint64
	var na, nr int64
	for p := range entries {
		s := entries[p].s
		if !s.isolated.Load() {
			avail |= 1 << (p & 63)
			na++
		}
		if s.reachable.Load() {
			reach |= 1 << (p & 63)
			nr++
		}
		if p&63 == 63 || p == len(entries)-1 {
			f.avail[p>>6].Store(avail)
			f.reach[p>>6].Store(reach)
			avail, reach = 0, 0
		}
	}
	f.nAvail.Store(na)
	f.nReach.Store(nr)
	f.epoch.Store(want) // read before the flags: a later flip moves it again
	f.busy.Store(false)
	return want, true
}

// valid reports whether the summary still is the one read at epoch e.
func (f *flagSummary) valid(e uint64) bool { return f.epoch.Load() == e }

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
