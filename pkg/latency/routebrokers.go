package latency

import (
	"sync"

	"github.com/mqfault/mqfault/pkg/route"
)

// routeBrokers remembers which brokers each route announced to a strategy
// (RouteChanged) names, so the strategy can drop the fault items of brokers
// that none of them names any more.
type routeBrokers struct {
	mu      sync.Mutex // guards byTopic; held across an eviction
	byTopic map[string][]string
}

// noteRoute records info's brokers as its topic's and evicts what no route
// names.
func (s *Strategy) noteRoute(info *route.PublishInfo) {
	r := &s.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byTopic == nil {
		r.byTopic = map[string][]string{}
	}
	r.byTopic[info.Topic()] = info.Brokers()
	s.evictLocked()
}

// forgetRoute drops topic's brokers and evicts what no route names.
func (s *Strategy) forgetRoute(topic string) {
	r := &s.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byTopic[topic]; !ok {
		return
	}
	delete(r.byTopic, topic)
	s.evictLocked()
}

// evictLocked drops the fault items of brokers that no announced route names
// (the reference keeps them until a detector round finds no address for
// them). s.routes.mu is held.
func (s *Strategy) evictLocked() {
	names := make(map[string]struct{})
	for _, brokers := range s.routes.byTopic {
		for _, b := range brokers {
			names[b] = struct{}{}
		}
	}
	keep := func(b string) bool { _, ok := names[b]; return ok }
	if gone := s.table.Retain(keep); len(gone) > 0 {
		s.log.Debug("latency: dropped fault items of brokers no route names", "brokers", gone)
	}
}
