package wire_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// injector's cleanup must stop the detector, the route refresher and the
// async sends it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
