package sdk_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mqfault/mqfault/pkg/probe"
	"github.com/mqfault/mqfault/pkg/route"
	"github.com/mqfault/mqfault/plugins/sdk"
)

// A detector plugin's main.
func ExampleServeDetector() {
	log := sdk.Logger(slog.LevelInfo)
	sdk.ServeDetector(probe.ServiceDetectorFunc(func(ctx context.Context, endpoint string) error {
		log.Debug("probing", "endpoint", endpoint)
		if endpoint == "" {
			return fmt.Errorf("%w: empty", sdk.ErrInvalidEndpoint)
		}
		return probe.TCPDetector{}.Detect(ctx, endpoint)
	}))
}

// A filter plugin's main: one verdict per queue of the route.
func ExampleServeFilter() {
	sdk.ServeFilter(sdk.BatchFilterFunc(func(_ context.Context, _ string, queues []route.MessageQueue) ([]bool, error) {
		admit := make([]bool, len(queues))
		for i, q := range queues {
			admit[i] = q.BrokerName != "broker-under-maintenance"
		}
		return admit, nil
	}))
}
