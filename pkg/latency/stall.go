package latency

import (
	"strings"
	"sync/atomic"
	"time"
)

// This file holds the capacity model's account of a stalled broker.
//
// A busy answer says a broker has no room; its remark says why. A broker
// that is full (its send pool over its limit, or a long send queue) has
// room again as soon as its load falls, and the model lowers its share for
// a short time (capacity.go). A broker whose store has stalled (a disk,
// page cache, GC or replication stall: a busy page cache's refusal, or a
// send queue's timeout with hardly any send queued, which only a broker that
// stopped serving gives) has no room at any load until the stall ends, and
// every send queued at it waits the whole stall. So a stall answer also
// isolates the broker, for stallBase (1 s) the first time: a broker whose
// one busy answer after a restart names an empty queue is back within that.
// A broker that stalls again within stallMemory times its last stall
// isolation after that isolation ended is a repeat offender (a periodic GC,
// a disk that keeps stalling): each such stall isolates it four times as
// long as the last, up to stallMax; one that stalls after a longer quiet is
// forgiven and starts again at stallBase. A stall isolation is the broker's
// own, not a failure: it raises no backoff level, the broker stays
// reachable, and the isolation cap counts it as any other.
// A stall isolation costs the cluster the stalled broker's capacity, which
// between its stalls it serves; so a full broker's busy answer
// (fullAnswer) that leaves no other broker outside an isolation with room
// ends every stall isolation at once (relieve): the others are full, and
// the stalled broker is room. A stall answer after that isolates it again,
// counted as a repeat.
// The answers of the sends already queued at the stalled broker arrive
// while its isolation holds and change nothing.

// stallState is one broker's stall isolations. Safe for concurrent use.
type stallState struct {
	level atomic.Int32 // repeats counted at the last stall isolation
	until atomic.Int64 // table time the last stall isolation ends; 0 none
}

// stallMaxLevel bounds the repeats counted (stallMax bounds the isolation).
const stallMaxLevel = 6

// A stall within stallMemory times the last stall isolation after it ended
// is a repeat: its isolation is 1<<stallGrowth (4) times the last one, up to
// stallMax.
const (
	stallMemory = 8
	stallGrowth = 2
)

// stallBase is a first stall's isolation: a broker whose one busy answer
// after a restart names an empty queue is back within it.
const stallBase = time.Second

// stallMax is the longest stall isolation.
const stallMax = time.Minute

// stall isolates a's broker for a stall answer o seen at table time now.
func (m *capacityModel) stall(a attempt, o Outcome, now int64) {
	st := &a.slot.cap.stall
	until := st.until.Load()
	if until > now {
		return // an isolation for this stall holds
	}
	old := st.level.Load()
	lv := int32(0)
	if until != 0 && now-until < stallMemory*(int64(stallBase)<<(stallGrowth*int64(old))) {
		lv = min(old+1, stallMaxLevel)
	}
	d := min(stallBase<<(stallGrowth*int64(lv)), stallMax)
	if !st.until.CompareAndSwap(until, now+int64(d)) {
		return // a concurrent answer isolated it
	}
	st.level.Store(lv)
	for end := now + int64(d); ; {
		h := m.stallHeld.Load()
		if h >= end || m.stallHeld.CompareAndSwap(h, end) {
			break
		}
	}
	t := a.table.t
	if r, ok := t.updateSlot(a.slot, max(o.Latency, 0), d, true, ReasonStall, nil); ok && t.obs != nil {
		t.obs.OnIsolate(t.event(a.broker, ReasonStall, max(o.Latency, 0), r))
	}
}

// stallRemark reports whether a busy answer's remark says the broker's
// store has stalled, not that it is full: a busy page cache's refusal
// ("[REJECTREQUEST]...", the send processor's rejectRequest), a send drained
// from the queue when the page cache turned busy ("[PCBUSY_CLEAN_QUEUE]..."),
// or a send queue's timeout with fewer than stallQueue queued
// ("[TIMEOUT_CLEAN_QUEUE]... size of queue: K"): a queue that short fills a
// wait only at a broker that stopped serving. It allocates nothing.
func stallRemark(remark string) bool {
	switch {
	case strings.HasPrefix(remark, "[REJECTREQUEST]"), strings.HasPrefix(remark, "[PCBUSY_CLEAN_QUEUE]"):
		return true
	case strings.HasPrefix(remark, "[TIMEOUT_CLEAN_QUEUE]"):
		const key = "size of queue: "
		i := strings.LastIndex(remark, key)
		if i < 0 {
			return false
		}
		k, digits := 0, 0
		for _, c := range []byte(remark[i+len(key):]) {
			if c < '0' || c > '9' || k >= stallQueue {
				break
			}
			k, digits = k*10+int(c-'0'), digits+1
		}
		return digits > 0 && k < stallQueue
	}
	return false
}

// stallQueue is the queue length below which a send queue's timeout is a
// stall's (stallRemark).
const stallQueue = 8

// relieve ends every stall isolation of a's table when a full busy answer
// of a's broker, seen at table time now, leaves it below roomWeight and no
// other broker reachable, not isolated and with room: the cluster without
// the stalled brokers is full, and a stalled broker, which serves between
// its stalls, is room it would otherwise lose.
func (m *capacityModel) relieve(a attempt, now int64) {
	if now >= m.stallHeld.Load() {
		return // no stall isolation holds
	}
	t := a.table.t
	switch r := t.room(m, a.broker, now); {
	case r.Here:
		return // the broker still has room
	case r.Others == 0 || r.ServingRoom > 0:
		return // another broker has room, or the table knows no other
	}
	for _, sl := range *t.slots.Load() {
		if sl.cap.stall.until.Load() > now {
			sl.endStall(now)
		}
	}
}

// endStall ends s's stall isolation at now, unless something else (a
// failure, or latency) isolated it past the stall: it moves the isolation's
// end to now and lets expire clear it (and tell the observer).
func (s *slot) endStall(now int64) {
	st := &s.cap.stall
	until := st.until.Load()
	if until <= now {
		return
	}
	s.mu.Lock()
	end := s.until.Load() == until && !s.failed.Load()
	if end {
		s.until.Store(now)
	}
	s.mu.Unlock()
	st.until.CompareAndSwap(until, now)
	if end {
		s.expire()
	}
}

// fullAnswer reports whether a busy answer's remark says the broker is
// full: its send pool refused at once (FullRemark), or a send waited out a
// send queue of stallQueue or more.
func fullAnswer(remark string) bool {
	return FullRemark(remark) || strings.HasPrefix(remark, "[TIMEOUT_CLEAN_QUEUE]") && !stallRemark(remark)
}
