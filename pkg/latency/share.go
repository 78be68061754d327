package latency

// This file holds share, the capacity model's (capacity.go) rules for
// moving a first-stage pick to a second candidate, and how the candidate
// is drawn (partnerOf). All of it is on the pick path: no lock, no
// allocation, no clock read.

// share is the model's pick among the cascade's first-stage candidates: p
// is the queue the round robin landed on (available, and reachable), idx
// the index value its probe stood on, last the broker a retry avoids (-1
// for none); with strict (the cap's retry pass) the second candidate must
// be one nothing isolates. It returns p, or the queue the rules move the
// pick to. The rules, in the order share applies them, each deciding a
// case the later ones would decide otherwise:
//
//  1. trialStays: a send trial stays on p.
//  2. isolatedPartnerStays: an isolated partner takes share only when no
//     broker the pass takes has room or, outside the strict pass, the cap
//     releases it.
//  3. movesByWeight: the pick moves to the partner with probability
//     w_q - w_p, the latency term (latencyScaled) scaling w_p.
//
// A retry is placed by the same rules as a first attempt, from a random
// start (PickInfo.ResetIndex), so the brokers with room split the retries
// as they split the first attempts. Between them, a
// pick at full weight and not slow stays (no rule has anything to move);
// the partner is on another broker (partnerOf), and one on last or
// unreachable is no candidate. It takes no lock, allocates nothing and
// reads no clock (the table's last seen time stands for now): it is on the
// pick path.
func (c5 cascade5) share(b *binding, v *capView, p int, last int32, idx int32, strict bool) int {
	s := c5.s
	m := s.policies.capacity
	n := len(b.entries)
	if m == nil || n < 2 || len(s.filters) != 0 {
		return p
	}
	e := &b.entries[p]
	if trialStays(e) {
		return p
	}
	sp := e.s.cap.state.Load()
	if sp == 0 && e.s.cap.lat.Load() < int64(latencyFloor) {
		return p // never pushed back and not slow: full weight
	}
	now := s.table.seen.Load()
	u := s.table.units(now)
	wp := m.weightQ(sp, u)
	lp := e.s.cap.lat.Load()
	if lp >= int64(latencyFloor) {
		lp = e.s.cap.fadedLat(now)
	}
	if wp >= weightScale && lp < int64(latencyFloor) {
		return p
	}
	q := b.partnerOf(p, e.broker, last, b.draw(idx, p, e.broker))
	e2 := &b.entries[q]
	if e2.broker == e.broker || e2.broker == last || !e2.s.reachable.Load() {
		return p
	}
	if e2.s.isolated.Load() {
		// p has no room, nor has any other broker the pass takes.
		noRoom := wp < roomWeight && !c5.roomElsewhere(b, v, e.broker, last, strict, u)
		if isolatedPartnerStays(v, e2, strict, noRoom) {
			return p
		}
	}
	wq := m.weightQ(e2.s.cap.state.Load(), u)
	if lp >= int64(latencyFloor) {
		wp = latencyScaled(wp, lp, e2.s.cap.fadedLat(now))
	}
	if movesByWeight(wq, wp, idx) {
		return q
	}
	return p
}

// trialStays is share's first rule: a pick on an unreachable broker stays
// on p. The first stage takes an unreachable broker only as a send trial
// that reachOK claimed (trial.go): the pick is the trial, and moved
// elsewhere it would send nothing to the broker it is to test.
func trialStays(e *entry) bool { return !e.s.reachable.Load() }

// isolatedPartnerStays is share's second rule: a pick whose partner e2 is
// isolated stays on p, unless no broker the pass takes has room (noRoom:
// p has none, nor has any other broker the first stage takes, or in the
// cap's retry pass, strict, any other broker nothing isolates), or outside
// that pass the cap releases the partner. With no room anywhere, a broker
// that answers (reachable) but is isolated for its latency or a failure is
// room the cluster would otherwise lose, as the reference's reachable stage
// uses it once busy answers have isolated every broker. The strict pass
// wants a broker nothing isolates while one of those has room; without
// room among them, keeping off the isolated partner would send the retry
// back where it was refused and leave the partner's room unused.
func isolatedPartnerStays(v *capView, e2 *entry, strict, noRoom bool) bool {
	return e2.s.isolated.Load() && !noRoom && (strict || !v.releases(e2.broker))
}

// movesByWeight is share's third rule: the pick moves to the partner
// with probability wq - wp (the partner's weight and p's), what the partner
// has of room that p has not, so brokers that both push back keep round
// robin's spread and neither is left idle. The draw is the hash of the
// index value idx, so it reads no random source.
func movesByWeight(wq, wp uint64, idx int32) bool {
	// The hash's fraction h/2^32 below (wq - wp)/weightScale.
	return wq > wp && uint64(shareHash(idx))*weightScale < (wq-wp)<<32
}

// latencyScaled is the third rule's latency term: p's weight wp scaled
// down by the latency ratio when p's faded latency lp is more than
// latencyRatio times the partner's lq (and more than latencyFloor), so a
// slow broker gives share to a fast one even when neither pushes back.
func latencyScaled(wp uint64, lp, lq int64) uint64 {
	if lim := max(latencyRatio*lq, int64(latencyFloor)); lp > lim {
		return wp * uint64(lim) / uint64(lp)
	}
	return wp
}

// shareHash spreads the index value over 32 bits (a multiply and a
// xorshift, independent of partner's multiplier), so consecutive index
// values draw fractions spread over [0, 1).
func shareHash(idx int32) uint32 {
	h := uint32(idx) * 0x85EBCA6B
	h ^= h >> 15
	h *= 0xC2B2AE35
	h ^= h >> 13
	return h
}

// partnerOf is the second candidate for position p, whose broker is broker,
// for draw number k (binding.draw): a position on another broker, and not
// on last (a retry's last broker; -1 for none) while there is one. It
// draws partner with k and, while the draw is on either, with
// partnerDraws-1 more hashes of k, then walks on from the last draw to the
// first position on neither (the last draw when there is none). Drawing
// again rather than walking keeps the candidate spread over the other
// brokers whatever the order of the route's queues. No lock, no
// allocation: it is on the pick path.
func (b *binding) partnerOf(p int, broker, last int32, k int32) int {
	n := len(b.entries)
	q := partner(p, n, k)
	for d := 1; d < partnerDraws; d++ {
		if br := b.entries[q].broker; br != broker && br != last {
			return q
		}
		q = partner(p, n, int32(shareHash(k+int32(d))))
	}
	for range n {
		if br := b.entries[q].broker; br != broker && br != last {
			return q
		}
		if q++; q == n {
			q = 0
		}
	}
	return q
}

// partnerDraws is how many draws partnerOf makes before it walks.
const partnerDraws = 4

// partner is a second candidate for position p of n (n > 1) for draw k:
// another position, p plus an offset whose fraction of n-1 is k times the
// golden ratio's (mod 1), so consecutive draws spread evenly over all n-1.
func partner(p, n int, k int32) int {
	q := p + 1 + int((uint64(uint32(k)*0x9E3779B9)*uint64(n-1))>>32)
	if q >= n {
		q -= n
	}
	return q
}
