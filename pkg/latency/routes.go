package latency

import "github.com/mqfault/mqfault/pkg/route"

// RouteChanged tells every user filter that decides per route
// (route.RouteFilter) that info is now the route of its topic, then drops the
// fault items of brokers that no route announced to the strategy names any
// more (routebrokers.go). A producer
// calls it whenever its route cache installs a publish info, before the first
// pick on it; a user driving Select with publish infos of their own calls it
// when they build one. It may block while a filter decides (a plugin filter's
// batch call); it is never needed on the pick path.
func (s *Strategy) RouteChanged(info *route.PublishInfo) {
	if info == nil {
		return
	}
	for _, f := range s.filters {
		if rf, ok := f.(route.RouteFilter); ok {
			rf.Update(info)
		}
	}
	s.noteRoute(info)
}

// RouteRemoved tells every user filter that decides per route that topic no
// longer has a route, then drops the fault items of brokers that no route
// announced to the strategy names any more.
func (s *Strategy) RouteRemoved(topic string) {
	for _, f := range s.filters {
		if rf, ok := f.(route.RouteFilter); ok {
			rf.Remove(topic)
		}
	}
	s.forgetRoute(topic)
}
