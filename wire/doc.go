// Package wire composes mqfault with Google Wire (github.com/google/wire):
// provider sets, one per concern, and ready-made injectors that build a
// running strategy or producer from a config.Config.
//
// Start with the injectors (generated into wire_gen.go from wire.go):
//
//	NewStrategy(cfg, resolver, detector)                  the strategy, detector started
//	NewProducer(cfg, transport, routes, resolver, detector) a producer over it
//	NewObservedProducer(..., detector, Observability)    the same, with your logger, Prometheus registerer and observers
//	NewTCPProducer(cfg, transport, routes, resolver, Observability) probing brokers with latency.TCPDetector
//
// Each returns a cleanup function that closes what it built in reverse order:
// the producer (waiting for its sends in flight), then the strategy (stopping
// the detector and waiting for it), then the metrics' registration. Call it
// once, after the last send.
//
// To compose your own injector, use the sets: ConfigSet (the sub-configs of a
// config.Config, validated), ObserveSet (Observers from an Observability),
// LatencySet (the started *latency.Strategy), ProducerSet (the
// *producer.Producer), ClockSet (latency.RealClock bound to latency.Clock),
// TCPDetectorSet (latency.TCPDetector bound to latency.ServiceDetector),
// DefaultObservabilitySet (the zero Observability: slog.Default, no
// Prometheus). CoreSet is ConfigSet, ObserveSet, LatencySet and ProducerSet;
// DefaultSet adds ClockSet and DefaultObservabilitySet. A set of your own
// that provides a latency.ServiceDetector (a plugin, with its cleanup) or a
// latency.Clock replaces the argument or ClockSet. The injectors and the set
// whose detector is a plugin are in package wire/pluginwire, so that this
// package links neither hashicorp/go-plugin nor gRPC:
//
//	func NewMyProducer(cfg config.Config, t producer.Transport, r producer.RouteSource,
//		res latency.Resolver, obs wire.Observability) (*producer.Producer, func(), error) {
//		panic(gwire.Build(wire.CoreSet, wire.ClockSet, pluginwire.DetectorSet))
//	}
//
// Regenerate wire_gen.go with `go generate ./wire/...`; wire/ci.sh fails when it
// is stale.
package wire
