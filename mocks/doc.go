// Package mocks holds gomock mocks (go.uber.org/mock, -typed) of the
// interfaces of mqfault's core packages, for tests; nothing but tests
// imports it:
//
//   - pkg/route: MockQueueFilter, MockRouteFilter (a filter that decides per
//     route), MockRandomSource (the index's random source);
//   - pkg/clock: MockClock, MockTimer, MockTicker;
//   - pkg/probe: MockResolver, MockServiceDetector;
//   - pkg/latency: MockDurationTable, MockObserver and MockReporter (what a
//     pick reports its outcome to: Pick.Done); the fault table is a concrete
//     type, since nothing takes another (a strategy's table is its own);
//   - pkg/producer: MockTransport, MockRouteSource, MockSelector,
//     MockProducerObserver, MockStrategy (the selector a Producer picks
//     with) and MockRoomModel (a strategy's capacity model, asked for its
//     account of the room around a broker, latency.Room).
//
// The plugins' BatchFilter is mocked in the subpackage pluginmocks, so that
// tests of the core do not compile the plugin protocol's gRPC dependencies.
//
// Use a mock as gomock's documentation says: make a controller per test,
// set expectations, hand the mock to the code under test:
//
//	ctrl := gomock.NewController(t)
//	tr := mocks.NewMockTransport(ctrl)
//	tr.EXPECT().Send(gomock.Any(), gomock.Any()).Return(producer.Result{Status: producer.SendOK}, nil)
//
// The mocks are generated: every go:generate line is in generate.go, and
// `go generate ./mocks` rewrites them (CI fails when the committed files
// differ from what it writes). Do not edit them by hand.
package mocks
