//go:build wireinject

package pluginwire

import (
	"github.com/google/wire"

	"github.com/mqfault/mqfault/pkg/config"
	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/producer"
	"github.com/mqfault/mqfault/plugins/host"
	mqwire "github.com/mqfault/mqfault/wire"
)

// NewStrategy is wire.NewStrategy with a detector plugin: the binary that
// plugin names is started (its SHA-256 checked when pinned), supervised and
// restarted with backoff if it dies. The cleanup stops the strategy's
// detector, then the plugin process, and waits for both.
func NewStrategy(cfg config.Config, res probe.Resolver, plugin host.Config) (*latency.Strategy, func(), error) {
	panic(wire.Build(mqwire.DefaultSet, DetectorSet))
}

// NewProducer is wire.NewObservedProducer with a detector plugin (see
// NewStrategy). The cleanup closes the producer, the strategy, then the
// plugin.
func NewProducer(cfg config.Config, transport producer.Transport, routes producer.RouteSource, res probe.Resolver, plugin host.Config, obs mqwire.Observability) (*producer.Producer, func(), error) {
	panic(wire.Build(mqwire.CoreSet, mqwire.ClockSet, DetectorSet))
}
