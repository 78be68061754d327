package protocol

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
	pluginv1 "github.com/mqfault/mqfault/plugins/proto/mqfault/plugin/v1"
)

var refused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want pluginv1.Code
	}{
		{"nil", nil, pluginv1.Code_CODE_UNSPECIFIED},
		{"plain", errors.New("boom"), pluginv1.Code_CODE_UNKNOWN},
		{"canceled", context.Canceled, pluginv1.Code_CODE_CANCELED},
		{"inconclusive and canceled", errors.Join(probe.ErrInconclusive, context.Canceled), pluginv1.Code_CODE_CANCELED},
		{"wrapped deadline", fmt.Errorf("dial: %w", context.DeadlineExceeded), pluginv1.Code_CODE_DEADLINE_EXCEEDED},
		{"os deadline", os.ErrDeadlineExceeded, pluginv1.Code_CODE_DEADLINE_EXCEEDED},
		{"refused", refused, pluginv1.Code_CODE_CONNECTION_REFUSED},
		{"invalid endpoint", ErrInvalidEndpoint, pluginv1.Code_CODE_INVALID_ENDPOINT},
		{"addr error", &net.AddrError{Err: "missing port in address", Addr: "x"}, pluginv1.Code_CODE_INVALID_ENDPOINT},
		{"not serving", fmt.Errorf("health: %w", ErrNotServing), pluginv1.Code_CODE_NOT_SERVING},
		{"plugin failed", ErrPluginFailed, pluginv1.Code_CODE_INTERNAL},
		{"invalid argument", ErrInvalidArgument, pluginv1.Code_CODE_INVALID_ARGUMENT},
		{"inconclusive", fmt.Errorf("no idea: %w", probe.ErrInconclusive), pluginv1.Code_CODE_INCONCLUSIVE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(tt.err); got != tt.want {
				t.Errorf("CodeOf(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestSentinelOfCoversEveryCode(t *testing.T) {
	for v, name := range pluginv1.Code_name {
		c := pluginv1.Code(v)
		s := SentinelOf(c)
		switch c {
		case pluginv1.Code_CODE_UNSPECIFIED, pluginv1.Code_CODE_UNKNOWN:
			if s != nil {
				t.Errorf("SentinelOf(%s) = %v, want nil", name, s)
			}
		default:
			if s == nil {
				t.Errorf("SentinelOf(%s) = nil, want a sentinel", name)
			} else if got := CodeOf(s); got != c {
				t.Errorf("CodeOf(SentinelOf(%s)) = %v, want %v", name, got, c)
			}
		}
	}
}

// TestDetectRoundTrip sends a detector's answer over the conversions and
// checks the host sees the same verdict and the same sentinel.
func TestDetectRoundTrip(t *testing.T) {
	tests := []struct {
		name             string
		err              error
		wantInconclusive bool
		wantIs           error
	}{
		{"reachable", nil, false, nil},
		{"refused", &probe.Error{Endpoint: "host:1", Err: refused}, false, syscall.ECONNREFUSED},
		{"deadline", fmt.Errorf("dial: %w", context.DeadlineExceeded), false, context.DeadlineExceeded},
		{"os deadline", os.ErrDeadlineExceeded, false, os.ErrDeadlineExceeded},
		{"not serving", ErrNotServing, false, ErrNotServing},
		{"invalid endpoint", &net.AddrError{Err: "missing port in address", Addr: "x"}, false, ErrInvalidEndpoint},
		{"unknown", errors.New("no route to host"), false, nil},
		{"inconclusive", probe.ErrInconclusive, true, probe.ErrInconclusive},
		{"cancelled probe", errors.Join(probe.ErrInconclusive, context.Canceled), true, context.Canceled},
		{"bare cancel", context.Canceled, true, context.Canceled},
		{"plugin failed", ErrPluginFailed, true, ErrPluginFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := detectError("host:1", detectResponse(tt.err))
			if (got == nil) != (tt.err == nil) {
				t.Fatalf("detectError(detectResponse(%v)) = %v, want nil: %v", tt.err, got, tt.err == nil)
			}
			if got == nil {
				return
			}
			if inc := errors.Is(got, probe.ErrInconclusive); inc != tt.wantInconclusive {
				t.Errorf("errors.Is(%v, ErrProbeInconclusive) = %v, want %v", got, inc, tt.wantInconclusive)
			}
			if tt.wantIs != nil && !errors.Is(got, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false, want true", got, tt.wantIs)
			}
			if errors.Is(got, ErrBadAnswer) {
				t.Errorf("errors.Is(%v, ErrBadAnswer) = true for a well-formed answer", got)
			}
			if !strings.Contains(got.Error(), tt.err.Error()) {
				t.Errorf("error text %q does not carry the plugin's %q", got, tt.err)
			}
			var pe *probe.Error
			if unreachable := errors.As(got, &pe); unreachable == tt.wantInconclusive {
				t.Errorf("errors.As(%v, *ProbeError) = %v, want %v", got, unreachable, !tt.wantInconclusive)
			}
		})
	}
}

func TestDetectErrorBadAnswers(t *testing.T) {
	tests := []struct {
		name string
		resp *pluginv1.DetectResponse
	}{
		{"nil", nil},
		{"empty", &pluginv1.DetectResponse{}},
		{"unknown verdict", &pluginv1.DetectResponse{Verdict: 42}},
		{"unknown code", &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_UNREACHABLE, Code: 99}},
		{"reachable with code", &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_REACHABLE, Code: pluginv1.Code_CODE_UNKNOWN}},
		{"unreachable without code", &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_UNREACHABLE}},
		{"unreachable but inconclusive", &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_UNREACHABLE, Code: pluginv1.Code_CODE_INCONCLUSIVE}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := detectError("h:1", tt.resp)
			if !errors.Is(err, ErrBadAnswer) || !errors.Is(err, probe.ErrInconclusive) {
				t.Errorf("detectError(%v) = %v, want an error matching ErrBadAnswer and ErrProbeInconclusive", tt.resp, err)
			}
		})
	}
}

