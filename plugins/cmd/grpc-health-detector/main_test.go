package main

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
	"github.com/mqfault/mqfault/plugins/host"
	"github.com/mqfault/mqfault/plugins/plugintest"
	"github.com/mqfault/mqfault/plugins/sdk"
)

var bin string // the plugin, built by TestMain

func TestMain(m *testing.M) {
	plugintest.Main(m, "github.com/mqfault/mqfault/plugins/cmd/grpc-health-detector", &bin)
}

// healthServer serves grpc.health.v1 on a loopback port until the test
// ends: "" and "orders" SERVING, "billing" NOT_SERVING.
func healthServer(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	h := health.NewServer()
	h.SetServingStatus("orders", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus("billing", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(s, h)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() {
		h.Shutdown()
		s.Stop()
		<-done
	})
	return l.Addr().String()
}

// bareServer serves gRPC without the health service.
func bareServer(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return l.Addr().String()
}

func endpoints(t *testing.T) probetest.Endpoints {
	return probetest.Endpoints{
		Reachable:   []string{healthServer(t)},
		Unreachable: []string{probetest.ClosedTCP(t), bareServer(t), probetest.ListenTCP(t)},
		Silent:      []string{probetest.SilentTCP(t)},
	}
}

// TestConformance runs the detector suite on the detector in process and
// served by the built plugin.
func TestConformance(t *testing.T) {
	t.Run("in process", func(t *testing.T) {
		probetest.Run(t, healthDetector{}, endpoints(t))
	})
	t.Run("plugin", func(t *testing.T) {
		d, err := host.NewDetector(host.Config{Path: bin})
		if err != nil {
			t.Fatalf("NewDetector() error = %v", err)
		}
		defer d.Close()
		probetest.Run(t, d, endpoints(t))
	})
}

// TestVerdicts checks each kind of answer, through the plugin (so the error
// codes cross the wire), with --service set. The host times the probe on a
// manual clock the test never moves, so its deadline never passes: the
// plugin's own answer at its deadline (for the silent endpoint, "deadline
// exceeded") is what comes back, however loaded the machine, with nothing
// racing it on the host's side.
func TestVerdicts(t *testing.T) {
	up := healthServer(t)
	tests := []struct {
		name     string
		service  string
		endpoint string
		wantIs   error // nil: reachable
	}{
		{"serving", "orders", up, nil},
		{"not serving", "billing", up, sdk.ErrNotServing},
		{"unknown service", "nosuch", up, sdk.ErrNotServing},
		{"no health service", "", bareServer(t), sdk.ErrNotServing},
		{"refused", "", probetest.ClosedTCP(t), syscall.ECONNREFUSED},
		{"silent", "", probetest.SilentTCP(t), context.DeadlineExceeded},
		{"bad endpoint", "", "no-port", sdk.ErrInvalidEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(time.Unix(1000, 0))
			d, err := host.NewDetector(host.Config{Path: bin, Args: []string{"--service", tt.service}, Clock: clk})
			if err != nil {
				t.Fatalf("NewDetector() error = %v", err)
			}
			defer d.Close()
			ctx, cancel := clock.WithTimeout(context.Background(), clk, time.Second)
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- d.Detect(ctx, tt.endpoint) }()
			select {
			case err = <-res:
			case <-time.After(patience):
				clk.Advance(time.Second) // the host's deadline: Detect returns
				<-res
				t.Fatalf("Detect(%s) did not return within %v: the plugin never answered", tt.endpoint, patience)
			}
			if tt.wantIs == nil {
				if err != nil {
					t.Errorf("Detect(%s) = %v, want nil", tt.endpoint, err)
				}
				return
			}
			var pe *probe.Error
			if !errors.Is(err, tt.wantIs) || !errors.As(err, &pe) {
				t.Errorf("Detect(%s) = %v, want an unreachable *ProbeError matching %v", tt.endpoint, err, tt.wantIs)
			}
		})
	}
}

// patience bounds a wait for the plugin; a guard against a hung test, not a
// speed target.
const patience = 30 * time.Second

func TestBadFlag(t *testing.T) {
	_, err := host.NewDetector(host.Config{Path: bin, Args: []string{"--no-such-flag"}})
	if !errors.Is(err, host.ErrHandshake) {
		t.Errorf("NewDetector(bad flag) error = %v, want ErrHandshake", err)
	}
}
