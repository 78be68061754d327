package pluginwire

import (
	"github.com/google/wire"

	"github.com/mqfault/mqfault/plugins/host"
)

// DetectorSet provides a detector plugin, loaded and supervised by
// plugins/host from a host.Config, as the probe.ServiceDetector; its
// cleanup stops the plugin process and waits for it. A caller cannot tell it
// from a built-in detector: a plugin that dies answers inconclusive (nothing
// changes) until the host has restarted it.
var DetectorSet = wire.NewSet(host.ProvideDetector)
