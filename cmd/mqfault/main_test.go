package main

import (
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/plugins/plugintest"
)

// binDir holds the binaries the tests build (this command, the plugins),
// each at most once per run.
var binDir string

// TestMain fails the package if any goroutine outlives its tests: every
// strategy, producer, simulation and plugin a command starts must be gone.
func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "mqfault-cmd-test"); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(binDir)
		os.Exit(code)
	}))
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// binary builds the main package pkg (once per test run) and returns its path.
func binary(t *testing.T, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := built[pkg]; ok {
		return bin
	}
	bin, err := plugintest.Build(binDir, pkg)
	if err != nil {
		t.Fatal(err)
	}
	built[pkg] = bin
	return bin
}

const (
	mqfaultPkg     = "github.com/mqfault/mqfault/cmd/mqfault"
	tcpDetectorPkg = "github.com/mqfault/mqfault/plugins/cmd/tcp-detector"
	grpcHealthPkg  = "github.com/mqfault/mqfault/plugins/cmd/grpc-health-detector"
)
