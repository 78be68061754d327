package latency

import "github.com/mqfault/mqfault/pkg/route"

// RouteChanged tells the strategy, and every user filter that decides per
// route (route.RouteFilter), that info is now the route of its topic: the
// strategy builds what its picks over info read, replacing what it kept for
// the topic's previous route, and drops the fault items of brokers no route
// it was told of names any more. A producer calls it whenever its route cache
// installs a publish info; a pick on a publish info the strategy was not told
// of builds the same, once. It may block while a filter decides (a plugin
// filter's batch call). A filter whose Update panics does not keep the
// strategy or the other filters from hearing of info: they are all told,
// then the panic goes on to the caller (the producer recovers it).
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

// RouteRemoved tells the strategy, and every user filter that decides per
// route, that topic no longer has a route: the strategy forgets what it kept
// for it and drops the fault items of brokers no route it was told of names
// any more. A filter whose Remove panics does not keep the others from being
// told; the panic then goes on to the caller, as in RouteChanged.
func (s *Strategy) RouteRemoved(topic string) {
	s.unbind(topic)
	s.forgetRoute(topic)
	tellFilters(s.filters, func(rf route.RouteFilter) { rf.Remove(topic) })
}
