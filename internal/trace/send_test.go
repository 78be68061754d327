package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
)

// sendTracesDir holds mqfault's own send traces: v4 sends, budgets and
// timeouts, the detector switch, retry settings, ONEWAY and ASYNC. Their
// outputs were derived by hand from the reference source, as each trace's
// comments explain (testdata/conformance holds only the reference's own
// outputs).
const sendTracesDir = "testdata/send"

// TestSendTraces replays the send traces and requires byte-identical output.
func TestSendTraces(t *testing.T) {
	outs, err := filepath.Glob(filepath.Join(sendTracesDir, "*.out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) < 2 {
		t.Fatalf("found %d outputs in %s, want at least 2", len(outs), sendTracesDir)
	}
	for _, out := range outs {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(out), ".out"), ".")
		if len(parts) != 2 {
			t.Fatalf("%s: want NAME.MODE.out", out)
		}
		name, mode := parts[0], latency.Mode(parts[1])
		t.Run(name+"/"+string(mode), func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(sendTracesDir, name+".trace"))
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
				t.Errorf("Run() output differs\n--- got\n%s--- want\n%s", got.String(), want)
			}
		})
	}
}

// TestSendErrors checks that malformed send lines stop the trace with the
// line's number, before any attempt.
func TestSendErrors(t *testing.T) {
	for _, tt := range []struct {
		name, src, want string
	}{
		{"no route", "send SYNC ok:1\n", "line 1: send: no route yet"},
		{"unknown mode", "route a:1\nsend SOMETIMES ok:1\n", "line 2: send: mode \"SOMETIMES\""},
		{"unknown outcome", "route a:1\nsend SYNC maybe:1\n", "line 2: send: outcome \"maybe:1\""},
		{"broker without code", "route a:1\nsend SYNC broker:1\n", "line 2: send: outcome \"broker:1\": want broker:LAT:CODE"},
		{"bad latency", "route a:1\nsend SYNC ok:-1\n", "line 2: send: outcome \"ok:-1\""},
		{"extra field", "route a:1\nsend SYNC ok:1:2\n", "line 2: send: outcome \"ok:1:2\": want ok:LAT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(strings.NewReader(tt.src), &out, latency.ModeV5)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Run() error = %v, want one starting %q", err, tt.want)
			}
			if strings.Contains(out.String(), "attempt") {
				t.Errorf("Run() printed an attempt before failing: %q", out.String())
			}
		})
	}
}
