package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// FuzzRun replays any input in both modes: nothing may panic or hang, and a
// trace that stops must stop with a *LineError naming a line of the input.
// The seeds are every conformance trace plus the committed corpus in
// testdata/fuzz/FuzzRun.
func FuzzRun(f *testing.F) {
	traces, err := filepath.Glob(filepath.Join(conformanceDir, "*.trace"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range traces {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		lines := bytes.Count(src, []byte("\n")) + 1
		for _, mode := range []latency.Mode{latency.ModeV5, latency.ModeV4} {
			var out bytes.Buffer
			err := Run(bytes.NewReader(src), &out, mode)
			if err == nil {
				continue
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Run(%s) error = %v (%T), want a *LineError", mode, err, err)
			}
			if le.Line < 1 || le.Line > lines {
				t.Fatalf("Run(%s) error names line %d of a %d-line input", mode, le.Line, lines)
			}
			if !strings.HasPrefix(err.Error(), "line ") || le.Err == nil {
				t.Fatalf("Run(%s) error = %q, want \"line N: ...\"", mode, err)
			}
		}
	})
}
