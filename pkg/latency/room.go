package latency

import "time"

// Room is the capacity model's account of the room around a broker
// (Strategy.Room), read by the send loop's rules (producer.RoomModel). The
// zero Room (the model off) keeps them as the reference behaves.
type Room struct {
	Here, Answering bool          // the broker's weight is 1/2 or more; it answered within a second
	Latency         time.Duration // the broker's answers' average latency, faded to now (0: none)
	// Other brokers: known, reachable, reachable with room, serving (reachable, not isolated), serving with room.
	Others, Reachable, ReachableRoom, Serving, ServingRoom int
	// ElsewhereLatency is the least average latency, faded to now, of the
	// other reachable brokers: 0 when one has never answered, or none is
	// reachable (one that stopped answering fades towards 0).
	ElsewhereLatency time.Duration
}

// answeredWindow is how recently a broker must have answered to count as
// Answering: one that stopped (a blackhole, a freeze) is no room.
const answeredWindow = time.Second

// RetryElsewhere: no other broker is serving, or one that is has room.
func (r Room) RetryElsewhere() bool {
	return r.Serving == 0 || r.ServingRoom > 0
}

// AttemptElsewhere: another attempt may go somewhere (no other broker is
// known, or another is reachable, with room too when this one has room).
func (r Room) AttemptElsewhere() bool {
	switch {
	case r.Others == 0:
		return true
	case r.Here:
		return r.ReachableRoom > 0
	default:
		return r.Reachable > 0
	}
}

// Only: this broker has room and answers, and no other reachable one has.
func (r Room) Only() bool {
	return r.Here && r.Answering && r.Others > 0 && r.ReachableRoom == 0
}

// Room returns the room around broker now: safe for concurrent use, no lock.
func (s *Strategy) Room(broker string) Room {
	m := s.policies.capacity
	if m == nil {
		return Room{}
	}
	return s.table.room(m, broker, s.table.now())
}

// room is Room at table time now, under model m.
func (t *FaultTable) room(m *capacityModel, broker string, now int64) Room {
	var r Room
	u := t.units(now)
	slots := t.slots.Load()
	if slots == nil {
		return r
	}
	for name, sl := range *slots {
		spare := !m.noRoom(sl, u)
		if name == broker {
			r.Here = spare
			r.Answering = sl.cap.answeredSince(now - int64(answeredWindow))
			r.Latency = time.Duration(sl.cap.fadedLat(now))
			continue
		}
		r.Others++
		if !sl.reachable.Load() {
			continue
		}
		r.Reachable++
		if l := time.Duration(sl.cap.fadedLat(now)); r.Reachable == 1 || l < r.ElsewhereLatency {
			r.ElsewhereLatency = l
		}
		serving := !sl.isolated.Load()
		if serving {
			r.Serving++
		}
		if spare {
			r.ReachableRoom++
			if serving {
				r.ServingRoom++
			}
		}
	}
	return r
}
