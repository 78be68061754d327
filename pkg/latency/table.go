package latency

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/route"
)

// FaultItem is a snapshot of one broker's fault state. Its times are on the
// wall clock as it read when the snapshot was taken.
type FaultItem struct {
	Broker        string
	Latency       time.Duration
	IsolatedUntil time.Time // the Unix epoch when never isolated
	Available     bool
	Reachable     bool
	CheckStamp    time.Time // next time the detector may probe it (epoch: now)
}

// FaultTable is the reference's LatencyFaultTolerance: per broker the last
// latency, until when it is isolated, whether it is reachable (unknown brokers
// are both). Isolations end on time on the strategy's clock, whatever the wall
// clock steps; items and events are on the wall clock as it reads then. All
// methods are safe for concurrent use; none blocks on I/O.
type FaultTable struct {
	// Each broker has a slot whose fields are atomics updated in place, so
	// Update allocates nothing for a known broker, and picks read a slot with
	// single atomic loads. Isolation ends through a timer on the clock that
	// clears the slot's isolated flag, so a pick never reads the clock and
	// expiry never waits for an Update: exact on a manual clock, within timer
	// precision on the real one.
	//
	// The table keeps time on the clock's Elapsed (its table time: Unix
	// nanoseconds as the wall clock read when the table was made, advanced by
	// the time passed since), so every isolation end, check stamp and policy
	// time is monotonic.
	clock clock.Clock
	// wall0 and mono0 are the clock's Now (Unix nanoseconds) and Elapsed
	// when the table was made: table time is wall0 + (Elapsed - mono0).
	wall0 int64
	mono0 time.Duration
	mode  Mode
	rule  updateRule // the mode's
	obs   Observer   // nil means none

	mu    sync.Mutex                       // serializes changes to the slot map
	slots atomic.Pointer[map[string]*slot] // copy on write
	// byID holds every slot by its id, those that left the map too until
	// their id is given to a new slot (copy on write, under mu): a pick's
	// handle finds its slot here (resolve). free lists the ids of slots
	// that left the map, for reuse; guarded by mu.
	byID atomic.Pointer[[]*slot]
	free []int32
	gen  atomic.Uint64 // bumped whenever a slot leaves the map
	seen atomic.Int64  // the latest table time an outcome was reported at (see)
	// epoch is bumped whenever an isolation starts, is extended or ends, and
	// when an isolated broker's reachability or failure mark changes: the
	// isolation cap recomputes a route's view when it sees a new epoch
	// (isolationcap.go).
	epoch atomic.Uint64
	// flags is bumped whenever a slot's isolated or reachable flag flips:
	// each route's flag summary (routeview.go) is rebuilt when it sees a new
	// value. ver is bumped after every change to what Items reports, so the
	// least-bad order (leastbad.go) is re-sorted only when the table moved.
	flags atomic.Uint64
	ver   atomic.Uint64
	worst *route.Index
	rank  leastBadCache
	// claims are the strategies' claims on the table's brokers: which items
	// route changes may drop (routebrokers.go).
	claims routeClaims
}

// tableOption configures a FaultTable.
type tableOption func(*FaultTable)

// withTableObserver sets who is told of the table's recoveries and of the
// isolations its own Update causes (a strategy's updates are told to the
// strategy's observer).
func withTableObserver(obs Observer) tableOption { return func(t *FaultTable) { t.obs = obs } }

// newFaultTable returns an empty table with mode's update rules (ModeV5
// extends isolations and keeps reachability; ModeV4 overwrites isolations;
// "" or an unregistered mode is ModeV5). A nil clock is clock.Real.
func newFaultTable(mode Mode, clk clock.Clock, opts ...tableOption) *FaultTable {
	if clk == nil {
		clk = clock.Real{}
	}
	spec := specOf(mode)
	t := &FaultTable{clock: clk, mode: spec.mode, rule: spec.update, worst: route.NewIndex(nil)}
	t.wall0, t.mono0 = clk.Now().UnixNano(), clk.Elapsed()
	for _, opt := range opts {
		opt(t)
	}
	m := map[string]*slot{}
	t.slots.Store(&m)
	t.byID.Store(new([]*slot))
	return t
}

