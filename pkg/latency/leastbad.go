package latency

import (
	"cmp"
	"slices"
	"strings"
	"sync/atomic"
)

// The least-bad pick (4.x pickOneAtLeast) orders every item of the table.
// A v4 pick makes it whenever no broker of the route is available, which is
// exactly when a producer must stay fast, so the order is kept: it is
// re-sorted only when the table has changed since (its ver moved), into
// memory the table keeps, and a pick over an unchanged table is a few
// atomic loads and one move of the worst index.

// leastBadCache holds the table's items in least-bad order, as of one
// value of the table's ver. Two orders alternate: the goroutine that wins
// busy sorts into the one not in use and publishes it; a reader checks,
// after reading, that the order it read was not rewritten meanwhile
// (which takes two re-sorts during one pick) and otherwise sorts for itself.
type leastBadCache struct {
	busy    atomic.Bool
	current atomic.Pointer[leastBadOrder]
	bufs    [2]leastBadOrder
	keys    []leastBadKey // guarded by busy
}

type leastBadOrder struct {
	ver atomic.Uint64 // the table's ver it was sorted at; noVer while written
	n   atomic.Int64
	// slots holds the order in its first n entries; it is replaced (grown)
	// before n is raised, so a reader that loads n first never indexes
	// past it.
	slots atomic.Pointer[[]atomic.Pointer[slot]]
}

const noVer = ^uint64(0)

type leastBadKey struct {
	available bool
	latency   int64
	until     int64
	slot      *slot
}

// PickLeastBad returns the "least bad" broker (4.x pickOneAtLeast): of the items
// sorted available first, then lower latency, earlier isolation end and name,
// one of the better half in round robin (WorstIndex); ok is false with no items.
// Over an unchanged table it allocates nothing and takes no lock.
func (t *FaultTable) PickLeastBad() (broker string, ok bool) {
	name, _, ok := t.leastBad()
	return name, ok
}

// leastBad is PickLeastBad that also returns the broker's slot when it read
// the kept order (nil when it had to sort).
func (t *FaultTable) leastBad() (string, *slot, bool) {
	o := t.rank.current.Load()
	if o == nil || o.ver.Load() != t.ver.Load() {
		o = t.rank.resort(t)
	}
	if o != nil {
		e := o.ver.Load()
		n := int(o.n.Load())
		var sl *slot
		worst := int32(-1)
		switch n {
		case 0:
		case 1:
			sl = (*o.slots.Load())[0].Load()
		default:
			worst = t.worst.Next()
			sl = (*o.slots.Load())[int(worst)%(n/2)].Load()
		}
		if e != noVer && o.ver.Load() == e {
			if sl == nil {
				return "", nil, false
			}
			return sl.name, sl, true
		}
		name, ok := t.pickLeastBadSorting(worst) // rewritten under us
		return name, nil, ok
	}
	name, ok := t.pickLeastBadSorting(-1)
	return name, nil, ok
}

// pickLeastBadSorting is PickLeastBad without the cache: it sorts a fresh
// snapshot (reading no clock). worst is the worst index's move already made,
// or -1 for none.
func (t *FaultTable) pickLeastBadSorting(worst int32) (string, bool) {
	keys := leastBadKeys(t, nil)
	switch len(keys) {
	case 0:
		return "", false
	case 1:
		return keys[0].slot.name, true
	}
	slices.SortFunc(keys, compareLeastBadKey)
	if worst < 0 {
		worst = t.worst.Next()
	}
	return keys[int(worst)%(len(keys)/2)].slot.name, true
}

// leastBadKeys appends to keys the sort key of every slot of t that has an
// item.
func leastBadKeys(t *FaultTable, keys []leastBadKey) []leastBadKey {
	for _, s := range *t.slots.Load() {
		if s.present.Load() {
			keys = append(keys, leastBadKey{
				available: !s.isolated.Load(), latency: s.latency.Load(), until: s.until.Load(), slot: s,
			})
		}
	}
	return keys
}

// resort sorts the table into the order not in use and publishes it. It
// returns nil when another goroutine is sorting (the caller then sorts for
// itself).
func (c *leastBadCache) resort(t *FaultTable) *leastBadOrder {
	if !c.busy.CompareAndSwap(false, true) {
		return nil
	}
	defer c.busy.Store(false)
	v := t.ver.Load() // before reading any slot: a later change moves it again
	o := &c.bufs[0]
	if o == c.current.Load() {
		o = &c.bufs[1]
	}
	c.keys = leastBadKeys(t, c.keys[:0])
	slices.SortFunc(c.keys, compareLeastBadKey)
	o.ver.Store(noVer)
	slots := o.slots.Load()
	if slots == nil || len(*slots) < len(c.keys) {
		grown := make([]atomic.Pointer[slot], cap(c.keys))
		slots = &grown
		o.slots.Store(slots)
	}
	for i, k := range c.keys {
		(*slots)[i].Store(k.slot)
	}
	o.n.Store(int64(len(c.keys)))
	o.ver.Store(v)
	c.current.Store(o)
	return o
}

func compareLeastBadKey(a, b leastBadKey) int {
	if a.available != b.available {
		if a.available {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.latency, b.latency); c != 0 {
		return c
	}
	if c := cmp.Compare(a.until, b.until); c != 0 {
		return c
	}
	return strings.Compare(a.slot.name, b.slot.name)
}
