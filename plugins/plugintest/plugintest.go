// Package plugintest builds plugin binaries for tests that run them through
// the host, as a user would. Build in TestMain and share the binary across
// the package's tests:
//
//	func TestMain(m *testing.M) {
//		dir, _ := os.MkdirTemp("", "plugins")
//		bin, err = plugintest.Build(dir, "github.com/mqfault/mqfault/plugins/cmd/tcp-detector")
//		...
//		code := m.Run()
//		os.RemoveAll(dir)
//		os.Exit(code)
//	}
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
)

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