// slot is one broker's fault state. The first three fields are what picks read.
type slot struct {
	isolated  atomic.Bool // now < until, maintained by Update and the expiry timer
	reachable atomic.Bool // true while absent
	present   atomic.Bool // the broker has an item (Update made one, Remove dropped it)

	name string
	// id is unique among the table's slots, from 0 (a binding's index of
	// its slots, and the slot's place in byID); a slot that left the table
	// gives its id to a later one. handle is what a pick carries to find
	// the slot again (Pick.Done): id and a generation that changes when the
	// id is given again.
	id     int32
	handle handle
	// gone is set when the slot leaves the table's map (Remove, retain):
	// what is reported on a pick of it goes to the broker's slot by name.
	gone       atomic.Bool
	latency    atomic.Int64 // nanoseconds
	until      atomic.Int64 // table time; 0 when never isolated
	checkStamp atomic.Int64 // table time; 0 when never checked
	// failed is set while the isolation was caused (or extended) by a failed
	// send, and is written under mu.
	failed atomic.Bool
	// Each policy's per-broker state, a type of the policy's file.
	backoff backoffState   // backoff.go
	cap     brokerCapacity // capacity.go
	rec     recoveryState  // recovery.go
	trial   trialState     // trial.go

	table *FaultTable
	mu    sync.Mutex  // serializes isolation changes with the expiry timer
	timer clock.Timer // guarded by mu; created on the first isolation
	// ended is guarded by mu: until holds the end of an isolation. Until
	// then until is 0, which means "never isolated", not the epoch (a
	// clock before 1970 reads earlier times).
	ended bool
}

// handle names a slot for a pick: its id plus one in the low handleIDBits
// bits (0: no handle), and above them a generation, moved on each time the
// id is given to a new slot, so the handle of a slot that left the table
// never finds the slot that took its id (unless the same id is given again
// handleGens times while one pick is in flight; resolve then still checks
// the broker's name). A table of more slots than the id bits hold gives
// the later ones no handle: their picks find them by name.
type handle int32

const (
	handleIDBits = 24
	handleIDMask = 1<<handleIDBits - 1
	handleGens   = 1 << (31 - handleIDBits)
)

// newSlot makes broker name's slot, with a free id if there is one, and
// records it in ids (the caller's copy of byID, which it stores). Caller
// must hold t.mu.
func newSlot(t *FaultTable, name string, ids []*slot) (*slot, []*slot) {
	s := &slot{name: name, table: t}
	gen := 0
	if n := len(t.free); n > 0 {
		s.id = t.free[n-1]
		t.free = t.free[:n-1]
		gen = (int(ids[s.id].handle>>handleIDBits) + 1) % handleGens
		ids[s.id] = s
	} else {
		s.id = int32(len(ids))
		ids = append(ids, s)
	}
	if s.id < handleIDMask {
		s.handle = handle(gen<<handleIDBits | int(s.id+1))
	}
	s.reachable.Store(true)
	return s, ids
}

// dropped marks slots that left the map gone and frees their ids. Caller
// must hold t.mu.
func (t *FaultTable) dropped(gone ...*slot) {
	for _, s := range gone {
		s.gone.Store(true)
		t.free = append(t.free, s.id)
	}
}

