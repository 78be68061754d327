package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/mqfault/mqfault/mocks/pluginmocks"
	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/plugins/protocol"
)

// TestFilterPluginErrorCodes serves a mocked BatchFilter
// (pluginmocks.MockBatchFilter) over the plugin protocol and checks, for
// each error code the plugin side may send, that the host's FilterClient
// returns an error matching the same sentinel (wrapped errors too), and that
// verdicts cross unchanged: the path of each plugin error code.
func TestFilterPluginErrorCodes(t *testing.T) {
	queues := []route.MessageQueue{{Topic: "T", BrokerName: "a"}, {Topic: "T", BrokerName: "b", QueueID: 1}}
	tests := []struct {
		name    string
		verdict []bool
		err     error // what the mocked filter returns
		panics  bool
		want    error // what the host's error must match; nil: the verdicts
	}{
		{name: "verdicts", verdict: []bool{false, true}},
		{name: "canceled", err: context.Canceled, want: context.Canceled},
		{name: "deadline exceeded", err: context.DeadlineExceeded, want: context.DeadlineExceeded},
		{name: "connection refused", err: syscall.ECONNREFUSED, want: syscall.ECONNREFUSED},
		{name: "invalid endpoint", err: protocol.ErrInvalidEndpoint, want: protocol.ErrInvalidEndpoint},
		{name: "not serving", err: protocol.ErrNotServing, want: protocol.ErrNotServing},
		{name: "internal", err: protocol.ErrPluginFailed, want: protocol.ErrPluginFailed},
		{name: "invalid argument, wrapped", err: fmt.Errorf("topic %q: %w", "T", protocol.ErrInvalidArgument), want: protocol.ErrInvalidArgument},
		{name: "inconclusive", err: probe.ErrInconclusive, want: probe.ErrInconclusive},
		{name: "a panic is internal", panics: true, want: protocol.ErrPluginFailed},
		{name: "a wrong number of verdicts is internal", verdict: []bool{true}, want: protocol.ErrPluginFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := pluginmocks.NewMockBatchFilter(gomock.NewController(t))
			call := f.EXPECT().Decide(gomock.Any(), "T", queues)
			if tt.panics {
				call.DoAndReturn(func(context.Context, string, []route.MessageQueue) ([]bool, error) { panic("filter bug") })
			} else {
				call.Return(tt.verdict, tt.err)
			}
			c := protocol.NewFilterClient(protocol.Connect(t, &protocol.FilterPlugin{Impl: f}))
			got, err := c.Decide(context.Background(), "T", queues)
			if tt.want == nil {
				if err != nil || !slices.Equal(got, tt.verdict) {
					t.Errorf("Decide() = %v, %v; want %v, nil", got, err, tt.verdict)
				}
				return
			}
			if !errors.Is(err, tt.want) || got != nil {
				t.Errorf("Decide() = %v, %v; want nil and an error matching %v", got, err, tt.want)
			}
		})
	}
}
