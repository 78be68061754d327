package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// conformanceDir holds the reference's traces and outputs, copied from the
// project's shared conformance suite so the test runs on a fresh clone.
const conformanceDir = "../../testdata/conformance"

// TestConformance replays every trace in each mode it has reference output for
// and requires byte-identical output.
func TestConformance(t *testing.T) {
	n := replayOutputs(t, conformanceDir, 35)
	t.Logf("replayed %d reference outputs byte-identically", n)
}

// replayOutputs replays, for every NAME.MODE.out in dir, NAME.trace in MODE
// and requires the output to be byte-identical to the file; it fails when dir
// has fewer than min outputs, and returns how many replayed identically.
func replayOutputs(t *testing.T, dir string, min int) int {
	t.Helper()
	outs, err := filepath.Glob(filepath.Join(dir, "*.out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) < min {
		t.Fatalf("found %d outputs in %s, want at least %d", len(outs), dir, min)
	}
	replayed := 0
	for _, out := range outs {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(out), ".out"), ".")
		if len(parts) != 2 {
			t.Fatalf("%s: want NAME.MODE.out", out)
		}
		name, mode := parts[0], latency.Mode(parts[1])
		t.Run(name+"/"+string(mode), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, name+".trace"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := Run(bytes.NewReader(src), &got, mode); err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("Run() output differs from %s\n--- got\n%s--- want\n%s", out, got.String(), want)
				return
			}
			replayed++
		})
	}
	return replayed
}
