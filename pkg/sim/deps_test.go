package sim

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoPlotImport: pkg/sim, what a test or a tool embeds, does not depend
// on gonum/plot (or anything else of the HTML report, which lives in
// pkg/sim/report). It asks `go list -deps` for every package pkg/sim
// imports, directly or not.
func TestNoPlotImport(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list the imports with")
		}
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 || !strings.Contains(string(out), "github.com/mqfault/mqfault/pkg/latency\n") {
		t.Fatalf("go list -deps listed %d packages without pkg/latency: not the list wanted", len(deps))
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "gonum.org/") || strings.HasSuffix(d, "/pkg/sim/report") || strings.HasPrefix(d, "github.com/ajstarks/") {
			t.Errorf("pkg/sim depends on %s", d)
		}
	}
}
