package latency

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests (and benchmarks) if any goroutine is
// left running at the end: the detector loop and every probe must be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
