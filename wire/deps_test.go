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

// TestInternalLeavesStayBelowDrivers keeps internal/ in two parts, so that
// imports run one way: the leaf utilities under internal/input (configerr,
// yamldoc, suggest: what pkg/latency, pkg/producer, pkg/config, pkg/sim and
// plugins/host import) import no mqfault package outside internal/input,
// tests included; the drivers (every other package under internal/: the
// trace runner, the documentation's tests) sit above the producer, and no
// package under pkg/ imports one, tests included.
func TestInternalLeavesStayBelowDrivers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/mqfault/mqfault/"
	const leafDir = mod + "internal/input"
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

	leaves := goListDeps(t, "./../internal/input/...")
	if !slices.Contains(leaves[mod+"internal/input/yamldoc"], mod+"internal/input/suggest") {
		t.Fatalf("go list -deps does not show internal/input/yamldoc importing internal/input/suggest: %v", leaves)
	}
	for pkg, deps := range leaves {
		for _, d := range deps {
			if strings.HasPrefix(d, mod) && !under(d, leafDir) {
				t.Errorf("leaf %s imports %s (through its dependencies): a leaf under internal/input imports only leaves", pkg, d)
			}
		}
	}

	var drivers []string
	for pkg := range goListDeps(t, "./../internal/...") {
		if !under(pkg, leafDir) {
			drivers = append(drivers, pkg)
		}
	}
	if !slices.Contains(drivers, mod+"internal/trace") {
		t.Fatalf("the drivers under internal/ (%q) do not include internal/trace: the check is looking at the wrong packages", drivers)
	}
	if !slices.Contains(goListDeps(t, "./../cmd/mqfault")[mod+"cmd/mqfault"], mod+"internal/trace") {
		t.Fatalf("go list -deps ./cmd/mqfault does not list internal/trace: the check is looking at the wrong dependencies")
	}
	for pkg, deps := range goListDeps(t, "./../pkg/...") {
		for _, d := range deps {
			if slices.Contains(drivers, d) {
				t.Errorf("%s imports the driver %s (through its dependencies): nothing under pkg/ imports a driver", pkg, d)
			}
		}
	}
}

// goListDeps runs `go list -test` over pattern and returns, for every
// package it matches, every package it depends on, directly or not, its
// tests' dependencies folded in (the package's test variant, its external
// _test package and its test binary all count as the package).
func goListDeps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}}{{range .Deps}}|{{.}}{{end}}", pattern).Output()
	if err != nil {
		t.Fatalf("go list -test %s: %v", pattern, err)
	}
	// bare drops the test variant's suffix: "p [p.test]" and "p.test" are p's.
	bare := func(p string) string {
		p, _, _ = strings.Cut(p, " ")
		return strings.TrimSuffix(strings.TrimSuffix(p, ".test"), "_test")
	}
	deps := make(map[string][]string)
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSpace(line), "|")
		pkg := bare(fields[0])
		for _, d := range fields[1:] {
			if d = bare(d); d != pkg && !slices.Contains(deps[pkg], d) {
				deps[pkg] = append(deps[pkg], d)
			}
		}
		if _, ok := deps[pkg]; !ok {
			deps[pkg] = nil
		}
	}
	return deps
}
