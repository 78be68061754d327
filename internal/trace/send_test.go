package trace

import (
	"bytes"
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
	replayOutputs(t, sendTracesDir, 2)
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

// edgeTracesDir holds mqfault's own traces of the language's edges against
// the reference: negative latencies and durations, picks on a route without
// queues. Their outputs were derived by hand from the reference's source
// (5.3.3 and 4.9.8), as each trace's comments explain.
const edgeTracesDir = "testdata/edges"

// TestEdgeTraces replays the edge traces and requires byte-identical output.
func TestEdgeTraces(t *testing.T) {
	replayOutputs(t, edgeTracesDir, 5)
}
