package wire_test

import (
	"os/exec"
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
