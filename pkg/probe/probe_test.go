package probe_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/probe/probetest"
)

func TestTCPDetector(t *testing.T) {
	open, closed := probetest.ListenTCP(t), probetest.ClosedTCP(t)
	tests := []struct {
		name             string
		detector         probe.TCPDetector
		addr             string
		cancel           bool
		wantErr          bool
		wantInconclusive bool
	}{
		{name: "listener is reachable", addr: open},
		{name: "with a dialer", detector: probe.TCPDetector{Dialer: &net.Dialer{Timeout: 5 * time.Second}}, addr: open},
		{name: "closed port is unreachable", addr: closed, wantErr: true},
		{name: "bad address is unreachable", addr: "127.0.0.1:notaport", wantErr: true},
		{name: "cancelled context is inconclusive", addr: open, cancel: true, wantErr: true, wantInconclusive: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if tt.cancel {
				cancel()
			}
			err := tt.detector.Detect(ctx, tt.addr)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Detect(%s) = %v, want error %t", tt.addr, err, tt.wantErr)
			}
			if got := errors.Is(err, probe.ErrInconclusive); got != tt.wantInconclusive {
				t.Errorf("Detect(%s) = %v: inconclusive %t, want %t", tt.addr, err, got, tt.wantInconclusive)
			}
			var pe *probe.Error
			if tt.wantErr && !tt.wantInconclusive {
				if !errors.As(err, &pe) || pe.Endpoint != tt.addr || pe.Unwrap() == nil {
					t.Errorf("Detect(%s) = %#v, want a *ProbeError naming the endpoint", tt.addr, err)
				}
				if !strings.HasPrefix(err.Error(), "probe "+tt.addr+": ") {
					t.Errorf("Error() = %q, want it to start with the endpoint", err)
				}
			}
		})
	}
}

func TestServiceDetectorFunc(t *testing.T) {
	want := errors.New("x")
	var gotAddr string
	f := probe.ServiceDetectorFunc(func(_ context.Context, addr string) error {
		gotAddr = addr
		return want
	})
	if err := f.Detect(t.Context(), "h:1"); err != want || gotAddr != "h:1" {
		t.Errorf("Detect() = %v with %q, want %v with h:1", err, gotAddr, want)
	}
}
