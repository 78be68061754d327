package rocketmqgo

import (
	"hash/fnv"
	"sync"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/mqfault/mqfault/pkg/route"
)

// slotMode says how the selector answers for one client call.
type slotMode uint8

const (
	// modePick: the queue the strategy picked for the attempt (slot.want).
	modePick slotMode = iota
	// modeHash: the client's key → queue rule for the sharding key.
	modeHash
	// modeManual: the message's Queue, as set.
	modeManual
	// modeProbe: record the queue list and answer nil, so the client sends
	// nothing.
	modeProbe
)

// slot carries one client call's instructions to the queue selector, which
// has no context of its own: the wrapper stores it under the message pointer
// before the call and removes it after. The client calls the selector on
// the calling goroutine, so the selector's answer fields are read after the
// call without further synchronisation.
type slot struct {
	mode  slotMode
	topic string             // the topic as the user set it (before any namespace)
	want  route.MessageQueue // modePick

	chosen *primitive.MessageQueue // what the selector answered
	missed bool                    // modePick: want was not in the client's list
}

// selector is the producer.QueueSelector installed in the client. It answers
// the wrapper's calls from their slots, and every other call (Request and
// RequestAsync pass straight through the client) as the client would: the
// sharding key's queue, else the client's own round robin.
type selector struct {
	slots    sync.Map // *primitive.Message -> *slot
	learn    func(topic string, mqs []*primitive.MessageQueue)
	fallback producer.QueueSelector
}

var _ producer.QueueSelector = (*selector)(nil)

func newSelector(learn func(string, []*primitive.MessageQueue)) *selector {
	return &selector{learn: learn, fallback: producer.NewRoundRobinQueueSelector()}
}

// Select implements producer.QueueSelector. It is safe for concurrent use
// and does not block.
func (s *selector) Select(msg *primitive.Message, mqs []*primitive.MessageQueue, lastBrokerName string) *primitive.MessageQueue {
	v, ok := s.slots.Load(msg)
	if !ok {
		if key := msg.GetShardingKey(); key != "" {
			return hashQueue(key, mqs)
		}
		if len(mqs) == 0 {
			return nil
		}
		return s.fallback.Select(msg, mqs, lastBrokerName)
	}
	sl := v.(*slot)
	if len(mqs) > 0 && s.learn != nil {
		s.learn(sl.topic, mqs)
	}
	switch sl.mode {
	case modeProbe:
		sl.chosen = nil
	case modeHash:
		sl.chosen = hashQueue(msg.GetShardingKey(), mqs)
	case modeManual:
		sl.chosen = msg.Queue
	default:
		sl.chosen = findQueue(mqs, sl.want)
		sl.missed = sl.chosen == nil
	}
	return sl.chosen
}

// hold installs sl for msg's next client call; the returned func removes it.
func (s *selector) hold(msg *primitive.Message, sl *slot) func() {
	s.slots.Store(msg, sl)
	return func() { s.slots.Delete(msg) }
}

// findQueue returns the queue of mqs on want's broker with want's id.
func findQueue(mqs []*primitive.MessageQueue, want route.MessageQueue) *primitive.MessageQueue {
	for _, q := range mqs {
		if q != nil && q.QueueId == want.QueueID && q.BrokerName == want.BrokerName {
			return q
		}
	}
	return nil
}

// hashQueue is the client's key → queue rule (producer.NewHashQueueSelector
// for a message with a sharding key): the 32-bit FNV-1a hash of the key,
// converted to int, modulo the number of queues, negated when negative (on
// 32-bit platforms), indexing the list the client passes. Keeping it exact
// means switching to the wrapper moves no key to another queue.
func hashQueue(key string, mqs []*primitive.MessageQueue) *primitive.MessageQueue {
	if len(mqs) == 0 {
		return nil
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	id := int(h.Sum32()) % len(mqs)
	if id < 0 {
		id = -id
	}
	return mqs[id]
}
