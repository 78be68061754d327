// Package mocks holds gomock mocks (go.uber.org/mock, package mode, -typed) of
// every interface mqfault's packages define. Only tests import it.
//
// Every go:generate line is in this file; regenerate with
//
//	go generate ./mocks
//
// CI regenerates them and fails when the result differs from what is committed.
package mocks

//go:generate go run go.uber.org/mock/mockgen -typed -destination=route.go -package=mocks github.com/mqfault/mqfault/pkg/route QueueFilter,RandomSource
//go:generate go run go.uber.org/mock/mockgen -typed -destination=latency.go -package=mocks github.com/mqfault/mqfault/pkg/latency Clock,Timer,Ticker,Resolver,ServiceDetector,DurationTable,FaultTolerance,Observer
//go:generate go run go.uber.org/mock/mockgen -typed -destination=producer.go -package=mocks -mock_names=Observer=MockProducerObserver github.com/mqfault/mqfault/pkg/producer Transport,RouteSource,Selector,Observer
