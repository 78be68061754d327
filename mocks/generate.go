package mocks

// Every go:generate line of the mocks is here; regenerate with
//
//	go generate ./mocks
//
// CI regenerates them and fails when the result differs from what is committed.

//go:generate go run go.uber.org/mock/mockgen -typed -write_package_comment=false -destination=route.go -package=mocks github.com/mqfault/mqfault/pkg/route QueueFilter,RouteFilter,RandomSource
//go:generate go run go.uber.org/mock/mockgen -typed -write_package_comment=false -destination=latency.go -package=mocks github.com/mqfault/mqfault/pkg/latency DurationTable,Observer,Reporter
//go:generate go run go.uber.org/mock/mockgen -typed -write_package_comment=false -destination=clock.go -package=mocks github.com/mqfault/mqfault/pkg/clock Clock,Timer,Ticker
//go:generate go run go.uber.org/mock/mockgen -typed -write_package_comment=false -destination=probe.go -package=mocks github.com/mqfault/mqfault/pkg/probe Resolver,ServiceDetector
//go:generate go run go.uber.org/mock/mockgen -typed -write_package_comment=false -destination=producer.go -package=mocks -mock_names=Observer=MockProducerObserver github.com/mqfault/mqfault/pkg/producer Transport,RouteSource,Selector,Observer,Strategy,RoomModel
//go:generate go run go.uber.org/mock/mockgen -typed -write_package_comment=false -destination=pluginmocks/protocol.go -package=pluginmocks github.com/mqfault/mqfault/plugins/protocol BatchFilter
