package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine is left running: Run
// must wait for every strategy's goroutine and every detector probe.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
