package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/plugins/plugintest"
	"github.com/mqfault/mqfault/plugins/sdk"
)

// binDir holds the binaries the tests build (this command, the plugins),
// each at most once per run.
var binDir string

// TestMain fails the package if any goroutine outlives its tests: every
// strategy, producer, simulation and plugin a command starts must be gone.
func TestMain(m *testing.M) {
	if os.Getenv(noisyPluginEnv) != "" {
		serveNoisyPlugin()
		os.Exit(0)
	}
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

// noisyPluginEnv, in a child's environment, makes the test binary the noisy
// detector plugin (serveNoisyPlugin) instead of running the tests.
const noisyPluginEnv = "MQFAULT_CMD_TEST_NOISY_PLUGIN"

// serveNoisyPlugin serves a detector that answers reachable and, for each
// probe, logs a line, writes one to stderr and one to stdout.
func serveNoisyPlugin() {
	log := sdk.Logger(slog.LevelDebug)
	sdk.ServeDetector(probe.ServiceDetectorFunc(func(_ context.Context, ep string) error {
		log.Warn("noisy log line", "endpoint", ep)
		fmt.Fprintln(os.Stderr, "noisy stderr line")
		fmt.Fprintln(os.Stdout, "noisy stdout line")
		return nil
	}))
}