func TestInconclusiveWithoutCode(t *testing.T) {
	err := detectError("h:1", &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_INCONCLUSIVE, Reason: "busy"})
	if !errors.Is(err, probe.ErrInconclusive) || err.Error() != "busy" {
		t.Errorf("detectError(inconclusive, no code) = %v, want inconclusive %q", err, "busy")
	}
}

func TestReasonIsClipped(t *testing.T) {
	long := strings.Repeat("x", 10*maxReason)
	err := detectError("h:1", &pluginv1.DetectResponse{Verdict: pluginv1.Verdict_VERDICT_UNREACHABLE, Code: pluginv1.Code_CODE_UNKNOWN, Reason: long})
	if n := len(err.Error()); n > maxReason+64 {
		t.Errorf("len(error text) = %d, want at most %d", n, maxReason+64)
	}
}

func TestDecideRequestRoundTrip(t *testing.T) {
	queues := []route.MessageQueue{{Topic: "T", BrokerName: "a", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 7}}
	req, err := decideRequest("T", queues)
	if err != nil {
		t.Fatalf("decideRequest() error = %v", err)
	}
	topic, got := queuesOf(req)
	if topic != "T" || !slices.Equal(got, queues) {
		t.Errorf("queuesOf(decideRequest()) = %q %v, want %q %v", topic, got, "T", queues)
	}
	for _, id := range []int{math.MaxInt32 + 1, math.MinInt32 - 1} {
		if _, err := decideRequest("T", []route.MessageQueue{{BrokerName: "a", QueueID: id}}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("decideRequest(queue id %d) error = %v, want ErrInvalidArgument", id, err)
		}
	}
}

func TestVerdictsOf(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		resp    *pluginv1.DecideResponse
		want    []bool
		wantErr error
	}{
		{"ok", 2, &pluginv1.DecideResponse{Admit: []bool{true, false}}, []bool{true, false}, nil},
		{"empty route", 0, &pluginv1.DecideResponse{}, nil, nil},
		{"nil", 1, nil, nil, ErrBadAnswer},
		{"too few", 3, &pluginv1.DecideResponse{Admit: []bool{true}}, nil, ErrBadAnswer},
		{"too many", 1, &pluginv1.DecideResponse{Admit: []bool{true, true}}, nil, ErrBadAnswer},
		{"unknown code", 1, &pluginv1.DecideResponse{Code: 1234}, nil, ErrBadAnswer},
		{"code and verdicts", 1, &pluginv1.DecideResponse{Admit: []bool{true}, Code: pluginv1.Code_CODE_UNKNOWN}, nil, ErrBadAnswer},
		{"remote error", 1, &pluginv1.DecideResponse{Code: pluginv1.Code_CODE_INVALID_ARGUMENT, Reason: "no"}, nil, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := verdictsOf(tt.n, tt.resp)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("verdictsOf() error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("verdictsOf() = %v, %v, want %v, nil", got, err, tt.want)
			}
		})
	}
}

func TestDecideResponse(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		verdicts []bool
		err      error
		wantCode pluginv1.Code
	}{
		{"ok", 2, []bool{true, false}, nil, pluginv1.Code_CODE_UNSPECIFIED},
		{"wrong count", 2, []bool{true}, nil, pluginv1.Code_CODE_INTERNAL},
		{"error", 2, nil, ErrInvalidArgument, pluginv1.Code_CODE_INVALID_ARGUMENT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decideResponse(tt.n, tt.verdicts, tt.err)
			if r.GetCode() != tt.wantCode {
				t.Errorf("decideResponse().Code = %v, want %v", r.GetCode(), tt.wantCode)
			}
			if tt.wantCode != pluginv1.Code_CODE_UNSPECIFIED && len(r.GetAdmit()) != 0 {
				t.Errorf("decideResponse().Admit = %v with an error, want none", r.GetAdmit())
			}
		})
	}
}
