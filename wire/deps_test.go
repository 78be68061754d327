package wire_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoPluginDependencies keeps package wire free of the plugin machinery:
// `go list -deps ./wire` (what a program composing with the TCP detector
// links) must name neither hashicorp/go-plugin nor gRPC nor plugins/host;
// those belong to wire/pluginwire, which must name them (so the check
// cannot pass by listing nothing).
func TestNoPluginDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	forbidden := []string{"github.com/hashicorp/go-plugin", "google.golang.org/grpc", "github.com/mqfault/mqfault/plugins/"}
	deps := func(pkg string) []string {
		t.Helper()
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	has := func(list []string, prefix string) []string {
		var hits []string
		for _, p := range list {
			if strings.HasPrefix(p, prefix) {
				hits = append(hits, p)
			}
		}
		return hits
	}
	core, plugin := deps("."), deps("./pluginwire")
	if len(has(core, "github.com/mqfault/mqfault/pkg/producer")) == 0 {
		t.Fatalf("go list -deps ./wire does not list pkg/producer: %q", core)
	}
	for _, f := range forbidden {
		if hits := has(core, f); len(hits) > 0 {
			t.Errorf("go list -deps ./wire names %s (%d packages, e.g. %s); it belongs in wire/pluginwire", f, len(hits), hits[0])
		}
		if len(has(plugin, f)) == 0 {
			t.Errorf("go list -deps ./wire/pluginwire does not name %s: the check is looking at the wrong packages", f)
		}
	}
}

// TestLeavesNeverImportTheStrategy keeps the clock and the probe contract
// leaves: `go list -deps` of pkg/clock, pkg/probe (and its conformance
// suite), the plugin protocol, the plugin SDK and the plugin binaries names
// neither the strategy nor the send loop nor what is built on them (the
// route's types are the filter plugins' contract, so pkg/route may appear).
// A plugin links the contract it serves, never the code that calls it.
func TestLeavesNeverImportTheStrategy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/mqfault/mqfault/"
	leaves := []string{"pkg/clock", "pkg/probe", "pkg/probe/probetest", "plugins/protocol", "plugins/sdk", "plugins/cmd/tcp-detector", "plugins/cmd/grpc-health-detector"}
	forbidden := []string{"pkg/latency", "pkg/producer", "pkg/sim", "pkg/config", "pkg/observe"}
	for _, leaf := range leaves {
		out, err := exec.Command("go", "list", "-deps", mod+leaf).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", leaf, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, mod+leaf) {
			t.Fatalf("go list -deps %s does not list %s itself: %q", leaf, leaf, deps)
		}
		for _, d := range deps {
			for _, f := range forbidden {
				if d == mod+f || strings.HasPrefix(d, mod+f+"/") {
					t.Errorf("%s imports %s (through its dependencies); it must stay a leaf", leaf, d)
				}
			}
		}
	}
}
