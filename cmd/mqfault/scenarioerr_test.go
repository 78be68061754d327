package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenarioErrorForm: a scenario's problems are each on a line of its own
// as FILE:LINE: (FILE: for one with no line), an unknown field comes first
// with the field it was likely meant to be, and a field closed load needs is
// named as required rather than as a bad zero.
func TestScenarioErrorForm(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nduration: 10s\nload: closed\nrate: 100\nbrokers:\n  - {name: a, queues: 2, latency: {median: 3ms, p99: 20ms}}\nsendrs: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, errb bytes.Buffer
	code := run([]string{"sim", "--scenario", bad}, strings.NewReader(""), &stdout, &errb)
	stderr := errb.String()
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	want := []string{
		"mqfault sim: " + bad + " is not a valid scenario:",
		"  " + bad + ":7: sendrs: unknown field (did you mean senders?",
		"  " + bad + ": senders: missing (required under closed load: how many senders send at once, at least 1)",
	}
	if len(lines) != len(want) {
		t.Fatalf("stderr has %d lines, want %d:\n%s", len(lines), len(want), stderr)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i], w)
		}
	}
}

// TestReportUnwritable: a --report path that cannot be written is output that
// cannot be written: exit 1, as README's exit statuses say, before any run.
func TestReportUnwritable(t *testing.T) {
	var stdout, errb bytes.Buffer
	code := run([]string{"sim", "--report", filepath.Join(t.TempDir(), "no", "such", "dir", "r.html")}, strings.NewReader(""), &stdout, &errb)
	stderr := errb.String()
	if code != 1 || !strings.Contains(stderr, "--report") {
		t.Fatalf("exit %d, stderr %q; want 1 naming --report", code, stderr)
	}
}
