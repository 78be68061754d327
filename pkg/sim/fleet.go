package sim

import (
	"math/bits"
	"time"
)

// FleetResult is what a fleet of producers (Scenario.Producers above 1) did
// together, beyond the counts of Result, which add up every producer's.
type FleetResult struct {
	// Producers is the fleet's size.
	Producers int
	// Herding holds, per second of the series, the largest share of the
	// producers that left one broker within that second: isolated it at
	// some moment of the second (the producer's fault table held it not
	// available), or sent it less than half of what round robin over its
	// route would have (judged only for a producer that made at least as
	// many attempts in the second as its route has queues, so round robin
	// would have reached every broker, and whose route did not change
	// within the second).
	Herding []float64
	// HerdingBroker holds, per second, the index (in the scenario's order)
	// of the broker that share left, -1 in a second no producer left any.
	HerdingBroker []int
	// Peak is the largest of Herding, first reached in second PeakAt, on
	// broker PeakBroker ("" when no producer ever left a broker).
	Peak       float64
	PeakAt     int
	PeakBroker string

	// Moves holds, per second, the largest share of the producers that
	// moved one broker's share at once: that were away from the broker in
	// that second and not in the one before (left it), or the reverse
	// (came back), whichever is more. Away is Herding's: isolated at some
	// moment of the second, or sent less than half of round robin's share
	// in a second judged by traffic; a second not judged keeps the traffic
	// verdict of the last one judged. Herding counts a producer in every
	// second it stays away (a down broker is left by all, rightly, for as
	// long as it is down); Moves counts it once when it leaves and once
	// when it comes back, so a second in which most of a fleet moves
	// together is a synchronised storm, a high figure between faults'
	// edges a herd.
	Moves       []float64
	MovesBroker []int
	// MovesPeak is the largest of Moves, first reached in second
	// MovesPeakAt, on broker MovesPeakBroker ("" when no producer moved).
	MovesPeak       float64
	MovesPeakAt     int
	MovesPeakBroker string
}

// herding counts, per second and broker, the producers of a fleet that left
// the broker in that second. It belongs to a run's goroutine, except that
// each producer's part is guarded by the producer's timeline.
type herding struct {
	brokers, seconds, producers int
	queues                      []int   // per broker: its queues
	left                        []int32 // per second and broker: producers away
	gone, back                  []int32 // per second and broker: producers that left, came back
	prods                       []producerHerd
}

// producerHerd is one producer's part of the herding count: the second it
// is counting and what it did in it. It is small (a count per broker and two
// bitsets), so a fleet of thousands stays small.
type producerHerd struct {
	h         *herding
	route     []uint64 // the brokers the producer's route names
	total     int      // their queues
	changed   bool     // the route changed during sec: its traffic is not judged
	sec       int
	attempts  int32
	perBroker []int32
	isoSec    []uint64 // brokers isolated at some moment of sec
	isoNow    []uint64 // brokers isolated now
	off       []uint64 // brokers sent under half of round robin's share in the last second judged
	away      []uint64 // brokers the producer was away from in the last second counted
}

func newHerding(sc *Scenario, seconds, producers int) *herding {
	h := &herding{brokers: len(sc.Brokers), seconds: seconds, producers: producers,
		queues: make([]int, len(sc.Brokers)),
		left:   make([]int32, seconds*len(sc.Brokers)), gone: make([]int32, seconds*len(sc.Brokers)),
		back: make([]int32, seconds*len(sc.Brokers)), prods: make([]producerHerd, producers)}
	for i, b := range sc.Brokers {
		h.queues[i] = b.Queues
	}
	words := (h.brokers + 63) / 64
	// One allocation for every producer's counts and bitsets.
	counts := make([]int32, producers*h.brokers)
	const nsets = 5
	sets := make([]uint64, nsets*producers*words)
	set := func(p, k int) []uint64 { i := (nsets*p + k) * words; return sets[i : i+words : i+words] }
	for p := range h.prods {
		h.prods[p] = producerHerd{h: h, perBroker: counts[p*h.brokers : (p+1)*h.brokers : (p+1)*h.brokers],
			isoSec: set(p, 0), isoNow: set(p, 1), route: set(p, 2), off: set(p, 3), away: set(p, 4)}
	}
	return h
}

func (h *herding) producer(p int) *producerHerd { return &h.prods[p] }

// setRoute makes the producer's route the brokers of set (copied): round
// robin's share is reckoned over it.
func (ph *producerHerd) setRoute(set []uint64) {
	copy(ph.route, set)
	ph.total = 0
	for b, q := range ph.h.queues {
		if set[b/64]&(1<<(b%64)) != 0 {
			ph.total += q
		}
	}
}

func (ph *producerHerd) routes(b int) bool { return ph.route[b/64]&(1<<(b%64)) != 0 }

