package protocol

import (
	"context"
	"errors"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect serves the plugins' gRPC servers over an in-memory connection and
// returns a client conn to them; everything stops when the test ends.
func connect(t *testing.T, plugins ...interface {
	GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error
}) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 16)
	s := grpc.NewServer()
	for _, p := range plugins {
		if err := p.GRPCServer(nil, s); err != nil {
			t.Fatalf("GRPCServer() error = %v", err)
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient() error = %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-done
	})
	return conn
}

// patience bounds every wait in these tests for something another goroutine
// does; a guard against a hung test, not a speed target.
const patience = 30 * time.Second

// TestDetectorShim runs each kind of answer through the gRPC shims. The
// server times the probes on a manual clock that only the test moves, so the
// cases about deadlines are decided by the order of events, never by which
// of two timers a loaded machine fires first: "honours the timeout" moves
// the clock to the deadline and no further (the answer given there must be
// taken), "overstays" moves it to the deadline and then past the grace.
func TestDetectorShim(t *testing.T) {
	answers := map[string]error{
		"up:1":      nil,
		"refused:1": &probe.Error{Endpoint: "refused:1", Err: refused},
		"unsure:1":  probe.ErrInconclusive,
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	impl := probe.ServiceDetectorFunc(func(ctx context.Context, ep string) error {
		switch ep {
		case "stubborn:1":
			<-release // ignores ctx
			return nil
		case "panic:1":
			panic("detector bug")
		case "slow:1":
			<-ctx.Done()
			return ctx.Err()
		}
		return answers[ep]
	})
	clk := clock.NewManual(time.Unix(1000, 0))
	conn := connect(t, &DetectorPlugin{Impl: impl, Clock: clk})
	c := NewDetectorClient(conn)
	const timeout = 20 * time.Millisecond
	grace := probe.Grace(timeout)
	tests := []struct {
		name             string
		endpoint         string
		timeout          time.Duration
		advance          []time.Duration // each once the server waits on the clk
		wantNil          bool
		wantInconclusive bool
		wantIs           error
	}{
		{"reachable", "up:1", time.Second, nil, true, false, nil},
		{"refused", "refused:1", time.Second, nil, false, false, syscall.ECONNREFUSED},
		{"inconclusive", "unsure:1", time.Second, nil, false, true, probe.ErrInconclusive},
		{"panic", "panic:1", time.Second, nil, false, true, ErrPluginFailed},
		{"plugin honours the timeout", "slow:1", timeout, []time.Duration{timeout}, false, false, context.DeadlineExceeded},
		{"no answer from a detector that overstays its deadline", "stubborn:1", timeout, []time.Duration{timeout, grace}, false, true, probe.ErrInconclusive},
		{"zero timeout", "up:1", 0, nil, false, true, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := make(chan error, 1)
			go func() { res <- c.Detect(context.Background(), tt.endpoint, tt.timeout) }()
			for _, d := range tt.advance {
				waitTimer(t, clk)
				clk.Advance(d)
			}
			var err error
			select {
			case err = <-res:
			case <-time.After(patience):
				t.Fatalf("Detect(%s) did not return within %v", tt.endpoint, patience)
			}
			if (err == nil) != tt.wantNil {
				t.Fatalf("Detect(%s) = %v, want nil: %v", tt.endpoint, err, tt.wantNil)
			}
			if err == nil {
				return
			}
			if got := errors.Is(err, probe.ErrInconclusive); got != tt.wantInconclusive {
				t.Errorf("Detect(%s) = %v; inconclusive = %v, want %v", tt.endpoint, err, got, tt.wantInconclusive)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("Detect(%s) = %v, want an error matching %v", tt.endpoint, err, tt.wantIs)
			}
		})
	}
}

// waitTimer waits until a timer is pending on clock: the server is waiting
// for a deadline or a grace to pass.
func waitTimer(t *testing.T, clk *clock.Manual) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for clk.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no timer pending on the server's clk within %v", patience)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDetectorClientCancelled(t *testing.T) {
	block := make(chan struct{})
	impl := probe.ServiceDetectorFunc(func(ctx context.Context, _ string) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	})
	conn := connect(t, &DetectorPlugin{Impl: impl})
	defer close(block)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewDetectorClient(conn).Detect(ctx, "x:1", time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Detect(cancelled ctx) = %v, want context.Canceled", err)
	}
}

func TestFilterShim(t *testing.T) {
	impl := BatchFilterFunc(func(_ context.Context, topic string, qs []route.MessageQueue) ([]bool, error) {
		switch topic {
		case "panic":
			panic("filter bug")
		case "short":
			return []bool{true}, nil
		case "error":
			return nil, ErrInvalidArgument
		}
		out := make([]bool, len(qs))
		for i, q := range qs {
			out[i] = q.BrokerName == "a" && q.Topic == topic
		}
		return out, nil
	})
	conn := connect(t, &FilterPlugin{Impl: impl})
	c := NewFilterClient(conn)
	queues := []route.MessageQueue{{Topic: "T", BrokerName: "a"}, {Topic: "T", BrokerName: "b", QueueID: 1}}
	tests := []struct {
		name    string
		topic   string
		want    []bool
		wantErr error
	}{
		{"decides", "T", []bool{true, false}, nil},
		{"panic", "panic", nil, ErrPluginFailed},
		{"wrong count", "short", nil, ErrPluginFailed},
		{"error code", "error", nil, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Decide(context.Background(), tt.topic, queues)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("Decide(%s) error = %v, want %v", tt.topic, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Decide(%s) = %v, %v, want %v, nil", tt.topic, got, err, tt.want)
			}
		})
	}
}

func TestUnimplementedIsBadAnswer(t *testing.T) {
	// A filter plugin asked to detect: the detector service is missing.
	conn := connect(t, &FilterPlugin{Impl: BatchFilterFunc(func(context.Context, string, []route.MessageQueue) ([]bool, error) { return nil, nil })})
	err := NewDetectorClient(conn).Detect(context.Background(), "x:1", time.Second)
	if !errors.Is(err, ErrBadAnswer) {
		t.Errorf("Detect() on a filter plugin = %v, want ErrBadAnswer", err)
	}
}

func TestNilImplRefused(t *testing.T) {
	s := grpc.NewServer()
	defer s.Stop()
	if err := (&DetectorPlugin{}).GRPCServer(nil, s); err == nil {
		t.Error("DetectorPlugin{}.GRPCServer() = nil, want an error for the missing Impl")
	}
	if err := (&FilterPlugin{}).GRPCServer(nil, s); err == nil {
		t.Error("FilterPlugin{}.GRPCServer() = nil, want an error for the missing Impl")
	}
}

func TestHandshakeKinds(t *testing.T) {
	d, f := Handshake(KindDetector), Handshake(KindFilter)
	if d.MagicCookieValue == f.MagicCookieValue {
		t.Errorf("detector and filter cookies are both %q, want them different", d.MagicCookieValue)
	}
	if d.ProtocolVersion != ProtocolVersion || d.MagicCookieKey != MagicCookieKey {
		t.Errorf("Handshake(detector) = %+v, want version %d, key %s", d, ProtocolVersion, MagicCookieKey)
	}
	if !KindDetector.Valid() || Kind("x").Valid() {
		t.Error("Kind.Valid() wrong")
	}
}
