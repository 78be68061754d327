package pluginwire_test

import (
	"testing"

	"github.com/mqfault/mqfault/plugins/plugintest"
)

// tcpDetector is the tcp-detector plugin, built once for the package.
var tcpDetector string

// TestMain builds the plugin and fails the package if any goroutine outlives
// the tests: every injector's cleanup must stop the detector and the plugin
// host.
func TestMain(m *testing.M) {
	plugintest.Main(m, "github.com/mqfault/mqfault/plugins/cmd/tcp-detector", &tcpDetector)
}
