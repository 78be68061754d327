package protocol

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mqfault/mqfault/pkg/clock"
	"github.com/mqfault/mqfault/pkg/probe"
	pluginv1 "github.com/mqfault/mqfault/plugins/proto/mqfault/plugin/v1"
)

// DetectorPlugin is the go-plugin plugin of a detector. A plugin binary sets
// Impl and serves it (see plugins/sdk); a host leaves Impl nil and gets a
// *DetectorClient from Dispense.
type DetectorPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the detector a plugin serves.
	Impl probe.ServiceDetector
	// Clock times each probe's deadline and the grace after it (default
	// clock.Real; a test sets a manual one).
	Clock clock.Clock
}

var _ plugin.GRPCPlugin = (*DetectorPlugin)(nil)

// GRPCServer registers the detector service, backed by Impl.
func (p *DetectorPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("protocol: DetectorPlugin.Impl is nil")
	}
	clk := p.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	pluginv1.RegisterDetectorServer(s, &detectorServer{impl: p.Impl, clock: clk})
	return nil
}

// GRPCClient returns a *DetectorClient over conn.
func (p *DetectorPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewDetectorClient(conn), nil
}

// detectorServer serves a ServiceDetector: fromproto, call, toproto.
type detectorServer struct {
	pluginv1.UnimplementedDetectorServer
	impl  probe.ServiceDetector
	clock clock.Clock
}

func (s *detectorServer) Detect(ctx context.Context, req *pluginv1.DetectRequest) (*pluginv1.DetectResponse, error) {
	if req.GetTimeoutNanos() <= 0 {
		return detectResponse(Inconclusive(fmt.Errorf("%w: timeout_nanos = %d, must be positive", ErrInvalidArgument, req.GetTimeoutNanos()))), nil
	}
	err := s.detectWithin(ctx, req.GetEndpoint(), time.Duration(req.GetTimeoutNanos()))
	if err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The host's call ended under the probe: that says nothing about
		// the endpoint.
		err = Inconclusive(fmt.Errorf("probe of %s cut short by the host: %w", req.GetEndpoint(), err))
	}
	return detectResponse(err), nil
}

// detectWithin asks the impl about endpoint with a deadline timeout from now
// on the server's clock. An answer given by then is returned, whatever it
// is. One that overstays it did not answer: after the deadline the impl has
// probe.Grace(timeout) more, then the answer is inconclusive
// (probe.ErrNoAnswer), sent before the host's own deadline (it kept a
// margin for that), and the impl's call finishes on its own.
//
// The grace is timed from the moment this goroutine sees the deadline pass,
// not from the deadline itself: a process that was not running when both
// would have passed (a loaded machine) still gives the impl its grace, so
// an answer the impl gives at its deadline is never lost to a second timer
// that fell due in the same pause.
func (s *detectorServer) detectWithin(ctx context.Context, endpoint string, timeout time.Duration) error {
	pctx, cancel := clock.WithTimeout(ctx, s.clock, timeout)
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- safeDetect(pctx, s.impl, endpoint) }()
	select {
	case err := <-res:
		return err
	case <-pctx.Done():
	}
	if ctx.Err() == nil { // the probe's own deadline passed, not the call
		grace := probe.Grace(timeout)
		late := make(chan struct{})
		t := s.clock.AfterFunc(grace, func() { close(late) })
		defer t.Stop()
		select {
		case err := <-res:
			return err
		case <-late:
		case <-ctx.Done():
		}
	}
	select {
	case err := <-res: // it answered just now: take the answer
		return err
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("probe %s: %w (no answer %v after its deadline of %v)", endpoint, probe.ErrNoAnswer, probe.Grace(timeout), timeout)
}

// safeDetect calls d, turning a panic into an inconclusive ErrPluginFailed
// so that a faulty detector does not take the plugin process down.
func safeDetect(ctx context.Context, d probe.ServiceDetector, endpoint string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Inconclusive(fmt.Errorf("%w: detector panicked: %v", ErrPluginFailed, r))
		}
	}()
	return d.Detect(ctx, endpoint)
}

// DetectorClient is the host's side of a detector plugin. It is safe for
// concurrent use.
type DetectorClient struct {
	c pluginv1.DetectorClient
}

// NewDetectorClient returns a client of the detector service on conn.
func NewDetectorClient(conn grpc.ClientConnInterface) *DetectorClient {
	return &DetectorClient{c: pluginv1.NewDetectorClient(conn)}
}

// Detect asks the plugin to probe endpoint and answer within timeout; ctx
// bounds the call itself. The answer is what a probe.ServiceDetector
// returns: nil (reachable), an error matching probe.ErrInconclusive,
// or another error (unreachable), with the plugin's code mapped back to its
// sentinel. When the call itself fails the error is ctx's error (ctx ended),
// or matches ErrUnavailable (the plugin cannot be reached) or ErrBadAnswer
// (the plugin broke the protocol); none of those is wrapped as inconclusive
// here: the caller decides.
func (c *DetectorClient) Detect(ctx context.Context, endpoint string, timeout time.Duration) error {
	resp, err := c.c.Detect(ctx, &pluginv1.DetectRequest{Endpoint: endpoint, TimeoutNanos: int64(timeout)})
	if err != nil {
		return callError(ctx, "Detect", err)
	}
	return detectError(endpoint, resp)
}

// callError classifies a failed RPC: ctx's own end, the plugin being
// unreachable (ErrUnavailable), or a protocol violation (ErrBadAnswer).
func callError(ctx context.Context, rpc string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("plugin: %s: %w", rpc, ctxErr)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, rpc, err)
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled:
		return fmt.Errorf("%w: %s: %s", ErrUnavailable, rpc, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("plugin: %s: %w", rpc, context.DeadlineExceeded)
	case codes.Unimplemented:
		return &BadAnswerError{RPC: rpc, Problem: "the plugin does not implement it (" + st.Message() + ")"}
	default:
		return &BadAnswerError{RPC: rpc, Problem: "gRPC error " + st.Code().String() + ": " + clipReason(st.Message())}
	}
}
