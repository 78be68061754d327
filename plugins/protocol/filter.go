package protocol

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/mqfault/mqfault/pkg/route"
	pluginv1 "github.com/mqfault/mqfault/plugins/proto/mqfault/plugin/v1"
)

// BatchFilter decides, for all the queues of one route at once, which queues
// a selection may use: it is what a filter plugin serves. Decide returns one
// verdict per queue, in order (true admits the queue), or an error. It is
// called when a route changes and from time to time after, never on the pick
// path; it must be safe for concurrent use and should honour ctx.
type BatchFilter interface {
	Decide(ctx context.Context, topic string, queues []route.MessageQueue) ([]bool, error)
}

// BatchFilterFunc adapts a function to a BatchFilter.
type BatchFilterFunc func(ctx context.Context, topic string, queues []route.MessageQueue) ([]bool, error)

// Decide calls f(ctx, topic, queues).
func (f BatchFilterFunc) Decide(ctx context.Context, topic string, queues []route.MessageQueue) ([]bool, error) {
	return f(ctx, topic, queues)
}

// FilterPlugin is the go-plugin plugin of a batch filter. A plugin binary
// sets Impl and serves it (see plugins/sdk); a host leaves Impl nil and gets
// a *FilterClient from Dispense.
type FilterPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the filter a plugin serves.
	Impl BatchFilter
}

var _ plugin.GRPCPlugin = (*FilterPlugin)(nil)

// GRPCServer registers the filter service, backed by Impl.
func (p *FilterPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("protocol: FilterPlugin.Impl is nil")
	}
	pluginv1.RegisterFilterServer(s, &filterServer{impl: p.Impl})
	return nil
}

// GRPCClient returns a *FilterClient over conn.
func (p *FilterPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewFilterClient(conn), nil
}

type filterServer struct {
	pluginv1.UnimplementedFilterServer
	impl BatchFilter
}

func (s *filterServer) Decide(ctx context.Context, req *pluginv1.DecideRequest) (*pluginv1.DecideResponse, error) {
	topic, queues := queuesOf(req)
	verdicts, err := safeDecide(ctx, s.impl, topic, queues)
	return decideResponse(len(queues), verdicts, err), nil
}

// safeDecide calls f, turning a panic into ErrPluginFailed.
func safeDecide(ctx context.Context, f BatchFilter, topic string, queues []route.MessageQueue) (v []bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%w: filter panicked: %v", ErrPluginFailed, r)
		}
	}()
	return f.Decide(ctx, topic, queues)
}

// FilterClient is the host's side of a filter plugin; it is itself a
// BatchFilter. It is safe for concurrent use.
type FilterClient struct {
	c pluginv1.FilterClient
}

var _ BatchFilter = (*FilterClient)(nil)

// NewFilterClient returns a client of the filter service on conn.
func NewFilterClient(conn grpc.ClientConnInterface) *FilterClient {
	return &FilterClient{c: pluginv1.NewFilterClient(conn)}
}

// Decide asks the plugin for the verdicts on queues (one route of topic).
// Errors: a *RemoteError matching the sentinel of the plugin's code, ctx's
// error, or an error matching ErrUnavailable or ErrBadAnswer (a wrong
// number of verdicts, an unknown code, ...).
func (c *FilterClient) Decide(ctx context.Context, topic string, queues []route.MessageQueue) ([]bool, error) {
	req, err := decideRequest(topic, queues)
	if err != nil {
		return nil, err
	}
	resp, err := c.c.Decide(ctx, req)
	if err != nil {
		return nil, callError(ctx, "Decide", err)
	}
	return verdictsOf(len(queues), resp)
}
