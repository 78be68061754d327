// Package plugintest builds plugin binaries for tests that run them through
// the host, as a user would. A plugin's own tests build it once in TestMain:
//
//	var bin string
//
//	func TestMain(m *testing.M) {
//		plugintest.Main(m, "github.com/mqfault/mqfault/plugins/cmd/tcp-detector", &bin)
//	}
//
// Other tests call Build with a directory of their own (t.TempDir()).
package plugintest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// Main is a TestMain for the tests of a plugin: it builds the main package
// pkg into a temporary directory, stores the binary's path in *bin, runs the
// tests with goleak's check for leaked goroutines, removes the directory and
// exits with the tests' status. A failed build exits with status 1.
func Main(m *testing.M, pkg string, bin *string) {
	dir, err := os.MkdirTemp("", path.Base(pkg))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *bin, err = Build(dir, pkg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// Build compiles the main package pkg (an import path of this module) into
// dir with `go build` and returns the binary's path. It uses the go command
// of the toolchain that built the test (or the one on PATH).
func Build(dir, pkg string) (string, error) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return "", errors.New("plugintest: no go command to build " + pkg)
		}
	}
	out := filepath.Join(dir, path.Base(pkg))
	cmd := exec.Command(gobin, "build", "-o", out, pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("plugintest: go build %s: %w\n%s", pkg, err, stderr.Bytes())
	}
	return out, nil
}
