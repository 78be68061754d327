package latency_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPickFastPathInlines builds this package with the compiler's inlining
// report and checks that the v5 pick's fast path (cascade5.pick) inlines the
// helpers it calls on every pick. They are written to fit the compiler's
// inlining budget, and a small change can push one over it without any test
// failing: cascade5.reachOK at cost 85 against the budget of 80 cost the
// reference's pick (BenchmarkSelect/v5/16x4/isolated=0) about a tenth. The
// benchmarks measure the cost; this test names the helper that stopped
// inlining.
func TestPickFastPathInlines(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the package again")
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "build", "-o", "/dev/null", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	inlined := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		if file, _, _ := strings.Cut(line, ":"); filepath.Base(file) != "cascade5.go" {
			continue
		}
		if _, callee, ok := strings.Cut(line, "inlining call to "); ok {
			inlined[strings.TrimSpace(callee)] = true
		}
	}
	for _, f := range []string{
		"cascade5.reachOK",
		"(*binding).fits",
		"(*binding).position",
		"(*binding).cursor",
		"(*capView).releases",
		"(*brokerCapacity).below",
		"(*Strategy).pickedSlot",
		"(*Strategy).stageOf",
	} {
		if !inlined[f] {
			t.Errorf("cascade5.go no longer inlines %s: it is over the compiler's inlining budget (go build -gcflags=-m=2 ./pkg/latency gives its cost)", f)
		}
	}
}
