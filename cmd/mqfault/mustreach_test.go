package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mustReachDir writes a small must-reach directory: the small family as
// both families (the healthy one without its faults) and the small
// scenario.
func mustReachDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	healthy := simFamily[:strings.Index(simFamily, "faults:")]
	files := map[string]string{
		"families/healthy.yaml": strings.Replace(healthy, "name: cli-family", "name: healthy", 1),
		"families/broad.yaml":   strings.Replace(simFamily, "name: cli-family", "name: broad", 1),
		"scenarios/cli.yaml":    simScenario,
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSimMustReach: --must-reach prints each rule's line and the verdict,
// and exits 0 when reached, 1 when not: v5 judged against the better of
// v5 and v5+detector is never worse and never better, so it reaches the
// first two rules and fails the third, naming the faulty runs it did not
// beat. Flags that do not apply are usage errors.
func TestSimMustReach(t *testing.T) {
	dir := mustReachDir(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"sim", "--must-reach", dir, "--strategies", "v5"}, nil, &stdout, &stderr)
	out := stdout.String()
	if code != exitFailure || !strings.Contains(out, "must-reach: v5 against the better of v5 and v5+detector in each column;") ||
		!strings.Contains(out, "never worse") || !strings.Contains(out, "not better: 20% better") ||
		!strings.Contains(out, "cli seed 3") || !strings.Contains(out, "broad-1 (family seed 2)") || !strings.HasSuffix(out, "\nnot reached\n") {
		t.Errorf("sim --must-reach --strategies v5 = exit %d, stdout:\n%s\nstderr: %s\nwant exit 1, the rules, the faulty runs named and not reached", code, out, stderr.String())
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  never worse") && !strings.HasSuffix(line, "pass") ||
			strings.HasPrefix(line, "  healthy") && !strings.HasSuffix(line, "pass") ||
			strings.HasPrefix(line, "  20% better") && !strings.HasSuffix(line, "FAIL") {
			t.Errorf("rule line %q: want v5 to pass never worse and healthy, and fail better", line)
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--must-reach", dir, "--json"}, "--json does not apply to --must-reach"},
		{[]string{"--must-reach", dir, "--family", dir}, "--family does not apply to --must-reach"},
		{[]string{"--must-reach", dir, "--strategies", "v5,mqfault"}, "--must-reach judges one strategy: --strategies names 2"},
		{[]string{"--must-reach", dir, "--strategies", "v6"}, "--strategies:"},
		{[]string{"--must-reach", filepath.Join(dir, "none")}, "none/families/healthy.yaml"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"sim"}, tt.args...), nil, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.want) || stdout.Len() > 0 {
			t.Errorf("sim %v = exit %d, stdout %q, stderr %q; want %d and %q", tt.args, code, stdout.String(), stderr.String(), exitUsage, tt.want)
		}
	}
}
