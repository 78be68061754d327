//go:build wireinject

package exampleinjector

import (
	gwire "github.com/google/wire"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/plugins/host"
	"github.com/mqfault/mqfault/wire"
	"github.com/mqfault/mqfault/wire/pluginwire"
)

// NewMyProducer is the custom injector of package wire's doc comment: the
// core sets, the real clock and a detector plugin (whose host.Config is the
// argument pluginwire.DetectorSet needs). The cleanup closes the producer,
// the strategy, then the plugin.
func NewMyProducer(cfg config.Config, t producer.Transport, r producer.RouteSource,
	res probe.Resolver, plugin host.Config, obs wire.Observability) (*producer.Producer, func(), error) {
	panic(gwire.Build(wire.CoreSet, wire.ClockSet, pluginwire.DetectorSet))
}