func (h *herding) second(at int64) int {
	return min(int(at/int64(time.Second)), h.seconds-1)
}

// roll moves the producer's count to the second of now, closing the one it
// held and counting the seconds in between (in which it made no attempt and
// its table did not change) by the isolations in force through them.
func (ph *producerHerd) roll(now int64) {
	s := ph.h.second(now)
	if s <= ph.sec {
		return
	}
	ph.flush()
	for k := ph.sec + 1; k < s; k++ {
		ph.h.count(k, ph.isoNow)
		ph.moved(k, ph.isoNow)
	}
	ph.sec = s
	ph.changed = false
	ph.attempts = 0
	clear(ph.perBroker)
	copy(ph.isoSec, ph.isoNow)
}

// flush counts the brokers the producer left in the second it holds.
func (ph *producerHerd) flush() {
	h := ph.h
	judge := !ph.changed && ph.total > 0 && int(ph.attempts) >= ph.total
	row := h.left[ph.sec*h.brokers : (ph.sec+1)*h.brokers]
	for b := range h.brokers {
		isolated := ph.isoSec[b/64]&(1<<(b%64)) != 0
		// fewer than half of what round robin over its route would have
		// sent it (a broker its route does not name is not its choice)
		off := judge && ph.routes(b) && 2*int64(ph.perBroker[b])*int64(ph.total) < int64(ph.attempts)*int64(h.queues[b])
		if isolated || off {
			row[b]++
		}
		if judge {
			if off {
				ph.off[b/64] |= 1 << (b % 64)
			} else {
				ph.off[b/64] &^= 1 << (b % 64)
			}
		}
	}
	ph.moved(ph.sec, ph.isoSec)
}

// moved counts, in second k, the brokers the producer left or came back to:
// those isolated in k (iso) or off by traffic, against the second before.
func (ph *producerHerd) moved(k int, iso []uint64) {
	h := ph.h
	gone, back := h.gone[k*h.brokers:(k+1)*h.brokers], h.back[k*h.brokers:(k+1)*h.brokers]
	for w := range ph.away {
		now := iso[w] | ph.off[w]
		for d := now &^ ph.away[w]; d != 0; d &= d - 1 {
			gone[w*64+bits.TrailingZeros64(d)]++
		}
		for d := ph.away[w] &^ now; d != 0; d &= d - 1 {
			back[w*64+bits.TrailingZeros64(d)]++
		}
		ph.away[w] = now
	}
}

// count counts the brokers of set as left in second k.
func (h *herding) count(k int, set []uint64) {
	row := h.left[k*h.brokers : (k+1)*h.brokers]
	for w, word := range set {
		for word != 0 {
			b := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			row[b]++
		}
	}
}

func (ph *producerHerd) isolated(now int64, b int, on bool) {
	ph.roll(now)
	if on {
		ph.isoSec[b/64] |= 1 << (b % 64)
		ph.isoNow[b/64] |= 1 << (b % 64)
	} else {
		ph.isoNow[b/64] &^= 1 << (b % 64)
	}
}

func (ph *producerHerd) attempt(now int64, b int) {
	ph.roll(now)
	ph.attempts++
	ph.perBroker[b]++
}

// finish counts the producer up to the run's end.
func (ph *producerHerd) finish(end int64) {
	ph.roll(end)
	ph.flush()
	ph.sec = ph.h.seconds // nothing more is counted
}

// result is the fleet's figure per second and its peak.
func (h *herding) result(sc *Scenario) *FleetResult {
	r := &FleetResult{Producers: h.producers, Herding: make([]float64, h.seconds), HerdingBroker: make([]int, h.seconds)}
	peak := int32(0)
	for k := range h.seconds {
		r.HerdingBroker[k] = -1
		best := int32(0)
		for b, n := range h.left[k*h.brokers : (k+1)*h.brokers] {
			if n > best {
				best, r.HerdingBroker[k] = n, b
			}
		}
		r.Herding[k] = float64(best) / float64(h.producers)
		if best > peak {
			peak, r.Peak, r.PeakAt, r.PeakBroker = best, r.Herding[k], k, sc.Brokers[r.HerdingBroker[k]].Name
		}
	}
	r.Moves, r.MovesBroker = make([]float64, h.seconds), make([]int, h.seconds)
	peak = 0
	for k := range h.seconds {
		r.MovesBroker[k] = -1
		best := int32(0)
		for b := range h.brokers {
			if n := max(h.gone[k*h.brokers+b], h.back[k*h.brokers+b]); n > best {
				best, r.MovesBroker[k] = n, b
			}
		}
		r.Moves[k] = float64(best) / float64(h.producers)
		if best > peak {
			peak, r.MovesPeak, r.MovesPeakAt, r.MovesPeakBroker = best, r.Moves[k], k, sc.Brokers[r.MovesBroker[k]].Name
		}
	}
	return r
}
