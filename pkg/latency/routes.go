package latency

import "github.com/mqfault/mqfault/pkg/route"

// RouteChanged tells the strategy, and every user filter that decides per
// route (route.RouteFilter), that info is now its topic's route: the strategy
// rebuilds what its picks over info read and drops the fault items of brokers
// no route it was told of names any more. A producer calls it on each publish
// info its route cache installs (a pick on another builds the same, once). It
// may block while a filter decides (a plugin's batch call). When a filter's
// Update panics, the others are still told, then the panic goes on to the
// caller (the producer recovers it).
func (s *Strategy) RouteChanged(info *route.PublishInfo) {
	if info == nil {
		return
	}
	if info.Len() > 0 {
		s.bind(info)
	}
	s.noteRoute(info)
	tellFilters(s.filters, func(rf route.RouteFilter) { rf.Update(info) })
}

// tellFilters calls tell with every route filter in fs. When one call
// panics, the filters after it are told while the panic unwinds, and the
// panic goes on unchanged (with its stack) to the caller.
func tellFilters(fs []route.QueueFilter, tell func(route.RouteFilter)) {
	for i, f := range fs {
		rf, ok := f.(route.RouteFilter)
		if !ok {
			continue
		}
		done := false
		func() {
			defer func() {
				if !done {
					tellFilters(fs[i+1:], tell)
				}
			}()
			tell(rf)
			done = true
		}()
	}
}

// RouteRemoved tells the strategy and every route filter that topic has no
// route any more: the strategy forgets what it kept for it and drops fault
// items as RouteChanged does. A filter's panic is handled as in RouteChanged.
func (s *Strategy) RouteRemoved(topic string) {
	s.unbind(topic)
	s.forgetRoute(topic)
	tellFilters(s.filters, func(rf route.RouteFilter) { rf.Remove(topic) })
}
