package pluginwire_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// injector's cleanup must stop the detector and the plugin host.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
