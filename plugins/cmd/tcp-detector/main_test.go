package main_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
	"github.com/mqfault/mqfault/plugins/host"
	"github.com/mqfault/mqfault/plugins/plugintest"
)

var bin string // the plugin, built by TestMain

// quiet drops the host's log lines in benchmarks.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMain(m *testing.M) {
	plugintest.Main(m, "github.com/mqfault/mqfault/plugins/cmd/tcp-detector", &bin)
}

func sha(t testing.TB) string {
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestConformance runs the detector suite on the plugin, pinned to its
// checksum.
func TestConformance(t *testing.T) {
	d, err := host.NewDetector(host.Config{Path: bin, SHA256: sha(t)})
	if err != nil {
		t.Fatalf("NewDetector() error = %v", err)
	}
	defer d.Close()
	probetest.Run(t, d, probetest.Endpoints{
		Reachable:   []string{probetest.ListenTCP(t), probetest.SilentTCP(t)},
		Unreachable: []string{probetest.ClosedTCP(t)},
	})
}

// TestAgreesWithBuiltIn probes the same endpoints with the plugin and the
// built-in detector: same verdicts.
func TestAgreesWithBuiltIn(t *testing.T) {
	d, err := host.NewDetector(host.Config{Path: bin})
	if err != nil {
		t.Fatalf("NewDetector() error = %v", err)
	}
	defer d.Close()
	for _, ep := range []string{probetest.ListenTCP(t), probetest.ClosedTCP(t), "no-port"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		want, got := probe.TCPDetector{}.Detect(ctx, ep), d.Detect(ctx, ep)
		cancel()
		if (want == nil) != (got == nil) {
			t.Errorf("plugin Detect(%q) = %v, built-in = %v", ep, got, want)
		}
	}
}

// BenchmarkStart measures the plugin's start-up (to the end of the
// handshake) and stop; it reports each part (start-ns/op, stop-ns/op).
func BenchmarkStart(b *testing.B) {
	var start, stop time.Duration
	for b.Loop() {
		t0 := time.Now()
		d, err := host.NewDetector(host.Config{Path: bin, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		_ = d.Close()
		start, stop = start+t1.Sub(t0), stop+time.Since(t1)
	}
	b.ReportMetric(float64(start.Nanoseconds())/float64(b.N), "start-ns/op")
	b.ReportMetric(float64(stop.Nanoseconds())/float64(b.N), "stop-ns/op")
}

// BenchmarkDetect measures one probe of a listening loopback port through
// the plugin; BenchmarkDetectBuiltIn is the same probe in process.
func BenchmarkDetect(b *testing.B) {
	d, err := host.NewDetector(host.Config{Path: bin, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	benchDetect(b, d)
}

// BenchmarkDetectBuiltIn is the baseline of BenchmarkDetect.
func BenchmarkDetectBuiltIn(b *testing.B) { benchDetect(b, probe.TCPDetector{}) }

func benchDetect(b *testing.B, d probe.ServiceDetector) {
	up := probetest.ListenTCP(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Detect(ctx, up); err != nil {
			b.Fatal(err)
		}
	}
}
