// Package pluginwire composes mqfault with a detector plugin: the Google Wire
// provider set and injectors of package wire (github.com/mqfault/mqfault/wire)
// with the probe.ServiceDetector supplied by an out-of-process plugin that
// plugins/host starts, checks and supervises.
//
// It is a package of its own because a plugin host links hashicorp/go-plugin,
// gRPC and protobuf: a program that composes with package wire and the
// built-in TCP detector stays free of them (`go list -deps ./wire` names none),
// and only a program that imports pluginwire pays for them.
//
// Start with the injectors (generated into wire_gen.go from wire.go):
//
//	NewStrategy(cfg, resolver, plugin)                         the strategy, its detector the plugin
//	NewProducer(cfg, transport, routes, resolver, plugin, obs) a producer over it, with wire.Observability
//
// plugin is a host.Config: the executable's path, an optional SHA-256 pin,
// the arguments to start it with, the per-call timeout and the restart
// backoff. Each injector returns a cleanup that closes the producer, the
// strategy (stopping its detector), then the plugin process, and waits for
// all of them. In an injector of your own, DetectorSet takes the place of
// the detector argument:
//
//	func NewMyProducer(cfg config.Config, t producer.Transport, r producer.RouteSource,
//		res probe.Resolver, plugin host.Config, obs wire.Observability) (*producer.Producer, func(), error) {
//		panic(gwire.Build(wire.CoreSet, wire.ClockSet, pluginwire.DetectorSet))
//	}
//
// Regenerate wire_gen.go with `go generate ./wire/...`; wire/ci.sh fails when
// it is stale.
package pluginwire
