package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mqfault/mqfault/pkg/latency"
	"github.com/mqfault/mqfault/pkg/latency/detectortest"
	"github.com/mqfault/mqfault/plugins/plugintest"
)

// TestProbe runs `mqfault probe` with the tcp-detector plugin, built once.
func TestProbe(t *testing.T) {
	bin, err := plugintest.Build(t.TempDir(), "github.com/mqfault/mqfault/plugins/cmd/tcp-detector")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	goodSum := hex.EncodeToString(sum[:])
	notPlugin := filepath.Join(t.TempDir(), "not-a-plugin")
	if err := os.WriteFile(notPlugin, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	up, down := detectortest.ListenTCP(t), detectortest.ClosedTCP(t)

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string // lines of stdout, in order
		wantStderr string   // a part of stderr
	}{
		{"answers", []string{"--plugin", bin, "--timeout", "2s", up, down, "no-port"}, 0,
			[]string{up + " reachable", down + " unreachable (", "no-port unreachable ("}, ""},
		{"pinned", []string{"--plugin", bin, "--plugin-sha256", goodSum, up}, 0, []string{up + " reachable"}, ""},
		{"checksum mismatch", []string{"--plugin", bin, "--plugin-sha256", strings.Repeat("0", 64), up}, exitPlugin, nil, "checksum"},
		{"missing plugin", []string{"--plugin", filepath.Join(t.TempDir(), "none"), up}, exitPlugin, nil, "no such file"},
		{"not a plugin", []string{"--plugin", notPlugin, up}, exitPlugin, nil, "handshake failed"},
		{"no plugin flag", []string{up}, exitUsage, nil, "--plugin is required"},
		{"no endpoint", []string{"--plugin", bin}, exitUsage, nil, "no endpoint"},
		{"bad sha", []string{"--plugin", bin, "--plugin-sha256", "xyz", up}, exitUsage, nil, "SHA256"},
		{"bad timeout", []string{"--plugin", bin, "--timeout", "0s", up}, exitUsage, nil, "must be positive"},
		{"help", []string{"-h"}, 0, nil, "usage: mqfault probe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"probe"}, tt.args...), nil, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("mqfault probe %v = exit %d, want %d; stderr: %s", tt.args, code, tt.wantCode, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if tt.wantOut == nil {
				if stdout.Len() != 0 {
					t.Errorf("stdout = %q, want nothing", stdout.String())
				}
			} else if len(lines) != len(tt.wantOut) {
				t.Errorf("stdout = %q, want %d lines", stdout.String(), len(tt.wantOut))
			} else {
				for i, want := range tt.wantOut {
					if !strings.HasPrefix(lines[i], want) {
						t.Errorf("stdout line %d = %q, want it to start with %q", i+1, lines[i], want)
					}
				}
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestProbeLine(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"reachable", nil, "h:1 reachable"},
		{"unreachable", &latency.ProbeError{Endpoint: "h:1", Err: refused}, "h:1 unreachable (dial tcp: connect: connection refused)"},
		{"inconclusive", fmt.Errorf("plugin restarting: %w", latency.ErrProbeInconclusive), "h:1 inconclusive (plugin restarting: latency: probe inconclusive)"},
		{"cancelled", errors.Join(latency.ErrProbeInconclusive, context.Canceled), "h:1 inconclusive (latency: probe inconclusive context canceled)"},
		{"other", errors.New("multi\nline"), "h:1 unreachable (multi line)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := probeLine("h:1", tt.err); got != tt.want {
				t.Errorf("probeLine() = %q, want %q", got, tt.want)
			}
		})
	}
}