// resolve finds the slot of a pick of broker name that carries handle h:
// held is the slot the pick was made on (nil when the handle is stale: its
// id went to a new slot), live the broker's slot in the table now (nil when
// it has none). They are one slot unless the pick's slot left the table
// since. A pick without a handle finds both by name. It takes no lock and
// allocates nothing.
func (t *FaultTable) resolve(h handle, name string) (held, live *slot) {
	if h == 0 {
		s := t.lookup(name)
		return s, s
	}
	ids := *t.byID.Load()
	if i := int(h&handleIDMask) - 1; i < len(ids) {
		if s := ids[i]; s.handle == h && s.name == name {
			if !s.gone.Load() {
				return s, s
			}
			return s, t.lookup(name)
		}
	}
	return nil, t.lookup(name)
}

func (t *FaultTable) lookup(name string) *slot { return (*t.slots.Load())[name] }

// slotFor returns broker's slot, creating an absent one if needed.
func (t *FaultTable) slotFor(name string) *slot {
	if s := t.lookup(name); s != nil {
		return s
	}
	return t.slotsFor([]string{name})[0]
}

// slotsFor returns the slots of names, creating absent ones with one copy of
// the map.
func (t *FaultTable) slotsFor(names []string) []*slot {
	out := make([]*slot, len(names))
	m := *t.slots.Load()
	missing := false
	for i, n := range names {
		if out[i] = m[n]; out[i] == nil {
			missing = true
		}
	}
	if !missing {
		return out
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m = *t.slots.Load()
	var nm map[string]*slot
	var ids []*slot
	for i, n := range names {
		if s := m[n]; s != nil {
			out[i] = s
			continue
		}
		if nm == nil {
			nm = maps.Clone(m)
			ids = slices.Clone(*t.byID.Load())
		}
		if s := nm[n]; s != nil { // a duplicate name in names
			out[i] = s
			continue
		}
		out[i], ids = newSlot(t, n, ids)
		nm[n] = out[i]
	}
	if nm != nil {
		t.byID.Store(&ids)
		t.slots.Store(&nm)
	}
	return out
}

// now is the table time: monotonic, in Unix nanoseconds of the wall clock
// as it read when the table was made (see FaultTable).
func (t *FaultTable) now() int64 { return t.wall0 + int64(t.clock.Elapsed()-t.mono0) }

// wallOffset is what turns a table time into Unix nanoseconds of the wall
// clock as it reads now: 0 until the wall clock steps.
func (t *FaultTable) wallOffset() int64 { return t.clock.Now().UnixNano() - t.now() }

// wallTime is table time v on the wall clock, given wallOffset's off.
func wallTime(v, off int64) time.Time { return time.Unix(0, v+off) }

// wallOf is table time v on the wall clock as it reads now.
func (t *FaultTable) wallOf(v int64) time.Time { return wallTime(v, t.wallOffset()) }

// see records now as the latest table time seen, for readers on the pick
// path that must not read the clock (the capacity model's weights). Concurrent calls
// may store a slightly older time; it only moves forward otherwise.
func (t *FaultTable) see(now int64) {
	if now > t.seen.Load() {
		t.seen.Store(now)
	}
}

// addNanos is a + d, saturated at the int64 range, so that an isolation too
// long for it (math.MaxInt64 meaning "for ever") does not wrap around into
// the past.
func addNanos(a int64, d time.Duration) int64 {
	switch {
	case d > 0 && a > math.MaxInt64-int64(d):
		return math.MaxInt64
	case d < 0 && a < math.MinInt64-int64(d):
		return math.MinInt64
	}
	return a + int64(d)
}

// span is until - now as a duration, saturated at the int64 range.
func span(now, until int64) time.Duration {
	if now < 0 && until > math.MaxInt64+now {
		return math.MaxInt64
	}
	return time.Duration(until - now)
}

// Update records a send to broker that took latency: the item takes latency and
// reachable (v4 has none), and a positive isolation isolates it that long from
// now (v5 only ever extends an isolation; v4 overwrites it, so zero ends it).
// It allocates nothing for a broker the table knows.
func (t *FaultTable) Update(broker string, latency, isolation time.Duration, reachable bool) {
	if r, ok := t.update(broker, latency, isolation, reachable, ReasonExplicit, nil); ok && t.obs != nil {
		t.obs.OnIsolate(t.event(broker, ReasonExplicit, latency, r))
	}
}

// bump moves the isolation epoch on.
func (t *FaultTable) bump() { t.epoch.Add(1) }

// event is the IsolationEvent of the isolation r an update of broker
// carrying latency started or extended for reason, its end on the wall
// clock as it reads now (the clock is read only to report).
func (t *FaultTable) event(broker string, reason Reason, latency time.Duration, r ruleResult) IsolationEvent {
	return IsolationEvent{Broker: broker, Reason: reason, Latency: latency, Duration: r.given,
		Until: t.wallOf(r.until), Reachable: r.reachable, Extended: r.extended}
}

// update is Update with the reason the strategy knows, and the backoff
// policy (nil when off): a failure's isolation is lengthened by it, and an
// answer that isolates nothing forgives one unit of it. It returns what the
// mode's rule did, and whether it started or extended an isolation, for the
// caller to report (event).
func (t *FaultTable) update(broker string, latency, isolation time.Duration, reachable bool, reason Reason, bo isolationHook) (ruleResult, bool) {
	return t.updateSlot(t.slotFor(broker), latency, isolation, reachable, reason, bo)
}

// updateSlot is update on the broker's slot s, found already.
func (t *FaultTable) updateSlot(s *slot, latency, isolation time.Duration, reachable bool, reason Reason, bo isolationHook) (ruleResult, bool) {
	s.latency.Store(int64(latency))
	r := t.rule(s, isolation, reachable, reason, bo)
	s.setReachable(r.reachable)
	s.present.Store(true)
	t.ver.Add(1)
	return r, r.isolated
}

// updateRule is one mode's rule for what an update does to a broker's
// isolation.
type updateRule func(s *slot, isolation time.Duration, reachable bool, reason Reason, bo isolationHook) ruleResult

// ruleResult is what an update rule did.
type ruleResult struct {
	until     int64         // the isolation's end
	given     time.Duration // its length
	isolated  bool          // an isolation started or changed
	extended  bool          // ... one that was already running
	reachable bool          // the reachability to record
}

// update5 is 5.3.3's rule: a positive isolation only ever extends the
// current one, and reachability is recorded.
func update5(s *slot, isolation time.Duration, reachable bool, reason Reason, bo isolationHook) ruleResult {
	if isolation > 0 {
		until, given, ok, extended := s.extend(s.table.now(), isolation, reason == ReasonFailure, bo)
		return ruleResult{until: until, given: given, isolated: ok, extended: extended, reachable: reachable}
	}
	if bo != nil {
		bo.answered(s)
	}
	return ruleResult{given: isolation, reachable: reachable}
}

// update4 is 4.9.8's rule: the isolation is overwritten (a zero one ends
// it), and there is no reachability.
func update4(s *slot, isolation time.Duration, _ bool, _ Reason, _ isolationHook) ruleResult {
	now := s.table.now()
	until := addNanos(now, isolation)
	isolated, extended := s.overwrite(until, now)
	return ruleResult{until: until, given: isolation, isolated: isolated, extended: extended, reachable: true}
}

// extend isolates s for d from now if that ends later than its current
// isolation (v5). With the backoff policy bo, a failure's d is lengthened
// first. It returns the end it computed, the isolation it gave, and whether
// the isolation changed, and whether it was one already running (extended,
// not begun).
func (s *slot) extend(now int64, d time.Duration, failure bool, bo isolationHook) (until int64, given time.Duration, ok, extended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base := d
	if failure && bo != nil {
		d = bo.failureIsolation(s, d, now)
	}
	until = addNanos(now, d)
	if s.ended && until <= s.until.Load() {
		if failure && s.isolated.Load() && !s.failed.Swap(true) {
			s.table.bump()
		}
		return until, d, false, false
	}
	extended = s.isolated.Load()
	s.failed.Store(failure || (s.isolated.Load() && s.failed.Load()))
	if failure {
		s.trial.failedAt.Store(now)
	}
	s.ended = true
	s.until.Store(until)
	if failure && d > base {
		s.rec.baseUntil.Store(addNanos(now, base))
		s.rec.began.Store(now)
	} else {
		s.rec.baseUntil.Store(0)
	}
	s.setIsolated(true)
	s.arm(span(now, until))
	s.table.bump()
	return until, d, true, extended
}

// setIsolated sets the isolated flag, moving the flag epoch on when it
// flips. Caller must hold s.mu (every isolated flag write is under it).
func (s *slot) setIsolated(v bool) bool {
	if s.isolated.Swap(v) == v {
		return false
	}
	s.table.flags.Add(1)
	return true
}

// setReachable sets the reachable flag and reports whether it flipped; a
// flip moves the flag epoch on, and the isolation epoch too while s is
// isolated (the isolation cap ranks reachability).
func (s *slot) setReachable(v bool) bool {
	if s.reachable.Swap(v) == v {
		return false
	}
	s.table.flags.Add(1)
	if s.isolated.Load() {
		s.table.bump()
	}
	return true
}

// overwrite sets s's isolation end to until whatever it was (v4). It
// returns whether s is isolated now, and whether it was already.
func (s *slot) overwrite(until, now int64) (isolated, extended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	s.until.Store(until)
	if until > now {
		extended = s.isolated.Load()
		s.setIsolated(true)
		s.arm(span(now, until))
		return true, extended
	}
	s.setIsolated(false)
	if s.timer != nil {
		s.timer.Stop()
	}
	return false, false
}

// arm schedules the expiry check. Caller must hold s.mu.
func (s *slot) arm(d time.Duration) {
	if s.timer == nil {
		s.timer = s.table.clock.AfterFunc(d, s.expire)
		return
	}
	s.timer.Reset(d)
}

// expire runs when an isolation may have ended: it clears the isolated flag,
// or re-arms if the isolation was extended meanwhile.
func (s *slot) expire() {
	s.mu.Lock()
	now := s.table.now()
	recovered := false
	if u := s.until.Load(); now >= u {
		recovered = s.setIsolated(false)
	} else if s.isolated.Load() {
		s.arm(span(now, u))
	}
	s.mu.Unlock()
	if recovered {
		s.table.ver.Add(1)
		s.table.bump()
	}
	if recovered && s.present.Load() && s.table.obs != nil {
		s.table.obs.OnRecover(RecoveryEvent{Broker: s.name, At: s.table.wallOf(now)})
	}
}

// reset makes s absent: available, reachable, never isolated.
func (s *slot) reset() {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.setIsolated(false)
	s.until.Store(0)
	s.ended = false
	s.failed.Store(false)
	s.rec.baseUntil.Store(0)
	s.rec.reset()
	s.mu.Unlock()
	s.present.Store(false)
	s.setReachable(true)
	s.latency.Store(0)
	s.checkStamp.Store(0)
	s.backoff.strikes.Store(0)
	s.cap.state.Store(0)
	s.trial.next.Store(0)
	s.trial.level.Store(0)
	s.trial.slowAt.Store(0)
	s.trial.failedAt.Store(0)
	s.cap.answered.Store(0)
	s.table.ver.Add(1)
	s.table.bump()
}

// IsAvailable reports whether broker is not isolated.
func (t *FaultTable) IsAvailable(broker string) bool {
	s := t.lookup(broker)
	return s == nil || !s.isolated.Load()
}

// IsReachable reports whether broker is reachable.
func (t *FaultTable) IsReachable(broker string) bool {
	s := t.lookup(broker)
	return s == nil || s.reachable.Load()
}

// setReachable marks a broker that has an item reachable or not; it reports
// whether the broker has an item.
func (t *FaultTable) setReachable(broker string, reachable bool) bool {
	s := t.lookup(broker)
	if s == nil || !s.present.Load() {
		return false
	}
	s.setReachable(reachable)
	t.ver.Add(1)
	return true
}

// Remove drops broker's item.
func (t *FaultTable) Remove(broker string) {
	t.mu.Lock()
	m := *t.slots.Load()
	s, ok := m[broker]
	if ok {
		nm := maps.Clone(m)
		delete(nm, broker)
		t.dropped(s)
		t.slots.Store(&nm)
		t.gen.Add(1)
	}
	t.mu.Unlock()
	if ok {
		s.reset()
	}
}

// retain drops every broker for which keep returns false, items and the
// table's bookkeeping for brokers without items alike, and returns the names
// of the dropped brokers that had items, sorted.
func (t *FaultTable) retain(keep func(broker string) bool) []string {
	t.mu.Lock()
	m := *t.slots.Load()
	var gone []*slot
	nm := make(map[string]*slot, len(m))
	for n, s := range m {
		if keep(n) {
			nm[n] = s
		} else {
			gone = append(gone, s)
		}
	}
	if len(gone) > 0 {
		t.dropped(gone...)
		t.slots.Store(&nm)
		t.gen.Add(1)
	}
	t.mu.Unlock()
	var names []string
	for _, s := range gone {
		if s.present.Load() {
			names = append(names, s.name)
		}
		s.reset()
	}
	slices.Sort(names)
	return names
}

// presentSlots returns the slots that have items, sorted by name.
func (t *FaultTable) presentSlots() []*slot {
	m := *t.slots.Load()
	out := make([]*slot, 0, len(m))
	for _, s := range m {
		if s.present.Load() {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *slot) int { return strings.Compare(a.name, b.name) })
	return out
}

// item is s's item, its times on the wall clock with wallOffset's off (a
// table time of 0, never isolated or never checked, is the Unix epoch).
func (s *slot) item(off int64) FaultItem {
	wall := func(v int64) time.Time {
		if v == 0 {
			return time.Unix(0, 0)
		}
		return wallTime(v, off)
	}
	return FaultItem{
		Broker:        s.name,
		Latency:       time.Duration(s.latency.Load()),
		IsolatedUntil: wall(s.until.Load()),
		Available:     !s.isolated.Load(),
		Reachable:     s.reachable.Load(),
		CheckStamp:    wall(s.checkStamp.Load()),
	}
}

// Items returns a snapshot of every item, sorted by broker name, its times on
// the wall clock as it reads at the call.
func (t *FaultTable) Items() []FaultItem {
	slots := t.presentSlots()
	out := make([]FaultItem, len(slots))
	off := t.wallOffset()
	for i, s := range slots {
		out[i] = s.item(off)
	}
	return out
}

// Item returns broker's item, if it has one, its times on the wall clock as
// it reads at the call.
func (t *FaultTable) Item(broker string) (FaultItem, bool) {
	s := t.lookup(broker)
	if s == nil || !s.present.Load() {
		return FaultItem{}, false
	}
	return s.item(t.wallOffset()), true
}

// WorstIndex returns the index PickLeastBad steps (the reference's
// whichItemWorst).
func (t *FaultTable) WorstIndex() *route.Index { return t.worst }

// Resync re-derives every isolated flag from the table time and re-arms the
// expiry timers. Only a clock moved back as a whole needs it (clock.Manual's
// Rewind, as the trace language does; never a wall step): an isolation that had
// ended is in force again while the table time is before its end.
func (t *FaultTable) Resync() {
	now := t.now()
	for _, s := range t.presentSlots() {
		s.mu.Lock()
		if u := s.until.Load(); s.ended && now < u {
			s.setIsolated(true)
			s.arm(span(now, u))
		} else {
			s.setIsolated(false)
		}
		s.mu.Unlock()
	}
	t.ver.Add(1)
	t.bump()
}
