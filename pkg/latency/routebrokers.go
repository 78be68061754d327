package latency

import (
	"sync"

	"github.com/mqfault/mqfault/pkg/route"
)

// A fault table drops the items of brokers that no route names any more (the
// reference keeps them until a detector round finds no address for them).
// Several strategies may keep their state in one table (withFaultTable), so
// the table asks all of them: each strategy holds a claim on the table, the
// brokers of the routes announced to it (RouteChanged, RouteRemoved), and a
// broker's item is dropped only when no claim names it. A strategy announced
// no route yet may pick any broker, so its claim names every broker and the
// table drops nothing while it holds one; Close gives the claim up. Claims
// change on route announcements only: the pick path never sees them.

// routeClaims is a fault table's claims.
type routeClaims struct {
	mu   sync.Mutex     // guards refs, open and every claim's fields; held across an eviction
	refs map[string]int // per broker, the claims naming it
	open int            // claims naming every broker
}

// claim is one strategy's claim on its table's brokers. Its fields are
// guarded by the table's claims.mu.
type claim struct {
	names    map[string]struct{} // the brokers named, once a route was announced
	open     bool                // no route announced yet: every broker
	released bool                // given up (Close): names nothing, for good
}

// newClaim registers a claim naming every broker.
func (t *FaultTable) newClaim() *claim {
	t.claims.mu.Lock()
	defer t.claims.mu.Unlock()
	t.claims.open++
	return &claim{open: true}
}

// setClaim makes c name exactly names (which it keeps), then drops every
// broker of the table that no claim names, unless a claim names every
// broker. It returns the dropped brokers that had items, sorted. A released
// claim is left as it is, and drops nothing.
func (t *FaultTable) setClaim(c *claim, names map[string]struct{}) []string {
	rc := &t.claims
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if c.released {
		return nil
	}
	if rc.refs == nil {
		rc.refs = map[string]int{}
	}
	for n := range names {
		if _, ok := c.names[n]; !ok {
			rc.refs[n]++
		}
	}
	for n := range c.names {
		if _, ok := names[n]; !ok {
			rc.unref(n)
		}
	}
	if c.open {
		c.open = false
		rc.open--
	}
	c.names = names
	if rc.open > 0 {
		return nil
	}
	return t.retain(func(b string) bool { return rc.refs[b] > 0 })
}

// releaseClaim gives c up: the brokers it named are kept for it no longer
// (the next claim that changes drops those nobody else names). Releasing
// twice is harmless.
func (t *FaultTable) releaseClaim(c *claim) {
	rc := &t.claims
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if c.released {
		return
	}
	c.released = true
	if c.open {
		c.open = false
		rc.open--
	}
	for n := range c.names {
		rc.unref(n)
	}
	c.names = nil
}

// unref takes one claim off broker n. Caller must hold rc.mu.
func (rc *routeClaims) unref(n string) {
	if rc.refs[n]--; rc.refs[n] <= 0 {
		delete(rc.refs, n)
	}
}

// routeBrokers remembers which brokers each route announced to a strategy
// (RouteChanged) names: the strategy's claim on its table.
type routeBrokers struct {
	mu      sync.Mutex // guards byTopic; held across an eviction
	byTopic map[string][]string
}

// noteRoute records info's brokers as its topic's and updates the
// strategy's claim.
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

// forgetRoute drops topic's brokers and updates the strategy's claim.
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

// evictLocked makes the strategy's claim the brokers its announced routes
// name, and has the table drop those no claim names. s.routes.mu is held.
func (s *Strategy) evictLocked() {
	names := make(map[string]struct{})
	for _, brokers := range s.routes.byTopic {
		for _, b := range brokers {
			names[b] = struct{}{}
		}
	}
	if gone := s.table.setClaim(s.claim, names); len(gone) > 0 {
		s.log.Debug("latency: dropped fault items of brokers no route names", "brokers", gone)
	}
}
