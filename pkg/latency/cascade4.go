package latency

import (
	"math"

	"github.com/mqfault/mqfault/pkg/route"
)

// cascade4 is RocketMQ 4.9.8's MQFaultStrategy.selectOneMessageQueue: one
// scan for an available broker, then the least-bad broker; off, the publish
// info's "avoid the last broker" pick. User filters join as Select says.
type cascade4 struct{ s *Strategy }

func (c4 cascade4) pick(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	s := c4.s
	n := info.Len()
	if n == 0 {
		return Pick{}, false
	}
	if !s.faultOn.Load() {
		return c4.pickOff(info, in)
	}
	b := s.bind(info)
	start := info.Index().Next()
	if p, ok := c4.scan(info, b, start); ok {
		return s.picked(info, b, p, StageAvailable)
	}
	if len(s.filters) > 0 {
		c := newCursor(info.Index(), n)
		for range n {
			p := c.next()
			if s.admit(info, p) {
				c.done()
				return s.picked(info, b, p, StageFiltered)
			}
		}
		c.done()
	}
	var broker string
	var sl *slot
	var ok bool
	if s.walkOnly {
		broker, ok = s.table.pickLeastBadSorting(-1)
	} else {
		broker, sl, ok = s.table.leastBad()
	}
	nums, bi := -1, -1
	if ok {
		if sl == nil {
			sl = s.table.lookup(broker)
		}
		if bi = b.brokerOf(sl); bi >= 0 {
			nums = b.writeNums[bi]
		} else {
			nums = info.WriteQueueNums(broker)
		}
	}
	if nums > 0 {
		// The reference makes an unfiltered pick, keeps only its topic, and
		// takes the queue id from one more move of the index.
		q := info.QueueRef(route.Position(info.Index().Add(1), n))
		id := int(info.Index().Next()) % nums
		if s.stages != nil {
			s.stages.add(StageLeastBad)
		}
		pk := Pick{Queue: b.leastBadQueue(bi, q.Topic, broker, nums, id), Stage: StageLeastBad, Reporter: s}
		if sl != nil {
			pk.slot = sl.handle
		}
		return pk, true
	}
	if ok {
		s.table.Remove(broker)
	}
	return s.picked(info, b, route.Position(info.Index().Add(1), n), StageAny)
}

// scan is 4.9.8's scan for an available broker from start: over an
// up-to-date flag summary it looks only at available positions (none: no
// probe at all), else it probes every position.
func (c4 cascade4) scan(info *route.PublishInfo, b *binding, start int32) (int, bool) {
	s := c4.s
	n := len(b.entries)
	// Without a wrap of start+i, the scan is one turn round the positions
	// from start % n.
	if f := b.sum; f != nil && !s.walkOnly && int64(start)+int64(n)-1 <= math.MaxInt32 {
		if e, ok := f.fresh(s.table, b.entries); ok {
			p, found := -1, false
			if f.nAvail.Load() > 0 {
				p0 := int(start) % n
				for d := 0; d < n; {
					k, ok := f.avail.next((p0+d)%n, n, n-d)
					if !ok {
						break
					}
					if q := (p0 + d + k) % n; s.admit(info, q) {
						p, found = q, true
						break
					}
					d += k + 1
				}
			}
			if f.valid(e) {
				return p, found
			}
		}
	}
	for i := range n {
		p := scanPosition(start, i, n)
		if !b.entries[p].s.isolated.Load() && s.admit(info, p) {
			return p, true
		}
	}
	return -1, false
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

// pickOff is 4.9.8 with fault tolerance off: up to Len() unfiltered picks
// for a queue not on the last broker, then one more. User filters first get a
// pass of their own (with the last broker avoided), then one alone.
func (c4 cascade4) pickOff(info *route.PublishInfo, in PickInfo) (Pick, bool) {
	s := c4.s
	n := info.Len()
	last := lastBrokerIndex(info, in.LastBroker)
	c := newCursor(info.Index(), n)
	if len(s.filters) > 0 {
		for range n {
			p := c.next()
			if int32(info.BrokerOf(p)) != last && s.admit(info, p) {
				c.done()
				return s.picked(info, nil, p, StageNotLast)
			}
		}
		for range n {
			p := c.next()
			if s.admit(info, p) {
				c.done()
				return s.picked(info, nil, p, StageFiltered)
			}
		}
	}
	p, st := avoidLast(info, &c, in.LastBroker)
	c.done()
	return s.picked(info, nil, p, st)
}

// avoidLast is the publish info's "avoid the last broker" pick from c: with
// no last broker one probe; otherwise up to n probes for a queue not on it,
// and after n misses one more. It leaves the moves in c for the caller to
// publish.
func avoidLast(info *route.PublishInfo, c *cursor, last string) (int, Stage) {
	if last == "" {
		return c.next(), StageNotLast
	}
	lb := lastBrokerIndex(info, last)
	for range c.n {
		if p := c.next(); int32(info.BrokerOf(p)) != lb {
			return p, StageNotLast
		}
	}
	return c.next(), StageAny
}

// SelectAvoiding is the reference's TopicPublishInfo.selectOneMessageQueue
// (lastBrokerName), 4.9.8's pick with fault tolerance off: with no last broker
// one move of the index, else up to Len() moves for a queue not on last, then
// one more; ok is false only when info has no queues. The queue is info's (do
// not modify it). Safe for concurrent use; allocates nothing.
func SelectAvoiding(info *route.PublishInfo, last string) (q *route.MessageQueue, ok bool) {
	if info.Len() == 0 {
		return nil, false
	}
	c := newCursor(info.Index(), info.Len())
	p, _ := avoidLast(info, &c, last)
	c.done()
	return info.QueueRef(p), true
}
