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
	outs, err := filepath.Glob(filepath.Join(conformanceDir, "*.out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) < 15 {
		t.Fatalf("found %d reference outputs in %s, want at least 15", len(outs), conformanceDir)
	}
	replayed := 0
	for _, out := range outs {
		base := filepath.Base(out) // NAME.MODE.out
		parts := strings.Split(strings.TrimSuffix(base, ".out"), ".")
		if len(parts) != 2 {
			t.Fatalf("%s: want NAME.MODE.out", base)
		}
		name, mode := parts[0], latency.Mode(parts[1])
		t.Run(name+"/"+string(mode), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(conformanceDir, name+".trace"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if hasOp(src, "send") && !sendSupported {
				t.Skip("send needs the producer's send loop")
			}
			var got bytes.Buffer
			if err := Run(bytes.NewReader(src), &got, mode); err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("Run() output differs from the reference\n--- got\n%s--- want\n%s", got.String(), want)
			}
			replayed++
		})
	}
	t.Logf("replayed %d of %d reference outputs byte-identically", replayed, len(outs))
}

// sendSupported turns on once the send loop exists.
const sendSupported = true

func hasOp(src []byte, op string) bool {
	for _, line := range strings.Split(string(src), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == op {
			return true
		}
	}
	return false
}
