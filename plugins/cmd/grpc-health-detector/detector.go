package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/plugins/sdk"
)

// healthDetector probes an endpoint with the gRPC health check.
type healthDetector struct {
	service string
}

var _ probe.ServiceDetector = healthDetector{}

// Detect asks endpoint's health service about d.service, over a connection
// of its own that it closes before returning.
func (d healthDetector) Detect(ctx context.Context, endpoint string) error {
	if _, _, err := net.SplitHostPort(endpoint); err != nil {
		return &probe.Error{Endpoint: endpoint, Err: fmt.Errorf("%w: %v", sdk.ErrInvalidEndpoint, err)}
	}
	if err := ctx.Err(); err != nil {
		return probeFailed(ctx, endpoint, err)
	}
	conn, err := grpc.NewClient("passthrough:///"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return &probe.Error{Endpoint: endpoint, Err: fmt.Errorf("%w: %v", sdk.ErrInvalidEndpoint, err)}
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: d.service})
	if err != nil {
		return probeFailed(ctx, endpoint, err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return &probe.Error{Endpoint: endpoint, Err: fmt.Errorf("%w: health status %s", sdk.ErrNotServing, s)}
	}
	return nil
}

// probeFailed turns a failed health check into a detector's answer.
func probeFailed(ctx context.Context, endpoint string, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return errors.Join(probe.ErrInconclusive, context.Canceled)
	}
	if ctx.Err() != nil {
		return &probe.Error{Endpoint: endpoint, Err: fmt.Errorf("health check: %w", context.DeadlineExceeded)}
	}
	st := status.Convert(err)
	var cause error
	switch st.Code() {
	case codes.DeadlineExceeded:
		cause = fmt.Errorf("health check: %w", context.DeadlineExceeded)
	case codes.Unimplemented:
		cause = fmt.Errorf("%w: the server has no grpc.health.v1 service", sdk.ErrNotServing)
	case codes.NotFound:
		cause = fmt.Errorf("%w: the health service does not know the service", sdk.ErrNotServing)
	case codes.Unavailable:
		if strings.Contains(st.Message(), "connection refused") {
			cause = fmt.Errorf("%w: %s", syscall.ECONNREFUSED, st.Message())
			break
		}
		fallthrough
	default:
		cause = fmt.Errorf("health check: %s: %s", st.Code(), st.Message())
	}
	return &probe.Error{Endpoint: endpoint, Err: cause}
}
