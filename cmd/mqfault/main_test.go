package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives its tests: every
// strategy, producer, simulation and plugin a command starts must be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
